package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// withPeer is a replica whose DRBD reports one peer in the given state.
func withPeer(node string, spec, role srv1alpha1.DRBDRole, promotable bool, conn, peerRole string, oos int64) *srv1alpha1.DRBDResource {
	r := replica(node, spec, role, promotable)
	r.Status.Peers = []srv1alpha1.DRBDPeerStatus{{NodeName: "node-a", ConnectionState: conn, PeerRole: peerRole,
		Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0, OutOfSyncBytes: oos}}}}
	return r
}

// reconcileOnce runs one reconcile of the fixture's request, after mutate.
func reconcileOnce(t *testing.T, f *fixture, mutate func(*srv1alpha1.FailoverRequest)) *srv1alpha1.FailoverRequest {
	t.Helper()
	if mutate != nil {
		fr := f.request(t)
		mutate(fr)
		require.NoError(t, f.quorum.Update(f.ctx, fr))
	}
	f.reconcile(t)
	return f.request(t)
}

func TestFencingRequiredWhileSourcePrimaryAndConnected(t *testing.T) {
	c := phaseCase{typ: srv1alpha1.FailoverUnplanned, phase: srv1alpha1.FailoverWaitingForDRBD,
		primary: cluster{objs: []client.Object{groupCopyIn(testGroup, running, running),
			withPeer("node-a", pri, pri, false, "Connected", "Secondary", 4096), node("node-a", false)}, state: remote.Unreachable},
		dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped),
			withPeer("node-b", sec, sec, false, "Connected", "Primary", 4096), node("node-b", false)}}}

	t.Run("held, saying what was seen and the two ways on", func(t *testing.T) {
		f := newFixture(c)
		fr := reconcileOnce(t, f, nil)
		require.Equal(t, srv1alpha1.FailoverWaitingForDRBD, fr.Status.Phase)
		cond := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionFencingRequired)
		require.NotNil(t, cond)
		require.Equal(t, metav1.ConditionTrue, cond.Status)
		for _, want := range []string{"vm-web (peer node-a)", "may still be running", "restore primary's API server", srv1alpha1.SourceFencedAnnotation + "=g"} {
			require.Contains(t, cond.Message, want)
		}
		require.Equal(t, srv1alpha1.ReasonSourcePrimaryConnected, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
		require.Contains(t, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk).Message, "4096 bytes out of sync")
		d := f.drbd(t, drCluster)
		require.Equal(t, sec, d.Spec.Role, "never asked to promote beside a connected Primary")
		require.Empty(t, d.Spec.FencedPeers)
	})
	t.Run("a confirmation for another group changes nothing", func(t *testing.T) {
		f := newFixture(c)
		reconcileOnce(t, f, func(fr *srv1alpha1.FailoverRequest) {
			fr.Annotations = map[string]string{srv1alpha1.SourceFencedAnnotation: "other"}
		})
		require.Empty(t, f.drbd(t, drCluster).Spec.FencedPeers)
	})
	t.Run("confirmed: the target drops the fenced peer, not yet promoted", func(t *testing.T) {
		f := newFixture(c)
		fr := reconcileOnce(t, f, func(fr *srv1alpha1.FailoverRequest) {
			fr.Annotations = map[string]string{srv1alpha1.SourceFencedAnnotation: testGroup}
		})
		cond := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionFencingRequired)
		require.Equal(t, metav1.ConditionFalse, cond.Status)
		require.Equal(t, srv1alpha1.ReasonSourceFenced, cond.Reason)
		d := f.drbd(t, drCluster)
		require.Equal(t, []string{"node-a"}, d.Spec.FencedPeers)
		pg := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
		require.Equal(t, primary, pg.Annotations[srv1alpha1.FencedOffAnnotation], "the group records the source as fenced off")
		require.Equal(t, sec, d.Spec.Role, "promoted only once DRBD reports the peer gone")
		require.True(t, strings.Contains(fr.Status.Message, "waiting for DRBD on dr to disconnect"), fr.Status.Message)
	})
}

func TestPlannedWaitsForResyncThenRestoresSource(t *testing.T) {
	source := []client.Object{groupCopyIn(testGroup, stopped, stopped), withPeer("node-a", sec, sec, false, "Connecting", "Unknown", 1<<20), node("node-a", false)}
	target := []client.Object{groupCopyIn(testGroup, stopped, stopped), withPeer("node-b", sec, sec, true, "Connecting", "Unknown", 0), node("node-b", false)}

	t.Run("within drainTimeoutSeconds: waits, giving the bytes out of sync", func(t *testing.T) {
		f := newFixture(phaseCase{phase: srv1alpha1.FailoverWaitingForDRBD, since: time.Minute,
			primary: cluster{objs: source}, dr: cluster{objs: target}})
		fr := reconcileOnce(t, f, nil)
		require.Equal(t, srv1alpha1.FailoverWaitingForDRBD, fr.Status.Phase)
		require.Contains(t, fr.Status.Message, "vm-web 1048576 bytes out of sync (disconnected)")
		require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "a promotable target is not promoted while the source has data to send")
	})
	t.Run("after it: the source is made Primary again before the group restarts there", func(t *testing.T) {
		f := newFixture(phaseCase{phase: srv1alpha1.FailoverWaitingForDRBD, since: 10 * time.Minute,
			primary: cluster{objs: source}, dr: cluster{objs: target}})
		fr := reconcileOnce(t, f, func(fr *srv1alpha1.FailoverRequest) {
			// The drain is timed from the stop on the source.
			at := fr.Status.PhaseHistory[0].Time
			fr.Status.PhaseHistory = append(fr.Status.PhaseHistory[:1], srv1alpha1.PhaseTransition{Phase: string(srv1alpha1.FailoverStoppingOnSource), Time: at},
				fr.Status.PhaseHistory[1])
			require.NoError(t, f.quorum.Status().Update(f.ctx, fr))
		})
		require.Equal(t, srv1alpha1.FailoverWaitingForDRBD, fr.Status.Phase)
		require.Contains(t, fr.Status.Message, "drain timeout: waiting for DRBD on primary to be Primary again")
		src := f.drbd(t, primary)
		require.Equal(t, pri, src.Spec.Role)
		require.Equal(t, srv1alpha1.QuorumForRole(pri), src.Spec.Quorum)
		require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState, "not restarted before DRBD is Primary there")
		require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role)

		// DRBD reports the source Primary: the group restarts and the request fails.
		d := f.drbd(t, primary)
		d.Status.Role = string(pri)
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, d))
		fr = reconcileOnce(t, f, nil)
		require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase)
		require.Equal(t, srv1alpha1.ReasonTargetNotUpToDate, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
		require.Contains(t, fr.Status.Message, "did not become UpToDate within drainTimeoutSeconds=300; vm-web 1048576 bytes out of sync (disconnected)")
		require.Equal(t, running, f.groupCopy(t, primary).Spec.DesiredState)
	})
}
