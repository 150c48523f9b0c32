package failover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler executes FailoverRequests.
type Reconciler struct {
	Client   client.Client
	Remote   *remote.Manager
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *Metrics

	remoteEvents *remote.Requests
	// progress spaces out the writes of waiting messages alone.
	progress *flow.Throttle
	// asked holds the DRBD roles set in the last seconds.
	asked askedRoles
}

// progressInterval is the least time between two status writes of a request
// that change only its waiting message: in a large group the message changes
// with every replica or VM that moves.
const progressInterval = time.Second

// SetupWithManager registers the controller and its remote watches: changes of
// ProtectionGroups and DRBDResources on the workload clusters, and of failover
// Leases, wake the requests that wait on them, so no phase waits for a tick.
func SetupWithManager(mgr ctrl.Manager, rm *remote.Manager) error {
	r := &Reconciler{Client: mgr.GetClient(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock: clock.RealClock{}, Metrics: defaultMetrics, remoteEvents: remote.NewRequests(1024),
		progress: flow.NewThrottle(progressInterval)}
	rm.Watch(&srv1alpha1.ProtectionGroup{}, r.activeRequestsOfRemote, r.remoteEvents.Send)
	rm.Watch(&srv1alpha1.DRBDResource{}, r.activeRequestsOfRemote, r.remoteEvents.Send)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.FailoverRequest{}).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.requestsOfLease)).
		// A DRPC change wakes the requests of its group that mirror it.
		Watches(&drv1alpha1.DRPlacementControl{}, handler.EnqueueRequestsFromMapFunc(r.requestsOfDRPC)).
		WatchesRawSource(r.remoteEvents.Source()).
		Complete(r)
}

// Reconcile advances one request by as many phases as it can.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fr := &srv1alpha1.FailoverRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, fr); err != nil {
		if apierrors.IsNotFound(err) {
			r.progress.Forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{req: fr, before: fr.DeepCopy(), now: r.Clock.Now()}
	if terminal(fr.Status.Phase) {
		// A crash between the final status write and the release leaves the Lease
		// held; release it now.
		return ctrl.Result{}, r.release(ctx, fr, fr.Spec.ProtectionGroupRef.Name)
	}
	if fr.Status.Phase == "" {
		s.enter(srv1alpha1.FailoverPending, "waiting for the failover lock of group %s", fr.Spec.ProtectionGroupRef.Name)
	}

	res, err := r.advance(ctx, s)
	held, werr := r.writeStatus(ctx, s)
	if werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if held > 0 {
		res = ptr.To(min(ptr.Deref(res, held), held))
	}
	r.Metrics.progress(s.req)
	if terminal(s.req.Status.Phase) {
		r.Metrics.observe(s)
		r.progress.Forget(req.String())
		if rerr := r.release(ctx, s.req, s.req.Spec.ProtectionGroupRef.Name); rerr != nil {
			return ctrl.Result{}, rerr
		}
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	// Renew the Lease well before it expires, and re-check timeouts, even when no
	// watched object changes.
	return ctrl.Result{RequeueAfter: min(ptr.Deref(res, renewEvery), renewEvery)}, nil
}

// advance runs the current phase and, whenever a phase completes, the next one.
func (r *Reconciler) advance(ctx context.Context, s *scope) (*time.Duration, error) {
	for range 8 {
		phase := s.req.Status.Phase
		if phase != srv1alpha1.FailoverPending && !terminal(phase) && r.lockLost(ctx, s) {
			return nil, nil
		}
		var wait *time.Duration
		var err error
		switch {
		case phase == srv1alpha1.FailoverPending:
			wait, err = r.pending(ctx, s)
		case !terminal(phase) && onDRPCPath(s):
			// Offloaded and VolSync groups: mirror the DRPlacementControl (drpc.go).
			wait, err = r.mirrorDRPC(ctx, s)
		case phase == srv1alpha1.FailoverStoppingOnSource:
			wait, err = r.stoppingOnSource(ctx, s)
		case phase == srv1alpha1.FailoverWaitingForDRBD:
			wait, err = r.waitingForDRBD(ctx, s)
		case phase == srv1alpha1.FailoverStartingOnTarget:
			wait, err = r.startingOnTarget(ctx, s)
		default:
			return nil, nil
		}
		if err != nil || s.req.Status.Phase == phase {
			return wait, err
		}
	}
	return nil, nil
}

// lockLost renews the group's Lease for a working request. It fails the request
// when another request holds the Lease (only possible after this one's Lease
// expired, e.g. quorum-manager was down longer than the TTL): two requests must
// never drive one group.
func (r *Reconciler) lockLost(ctx context.Context, s *scope) bool {
	group := s.req.Spec.ProtectionGroupRef.Name
	lock, err := r.acquire(ctx, s.req, group, s.now, r.holderDone(ctx, s.req.Namespace))
	if err != nil || lock.held {
		return false // a failed renewal is retried; the Lease has minutes left
	}
	s.condition(srv1alpha1.ConditionLockAcquired, metav1.ConditionFalse, "LockLost",
		fmt.Sprintf("Lease %s is held by %s", srv1alpha1.FailoverLockName(group), lock.holder))
	s.fail("LockLost", "lost the lock of group %s to %s while in %s; this request stopped, check the group's state before retrying",
		group, lock.holder, s.req.Status.Phase)
	return true
}

// writeStatus writes the status when it changed. A change of the waiting
// message alone is held back to one write per progressInterval; it returns how
// long, and the reconcile after that writes the message then current.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (time.Duration, error) {
	s.req.Status.ObservedGeneration = s.req.Generation
	changed := !equality.Semantic.DeepEqual(s.before.Status, s.req.Status)
	key := client.ObjectKeyFromObject(s.req).String()
	if changed && len(s.events) == 0 && messageOnly(&s.before.Status, &s.req.Status) {
		if held := r.progress.Hold(key, s.now); held > 0 {
			return held, nil
		}
	}
	if err := flow.WriteStatus(ctx, r.Client, r.Recorder, s.req, changed, s.events); err != nil {
		return 0, err
	}
	if changed {
		r.progress.Written(key, s.now)
	}
	return 0, nil
}

