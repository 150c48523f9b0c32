package vrg

import (
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// scope is what one reconcile of a VRG works on.
type scope struct {
	vrg *drv1alpha1.VolumeReplicationGroup
	// before is the VRG as read, to patch only what changed.
	before *drv1alpha1.VolumeReplicationGroup
	now    time.Time

	// pvcs are the PVCs spec.pvcSelector selects, sorted by name.
	pvcs []pvcInfo
	// grID is the GroupReplicationID every PVC maps to; empty without PVCs.
	grID string
	// mappingError explains why the PVCs do not map to one global replication group.
	mappingError string

	// peers are the other VRGs on this cluster with the same global-vgr label.
	peers []drv1alpha1.VolumeReplicationGroup
	// consensus is true once every peer wants the same replicationState.
	consensus bool
	// vgr is the shared global VGR; nil when it does not exist on this cluster.
	vgr *replicationv1alpha1.VolumeGroupReplication
	// vgrUpdated is true once the VGR's spec asks for the VRG's replicationState.
	vgrUpdated bool
	// pvcsProcessed is true when status.protectedPVCs is to be recomputed from this
	// reconcile; otherwise the previous entries are kept (and may be stale).
	pvcsProcessed bool
	// progress explains what the VRG waits for, for the aggregated conditions.
	progress string
	// refused says why the VRG's VolSync key is not its to take (keyOfGroup).
	refused string

	// volsync is true when the VRG replicates through VolSync consistency groups.
	volsync bool
	// sources and destinations are the VRG's RGSs (primary) or RGDs (secondary).
	sources      []*drv1alpha1.ReplicationGroupSource
	destinations []*drv1alpha1.ReplicationGroupDestination
}

// pvcInfo is one selected PVC and the peer class it maps to.
type pvcInfo struct {
	pvc       *corev1.PersistentVolumeClaim
	storageID string
	// provisioner is the StorageClass's driver; empty when the class is missing.
	provisioner string
	peerClass   *drv1alpha1.PeerClass
}

// globalName is the value of the VRG's global-vgr label, which is also the name of
// the shared VGR; empty for a VRG outside any global group.
func (s *scope) globalName() string {
	return s.vrg.Labels[drv1alpha1.GlobalVGRLabel]
}

func (s *scope) primary() bool {
	return s.vrg.Spec.ReplicationState == drv1alpha1.Primary
}
