// Package chartrender renders this repository's Helm charts with `helm
// template` (the helm binary hack/helm.sh builds, at the version tools/helm
// pins), for tests and the sandbox that create what a chart installs without
// a cluster's kubelet or Helm: roles, and webhook configurations pointed at a
// process on this machine.
package chartrender

import (
	"errors"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Render renders a chart of this repository with its default values for a
// release named "sr" in namespace.
func Render(chart, namespace string) ([]*unstructured.Unstructured, error) {
	return RenderValues(chart, namespace, nil)
}

// RenderValues is Render with values over the chart's defaults.
func RenderValues(chart, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderAPIVersions(chart, namespace, values)
}

// RenderAPIVersions is RenderValues on a cluster that serves apiVersions
// (group/version or group/version/Kind) besides the built-in ones, as
// `helm template --api-versions` assumes.
func RenderAPIVersions(chart, namespace string, values map[string]any, apiVersions ...string) ([]*unstructured.Unstructured, error) {
	manifest, err := template(chart, namespace, WithReplicationNetworks(chart, values), apiVersions)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(obj.Object) != 0 {
			objs = append(objs, obj)
		}
	}
}

// Webhooks are a chart's webhook configurations pointed at a local server.
type Webhooks struct {
	Configurations []*admissionregistrationv1.ValidatingWebhookConfiguration
	// CertSecret is the name of the chart's (empty) certificate Secret.
	CertSecret string
}

// LocalWebhooks returns the ValidatingWebhookConfigurations of rendered chart
// objects with each webhook calling https://localhost:<port><path> instead of
// the chart's Service, as a process outside the cluster serves them.
func LocalWebhooks(objs []*unstructured.Unstructured, port int) (Webhooks, error) {
	var w Webhooks
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "ValidatingWebhookConfiguration":
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cfg); err != nil {
				return w, err
			}
			for i := range cfg.Webhooks {
				svc := cfg.Webhooks[i].ClientConfig.Service
				if svc == nil || svc.Path == nil {
					return w, fmt.Errorf("webhook %s calls no Service path", cfg.Webhooks[i].Name)
				}
				url := fmt.Sprintf("https://localhost:%d%s", port, *svc.Path)
				cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
			}
			w.Configurations = append(w.Configurations, cfg)
		case obj.GetKind() == "Secret" && strings.HasSuffix(obj.GetName(), "-cert"):
			w.CertSecret = obj.GetName()
		}
	}
	if len(w.Configurations) == 0 || w.CertSecret == "" {
		return w, errors.New("the chart renders no webhook configuration or no certificate Secret")
	}
	return w, nil
}
