package volsync_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/workload/volsync"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgd"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
	"github.com/siterecovery/siterecovery/test/harness"
)

// publishedAddressBlock: a group of Block PVCs. Until the addresses its
// destinations publish reach the RGS, a cycle waits and names them; then
// each source sends to the address its ReplicationDestination published
// (not a guessed clusterset name, which nothing exports here), and each
// destination receives into a Block PVC, which VolSync's movers require.
func publishedAddressBlock(t *testing.T, z *zone) {
	g := z.newGroupOf(t, "block", 2, nil, ptr.To(corev1.PersistentVolumeBlock))
	for i, name := range g.pvcs {
		z.data.Fill(g.volume(name), uint64(i+21))
	}
	g.trigger("1")
	g.waitReady(rgs.ReasonNoDestinationAddress, "ReplicationDestination disk-0, disk-1")
	g.relay()
	g.waitSynced("1")
	eventually(t, "images of cycle 1", func() error { return sumsEqual(g, g.primarySums()) })

	ctx := t.Context()
	for _, rs := range g.sources() {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		require.NoError(t, z.secondary.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: rs.Name}, rd))
		published := ptr.Deref(rd.Status.RsyncTLS.Address, "")
		require.NotEmpty(t, published)
		require.Equal(t, published, ptr.Deref(rs.Spec.RsyncTLS.Address, ""), "the source sends where its destination listens")
		require.NotEqual(t, volsync.ClusterSetAddress(g.ns, rs.Name), published)
		require.Equal(t, corev1.PersistentVolumeBlock, ptr.Deref(rd.Spec.RsyncTLS.VolumeMode, ""))
		received := &corev1.PersistentVolumeClaim{}
		require.NoError(t, z.secondary.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: rs.Name}, received))
		require.Equal(t, corev1.PersistentVolumeBlock, ptr.Deref(received.Spec.VolumeMode, ""), "a Block source gets a Block destination")
	}
}

// With ServiceExports on, pg-controller exports each destination's Service,
// named as VolSync names it, and the source sends to its clusterset name,
// which answers because of that export.
func TestConsistencyGroupThroughServiceExport(t *testing.T) {
	z := startZoneOf(t, zoneOptions{blockSize: blockSize, blocks: blocks, serviceExport: true,
		crds: append(harness.DefaultCRDPaths(), filepath.Join(harness.RepoRoot(), "test", "crds", "mcs"))})
	g := z.newGroup(t, "export", 2, nil)
	g.cycle("1", g.primarySums())
	for _, p := range g.pvcs {
		require.Equal(t, volsync.ClusterSetAddress(g.ns, p), g.address(p))
		se := &unstructured.Unstructured{}
		se.SetGroupVersionKind(rgd.ServiceExportGVK)
		require.NoError(t, z.secondary.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: volsync.ServiceName(p)}, se))
		owner := se.GetOwnerReferences()
		require.Len(t, owner, 1, "the ServiceExport goes with its destination")
		require.Equal(t, fmt.Sprint("ReplicationDestination/", p), owner[0].Kind+"/"+owner[0].Name)
	}
	for _, rs := range g.sources() {
		require.Equal(t, volsync.ClusterSetAddress(g.ns, rs.Name), ptr.Deref(rs.Spec.RsyncTLS.Address, ""))
	}
}
