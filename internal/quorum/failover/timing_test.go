package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// The split of a phase's time: what each reconcile waited for is charged
// until the next one, and the phase's split goes into the status when the
// request leaves it.
func TestPhaseTimings(t *testing.T) {
	var c clocks
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
	at := t0.Add
	// reconcile runs one reconcile from start to end that leaves the request
	// in phase (entering it at start when it is new) with err.
	reconcile := func(start, end time.Duration, phase srv1alpha1.FailoverPhase, err error) {
		c.begin(fr, at(start))
		s := newScope(fr, at(start))
		if phase != fr.Status.Phase {
			s.trail.Enter(phase, "entered")
		}
		c.end(s, err, at(end))
		fr = s.req
	}
	lock := flow.Waiting(srv1alpha1.ReasonLockHeld, 0, "locked")
	vms := flow.Waiting(srv1alpha1.ReasonProgressing, 0, "VMs stopping")
	reconcile(0, 10*time.Millisecond, srv1alpha1.FailoverPending, lock)
	reconcile(time.Second, 1010*time.Millisecond, srv1alpha1.FailoverStoppingOnSource, vms)
	require.Equal(t, []srv1alpha1.PhaseTiming{{Phase: "Pending", HeldMilliseconds: 990, ControlPlaneMilliseconds: 10}}, fr.Status.PhaseTimings)

	reconcile(3*time.Second, 3010*time.Millisecond, srv1alpha1.FailoverStoppingOnSource, vms)
	require.Len(t, fr.Status.PhaseTimings, 1, "written only when a phase ends")
	reconcile(4*time.Second, 4010*time.Millisecond, srv1alpha1.FailoverWaitingForDRBD, nil)
	require.Equal(t, srv1alpha1.PhaseTiming{Phase: "StoppingOnSource", WorkloadMilliseconds: 2980, ControlPlaneMilliseconds: 20}, fr.Status.PhaseTimings[1])

	// A restarted quorum-manager keeps the finished phases' split.
	c = clocks{}
	reconcile(5*time.Second, 5010*time.Millisecond, srv1alpha1.FailoverStartingOnTarget, nil)
	require.Equal(t, int64(2980), fr.Status.PhaseTimings[1].WorkloadMilliseconds)
	require.Equal(t, srv1alpha1.PhaseTiming{Phase: "WaitingForDRBD", ControlPlaneMilliseconds: 1000}, fr.Status.PhaseTimings[2])
}
