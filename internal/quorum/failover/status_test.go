package failover

import (
	"testing"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// The progress throttle holds back only writes that change what a wait
// reports; a wait shows its message both in status.message and on Ready.
func TestProgressOnly(t *testing.T) {
	fr := &srv1alpha1.FailoverRequest{}
	s := newScope(fr, time.Unix(1000, 0))
	s.trail.Enter(srv1alpha1.FailoverWaitingForDRBD, "moving DRBD primary")
	s.trail.Wait(srv1alpha1.ReasonProgressing, "waiting for DRBD: a, b")
	before := fr.Status.DeepCopy()

	s.trail.Wait(srv1alpha1.ReasonProgressing, "waiting for DRBD: b")
	if !progressOnly(before, &fr.Status) {
		t.Fatal("a new waiting message under the same reason is progress only")
	}
	s.trail.Wait(srv1alpha1.ReasonClusterUnreachable, "cannot reach target")
	if progressOnly(before, &fr.Status) {
		t.Fatal("a wait with another reason is a change to write at once")
	}
	fr.Status = *before.DeepCopy()
	s.trail.Enter(srv1alpha1.FailoverStartingOnTarget, "starting")
	if progressOnly(before, &fr.Status) {
		t.Fatal("a phase change is never progress only")
	}
}
