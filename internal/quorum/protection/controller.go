package protection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "protection"

// unreachableRetry is how long the controller waits before retrying a workload
// cluster that is not connected; zone health changes wake it earlier.
const unreachableRetry = 5 * time.Second

// Options tune the controller.
type Options struct {
	// HolderImage is the replica holder pod's image; DefaultHolderImage if empty.
	HolderImage string
	// Clock decides the initial sync timeout; the real clock if nil.
	Clock clock.PassiveClock
	// ClaimRecheckInterval is how often a Protected request re-checks its
	// DRBD claims; ClaimRecheckInterval if zero.
	ClaimRecheckInterval time.Duration
	// AllowedNamespaces are the application namespaces whose VMs the DR
	// namespace may protect; nil checks nothing, empty allows none
	// (checkNamespaceAllowed).
	AllowedNamespaces []string
}

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// requests, zones and FailoverRequests, keeps its finalizer on requests and
// writes their status, and creates and patches the quorum ProtectionGroups.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionrequests,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionrequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler drives ProtectionRequests of one DR namespace.
type Reconciler struct {
	// Client reads and writes the quorum cluster (cached reads).
	Client client.Client
	// APIReader reads the quorum cluster without the cache, for allocation.
	APIReader client.Reader
	Remote    remote.ClusterCache
	Recorder  record.EventRecorder
	Options   Options

	// rechecks schedules the claim re-checks of Protected requests.
	rechecks claimRechecks
}

// Reconcile runs the request's current phase and every following one that can
// complete now, persisting the status at each phase boundary.
func (r *Reconciler) Reconcile(ctx context.Context, in ctrl.Request) (ctrl.Result, error) {
	req := &srv1alpha1.ProtectionRequest{}
	if err := r.Client.Get(ctx, in.NamespacedName, req); err != nil {
		if apierrors.IsNotFound(err) {
			defaultMetrics.forget(in.Name)
			r.rechecks.forget(in.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// req is the scope's request: the deferred call sees its last status.
	defer defaultMetrics.publish(req)
	if !req.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, req)
	}
	// Before anything exists on a workload cluster; requests made before the
	// finalizer existed get it too, so that deleting them removes protection.
	if err := r.ensureFinalizer(ctx, req); err != nil {
		return ctrl.Result{}, err
	}
	if terminal(req.Status.Phase) {
		if req.Status.Phase == srv1alpha1.ProtectionProtected && r.peerAuthDue(req) {
			// Retried at the next periodic check when a cluster does not answer.
			r.periodicCheck(ctx, req)
		}
		return r.recheckClaim(ctx, req)
	}
	s := newScope(req, r.now())
	if req.Status.Phase == "" || req.Status.Phase == srv1alpha1.ProtectionPending {
		s.req.Status.StartTime = &metav1.Time{Time: s.now}
		if req.Status.Phase == "" {
			s.trail.Enter(srv1alpha1.ProtectionPending, "request accepted")
		}
		s.trail.Enter(srv1alpha1.ProtectionValidating, "validating the VM, its disks and the zone")
		if err := r.persist(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	res, err := r.runner().Run(ctx, s)
	if perr := r.persist(ctx, s); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	if s.trail.Terminal() {
		return r.firstRecheck(req), nil
	}
	return flow.Result(flow.Soonest(res, flow.After(s.requeueAfter)), err)
}

// runner runs the step of the request's phase and every following one that can
// complete now; handleError shows a step's error on the request.
func (r *Reconciler) runner() flow.Runner[*scope, srv1alpha1.ProtectionPhase] {
	steps := map[srv1alpha1.ProtectionPhase]flow.Phase[*scope]{
		srv1alpha1.ProtectionValidating:            r.validate,
		srv1alpha1.ProtectionProvisioningTarget:    r.provisionTarget,
		srv1alpha1.ProtectionCreatingReplication:   r.createReplication,
		srv1alpha1.ProtectionWaitingForInitialSync: r.waitInitialSync,
		srv1alpha1.ProtectionSwitchingFrontend:     r.switchFrontend,
		srv1alpha1.ProtectionAddingToGroup:         r.addToGroup,
	}
	return flow.Runner[*scope, srv1alpha1.ProtectionPhase]{
		Phase: func(s *scope) srv1alpha1.ProtectionPhase { return s.req.Status.Phase },
		Step: func(s *scope) flow.Phase[*scope] {
			st := steps[s.req.Status.Phase]
			if st == nil {
				return nil
			}
			return func(ctx context.Context, s *scope) (ctrl.Result, error) {
				if err := r.load(ctx, s); err != nil {
					return ctrl.Result{}, err
				}
				res, err := st(ctx, s)
				return res, r.unreachable(s, err, "protection")
			}
		},
		Report: r.handleError,
	}
}

// advance ends a phase's step: it enters next and persists the status at that
// phase boundary, so that a reconcile after a crash resumes in next and never
// redoes an allocation. A step that waits leaves the phase as it is, with the
// wait on its trail.
func (r *Reconciler) advance(ctx context.Context, s *scope, next srv1alpha1.ProtectionPhase) (ctrl.Result, error) {
	if next == srv1alpha1.ProtectionProtected {
		r.complete(s)
	} else {
		s.trail.Enter(next, "entered %s", next)
	}
	return ctrl.Result{}, r.persist(ctx, s)
}

// complete marks the request Protected.
func (r *Reconciler) complete(s *scope) {
	s.trail.Enter(srv1alpha1.ProtectionProtected, "VM %s/%s is protected in group %s",
		s.req.Spec.VirtualMachine.Namespace, s.req.Spec.VirtualMachine.Name, s.req.Spec.ProtectionGroupRef.Name)
	setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonProtected,
		"VM is replicated to %s and member of group %s", s.target, s.req.Spec.ProtectionGroupRef.Name)
}

// handleError turns a step error into the request's status: terminal errors fail
// the request, others leave Ready=False with the reason until the retry.
func (r *Reconciler) handleError(s *scope, err error) {
	if e := flow.As(err); e != nil && e.Terminal() {
		s.trail.EnterWithReason(srv1alpha1.ProtectionFailed, e.Reason, "%s", e.Error())
		setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, e.Reason, "%s", e.Error())
		return
	}
	if apierrors.IsConflict(err) {
		return // a stale read; the retry sees the new version
	}
	setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, flow.ReasonOf(err, ReasonRequestFailed), "%s", err.Error())
}

// persist writes the status when it changed, with the resourceVersion it was
// read with so that a stale read can never overwrite an allocation, then
// records the transitions.
func (r *Reconciler) persist(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.before.Status, s.req.Status) {
		return nil
	}
	s.req.Status.ObservedGeneration = s.req.Generation
	if _, err := flow.NewStatusWriter(r.Client, r.Recorder).Write(ctx, s.req, flow.Change{Changed: true, Events: s.trail.Events}); err != nil {
		return fmt.Errorf("writing status of ProtectionRequest %s/%s: %w", s.req.Namespace, s.req.Name, err)
	}
	s.trail.Events = nil
	s.before = s.req.DeepCopy()
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Options.Clock == nil {
		return time.Now()
	}
	return r.Options.Clock.Now()
}

func terminal(p srv1alpha1.ProtectionPhase) bool { return phases.IsTerminal(p) }
