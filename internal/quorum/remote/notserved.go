package remote

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NotServedError is what a cached read of a kind the cluster does not serve
// returns: the connection leaves such a kind unwatched (a DRBD-only cluster
// has no csi-addons CRDs), so its cache holds no informer for it. Callers
// tell it from an unreachable cluster with IsNotServed and say which CRDs
// are missing, or treat the kind as empty where that is its meaning.
type NotServedError struct {
	Cluster string
	Kind    string
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("cluster %s does not serve %s (its CRD is not installed there)", e.Cluster, e.Kind)
}

// IsNotServed reports whether err is a NotServedError.
func IsNotServed(err error) bool {
	var ns *NotServedError
	return errors.As(err, &ns)
}

// servedReader is a connection's cached reader whose reads of an unwatched
// kind return a NotServedError instead of controller-runtime's not-cached one.
type servedReader struct {
	client.Reader
	cluster string
}

func (r servedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.translate(r.Reader.Get(ctx, key, obj, opts...))
}

func (r servedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.translate(r.Reader.List(ctx, list, opts...))
}

func (r servedReader) translate(err error) error {
	var nc *cache.ErrResourceNotCached
	if errors.As(err, &nc) {
		kind := nc.GVK.Kind
		if kind == "" {
			kind = nc.GVK.String()
		}
		return &NotServedError{Cluster: r.cluster, Kind: kind}
	}
	return err
}
