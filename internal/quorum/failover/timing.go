package failover

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// clocks splits the time of each request's phases between waiting on the
// workload clusters, being held, and the control plane. It remembers, per
// request, how its last reconcile ended: the time until the next reconcile
// is charged to what it waited for. Nothing is written for it: the split of a
// phase goes into the status with the write its end makes anyway
// (status.phaseTimings); a restarted quorum-manager starts again from there,
// and what the current phase waited before the restart counts as control
// plane.
type clocks struct {
	mu sync.Mutex
	m  map[types.UID]*phaseClock
}

// phaseClock is what one request's reconciles waited for, per phase.
type phaseClock struct {
	phase    srv1alpha1.FailoverPhase
	endedAt  time.Time
	waitedOn waitKind
	workload map[string]time.Duration
	held     map[string]time.Duration
}

type waitKind int

const (
	notWaiting waitKind = iota
	onWorkload
	held
)

// begin charges the time since the request's last reconcile ended to what
// that reconcile waited for.
func (c *clocks) begin(fr *srv1alpha1.FailoverRequest, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.get(fr)
	if pc.endedAt.IsZero() || pc.phase != fr.Status.Phase {
		return
	}
	switch d := now.Sub(pc.endedAt); pc.waitedOn {
	case onWorkload:
		pc.workload[string(pc.phase)] += d
	case held:
		pc.held[string(pc.phase)] += d
	}
}

// end notes how a reconcile ended and, when the request entered a phase
// (its status is written then), puts the split of every finished phase into
// its status.
func (c *clocks) end(s *scope, err error, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.get(s.req)
	pc.phase, pc.endedAt, pc.waitedOn = s.req.Status.Phase, now, waitOf(err)
	if len(s.req.Status.PhaseHistory) != len(s.before.Status.PhaseHistory) {
		s.req.Status.PhaseTimings = pc.timings(s.req.Status.PhaseHistory, s.req.Status.Boot)
	}
}

// forget drops a finished or deleted request.
func (c *clocks) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
}

// get is the request's clock, seeded from its status after a restart.
func (c *clocks) get(fr *srv1alpha1.FailoverRequest) *phaseClock {
	if c.m == nil {
		c.m = map[types.UID]*phaseClock{}
	}
	pc := c.m[fr.UID]
	if pc == nil {
		pc = &phaseClock{workload: map[string]time.Duration{}, held: map[string]time.Duration{}}
		for _, t := range fr.Status.PhaseTimings {
			pc.workload[t.Phase] = time.Duration(t.WorkloadMilliseconds) * time.Millisecond
			pc.held[t.Phase] = time.Duration(t.HeldMilliseconds) * time.Millisecond
		}
		c.m[fr.UID] = pc
	}
	return pc
}

// timings is the split of each finished phase of history: each lasted until
// the next was entered. StartingOnTarget is split across the stages of the
// boot the request followed, too (stageTimings).
func (pc *phaseClock) timings(history []srv1alpha1.PhaseTransition, boot *srv1alpha1.BootStatus) []srv1alpha1.PhaseTiming {
	var out []srv1alpha1.PhaseTiming
	for i := 0; i+1 < len(history); i++ {
		phase := history[i].Phase
		total := history[i+1].Time.Sub(history[i].Time.Time)
		w, h := min(pc.workload[phase], total), pc.held[phase]
		h = min(h, total-w)
		pt := srv1alpha1.PhaseTiming{Phase: phase, WorkloadMilliseconds: w.Milliseconds(),
			HeldMilliseconds: h.Milliseconds(), ControlPlaneMilliseconds: (total - w - h).Milliseconds()}
		if phase == string(srv1alpha1.FailoverStartingOnTarget) {
			pt.Stages = stageTimings(boot, history[i+1].Time.Time)
		}
		out = append(out, pt)
	}
	return out
}

// waitOf is what a reconcile that ended with err waits for: the workload
// clusters when they have yet to act (VMs, DRBD, pg-controller) or to answer,
// held for a wait only time or an operator ends.
func waitOf(err error) waitKind {
	e := flow.As(err)
	if e == nil || e.Kind != flow.KindWaiting {
		return notWaiting
	}
	switch e.Reason {
	case srv1alpha1.ReasonProgressing, srv1alpha1.ReasonClusterUnreachable:
		return onWorkload
	default:
		return held
	}
}
