package rgs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// recheck is how often a group that waits on something unwatched (a class to
// be created) looks again.
const recheck = 10 * time.Second

// validate reads the mode, the class and the group's PVCs, which must share one
// StorageClass: the External mover is named by its provisioner, and one group
// snapshot is taken by one driver.
func (r *Reconciler) validate(ctx context.Context, s *scope) (ctrl.Result, error) {
	setDiffCondition(s)
	className := s.rgs.Spec.VolumeGroupSnapshotClassName
	if err := r.Client.Get(ctx, client.ObjectKey{Name: className}, &groupsnapshotv1.VolumeGroupSnapshotClass{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
		}
		return ctrl.Result{}, flow.Waiting(ReasonNoGroupSnapshotClass, recheck, "VolumeGroupSnapshotClass %q not found", className)
	}
	sel, err := metav1.LabelSelectorAsSelector(s.rgs.Spec.VolumeGroupSnapshotSource)
	if err != nil {
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "volumeGroupSnapshotSource: %w", err)
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.rgs.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	s.pvcs = map[string]*corev1.PersistentVolumeClaim{}
	byClass := map[string][]string{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		s.pvcs[p.Name] = p
		sc := ptr.Deref(p.Spec.StorageClassName, "")
		byClass[sc] = append(byClass[sc], p.Name)
	}
	if len(s.pvcs) == 0 {
		return ctrl.Result{}, flow.Waiting(ReasonNoPVCs, 0, "no PVC matches volumeGroupSnapshotSource")
	}
	if len(byClass) > 1 {
		parts := make([]string, 0, len(byClass))
		for sc, names := range byClass {
			sort.Strings(names)
			parts = append(parts, fmt.Sprintf("%s (%s)", sc, strings.Join(names, ", ")))
		}
		sort.Strings(parts)
		return ctrl.Result{}, flow.Stalled(ReasonMixedStorageClasses, "the PVCs of the group use more than one StorageClass: %s", strings.Join(parts, "; "))
	}
	for sc := range byClass {
		s.storageClass = &storagev1.StorageClass{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: sc}, s.storageClass); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonStorageClassNotFound, recheck, "StorageClass %q of the group's PVCs not found", sc)
			}
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
		}
	}
	return ctrl.Result{}, nil
}

// setDiffCondition says whether incremental sync is on, and why not when the
// annotation is set to something other than exactly "true".
func setDiffCondition(s *scope) {
	s.diff = drv1alpha1.IsDiffSyncEnabled(s.rgs.Annotations)
	c := metav1.Condition{Type: ConditionDiffSync, Status: metav1.ConditionFalse, Reason: ReasonDisabled,
		Message: "full sync each cycle: the " + drv1alpha1.EnableDiffAnnotation + " annotation is not set"}
	v, set := s.rgs.Annotations[drv1alpha1.EnableDiffAnnotation]
	switch {
	case s.diff:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonEnabled, "incremental sync: each cycle sends the blocks changed since the previous VolumeGroupSnapshot"
	case set:
		c.Reason = ReasonInvalidAnnotation
		c.Message = fmt.Sprintf("full sync each cycle: %s is %q, and only exactly \"true\" enables incremental sync", drv1alpha1.EnableDiffAnnotation, v)
	}
	c.ObservedGeneration = s.rgs.Generation
	meta.SetStatusCondition(&s.rgs.Status.Conditions, c)
}