// messageOnly reports whether two statuses differ in their message alone.
func messageOnly(before, after *srv1alpha1.FailoverRequestStatus) bool {
	b := before.DeepCopy()
	b.Message = after.Message
	return equality.Semantic.DeepEqual(*b, *after)
}

// loadGroupAndZone reads the quorum copy of the group and its zone.
func (r *Reconciler) loadGroupAndZone(ctx context.Context, s *scope) (reason string, err error) {
	ref := s.req.Spec.ProtectionGroupRef
	if ref.Namespace != "" && ref.Namespace != s.req.Namespace {
		return srv1alpha1.ReasonInvalidSpec, fmt.Errorf("protectionGroupRef.namespace %q must be the request's namespace %q: a DR namespace only fails over its own groups", ref.Namespace, s.req.Namespace)
	}
	s.group = &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.req.Namespace, Name: ref.Name}, s.group); err != nil {
		if apierrors.IsNotFound(err) {
			return srv1alpha1.ReasonGroupNotFound, fmt.Errorf("ProtectionGroup %s/%s not found", s.req.Namespace, ref.Name)
		}
		return "", err
	}
	if s.group.Spec.ZoneRef == nil {
		return srv1alpha1.ReasonInvalidSpec, fmt.Errorf("ProtectionGroup %s has no zoneRef", ref.Name)
	}
	s.zone = &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.req.Namespace, Name: s.group.Spec.ZoneRef.Name}, s.zone); err != nil {
		if apierrors.IsNotFound(err) {
			return srv1alpha1.ReasonInvalidSpec, fmt.Errorf("ProtectionZone %s of group %s not found", s.group.Spec.ZoneRef.Name, ref.Name)
		}
		return "", err
	}
	return "", nil
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
