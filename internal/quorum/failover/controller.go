package failover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "failover"

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// requests, zones and groups, moves a group's active cluster and its DRPCs, holds
// one Lease per group as the failover lock, and writes request status.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests/finalizers,verbs=update
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/status,verbs=get;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols,verbs=get;list;watch;patch
// An unplanned request of a DRPC zone asks its DRPC for a Failover; the
// protectionzone chart's admission policy asks that write for the disaster
// right, which the request itself was checked for when it was created.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests/disaster,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler executes FailoverRequests.
type Reconciler struct {
	Client   client.Client
	Remote   remote.ClusterCache
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *Metrics
	// APIReader reads what the cache strips: the managedFields that say who
	// confirmed a fenced source. The cached Client when not set.
	APIReader client.Reader
	// Elapsed measures how long an agent's heartbeat Lease has not changed; it
	// must not jump with Clock. The real clock (its monotonic reading) if nil.
	Elapsed clock.PassiveClock

	// status writes the requests' status; its throttle spaces out the writes
	// of waiting messages alone. Made on first use when not set.
	status     *flow.StatusWriter
	statusOnce sync.Once
	// clocks split each request's phases between waiting on the workload
	// clusters, being held, and the control plane.
	clocks clocks
	// heartbeats are the agents' heartbeat Leases as last seen changing.
	heartbeats heartbeats
	// asked is the desiredState each request made sure of, per cluster.
	asked askedStates
}

// progressInterval is the least time between two status writes of a request
// that change only its waiting message: in a large group the message changes
// with every replica or VM that moves.
const progressInterval = time.Second

// Options tune the failover controller.
type Options struct {
	// Clock is what its timeouts and its Lease read the time from; the real
	// clock if nil.
	Clock clock.PassiveClock
}

// SetupWithManager registers the controller and its remote watches: changes of
// ProtectionGroups and DRBDResources on the workload clusters, and of failover
// Leases, wake the requests that wait on them, so no phase waits for a tick.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	r := &Reconciler{Client: mgr.GetClient(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock: o.Clock, Metrics: defaultMetrics, APIReader: mgr.GetAPIReader()}
	// A returned fenced-off cluster is stood down without a request (standdown.go).
	if err := setupStandDown(mgr, rm); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{RateLimiter: flow.RetryLimiter()}).
		For(&srv1alpha1.FailoverRequest{}).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.requestsOfLease)).
		// A DRPC change wakes the requests of its group that mirror it.
		Watches(&drv1alpha1.DRPlacementControl{}, handler.EnqueueRequestsFromMapFunc(r.requestsOfDRPC)).
		WatchesRawSource(rm.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
			{Object: &srv1alpha1.ProtectionGroup{}, Map: r.activeRequestsOfRemote},
			{Object: &srv1alpha1.DRBDResource{}, Map: r.activeRequestsOfRemote},
		}, Clusters: r.activeRequestsOfCluster})).
		Complete(r)
}

// Reconcile advances one request by as many phases as it can.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fr := &srv1alpha1.FailoverRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, fr); err != nil {
		if apierrors.IsNotFound(err) {
			r.statusWriter().Forget(req.String())
			r.asked.forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if terminal(fr.Status.Phase) {
		// A crash between the final status write and finish leaves the Lease held,
		// the history short or the finalizer on; finish is idempotent.
		return ctrl.Result{}, r.finish(ctx, fr)
	}
	if err := r.addFinalizer(ctx, fr); err != nil {
		return ctrl.Result{}, err
	}
	s := newScope(fr, r.Clock.Now())
	if fr.Status.Phase == "" {
		s.trail.Enter(srv1alpha1.FailoverPending, "waiting for the failover lock of group %s", fr.Spec.ProtectionGroupRef.Name)
	}

	r.clocks.begin(fr, s.now)
	var res ctrl.Result
	var err error
	if cancellable(s) {
		err = r.cancel(ctx, s)
	} else {
		res, err = r.runner().Run(ctx, s)
	}
	r.clocks.end(s, err, r.Clock.Now())
	held, werr := r.writeStatus(ctx, s)
	if werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	res = flow.Soonest(res, flow.After(held))
	if !s.wake.IsZero() {
		res = flow.Soonest(res, flow.After(max(s.wake.Sub(s.now), time.Millisecond)))
	}
	r.Metrics.progress(s.req)
	if terminal(s.req.Status.Phase) {
		r.Metrics.observe(s)
		r.statusWriter().Forget(req.String())
		r.clocks.forget(s.req.UID)
		r.asked.forget(req.String())
		return ctrl.Result{}, r.finish(ctx, s.req)
	}
	if res, err = flow.Result(res, err); err != nil {
		return ctrl.Result{}, err
	}
	// Renew the Lease well before it expires, and re-check timeouts, even when no
	// watched object changes.
	if res.RequeueAfter <= 0 || res.RequeueAfter > renewEvery {
		res.RequeueAfter = renewEvery
	}
	return res, nil
}

// finish ends a finished request: its outcome goes into the group's history,
// its Lease is released, and its finalizer removed, in that order, so that a
// deleted request disappears only once nothing of it is lost.
func (r *Reconciler) finish(ctx context.Context, fr *srv1alpha1.FailoverRequest) error {
	if err := r.recordHistory(ctx, fr); err != nil {
		return err
	}
	if err := r.release(ctx, fr, fr.Spec.ProtectionGroupRef.Name); err != nil {
		return err
	}
	return r.removeFinalizer(ctx, fr)
}

