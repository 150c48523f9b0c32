package rgs

import (
	"context"
	"fmt"
	"sort"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// restore restores each member snapshot into a read-only PVC and waits until
// all are bound. A restored PVC left from another cycle (a restart before its
// cleanup) is replaced: a claim's dataSource cannot change.
func (r *Reconciler) restore(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.idle {
		return ctrl.Result{}, nil
	}
	var unbound []string
	for _, pvc := range sortedKeys(s.members) {
		bound, err := r.ensureRestored(ctx, s, pvc, s.members[pvc])
		if err != nil {
			return ctrl.Result{}, flow.Transient("RestoreFailed", fmt.Errorf("PVC %s: %w", pvc, err))
		}
		if !bound {
			unbound = append(unbound, fmt.Sprintf("%s (from %s)", volsync.RestoredPVCName(pvc), s.members[pvc]))
		}
	}
	if len(unbound) > 0 {
		return ctrl.Result{}, flow.Waiting(ReasonRestoreNotBound, poll, "restored PVCs not bound yet: %s", strings.Join(unbound, ", "))
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) ensureRestored(ctx context.Context, s *scope, pvcName, snapshot string) (bool, error) {
	key := client.ObjectKey{Namespace: s.rgs.Namespace, Name: volsync.RestoredPVCName(pvcName)}
	existing := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, key, existing)
	switch {
	case err == nil && existing.Spec.DataSource != nil && existing.Spec.DataSource.Name == snapshot:
		return existing.Status.Phase == corev1.ClaimBound, nil
	case err == nil:
		if existing.DeletionTimestamp == nil {
			return false, client.IgnoreNotFound(r.Client.Delete(ctx, existing))
		}
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	app := s.pvcs[pvcName]
	if app == nil {
		return false, fmt.Errorf("the PVC left the group during the cycle")
	}
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.rgs.Namespace, Name: snapshot}, vs); err != nil {
		return false, err
	}
	size := app.Spec.Resources.Requests[corev1.ResourceStorage]
	if vs.Status != nil && vs.Status.RestoreSize != nil && vs.Status.RestoreSize.Cmp(size) > 0 {
		size = *vs.Status.RestoreSize
	}
	restored := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{volsync.RGSLabel: s.rgs.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: app.Spec.StorageClassName,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			VolumeMode:       app.Spec.VolumeMode,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			DataSource:       &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: snapshot},
		},
	}
	if err := controllerutil.SetControllerReference(s.rgs, restored, r.Client.Scheme()); err != nil {
		return false, err
	}
	if err := r.Client.Create(ctx, restored); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, err
	}
	return false, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
