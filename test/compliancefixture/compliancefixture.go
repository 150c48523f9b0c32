// Package compliancefixture writes one group's compliance records (RPOEvents,
// drills, a failover, optionally a DRPC's relocate), with their statuses as
// the controllers write them, for the tests of the compliance report's
// consumers: the CLI's report and quorum-manager's metrics read the same
// objects and check the same figures.
//
// Times count from the group's creation (set by the API server), c0. Measured
// at c0+10h, the group's RPO is met 80 % of the time: an episode before the
// group (ignored), one resolved hour (db-1), one active hour (db-2).
package compliancefixture

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Names and figures the tests look for.
const (
	Group            = "db"
	VM               = "db-vm"
	ObjectiveSeconds = 120
	// Now is when the figures below hold, after c0.
	Now = 10 * time.Hour
	// MetRatio is the share of [c0, c0+Now] the lag was within the objective.
	MetRatio = 0.8
	// Worst is the worst episode: active at Now, for an hour, peak 1200 s.
	Worst         = "db-2"
	WorstPeakLag  = 1200
	Episodes      = 2
	ScheduledTest = "db-drill-1"
	// ScheduledEnd is when the scheduled drill, which passed, ended.
	ScheduledEnd = 3*time.Hour + 5*time.Minute
	// ScheduledRTOSeconds is the scheduled drill's RTO: its start to its last check.
	ScheduledRTOSeconds = 95.0
	// ManualTest is the newer drill, unlabelled, which failed its probe: it
	// has no RTO.
	ManualTest = "db-manual"
	Failover   = "db-to-dr"
	// FailoverRTOSeconds is the failover's RTO: its first phase to Completed.
	FailoverRTOSeconds = 47.125
	// DRPC, written with Options.DRPC, relocated the group back to primary
	// after the failover: from DRPCStart, in DRPCRTOSeconds.
	DRPC           = "db-drpc"
	DRPCStart      = 5 * time.Hour
	DRPCRTOSeconds = 61.5
)

// Options vary the group.
type Options struct {
	// Drill is the group's spec.drill.
	Drill *srv1alpha1.DrillSchedule
	// DRPC adds a DRPlacementControl of the group that finished a Relocate
	// after the FailoverRequest, and one of another group that is failing
	// over.
	DRPC bool
}

// Write creates namespace ns, the group and its records, and returns the
// group as created (its creation time is c0).
func Write(ctx context.Context, c client.Client, ns string, o Options) (*srv1alpha1.ProtectionGroup, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Group},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: VM}}, Drill: o.Drill}}
	pg.Spec.Replication.RPOObjectiveSeconds = ObjectiveSeconds
	if err := c.Create(ctx, pg); err != nil {
		return nil, err
	}
	w := &writer{ctx: ctx, c: c, ns: ns, c0: pg.CreationTimestamp.Time}
	w.episode("db-before", -3*time.Hour, w.atp(-2*time.Hour), 9000) // before the group: outside what is measured
	w.episode("db-1", time.Hour, w.atp(2*time.Hour), 900)
	w.episode(Worst, 9*time.Hour, nil, WorstPeakLag)
	w.drill(ScheduledTest, true, 3*time.Hour, srv1alpha1.TestFailoverSucceeded,
		w.check("VMReady", true, 3*time.Hour+40*time.Second), w.check("Probe", true, 3*time.Hour+95*time.Second))
	w.drill(ManualTest, false, 6*time.Hour, srv1alpha1.TestFailoverFailed,
		w.check("VMReady", true, 6*time.Hour+30*time.Second), w.check("Probe", false, 6*time.Hour+90*time.Second))
	w.failover()
	if o.DRPC {
		w.drpc(DRPC, Group, drv1alpha1.ActionRelocate, drv1alpha1.DRStateRelocated, DRPCStart, time.Duration(DRPCRTOSeconds*float64(time.Second)))
		w.drpc("web-drpc", "web", drv1alpha1.ActionFailover, drv1alpha1.DRStateFailingOver, 7*time.Hour, 0)
	}
	return pg, w.err
}

