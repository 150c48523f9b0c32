package drpolicy

import (
	"testing"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// sc is the block StorageClass of a storage system.
func sc(sid string, offloaded bool) storagev1.StorageClass {
	l := map[string]string{drv1alpha1.StorageIDLabel: sid}
	if offloaded {
		l[drv1alpha1.OffloadedLabel] = "true"
	}
	return storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc-block", Labels: l}, Provisioner: "array.csi"}
}

// vgrc is the VolumeGroupReplicationClass of a storage system.
func vgrc(sid, grID string, global bool) replicationv1alpha1.VolumeGroupReplicationClass {
	l := map[string]string{drv1alpha1.StorageIDLabel: sid, drv1alpha1.GroupReplicationIDLabel: grID}
	if global {
		l[drv1alpha1.GlobalLabel] = "true"
	}
	return replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "v", Labels: l},
		Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: "array.csi"}}
}

func side(name string, scs []storagev1.StorageClass, vcs ...replicationv1alpha1.VolumeGroupReplicationClass) clusterClasses {
	return clusterClasses{name: name, storageClasses: scs, groupClasses: vcs}
}

func TestDiscover(t *testing.T) {
	global := drv1alpha1.PeerClass{ClusterIDs: []string{"c1", "c2"}, StorageClassName: "sc-block", StorageID: []string{"sid-1", "sid-2"},
		GroupReplicationID: "replication-group-01", Grouping: true, Offloaded: true, Global: true}
	notGlobal := global
	notGlobal.Global = false
	for _, tc := range []struct {
		name string
		a, b clusterClasses
		want []drv1alpha1.PeerClass
	}{
		{"global on both sides",
			side("c1", []storagev1.StorageClass{sc("sid-1", true)}, vgrc("sid-1", "replication-group-01", true)),
			side("c2", []storagev1.StorageClass{sc("sid-2", true)}, vgrc("sid-2", "replication-group-01", true)),
			[]drv1alpha1.PeerClass{global}},
		{"global on one side only",
			side("c1", []storagev1.StorageClass{sc("sid-1", true)}, vgrc("sid-1", "replication-group-01", true)),
			side("c2", []storagev1.StorageClass{sc("sid-2", true)}, vgrc("sid-2", "replication-group-01", false)),
			[]drv1alpha1.PeerClass{notGlobal}},
		{"not offloaded on one side",
			side("c1", []storagev1.StorageClass{sc("sid-1", true)}, vgrc("sid-1", "replication-group-01", true)),
			side("c2", []storagev1.StorageClass{sc("sid-2", false)}, vgrc("sid-2", "replication-group-01", true)),
			nil},
		{"different group replication IDs",
			side("c1", []storagev1.StorageClass{sc("sid-1", true)}, vgrc("sid-1", "rg-a", true)),
			side("c2", []storagev1.StorageClass{sc("sid-2", true)}, vgrc("sid-2", "rg-b", true)),
			nil},
		{"class not linked by storage ID",
			side("c1", []storagev1.StorageClass{sc("sid-1", true)}, vgrc("other", "replication-group-01", true)),
			side("c2", []storagev1.StorageClass{sc("sid-2", true)}, vgrc("sid-2", "replication-group-01", true)),
			nil},
		{"order follows drClusters",
			side("c2", []storagev1.StorageClass{sc("sid-2", true)}, vgrc("sid-2", "replication-group-01", true)),
			side("c1", []storagev1.StorageClass{sc("sid-1", true)}, vgrc("sid-1", "replication-group-01", true)),
			[]drv1alpha1.PeerClass{{ClusterIDs: []string{"c2", "c1"}, StorageClassName: "sc-block", StorageID: []string{"sid-2", "sid-1"},
				GroupReplicationID: "replication-group-01", Grouping: true, Offloaded: true, Global: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, discover(tc.a, tc.b))
		})
	}
}

// TestDiscoverVolSync: a VolSync zone pairs the StorageClasses both clusters
// name alike and that are not offloaded; they name no replication group.
func TestDiscoverVolSync(t *testing.T) {
	named := func(name string, offloaded bool, sid string) storagev1.StorageClass {
		c := sc(sid, offloaded)
		c.Name = name
		if sid == "" {
			delete(c.Labels, drv1alpha1.StorageIDLabel)
		}
		return c
	}
	a := side("c1", []storagev1.StorageClass{named("cephfs", false, ""), named("rbd", false, "s1"), named("array", true, "s1"), named("only-here", false, "")})
	b := side("c2", []storagev1.StorageClass{named("rbd", false, "s2"), named("cephfs", false, ""), named("array", true, "s2")})
	require.Equal(t, []drv1alpha1.PeerClass{
		{ClusterIDs: []string{"c1", "c2"}, StorageClassName: "cephfs"},
		{ClusterIDs: []string{"c1", "c2"}, StorageClassName: "rbd", StorageID: []string{"s1", "s2"}},
	}, discoverVolSync(a, b))
}