// runner runs the step of the request's phase and, whenever a step completes
// its phase, the next one. Waits and failures are typed flow errors, shown on
// the request by its trail.
func (r *Reconciler) runner() flow.Runner[*scope, srv1alpha1.FailoverPhase] {
	return flow.Runner[*scope, srv1alpha1.FailoverPhase]{
		Phase:  func(s *scope) srv1alpha1.FailoverPhase { return s.req.Status.Phase },
		Step:   r.step,
		Report: func(s *scope, err error) { s.trail.Report(err) },
		Limit:  8,
	}
}

// step is the step of the request's phase. A working request renews its Lease
// first.
func (r *Reconciler) step(s *scope) flow.Phase[*scope] {
	var step flow.Phase[*scope]
	switch phase := s.req.Status.Phase; {
	case phase == srv1alpha1.FailoverPending:
		return r.pending
	case terminal(phase):
		return nil
	case onDRPCPath(s):
		// Offloaded and VolSync groups: mirror the DRPlacementControl (drpc.go).
		step = r.mirrorDRPC
	case phase == srv1alpha1.FailoverFreezingOnSource:
		step = r.freezingOnSource
	case phase == srv1alpha1.FailoverStoppingOnSource:
		step = r.stoppingOnSource
	case phase == srv1alpha1.FailoverWaitingForDRBD:
		step = r.waitingForDRBD
	case phase == srv1alpha1.FailoverStartingOnTarget:
		step = r.startingOnTarget
	default:
		return nil
	}
	return func(ctx context.Context, s *scope) (ctrl.Result, error) {
		if r.lockLost(ctx, s) {
			return ctrl.Result{}, nil
		}
		if err := r.holdForUnreachable(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		return step(ctx, s)
	}
}

// lockLost renews the group's Lease for a working request. It fails the request
// when another request holds the Lease: two requests must never drive one
// group. Another request cannot take the Lease from one that started moving
// the group, even expired (acquire); this is left for a Lease someone else
// rewrote.
func (r *Reconciler) lockLost(ctx context.Context, s *scope) bool {
	group := s.req.Spec.ProtectionGroupRef.Name
	lock, err := r.acquire(ctx, s.req, group, s.now, r.holderDone(ctx, s.req.Namespace))
	if err != nil || lock.held {
		return false // a failed renewal is retried; the Lease has minutes left
	}
	s.trail.Condition(srv1alpha1.ConditionLockAcquired, metav1.ConditionFalse, "LockLost",
		fmt.Sprintf("Lease %s is held by %s", srv1alpha1.FailoverLockName(group), lock.holder))
	s.trail.Fail("LockLost", "lost the lock of group %s to %s while in %s; this request stopped, check the group's state before retrying",
		group, lock.holder, s.req.Status.Phase)
	return true
}

// writeStatus writes the status when it changed. A change of what a wait
// reports alone is held back to one write per progressInterval; it returns how
// long, and the reconcile after that writes the message then current.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (time.Duration, error) {
	s.req.Status.ObservedGeneration = s.req.Generation
	changed := !equality.Semantic.DeepEqual(s.before.Status, s.req.Status)
	out, err := r.statusWriter().Write(ctx, s.req, flow.Change{
		Changed:  changed,
		Events:   s.trail.Events,
		At:       s.now,
		Progress: flow.Progress{Only: changed && progressOnly(&s.before.Status, &s.req.Status)},
	})
	return out.Hold, err
}

func (r *Reconciler) statusWriter() *flow.StatusWriter {
	r.statusOnce.Do(func() {
		if r.status == nil {
			r.status = flow.NewStatusWriter(r.Client, r.Recorder, flow.WithPacer(flow.NewThrottle(progressInterval)))
		}
	})
	return r.status
}

// loadGroupAndZone reads the quorum copy of the group and its zone, once per
// reconcile: the checks before a phase and the phase itself all ask for them,
// and a phase that writes the group keeps the copy its write returned. A
// reference that cannot be resolved is a Stalled error: the request fails.
func (r *Reconciler) loadGroupAndZone(ctx context.Context, s *scope) error {
	ref := s.req.Spec.ProtectionGroupRef
	if ref.Namespace != "" && ref.Namespace != s.req.Namespace {
		return flow.Stalled(srv1alpha1.ReasonInvalidSpec, "protectionGroupRef.namespace %q must be the request's namespace %q: a DR namespace only fails over its own groups", ref.Namespace, s.req.Namespace)
	}
	if s.loaded {
		return nil
	}
	s.group = &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.req.Namespace, Name: ref.Name}, s.group); err != nil {
		if apierrors.IsNotFound(err) {
			return flow.Stalled(srv1alpha1.ReasonGroupNotFound, "ProtectionGroup %s/%s not found", s.req.Namespace, ref.Name)
		}
		return err
	}
	if s.group.Spec.ZoneRef == nil {
		return flow.Stalled(srv1alpha1.ReasonInvalidSpec, "ProtectionGroup %s has no zoneRef", ref.Name)
	}
	s.zone = &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.req.Namespace, Name: s.group.Spec.ZoneRef.Name}, s.zone); err != nil {
		if apierrors.IsNotFound(err) {
			return flow.Stalled(srv1alpha1.ReasonInvalidSpec, "ProtectionZone %s of group %s not found", s.group.Spec.ZoneRef.Name, ref.Name)
		}
		return err
	}
	s.loaded = true
	return nil
}

// holderDone reports whether the request named by a Lease holder identity has
// finished or no longer exists, so that its Lease can be taken over at once.
func (r *Reconciler) holderDone(ctx context.Context, namespace string) func(string) bool {
	return func(holder string) bool {
		parts := strings.Split(holder, "/")
		if len(parts) != 3 || parts[0] != "FailoverRequest" {
			return false
		}
		other := &srv1alpha1.FailoverRequest{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: parts[1]}, other); err != nil {
			return apierrors.IsNotFound(err)
		}
		return string(other.UID) != parts[2] || terminal(other.Status.Phase)
	}
}
