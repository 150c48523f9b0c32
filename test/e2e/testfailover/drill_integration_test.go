package testfailover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/drill"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// drillSlot is the slot of TestScheduledDrills' first drill; the drill of
// the next slot, an hour later, fails its probe. Both names are known
// before any test runs, so the job controller's stand-in reads that verdict
// without a race. The hour between them is far longer than a drill takes
// on a loaded machine: quorum-manager's clock runs on in real time, and a
// slot that came while the first drill still ran would be skipped.
var drillSlot = time.Now().UTC().Truncate(time.Minute).Add(3 * time.Hour)

func init() { probeVerdicts[drill.Name(group, drillSlot.Add(time.Hour))] = "fail" }

// TestScheduledDrills runs a group's drills through quorum-manager as
// deployed: the drill controller starts a TestFailover at each slot of the
// schedule (quorum-manager's clock is moved to just before it) and the
// test-failover controller runs it on the DR cluster. The first drill
// passes; the second fails its probe, which leaves lastSuccessfulTime at the
// first and says which check failed; keep=1 deletes the first.
func TestScheduledDrills(t *testing.T) {
	clk := &env.SteppedClock{}
	z := newZoneWith(t, 1, zoneOptions{quorum: setup.QuorumOptions{Clock: clk}})
	q := z.Client(env.Quorum)
	passing, failing := drill.Name(group, drillSlot), drill.Name(group, drillSlot.Add(time.Hour))

	// Ten seconds before the first slot.
	clk.Step(drillSlot.Add(-10 * time.Second).Sub(clk.Now()))
	g := z.quorumGroup()
	g.Spec.Drill = &srv1alpha1.DrillSchedule{Schedule: fmt.Sprintf("%d * * * *", drillSlot.Minute()), Keep: 1, Template: srv1alpha1.DrillTemplate{
		TargetCluster: env.DR, TimeoutSeconds: 600,
		Checks: srv1alpha1.VerificationChecks{Probe: &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeTCP, Port: 5432, TimeoutSeconds: 30}},
	}}
	require.NoError(t, q.Update(z.ctx, g))

	tf := z.waitDrill(passing, srv1alpha1.TestFailoverSucceeded)
	require.Equal(t, "sr-drill-production-pg-"+drillSlot.Format("200601021504"), tf.Status.IsolatedNamespace)
	var passedAt *metav1.Time
	z.waitDrillStatus("the first drill passed", func(st *srv1alpha1.DrillStatus) error {
		if st.LastDrill != passing || st.LastResult != srv1alpha1.DrillPassed || st.LastSuccessfulTime == nil {
			return fmt.Errorf("%+v", st)
		}
		passedAt = st.LastSuccessfulTime
		return nil
	})
	require.True(t, tf.Status.CompletionTime.Equal(passedAt), "lastSuccessfulTime is when the drill ended")

	// Five seconds before the next slot; a touch of the group makes the
	// controller requeue at it on the moved clock.
	clk.Step(drillSlot.Add(time.Hour - 5*time.Second).Sub(clk.Now()))
	z.touchGroup()
	tf = z.waitDrill(failing, srv1alpha1.TestFailoverFailed)
	z.waitDrillStatus("the second drill failed its probe", func(st *srv1alpha1.DrillStatus) error {
		if st.LastDrill != failing || st.LastResult != srv1alpha1.DrillFailed {
			return fmt.Errorf("%+v", st)
		}
		require.Equal(t, "drill "+failing+" failed: 1 of 2 check(s) failed: vm-00/Probe", st.Message)
		require.True(t, passedAt.Equal(st.LastSuccessfulTime), "lastSuccessfulTime stays the passed drill's")
		return nil
	})
	require.Len(t, tf.Status.Results, 2)
	env.Eventually(t, timeout, "keep=1 deletes the first drill", func() error {
		list := &srv1alpha1.TestFailoverList{}
		if err := q.List(z.ctx, list, client.MatchingLabels{srv1alpha1.DrillLabel: group}); err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != failing {
			return fmt.Errorf("%d drills left", len(list.Items))
		}
		return nil
	})
}

func (z *zone) quorumGroup() *srv1alpha1.ProtectionGroup {
	z.t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, g))
	return g
}

// touchGroup changes an annotation of the group, which wakes the drill
// controller as any change of the group's annotations does.
func (z *zone) touchGroup() {
	z.t.Helper()
	g := z.quorumGroup()
	patch := client.MergeFrom(g.DeepCopy())
	metav1.SetMetaDataAnnotation(&g.ObjectMeta, "test.siterecovery.trilio.io/touched", time.Now().Format(time.RFC3339Nano))
	require.NoError(z.t, z.Client(env.Quorum).Patch(z.ctx, g, patch))
}

// waitDrill waits for the drill to exist and end in phase.
func (z *zone) waitDrill(name string, phase srv1alpha1.TestFailoverPhase) *srv1alpha1.TestFailover {
	z.t.Helper()
	env.Eventually(z.t, timeout, "drill "+name+" started", func() error {
		return z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &srv1alpha1.TestFailover{})
	})
	return z.waitPhase(name, phase)
}

func (z *zone) waitDrillStatus(what string, ok func(*srv1alpha1.DrillStatus) error) {
	z.t.Helper()
	env.Eventually(z.t, timeout, what, func() error {
		st := z.quorumGroup().Status.Drill
		if st == nil {
			return fmt.Errorf("no status.drill")
		}
		return ok(st)
	})
}
