package protection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// provisionTarget creates the VM's namespace and one backing PVC per disk on the
// DR cluster: same name and size as the source PVC, the mapped StorageClass,
// volumeMode Block. Each disk also gets a metadata PVC on both clusters, in the
// StorageClass of that side's data, for DRBD's metadata: DRBD's internal
// metadata would take the last blocks of the VM's own disk on the primary (a
// GPT backup header, the end of a file system) and leave the DRBD device
// smaller than the disk the guest formatted. Kept apart, the VM's disk holds
// its data only, the DRBD device exposes all of it, and removing protection
// gives the VM back its disks as they are.
func (r *Reconciler) provisionTarget(ctx context.Context, s *scope) (ctrl.Result, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.vmNamespace()}}
	if err := s.dr.Direct.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, remoteErr(s.target, "creating namespace "+ns.Name, err)
	}
	for _, v := range s.req.Status.Volumes {
		src := &corev1.PersistentVolumeClaim{}
		if err := s.primary.Direct.Get(ctx, types.NamespacedName{Namespace: s.vmNamespace(), Name: v.SourcePVC}, src); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, flow.Stalled(ReasonPVCNotFound, "disk %q: PVC %s was deleted on %s during protection", v.Disk, v.SourcePVC, s.primaryCluster)
			}
			return ctrl.Result{}, remoteErr(s.primaryCluster, "reading PVC "+v.SourcePVC, err)
		}
		class, ok := s.zone.MappedStorageClass(ptr.Deref(src.Spec.StorageClassName, ""))
		if !ok {
			return ctrl.Result{}, flow.Stalled(ReasonNoStorageMapping, "disk %q: the storage mapping for StorageClass %q was removed from zone %s", v.Disk, ptr.Deref(src.Spec.StorageClassName, ""), s.zone.Name)
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.vmNamespace(), Name: v.TargetPVC, Labels: labels(s.req, "backing")},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
				StorageClassName: ptr.To(class),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: *resource.NewQuantity(v.SizeBytes, resource.BinarySI)}},
			},
		}
		if err := createOwned(ctx, s.dr, s.target, s, pvc); err != nil {
			return ctrl.Result{}, err
		}
		if v.MetaPVC == "" {
			continue // a request from before metadata PVCs: its DRBD keeps internal metadata
		}
		for _, sd := range s.sides() {
			metaClass := class
			if sd.primary {
				metaClass = ptr.Deref(src.Spec.StorageClassName, "")
			}
			if err := createOwned(ctx, sd.rc, sd.cluster, s, metaPVC(s, v, metaClass)); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	// The VM's own PVCs back the primary replica: labelled, the agent accepts them.
	if err := r.labelSources(ctx, s, s.sides()[0]); err != nil {
		return ctrl.Result{}, err
	}
	setCondition(s.req, ConditionReplicaProvisioned, metav1.ConditionFalse, ReasonProgressing,
		"backing PVCs exist on %s; creating the DRBD resources", s.target)
	return r.advance(ctx, s, srv1alpha1.ProtectionCreatingReplication)
}

// metaPVC is a disk's metadata PVC on one side, of StorageClass class.
func metaPVC(s *scope, v srv1alpha1.ProtectedVolume, class string) *corev1.PersistentVolumeClaim {
	size := drbd.ExternalMetaSize(v.SizeBytes, drbdMaxPeers)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.vmNamespace(), Name: v.MetaPVC, Labels: labels(s.req, srv1alpha1.ObjectRoleMetadata)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To(class),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}},
		},
	}
}

// drbdMaxPeers is the peer slots the agent's create-md leaves DRBD's default
// at: one, the other cluster's replica.
const drbdMaxPeers = 1

// createOwned creates obj on a workload cluster. An existing object is accepted
// when it carries this request's label (a retry after a crash) and refused
// otherwise: the flow never adopts what someone else made.
func createOwned(ctx context.Context, rc *remote.Remote, cluster string, s *scope, obj client.Object) error {
	err := rc.Direct.Create(ctx, obj)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return remoteErr(cluster, fmt.Sprintf("creating %s %s", kindOf(obj), describe(obj)), err)
		}
		return nil
	}
	existing := obj.DeepCopyObject().(client.Object)
	if err := rc.Direct.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return remoteErr(cluster, "reading "+obj.GetName(), err)
	}
	if !ownedBy(existing, s) {
		return flow.Stalled(ReasonTargetConflict, "%s %s already exists on cluster %s and was not created by this request; delete or rename it",
			kindOf(obj), describe(obj), cluster)
	}
	return nil
}

func ownedBy(obj client.Object, s *scope) bool {
	l := obj.GetLabels()
	return l[srv1alpha1.ProtectionRequestLabel] == s.req.Name && l[srv1alpha1.DRNamespaceLabel] == s.req.Namespace
}

func describe(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	case *corev1.PersistentVolume:
		return "PersistentVolume"
	case *corev1.Pod:
		return "Pod"
	case *srv1alpha1.DRBDResource:
		return "DRBDResource"
	default:
		return fmt.Sprintf("%T", obj)
	}
}
