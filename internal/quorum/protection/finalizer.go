package protection

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ensureFinalizer adds Finalizer to req. The patch carries the resourceVersion,
// so a stale read fails instead of dropping someone else's finalizer.
func (r *Reconciler) ensureFinalizer(ctx context.Context, req *srv1alpha1.ProtectionRequest) error {
	if controllerutil.ContainsFinalizer(req, Finalizer) {
		return nil
	}
	patched := req.DeepCopy()
	controllerutil.AddFinalizer(patched, Finalizer)
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(req, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("adding finalizer to ProtectionRequest %s/%s: %w", req.Namespace, req.Name, err)
	}
	req.Finalizers, req.ResourceVersion = patched.Finalizers, patched.ResourceVersion
	return nil
}

// release records why the request may go and drops Finalizer.
func (r *Reconciler) release(ctx context.Context, s *scope, kind, reason, message string) error {
	if !controllerutil.ContainsFinalizer(s.req, Finalizer) {
		return nil
	}
	patched := s.req.DeepCopy()
	controllerutil.RemoveFinalizer(patched, Finalizer)
	err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(s.req, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("removing finalizer of ProtectionRequest %s/%s: %w", s.req.Namespace, s.req.Name, err)
	}
	r.Recorder.Event(s.req, kind, reason, message)
	return nil
}
