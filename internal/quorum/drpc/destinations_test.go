package drpc

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A primary VRG is given the addresses its peer's secondary VRG reports for
// its destinations, and nothing else: no address while the peer published
// none, the last ones while the peer cannot be reached.
func TestPrimaryGetsThePeersPublishedDestinations(t *testing.T) {
	vrg := func(state drv1alpha1.ReplicationState, pvcs ...drv1alpha1.ProtectedPVC) *drv1alpha1.VolumeReplicationGroup {
		return &drv1alpha1.VolumeReplicationGroup{Spec: drv1alpha1.VolumeReplicationGroupSpec{ReplicationState: state},
			Status: drv1alpha1.VolumeReplicationGroupStatus{ProtectedPVCs: pvcs}}
	}
	s := &scope{backend: srv1alpha1.BackendVolSync, clusters: []string{"primary", "dr"}, unreachable: map[string]error{},
		vrgs: map[string]*drv1alpha1.VolumeReplicationGroup{
			"primary": vrg(drv1alpha1.Primary),
			"dr": vrg(drv1alpha1.Secondary,
				drv1alpha1.ProtectedPVC{Name: "disk-1", ProtectedByVolSync: true, DestinationAddress: "10.96.0.2"},
				drv1alpha1.ProtectedPVC{Name: "disk-0", ProtectedByVolSync: true, DestinationAddress: "10.96.0.1"},
				drv1alpha1.ProtectedPVC{Name: "disk-2", ProtectedByVolSync: true}),
		}}
	want := []drv1alpha1.VolSyncDestination{{PVCName: "disk-0", Address: "10.96.0.1"}, {PVCName: "disk-1", Address: "10.96.0.2"}}
	spec := s.volSyncSpec("primary", drv1alpha1.Primary)
	require.NotNil(t, spec)
	require.Equal(t, want, spec.Destinations, "sorted; disk-2 has published nothing yet")

	s.vrgs["primary"].Spec.VolSync = spec
	s.unreachable["dr"] = errors.New("down")
	s.vrgs["dr"] = nil
	require.Equal(t, want, s.volSyncSpec("primary", drv1alpha1.Primary).Destinations, "kept while the peer is unreachable")

	delete(s.unreachable, "dr")
	s.vrgs["dr"] = vrg(drv1alpha1.Primary, drv1alpha1.ProtectedPVC{Name: "disk-0", ProtectedByVolSync: true, DestinationAddress: "stale"})
	require.Nil(t, s.volSyncSpec("primary", drv1alpha1.Primary), "a peer that is not secondary gives no address")
}
