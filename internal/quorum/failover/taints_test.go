package failover

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestTaintChecks: the lost-quorum taint on a target node holds a request
// when it is kept for another group's Primary there, or, with no cause the
// replicas report, while another group runs there; never when this group's
// own replica is its only cause. With force the taint goes.
func TestTaintChecks(t *testing.T) {
	for _, c := range []phaseCase{
		{
			name: "taint kept for another group's Primary without quorum: held, naming the group, though the group is stopped", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary: cluster{objs: sourceStoppedSecondary},
			dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), groupCopyIn("other", stopped, stopped),
				replica("node-b", sec, sec, true), otherPrimaryWithoutQuorum("node-b"), node("node-b", true)}},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD,
			wantMessage: "not removing drbd.linbit.com/lost-quorum from node-b on dr: the node agent keeps it on node-b for group other of DR namespace " + testNS +
				" (replica apps/vm-db is Primary there without quorum) until that has quorum again or is Secondary; wait, or set force to remove it",
			wantConditions: map[string]string{srv1alpha1.ConditionTargetPromoted: "False/" + srv1alpha1.ReasonTaintConflict},
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "nothing is promoted while the taint holds")
			},
		},
		{
			name: "taint kept for this group's own Primary without quorum: no conflict beside a running group", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary: cluster{objs: sourceStoppedSecondary},
			dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), groupCopyIn("other", running, running),
				replica("node-b", pri, pri, false), otherSecondaryWithoutQuorum("node-b"), node("node-b", true)}},
			wantPhase: srv1alpha1.FailoverStartingOnTarget,
			check: func(t *testing.T, f *fixture) {
				n := &corev1.Node{}
				f.get(t, drCluster, n, "node-b")
				require.True(t, hasTaint(n), "the agent lifts it once the start step turns the quorum off")
			},
		},
		{
			name: "taint conflict before pg-controller reports the taint: the node itself is read, so the taint stays", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary: cluster{objs: sourceStoppedSecondary},
			dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), groupCopyIn("other", running, running),
				replica("node-b", sec, sec, true), node("node-b", true)}},
			taintsUnreported: true,
			wantPhase:        srv1alpha1.FailoverWaitingForDRBD,
			wantMessage:      "not removing drbd.linbit.com/lost-quorum from node-b on dr: no replica on node-b reports what it is kept for, and groups other run there; wait, or set force to remove it",
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "nothing is promoted while the taint holds")
			},
		},
		{
			name: "taint conflict with force before pg-controller reports the taint: the taint still goes", phase: srv1alpha1.FailoverWaitingForDRBD, force: true,
			primary: cluster{objs: sourceStoppedSecondary},
			dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), groupCopyIn("other", running, running),
				replica("node-b", sec, sec, true), node("node-b", true)}},
			taintsUnreported: true,
			wantPhase:        srv1alpha1.FailoverWaitingForDRBD, wantMessage: "waiting for DRBD on dr to be promotable and promoted: apps/vm-web",
			wantEvents: []string{"Normal TaintRemoved removed drbd.linbit.com/lost-quorum from node-b on dr"},
		},
		{
			name: "taint conflict with force: the taint goes and the target is promoted", phase: srv1alpha1.FailoverWaitingForDRBD, force: true,
			primary: cluster{objs: sourceStoppedSecondary},
			dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), groupCopyIn("other", running, running),
				replica("node-b", sec, sec, true), node("node-b", true)}},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "waiting for DRBD on dr to be promotable and promoted: apps/vm-web",
			wantEvents: []string{"Normal TaintRemoved removed drbd.linbit.com/lost-quorum from node-b on dr"},
			check: func(t *testing.T, f *fixture) {
				n := &corev1.Node{}
				f.get(t, drCluster, n, "node-b")
				require.False(t, hasTaint(n))
				d := f.drbd(t, drCluster)
				require.Equal(t, pri, d.Spec.Role)
				require.False(t, d.Spec.ForcePromotion, "a planned failover never forces")
				require.Equal(t, srv1alpha1.QuorumForRole(pri), d.Spec.Quorum, "the primary's quorum goes with the promotion")
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { runPhaseCase(t, c) })
	}
}

// otherPrimaryWithoutQuorum is the replica of another group, Primary on
// node without quorum: what the node agent keeps the node's taint for.
func otherPrimaryWithoutQuorum(node string) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: srv1alpha1.DRBDResourceName("db"),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: "other", srv1alpha1.DRNamespaceLabel: testNS}},
		Spec:   srv1alpha1.DRBDResourceSpec{NodeName: node, Role: pri},
		Status: srv1alpha1.DRBDResourceStatus{Role: string(pri)},
	}
}

// otherSecondaryWithoutQuorum is otherPrimaryWithoutQuorum as a Secondary: no
// cause of a taint.
func otherSecondaryWithoutQuorum(node string) *srv1alpha1.DRBDResource {
	r := otherPrimaryWithoutQuorum(node)
	r.Spec.Role, r.Status.Role = sec, string(sec)
	return r
}
