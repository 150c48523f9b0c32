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
	Remote    *remote.Manager
	Recorder  record.EventRecorder
	Options   Options
}

// step runs one phase. It reports done when the phase is complete; a wait sets a
// condition through the scope and returns (false, nil). Errors are typed with
// internal/flow: Stalled fails the request, Waiting retries after a delay,
// anything else goes to controller-runtime's backoff.
type step func(ctx context.Context, s *scope) (done bool, err error)

// phaseOrder is the phase order; each phase's step and the phase that follows it.
var phaseOrder = []struct {
	phase srv1alpha1.ProtectionPhase
	run   func(r *Reconciler) step
}{
	{srv1alpha1.ProtectionValidating, func(r *Reconciler) step { return r.validate }},
	{srv1alpha1.ProtectionProvisioningTarget, func(r *Reconciler) step { return r.provisionTarget }},
	{srv1alpha1.ProtectionCreatingReplication, func(r *Reconciler) step { return r.createReplication }},
	{srv1alpha1.ProtectionWaitingForInitialSync, func(r *Reconciler) step { return r.waitInitialSync }},
	{srv1alpha1.ProtectionSwitchingFrontend, func(r *Reconciler) step { return r.switchFrontend }},
	{srv1alpha1.ProtectionAddingToGroup, func(r *Reconciler) step { return r.addToGroup }},
	{srv1alpha1.ProtectionProtected, nil},
}

// Reconcile runs the request's current phase and every following one that can
// complete now, persisting the status at each phase boundary.
func (r *Reconciler) Reconcile(ctx context.Context, in ctrl.Request) (ctrl.Result, error) {
	req := &srv1alpha1.ProtectionRequest{}
	if err := r.Client.Get(ctx, in.NamespacedName, req); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !req.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, req)
	}
	// Before anything exists on a workload cluster; requests made before the
	// finalizer existed get it too, so that deleting them removes protection.
	if err := r.ensureFinalizer(ctx, req); err != nil {
		return ctrl.Result{}, err
	}
	if terminal(req.Status.Phase) {
		return ctrl.Result{}, nil
	}
	s := &scope{req: req, before: req.DeepCopy(), now: r.now()}
	if req.Status.Phase == "" || req.Status.Phase == srv1alpha1.ProtectionPending {
		s.req.Status.StartTime = &metav1.Time{Time: s.now}
		if req.Status.Phase == "" {
			s.enter(srv1alpha1.ProtectionPending, "request accepted")
		}
		s.enter(srv1alpha1.ProtectionValidating, "validating the VM, its disks and the zone")
		if err := r.persist(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	err := r.run(ctx, s)
	if err != nil {
		r.handleError(s, err)
	}
	if perr := r.persist(ctx, s); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	return flow.Result(ctrl.Result{RequeueAfter: s.requeueAfter}, err)
}

// run executes phases from the current one until one waits or fails.
func (r *Reconciler) run(ctx context.Context, s *scope) error {
	for {
		i := phaseIndex(s.req.Status.Phase)
		if i < 0 || phaseOrder[i].run == nil {
			return nil
		}
		if err := r.load(ctx, s); err != nil {
			return err
		}
		done, err := phaseOrder[i].run(r)(ctx, s)
		if err != nil || !done {
			return err
		}
		next := phaseOrder[i+1].phase
		if next == srv1alpha1.ProtectionProtected {
			r.complete(s)
		} else {
			s.enter(next, "")
		}
		if err := r.persist(ctx, s); err != nil {
			return err
		}
	}
}

// complete marks the request Protected.
func (r *Reconciler) complete(s *scope) {
	s.enter(srv1alpha1.ProtectionProtected, fmt.Sprintf("VM %s/%s is protected in group %s",
		s.req.Spec.VirtualMachine.Namespace, s.req.Spec.VirtualMachine.Name, s.req.Spec.ProtectionGroupRef.Name))
	s.req.Status.CompletionTime = &metav1.Time{Time: s.now}
	setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonProtected,
		"VM is replicated to %s and member of group %s", s.target, s.req.Spec.ProtectionGroupRef.Name)
}

// handleError turns a step error into the request's status: terminal errors fail
// the request, others leave Ready=False with the reason until the retry.
func (r *Reconciler) handleError(s *scope, err error) {
	var e *flow.Error
	if errors.As(err, &e) && e.Terminal {
		s.req.Status.CompletionTime = &metav1.Time{Time: s.now}
		s.enterWithReason(srv1alpha1.ProtectionFailed, e.Reason, e.Error())
		setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, e.Reason, "%s", e.Error())
		return
	}
	if apierrors.IsConflict(err) {
		return // a stale read; the retry sees the new version
	}
	setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, flow.ReasonOf(err, ReasonRequestFailed), "%s", err.Error())
}

// persist writes the status when it changed, with optimistic locking so that a
// stale read can never overwrite an allocation, then records the transitions.
func (r *Reconciler) persist(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.before.Status, s.req.Status) {
		return nil
	}
	s.req.Status.ObservedGeneration = s.req.Generation
	if err := r.Client.Status().Patch(ctx, s.req, client.MergeFromWithOptions(s.before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing status of ProtectionRequest %s/%s: %w", s.req.Namespace, s.req.Name, err)
	}
	for _, ev := range s.events {
		r.Recorder.Event(s.req, eventType(ev), ev.reason, ev.message)
	}
	s.events = nil
	s.before = s.req.DeepCopy()
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Options.Clock == nil {
		return time.Now()
	}
	return r.Options.Clock.Now()
}

func terminal(p srv1alpha1.ProtectionPhase) bool {
	return p == srv1alpha1.ProtectionProtected || p == srv1alpha1.ProtectionFailed
}

func phaseIndex(p srv1alpha1.ProtectionPhase) int {
	for i, f := range phaseOrder {
		if f.phase == p {
			return i
		}
	}
	return -1
}
