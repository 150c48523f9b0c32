// Package kubelet stands in for the kubelet's part in deleting a pod: the API
// server keeps a scheduled pod, with its deletionTimestamp set, until its
// node's kubelet confirms the containers stopped. Test clusters run no
// kubelet, so this controller confirms at once (a delete with grace period
// 0), as a kubelet would once the pod stopped.
package kubelet

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// SetupWithManager registers the stand-in with mgr. Several managers of one
// process may run it (one per cluster): its name is not checked for
// uniqueness.
func SetupWithManager(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).Named("kubelet-stand-in").For(&corev1.Pod{}).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			pod := &corev1.Pod{}
			if err := c.Get(ctx, req.NamespacedName, pod); err != nil || pod.DeletionTimestamp.IsZero() {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			return reconcile.Result{}, client.IgnoreNotFound(c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
		}))
}
