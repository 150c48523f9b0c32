package vrg

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// loadPVCs reads the selected PVCs and maps each to a peer class; it records in the
// scope whether they form one global replication group.
func (r *Reconciler) loadPVCs(ctx context.Context, s *scope) (ctrl.Result, error) {
	sel, err := metav1.LabelSelectorAsSelector(&s.vrg.Spec.PVCSelector)
	if err != nil {
		s.mappingError = fmt.Sprintf("invalid spec.pvcSelector: %v", err)
		return ctrl.Result{}, flow.Stalled(drv1alpha1.ReasonError, "%s", s.mappingError)
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.vrg.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing PVCs: %w", err))
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	s.pvcs = make([]pvcInfo, 0, len(list.Items))
	for i := range list.Items {
		info := pvcInfo{pvc: &list.Items[i]}
		if sc := storageClassName(info.pvc); sc != "" {
			class := &storagev1.StorageClass{}
			switch err := r.Client.Get(ctx, client.ObjectKey{Name: sc}, class); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading StorageClass %s: %w", sc, err))
			default:
				info.storageID = class.Labels[drv1alpha1.StorageIDLabel]
				info.provisioner = class.Provisioner
			}
			info.peerClass = matchPeerClass(s.vrg, sc, info.storageID)
		}
		s.pvcs = append(s.pvcs, info)
	}
	if s.volsync = volSyncMode(s); s.volsync {
		return ctrl.Result{}, nil
	}
	s.grID, s.mappingError = groupOf(s.pvcs)
	if s.mappingError != "" {
		return ctrl.Result{}, flow.Stalled(drv1alpha1.ReasonError, "%s", s.mappingError)
	}
	return ctrl.Result{}, nil
}

func storageClassName(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName == nil {
		return ""
	}
	return *pvc.Spec.StorageClassName
}

// matchPeerClass finds the peer class of a StorageClass name and storage ID.
func matchPeerClass(vrg *drv1alpha1.VolumeReplicationGroup, scName, storageID string) *drv1alpha1.PeerClass {
	if vrg.Spec.Async == nil {
		return nil
	}
	for i := range vrg.Spec.Async.PeerClasses {
		pc := &vrg.Spec.Async.PeerClasses[i]
		if pc.StorageClassName != scName {
			continue
		}
		if storageID != "" && len(pc.StorageID) > 0 && !slices.Contains(pc.StorageID, storageID) {
			continue
		}
		return pc
	}
	return nil
}

// groupOf returns the GroupReplicationID shared by every PVC, or why there is none:
// a PVC without a global peer class, or PVCs of different replication groups.
// No PVCs is no group and no error.
func groupOf(pvcs []pvcInfo) (grID, problem string) {
	ids := map[string][]string{}
	var unmapped []string
	for _, p := range pvcs {
		name := p.pvc.Namespace + "/" + p.pvc.Name
		switch pc := p.peerClass; {
		case pc == nil:
			unmapped = append(unmapped, fmt.Sprintf("%s (storageClass %q, storageID %q)", name, storageClassName(p.pvc), p.storageID))
		case !pc.Global || pc.GroupReplicationID == "":
			unmapped = append(unmapped, fmt.Sprintf("%s (peer class %q is not global)", name, pc.StorageClassName))
		default:
			ids[pc.GroupReplicationID] = append(ids[pc.GroupReplicationID], name)
		}
	}
	if len(unmapped) > 0 {
		return "", "PVCs map to no global peer class: " + strings.Join(unmapped, ", ")
	}
	if len(ids) > 1 {
		var parts []string
		for _, p := range pvcs {
			parts = append(parts, fmt.Sprintf("%s/%s=%s", p.pvc.Namespace, p.pvc.Name, p.peerClass.GroupReplicationID))
		}
		return "", "PVCs map to different GroupReplicationIDs: " + strings.Join(parts, ", ")
	}
	for id := range ids {
		return id, ""
	}
	return "", ""
}

// labelGroup puts the global-vgr label on the VRG when its PVCs map to one global
// replication group (the primary self-labels; peers get it from the DRPC).
func (r *Reconciler) labelGroup(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.grID == "" || s.volsync {
		return ctrl.Result{}, nil
	}
	want := drv1alpha1.GlobalVGRName(s.grID)
	if s.globalName() == want {
		return ctrl.Result{}, nil
	}
	err := r.patchMeta(ctx, s, func(v *drv1alpha1.VolumeReplicationGroup) {
		if v.Labels == nil {
			v.Labels = map[string]string{}
		}
		v.Labels[drv1alpha1.GlobalVGRLabel] = want
	})
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonPatchFailed, fmt.Errorf("labelling VRG with %s: %w", want, err))
	}
	return ctrl.Result{}, nil
}

// protectPVCs puts the consistency-group label on every selected PVC and, when
// protecting as primary, this controller's finalizer and owner annotation.
func (r *Reconciler) protectPVCs(ctx context.Context, s *scope, hold bool) error {
	for _, p := range s.pvcs {
		if err := r.protectPVC(ctx, s, p.pvc, s.grID, hold); err != nil {
			return err
		}
	}
	return nil
}

// protectPVC labels one PVC with its consistency group and, with hold, holds it.
func (r *Reconciler) protectPVC(ctx context.Context, s *scope, pvc *corev1.PersistentVolumeClaim, group string, hold bool) error {
	patched := pvc.DeepCopy()
	if patched.Labels == nil {
		patched.Labels = map[string]string{}
	}
	patched.Labels[drv1alpha1.ConsistencyGroupLabel] = group
	if hold && pvc.DeletionTimestamp.IsZero() {
		controllerutil.AddFinalizer(patched, PVCFinalizer)
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[PVCOwnerAnnotation] = s.vrg.Name
	}
	return r.patchPVC(ctx, pvc, patched)
}

// releasePVCs removes this controller's finalizer and owner annotation from the PVCs
// the VRG owns; it keeps the consistency-group label.
func (r *Reconciler) releasePVCs(ctx context.Context, s *scope) error {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.vrg.Namespace)); err != nil {
		return fmt.Errorf("listing PVCs: %w", err)
	}
	for i := range list.Items {
		pvc := &list.Items[i]
		if pvc.Annotations[PVCOwnerAnnotation] != s.vrg.Name {
			continue
		}
		patched := pvc.DeepCopy()
		controllerutil.RemoveFinalizer(patched, PVCFinalizer)
		delete(patched.Annotations, PVCOwnerAnnotation)
		if err := r.patchPVC(ctx, pvc, patched); err != nil {
			return err
		}
	}
	return nil
}

// patchPVC writes the metadata change with an optimistic lock, since finalizer lists
// are replaced whole by a merge patch.
func (r *Reconciler) patchPVC(ctx context.Context, pvc, patched *corev1.PersistentVolumeClaim) error {
	if equalMeta(pvc, patched) {
		return nil
	}
	err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(pvc, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

func equalMeta(a, b client.Object) bool {
	return maps.Equal(a.GetLabels(), b.GetLabels()) && maps.Equal(a.GetAnnotations(), b.GetAnnotations()) &&
		slices.Equal(a.GetFinalizers(), b.GetFinalizers())
}
