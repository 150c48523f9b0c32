package freeze

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Client freezes and thaws one cluster's guests.
type Client interface {
	// Freeze freezes vm's file systems; KubeVirt thaws them by itself after
	// unfreezeTimeout.
	Freeze(ctx context.Context, vm types.NamespacedName, unfreezeTimeout time.Duration) error
	// Unfreeze thaws vm's file systems; thawing a thawed guest succeeds.
	Unfreeze(ctx context.Context, vm types.NamespacedName) error
}

// SubresourceGroupVersion is the API group virt-api serves, aggregated into
// the cluster's API server, for the VMI actions that reach the launcher.
var SubresourceGroupVersion = schema.GroupVersion{Group: "subresources.kubevirt.io", Version: "v1"}

// freezeBody is KubeVirt's FreezeUnfreezeTimeout: virt-handler refuses a
// freeze without it.
type freezeBody struct {
	UnfreezeTimeout metav1.Duration `json:"unfreezeTimeout"`
}

// RESTClient is the Client of a cluster's API server: PUT
// /apis/subresources.kubevirt.io/v1/namespaces/<ns>/virtualmachineinstances/<name>/freeze
// (and .../unfreeze), which the API server proxies to virt-api.
type RESTClient struct {
	rest rest.Interface
}

// NewRESTClient builds a RESTClient from the cluster's config.
func NewRESTClient(cfg *rest.Config) (*RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &SubresourceGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the freeze client: %w", err)
	}
	return &RESTClient{rest: rc}, nil
}

// Freeze implements Client.
func (c *RESTClient) Freeze(ctx context.Context, vm types.NamespacedName, unfreezeTimeout time.Duration) error {
	body, err := json.Marshal(freezeBody{UnfreezeTimeout: metav1.Duration{Duration: unfreezeTimeout}})
	if err != nil {
		return fmt.Errorf("encoding the freeze of %s: %w", vm, err)
	}
	return c.put(ctx, vm, "freeze", body)
}

// Unfreeze implements Client.
func (c *RESTClient) Unfreeze(ctx context.Context, vm types.NamespacedName) error {
	return c.put(ctx, vm, "unfreeze", nil)
}

func (c *RESTClient) put(ctx context.Context, vm types.NamespacedName, action string, body []byte) error {
	req := c.rest.Put().Namespace(vm.Namespace).Resource("virtualmachineinstances").Name(vm.Name).SubResource(action)
	if body != nil {
		req = req.Body(body).SetHeader("Content-Type", "application/json")
	}
	if err := req.Do(ctx).Error(); err != nil {
		return fmt.Errorf("%s of VM %s: %w", action, vm, err)
	}
	return nil
}