// writer creates objects until the first error, which Write returns.
type writer struct {
	ctx context.Context
	c   client.Client
	ns  string
	c0  time.Time
	err error
}

func (w *writer) at(d time.Duration) metav1.Time   { return metav1.NewTime(w.c0.Add(d)) }
func (w *writer) atp(d time.Duration) *metav1.Time { t := w.at(d); return &t }

// create creates obj, then writes status (set by setStatus) on it.
func (w *writer) create(obj client.Object, setStatus func()) {
	if w.err != nil {
		return
	}
	if w.err = w.c.Create(w.ctx, obj); w.err != nil {
		return
	}
	setStatus()
	w.err = w.c.Status().Update(w.ctx, obj)
}

func (w *writer) episode(name string, start time.Duration, end *metav1.Time, peak int64) {
	ev := &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: srv1alpha1.RPOEventSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: Group}, RPOObjectiveSeconds: ObjectiveSeconds, StartTime: w.at(start)}}
	w.create(ev, func() {
		ev.Status = srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventActive, PeakLagSeconds: peak}
		if end != nil {
			ev.Status.State, ev.Status.EndTime = srv1alpha1.RPOEventResolved, end
		}
	})
}

func (w *writer) check(check string, passed bool, d time.Duration) srv1alpha1.CheckResult {
	return srv1alpha1.CheckResult{VM: VM, Check: check, Passed: passed, Message: check + " verdict", Time: w.atp(d)}
}

func (w *writer) drill(name string, scheduled bool, start time.Duration, phase srv1alpha1.TestFailoverPhase, results ...srv1alpha1.CheckResult) {
	tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: Group}, TargetCluster: "dr"}}
	if scheduled {
		// As the drill controller creates them: labelled, and the slot named.
		tf.Labels = map[string]string{srv1alpha1.DrillLabel: Group}
		tf.Annotations = map[string]string{srv1alpha1.DrillScheduledTimeAnnotation: w.atp(start).UTC().Format(time.RFC3339)}
	}
	w.create(tf, func() {
		tf.Status = srv1alpha1.TestFailoverStatus{Phase: phase, StartTime: w.atp(start), CompletionTime: w.atp(start + 5*time.Minute), Results: results}
	})
}

func (w *writer) failover() {
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: Failover},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: Group}, TargetCluster: "dr",
			FailoverType: srv1alpha1.FailoverPlanned}}
	phase := func(p srv1alpha1.FailoverPhase, d time.Duration) srv1alpha1.PhaseTransition {
		return srv1alpha1.PhaseTransition{Phase: string(p), Time: metav1.NewMicroTime(w.c0.Add(d))}
	}
	w.create(fr, func() {
		fr.Status = srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverCompleted, CompletionTime: w.atp(4*time.Hour + 48*time.Second),
			PhaseHistory: []srv1alpha1.PhaseTransition{phase(srv1alpha1.FailoverPending, 4*time.Hour),
				phase(srv1alpha1.FailoverStoppingOnSource, 4*time.Hour+500*time.Millisecond),
				phase(srv1alpha1.FailoverStartingOnTarget, 4*time.Hour+12*time.Second),
				phase(srv1alpha1.FailoverCompleted, 4*time.Hour+47125*time.Millisecond)}}
	})
}

// drpc writes a DRPC of group whose action started at start and, when took
// is not zero, finished took later, as internal/quorum/drpc records it.
func (w *writer) drpc(name, group string, action drv1alpha1.DRAction, phase drv1alpha1.DRState, start, took time.Duration) {
	d := &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: group},
			DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "policy"}, PreferredCluster: "primary", FailoverCluster: "dr", Action: action,
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": group}}}}
	w.create(d, func() {
		d.Status = drv1alpha1.DRPlacementControlStatus{Phase: phase, ActionStartTime: w.atp(start)}
		if took != 0 {
			d.Status.ActionDuration = &metav1.Duration{Duration: took}
		}
	})
}
