package nodeagent

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// reconcileDelete takes the DRBD resource down, removes its file and marker, then
// the finalizer. A resource this agent never rendered only loses the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	name, dir := s.obj.Name, r.Config.ResourceDir
	owner, _ := r.owners.claim(name, s.key)
	if owner == s.key { // never tear down a resource another DRBDResource drives
		rendered, err := fileExists(dir, resFile(name))
		if err != nil {
			return ctrl.Result{}, err
		}
		if rendered {
			if err := r.Adm.Down(ctx, name); err != nil {
				r.event(s.obj, "Warning", "DownFailed", "drbdadm down failed: %s", drbdMessage(err))
				return ctrl.Result{}, fmt.Errorf("drbdadm down %s: %w", name, err)
			}
			r.event(s.obj, "Normal", "Down", "DRBD resource taken down")
		}
		for _, f := range []string{resFile(name), markerFile(name)} {
			if err := removeFile(dir, f); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	controllerutil.RemoveFinalizer(s.obj, Finalizer)
	if err := r.Client.Update(ctx, s.obj); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	r.forget(s.key, name)
	return ctrl.Result{}, nil
}
