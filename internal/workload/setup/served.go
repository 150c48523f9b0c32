package setup

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// unserved returns the kinds of objs the cluster does not serve (no CRD).
// A DRBD-only site installs neither VolSync nor csi-addons, and a
// controller watching a kind without its CRD keeps pg-controller from
// starting at all: the controllers of a storage path the cluster lacks are
// left out instead, and the log says which and why. Any other error (the
// API server cannot be asked) is returned.
func unserved(mgr ctrl.Manager, objs ...client.Object) ([]string, error) {
	var missing []string
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
		if err != nil {
			return nil, err
		}
		_, err = mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
		case notServed(err):
			missing = append(missing, gvk.Kind+"."+gvk.Group)
		default:
			return nil, fmt.Errorf("asking whether the cluster serves %s: %w", gvk.GroupKind(), err)
		}
	}
	return missing, nil
}

// notServed reports whether err says the kind is not served, as opposed to
// a cluster that could not be asked.
func notServed(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var failed *apiutil.ErrResourceDiscoveryFailed
	if !errors.As(err, &failed) {
		return false
	}
	errs := failed.Unwrap()
	for _, e := range errs {
		if !meta.IsNoMatchError(e) {
			return false
		}
	}
	return len(errs) > 0
}
