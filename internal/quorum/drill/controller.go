package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "drill"

// conflictRequeue retries a status write that lost its optimistic lock.
const conflictRequeue = time.Second

// Event reasons on the group.
const (
	ReasonDrillStarted = "DrillStarted"
	ReasonDrillPassed  = "DrillPassed"
	ReasonDrillFailed  = "DrillFailed"
	ReasonDrillSkipped = "DrillSkipped"
)

// RBAC on the quorum cluster, in the DR namespace: the controller reads groups
// and writes their status, reads failover requests, creates the drills'
// TestFailovers (owned by the group, so update on its finalizers) and deletes
// the ones retention drops.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/status,verbs=get;update
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=testfailovers,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options tune the controller; the zero value is the default.
type Options struct {
	// Clock is what schedules are read against; the real clock if nil.
	Clock clock.PassiveClock
}

// Reconciler starts the scheduled drills of quorum ProtectionGroups.
type Reconciler struct {
	Client client.Client
	// Reader reads a drill's TestFailover past the cache: right after a
	// restart the cache may not hold the one created just before it.
	Reader   client.Reader
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
}

// SetupWithManager registers the controller. Groups wake it when their spec
// or annotations change, their drills when they move.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor(ControllerName), Clock: o.Clock}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.ProtectionGroup{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&srv1alpha1.TestFailover{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := o.GetLabels()[srv1alpha1.DrillLabel]
			return ok
		}))).
		Complete(r)
}

// Reconcile reads how the group's drills went, applies retention, starts the
// drill that is due and writes status.drill.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	g := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !g.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its drills go with it (owner references)
	}
	s := &scope{group: g, now: r.Clock.Now(), status: &srv1alpha1.DrillStatus{}}
	if g.Status.Drill != nil {
		s.status = g.Status.Drill.DeepCopy()
	}
	var next time.Time
	var runErr error
	if g.Spec.Drill != nil {
		next, runErr = r.run(ctx, s)
	} else {
		s.status = nil
	}
	// Written on an error too: the message says why no drill started; the
	// slot stays due and the error's retry starts it.
	if err := r.writeStatus(ctx, s); err != nil {
		if apierrors.IsConflict(err) && runErr == nil {
			return flow.After(conflictRequeue), nil
		}
		return ctrl.Result{}, errors.Join(runErr, err)
	}
	if runErr != nil {
		return ctrl.Result{}, runErr
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	// A millisecond past the slot, so that the reconcile finds it due.
	return ctrl.Result{RequeueAfter: max(next.Sub(s.now), 0) + time.Millisecond}, nil
}

// run does a reconcile of a group with spec.drill and returns when it is due
// next (zero: nothing scheduled).
func (r *Reconciler) run(ctx context.Context, s *scope) (time.Time, error) {
	d := s.group.Spec.Drill
	drills, err := r.drills(ctx, s.group)
	if err != nil {
		return time.Time{}, err
	}
	if err := r.observe(ctx, s, drills); err != nil {
		return time.Time{}, err
	}
	if err := r.retain(ctx, s, drills); err != nil {
		return time.Time{}, err
	}
	sched, invalid := parse(d.Schedule)
	if invalid != "" {
		// Not an error to retry: the spec must change, which wakes the group.
		s.status.NextScheduleTime = nil
		s.status.ObservedGeneration = s.group.Generation
		s.status.Message = invalid + msgScheduleInvalid
		return time.Time{}, nil
	}
	if d.Suspend {
		s.status.NextScheduleTime = nil
		s.status.ObservedGeneration = s.group.Generation
		s.status.Message = msgSuspended
		return time.Time{}, nil
	}
	if specMessage(s.status.Message) {
		s.status.Message = ""
	}
	due := s.due(sched)
	if s.now.Before(due) {
		return due, nil
	}
	slot := latestSlot(sched, due, s.now)
	if err := r.start(ctx, s, slot); err != nil {
		return time.Time{}, err
	}
	next := sched.Next(slot)
	s.status.NextScheduleTime = metaTime(next)
	return next, nil
}

// writeStatus writes status.drill when it changed (an update carrying the
// resourceVersion it read, so what pg-sync wrote meanwhile is never lost),
// then records the events.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	changed := !equality.Semantic.DeepEqual(s.group.Status.Drill, s.status)
	s.group.Status.Drill = s.status
	_, err := flow.NewStatusWriter(r.Client, r.Recorder).Write(ctx, s.group, flow.Change{Changed: changed, Events: s.events})
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("writing status.drill of group %s: %w", s.group.Name, err)
	}
	return err
}

// parse reads the schedule, or says why it cannot (admission refuses such a
// schedule; one admitted before the rule existed lands here).
func parse(schedule string) (cron.Schedule, string) {
	sched, err := srv1alpha1.ParseDrillSchedule(schedule)
	if err != nil {
		return nil, err.Error()
	}
	return sched, ""
}
