package protectiongroup_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// replica is a DRBDResource of group on node, asked to be Secondary.
func replica(group, vm, node string, port int32) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: srv1alpha1.DRBDResourceName(vm),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group}},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: node, NodeID: 1, Port: port, Role: srv1alpha1.RoleSecondary,
			Quorum:  srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary),
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000 + port - 7000, BackingPVC: &srv1alpha1.LocalObjectReference{Name: vm + "-disk"}}}},
	}
}

// TestDRBDIntentAppliedToTheGroupsReplicas: the role a failover asks in
// spec.drbd reaches every replica of the group, and only those; force only
// where a normal promotion would fail; status.drbd reports each replica, the
// tainted nodes and the generation applied.
func TestDRBDIntentAppliedToTheGroupsReplicas(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	taint := corev1.Taint{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}
	require.NoError(t, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}}}))

	ready, behind, other := replica("g", "ready", "node-b", 7000), replica("g", "behind", "node-b", 7001), replica("other", "other", "node-b", 7002)
	for _, r := range []*srv1alpha1.DRBDResource{ready, behind, other} {
		require.NoError(t, c.Create(ctx, r))
	}
	ready.Status = srv1alpha1.DRBDResourceStatus{Role: "Secondary", Promotable: true,
		Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "UpToDate"}},
		Peers:   []srv1alpha1.DRBDPeerStatus{{NodeName: "node-a", ConnectionState: "Connected", PeerRole: "Secondary"}}}
	require.NoError(t, c.Status().Update(ctx, ready))
	behind.Status = srv1alpha1.DRBDResourceStatus{Role: "Secondary",
		Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "Outdated"}},
		Peers:   []srv1alpha1.DRBDPeerStatus{{NodeName: "node-a", ConnectionState: "Connecting", PeerRole: "Unknown"}}}
	require.NoError(t, c.Status().Update(ctx, behind))

	g := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: groupNS, Name: "g"},
		Spec: srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateStopped}}
	require.NoError(t, c.Create(ctx, g))
	// Without an intent the replicas are only reported; once the report shows
	// what DRBD says, the controller decides on that.
	eventually(t, "the replicas reported", func() error {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(g), g))
		if d := g.Status.DRBD; d == nil || len(d.Replicas) != 2 || !d.Replicas[1].Promotable {
			return fmt.Errorf("status.drbd %+v", d)
		}
		return nil
	})
	before := g.DeepCopy()
	g.Spec.DRBD = &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RolePrimary, Force: true}
	require.NoError(t, c.Patch(ctx, g, client.MergeFrom(before)))

	get := func(r *srv1alpha1.DRBDResource) *srv1alpha1.DRBDResource {
		out := &srv1alpha1.DRBDResource{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(r), out))
		return out
	}
	applied := func() error {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(g), g))
		if d := g.Status.DRBD; d == nil || d.AppliedGeneration != g.Generation {
			return fmt.Errorf("status.drbd %+v, generation %d", d, g.Generation)
		}
		return nil
	}
	eventually(t, "the promotion applied", applied)
	require.Equal(t, srv1alpha1.RolePrimary, get(ready).Spec.Role)
	require.False(t, get(ready).Spec.ForcePromotion, "a promotable replica is not forced")
	require.Equal(t, srv1alpha1.RolePrimary, get(behind).Spec.Role)
	require.True(t, get(behind).Spec.ForcePromotion, "one that is not promotable is, when the intent allows it")
	require.Equal(t, srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary), get(behind).Spec.Quorum, "no quorum in the intent: each keeps its own")
	require.Equal(t, srv1alpha1.RoleSecondary, get(other).Spec.Role, "another group's replica is left alone")

	d := g.Status.DRBD
	require.Equal(t, []string{"node-b"}, d.TaintedNodes)
	require.Len(t, d.Replicas, 2)
	require.Equal(t, srv1alpha1.ReplicaRoleStatus{Name: behind.Name, Namespace: appNS, NodeName: "node-b", Role: "Secondary"}, d.Replicas[0])
	require.Equal(t, srv1alpha1.ReplicaRoleStatus{Name: ready.Name, Namespace: appNS, NodeName: "node-b", Role: "Secondary",
		Promotable: true, UpToDate: true, Connected: true}, d.Replicas[1])

	// The next step: demote, with the secondary's quorum.
	q := srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	before = g.DeepCopy()
	g.Spec.DRBD = &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RoleSecondary, Quorum: &q}
	require.NoError(t, c.Patch(ctx, g, client.MergeFrom(before)))
	eventually(t, "the demotion applied", applied)
	for _, r := range []*srv1alpha1.DRBDResource{ready, behind} {
		got := get(r)
		require.Equal(t, srv1alpha1.RoleSecondary, got.Spec.Role)
		require.False(t, got.Spec.ForcePromotion)
		require.Equal(t, q, got.Spec.Quorum)
	}

	// The agent removes its taint: the report follows the Node.
	n := &corev1.Node{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "node-b"}, n))
	n.Spec.Taints = nil
	require.NoError(t, c.Update(ctx, n))
	eventually(t, "no tainted node reported", func() error {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(g), g))
		if len(g.Status.DRBD.TaintedNodes) > 0 {
			return fmt.Errorf("taintedNodes %v", g.Status.DRBD.TaintedNodes)
		}
		return nil
	})
}

// TestDRBDIntentRefusesForceWithoutPromotion: the schema allows force only
// with role Primary.
func TestDRBDIntentRefusesForceWithoutPromotion(t *testing.T) {
	c := startCluster(t)
	g := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: groupNS, Name: "g"},
		Spec: srv1alpha1.ProtectionGroupSpec{DRBD: &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RoleSecondary, Force: true}}}
	err := c.Create(context.Background(), g)
	require.ErrorContains(t, err, "force applies to role Primary only")
}
