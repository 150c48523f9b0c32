package failover

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestReturnedClusterDiscardsDivergedWritesAndRejoins: primary, fenced off by
// request "uid-fence", returns with 64 KiB written while it was cut off. Once
// it has stood down, the divergence is reported (condition, Warning event),
// primary's replica discards its data once for this fencing, dr's replica
// lets it back in, and once it is UpToDate the record goes and Diverged
// turns False. dr's role is never touched. With HoldDivergedAnnotation the
// rejoin stops after the report, until the annotation goes.
func TestReturnedClusterDiscardsDivergedWritesAndRejoins(t *testing.T) {
	const token = "uid-fence"
	returned := replica("node-a", sec, sec, false)
	returned.Status.Peers[0].ConnectionState, returned.Status.Peers[0].PeerRole = "Connecting", "Unknown"
	returned.Status.Peers[0].Volumes[0].OutOfSyncBytes = 64 << 10
	returned.Status.Volumes = []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "Outdated"}}
	active := replica("node-b", pri, pri, false)
	active.Spec.FencedPeers = []string{"node-a"}
	c := phaseCase{
		primary: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), returned}},
		dr:      cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), active}}}
	setup := func(t *testing.T, annotations map[string]string) (*fixture, *StandDown) {
		f := newFixture(c)
		pg := f.quorumGroup(t)
		pg.Spec.ActiveCluster = drCluster
		pg.Annotations = map[string]string{srv1alpha1.FencedOffAnnotation: primary, srv1alpha1.FencedOffByAnnotation: token}
		for k, v := range annotations {
			pg.Annotations[k] = v
		}
		require.NoError(t, f.quorum.Update(f.ctx, pg))
		return f, &StandDown{Client: f.quorum, APIReader: f.quorum, Remote: f.remote, Recorder: f.events}
	}
	pass := func(t *testing.T, f *fixture, r *StandDown) {
		t.Helper()
		f.pgControllers(t)
		_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: testGroup}})
		require.NoError(t, err)
		f.pgControllers(t)
	}
	events := func(f *fixture) []string {
		var out []string
		for len(f.events.Events) > 0 {
			out = append(out, <-f.events.Events)
		}
		return out
	}
	diverged := func(t *testing.T, f *fixture) *metav1.Condition {
		t.Helper()
		return meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionDiverged)
	}
	// agentReads answers a reading asked of primary's replica, as its agent
	// does: the figure in its status becomes the current one.
	agentReads := func(t *testing.T, f *fixture) {
		d := f.drbd(t, primary)
		if d.Spec.StatusRequest == "" || d.Spec.StatusRequest == d.Status.StatusAnswered {
			return
		}
		d.Status.StatusAnswered = d.Spec.StatusRequest
		d.Status.StatusReadTime = &metav1.Time{Time: t0}
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, d))
	}
	// standDown passes until primary has stood down (stopped, Secondary)
	// and the divergence is reported.
	standDown := func(t *testing.T, f *fixture, r *StandDown) []string {
		t.Helper()
		var evs []string
		for range 4 {
			pass(t, f, r)
			evs = append(evs, events(f)...)
			d := diverged(t, f)
			if c := meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionStoodDown); c != nil && c.Status == metav1.ConditionTrue && d != nil && d.Status == metav1.ConditionTrue {
				return evs
			}
			if d != nil && d.Reason == srv1alpha1.ReasonMeasuringDivergence {
				require.Equal(t, metav1.ConditionUnknown, d.Status, "nothing is reported before the reading")
				require.Contains(t, d.Message, "primary returned: its drbd-node-agents are reading what DRBD there holds out of sync, for the report, before anything is discarded; not yet answered: vm-web")
				require.Empty(t, f.drbd(t, primary).Spec.DiscardData, "nor discarded")
				agentReads(t, f)
			}
		}
		t.Fatalf("primary did not stand down: %v", f.stoodDown(t))
		return nil
	}
	agentDiscards := func(t *testing.T, f *fixture) {
		d := f.drbd(t, primary)
		require.Equal(t, token, d.Spec.DiscardData, "the discard is asked once for this fencing")
		d.Status.DataDiscarded = token
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, d))
	}

	t.Run("discarded and resynced", func(t *testing.T) {
		f, r := setup(t, nil)
		evs := standDown(t, f, r)
		c := diverged(t, f)
		require.NotNil(t, c, "the divergence is reported")
		require.Equal(t, metav1.ConditionTrue, c.Status)
		require.Equal(t, srv1alpha1.ReasonDiscardingDiverged, c.Reason)
		for _, want := range []string{"primary returned with writes made while it was cut off from dr", "64Ki out of sync (apps/web 64Ki)", "they are discarded and primary resyncs from dr"} {
			require.Contains(t, c.Message, want)
		}
		report, _, _ := strings.Cut(c.Message, rejoinNow)
		require.Contains(t, evs, "Warning Diverged "+report, "and told in a Warning event")
		require.Equal(t, "rejoin-"+token, f.drbd(t, primary).Status.StatusAnswered, "from figures primary's agent read for the report")
		div := f.quorumGroup(t).Status.Divergence
		require.NotNil(t, div, "the figures are in the status, not only in a message")
		require.Equal(t, primary, div.Cluster)
		require.Equal(t, int64(64<<10), div.Bytes)
		require.Equal(t, []srv1alpha1.VMDivergence{{Name: "apps/web", Bytes: 64 << 10}}, div.VirtualMachines)
		gauge := func() float64 { return testutil.ToFloat64(divergedMetrics.bytes.WithLabelValues(testGroup, primary)) }
		require.Equal(t, float64(64<<10), gauge(), "the alert's gauge")
		// quorum-manager restarts: its gauge starts empty, and the next pass
		// sets it again from the status.
		divergedMetrics.reset(testGroup)
		pass(t, f, r)
		require.Equal(t, float64(64<<10), gauge(), "the gauge is set again after a restart")
		require.Equal(t, token, f.drbd(t, primary).Spec.DiscardData)
		require.Equal(t, []string{"node-a"}, f.drbd(t, drCluster).Spec.FencedPeers, "dr lets primary in only once it discarded")

		agentDiscards(t, f)
		pass(t, f, r)
		require.Empty(t, f.drbd(t, drCluster).Spec.FencedPeers, "dr lets primary back in")
		require.Contains(t, diverged(t, f).Message, "Now: primary discarded its diverged data and is resyncing from dr")
		require.NotEmpty(t, f.quorumGroup(t).Annotations[srv1alpha1.FencedOffAnnotation], "the record stays until the resync is done")

		d := f.drbd(t, primary)
		d.Status.Volumes[0].DiskState = "UpToDate"
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, d))
		pass(t, f, r)
		pg := f.quorumGroup(t)
		require.NotContains(t, pg.Annotations, srv1alpha1.FencedOffAnnotation)
		require.NotContains(t, pg.Annotations, srv1alpha1.FencedOffByAnnotation)
		c = diverged(t, f)
		require.Equal(t, metav1.ConditionFalse, c.Status)
		require.Equal(t, srv1alpha1.ReasonDivergedDiscarded, c.Reason)
		require.Contains(t, c.Message, "primary rejoined")
		require.Empty(t, f.drbd(t, primary).Spec.DiscardData, "the carried-out discard is cleared")
		require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role, "the active cluster keeps its role throughout")
		require.Equal(t, running, f.groupCopy(t, drCluster).Spec.DesiredState)
		require.Contains(t, events(f), "Normal DivergedDiscarded "+c.Message)

		pass(t, f, r)
		require.Nil(t, meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionStoodDown), "the stand-down ends with the record")
	})

	t.Run("held, then let go", func(t *testing.T) {
		f, r := setup(t, map[string]string{srv1alpha1.HoldDivergedAnnotation: "true"})
		standDown(t, f, r)
		c := diverged(t, f)
		require.Equal(t, srv1alpha1.ReasonDivergedHeld, c.Reason)
		require.Contains(t, c.Message, srv1alpha1.HoldDivergedAnnotation+"=true keeps them")
		require.Contains(t, f.stoodDown(t).Message, srv1alpha1.HoldDivergedAnnotation+"=true keeps the writes made there")
		before := f.versions(t)
		pass(t, f, r)
		require.Equal(t, before, f.versions(t), "nothing is discarded while held")
		require.Empty(t, f.drbd(t, primary).Spec.DiscardData)

		pg := f.quorumGroup(t)
		delete(pg.Annotations, srv1alpha1.HoldDivergedAnnotation)
		require.NoError(t, f.quorum.Update(f.ctx, pg))
		pass(t, f, r)
		c = diverged(t, f)
		require.Equal(t, srv1alpha1.ReasonDiscardingDiverged, c.Reason, "the report stays, the outcome changes")
		require.Contains(t, c.Message, "64Ki out of sync (apps/web 64Ki); they are discarded")
		agentDiscards(t, f)
	})
}
