package rgs

import (
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// scope is what one reconcile of a ReplicationGroupSource works on.
type scope struct {
	rgs    *drv1alpha1.ReplicationGroupSource
	before *drv1alpha1.ReplicationGroupSource
	now    time.Time

	// diff is true when the enable-diff annotation is exactly "true".
	diff bool
	// pvcs are the group's PVCs, by name.
	pvcs         map[string]*corev1.PersistentVolumeClaim
	storageClass *storagev1.StorageClass
	// idle: no cycle is in progress or due.
	idle bool

	// vgs is the snapshot of the cycle in progress.
	vgs *groupsnapshotv1.VolumeGroupSnapshot
	// members maps each PVC of vgs to its member VolumeSnapshot.
	members map[string]string
	// base maps each PVC to its member snapshot in the previous VolumeGroupSnapshot
	// (diff mode); a PVC without one syncs in full.
	base map[string]string
	// synced counts the PVCs whose source reported the cycle.
	synced int

	events []flow.Event
}

func (s *scope) key() types.NamespacedName {
	return types.NamespacedName{Namespace: s.rgs.Namespace, Name: s.rgs.Name}
}

// cycle is the name of the cycle in progress, which is also its snapshot's name
// and the manual trigger of its sources.
func (s *scope) cycle() string { return s.rgs.Status.CurrentVolumeGroupSnapshot }
