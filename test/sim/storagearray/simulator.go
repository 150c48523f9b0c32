package storagearray

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// DefaultName is the controller name of a simulator whose Options.Name is empty.
const DefaultName = "storagearray-simulator"

// Options tune one simulator. Several simulators with different filters and names may
// run in one manager.
type Options struct {
	// Name of the controller; DefaultName when empty. Must be unique per manager.
	Name string
	// Delay is how long a new desired state takes to show in status.state.
	Delay time.Duration
	// Conditions makes the simulator report Completed, Validated, Degraded and
	// Resyncing; without it the status carries no conditions at all.
	Conditions bool
	// Classes restricts the simulator to VolumeGroupReplications of these
	// VolumeGroupReplicationClasses; empty means every class.
	Classes []string
	// Selector restricts the simulator to VolumeGroupReplications with matching
	// labels; nil means every one.
	Selector labels.Selector
	// Clock measures the delay; nil means the real clock.
	Clock clock.PassiveClock
	// Sync, when set, makes the array replicate in cycles and report each
	// one's end as the primary's status.lastSyncTime; nil reports none, as an
	// array that replicates on its own (schedulingInterval 0m) does.
	Sync *Sync
}

// SetupWithManager registers a simulator with mgr; replicationv1alpha1 must be in the
// manager's scheme.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	r := &reconciler{client: mgr.GetClient(), opts: opts, since: map[transitionKey]time.Time{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named(opts.Name).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		For(&replicationv1alpha1.VolumeGroupReplication{}, builder.WithPredicates(predicate.NewPredicateFuncs(r.handles))).
		Complete(r)
}

type transitionKey struct {
	namespace, name string
	uid             string
	desired         replicationv1alpha1.ReplicationState
}

type reconciler struct {
	client client.Client
	opts   Options

	mu    sync.Mutex
	since map[transitionKey]time.Time
}

func (r *reconciler) handles(obj client.Object) bool {
	vgr, ok := obj.(*replicationv1alpha1.VolumeGroupReplication)
	if !ok {
		return false
	}
	if len(r.opts.Classes) > 0 && !slices.Contains(r.opts.Classes, vgr.Spec.VolumeGroupReplicationClassName) {
		return false
	}
	return r.opts.Selector == nil || r.opts.Selector.Matches(labels.Set(vgr.Labels))
}

// Reconcile moves status.state to spec.replicationState once the delay has passed.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := r.client.Get(ctx, req.NamespacedName, vgr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vgr.DeletionTimestamp.IsZero() || !r.handles(vgr) {
		return ctrl.Result{}, nil
	}
	desired := vgr.Spec.ReplicationState
	key := transitionKey{namespace: vgr.Namespace, name: vgr.Name, uid: string(vgr.UID), desired: desired}
	now := r.opts.Clock.Now()

	r.mu.Lock()
	start, seen := r.since[key]
	if !seen {
		// A new desired state forgets the previous one's start.
		for k := range r.since {
			if k.namespace == key.namespace && k.name == key.name {
				delete(r.since, k)
			}
		}
		r.since[key] = now
		start = now
	}
	r.mu.Unlock()

	if remaining := r.opts.Delay - now.Sub(start); remaining > 0 {
		return ctrl.Result{RequeueAfter: remaining}, nil
	}
	before := vgr.DeepCopy()
	setStatus(vgr, desired, r.opts.Conditions, now)
	var res ctrl.Result
	if r.opts.Sync != nil {
		res.RequeueAfter = r.opts.Sync.sync(vgr, now)
	}
	if equality.Semantic.DeepEqual(before.Status, vgr.Status) {
		return res, nil
	}
	if err := r.client.Status().Patch(ctx, vgr, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing VolumeGroupReplication status: %w", client.IgnoreNotFound(err))
	}
	return res, nil
}

// StateFor is the status.state an array reports for a desired replication state.
func StateFor(desired replicationv1alpha1.ReplicationState) replicationv1alpha1.State {
	switch desired {
	case replicationv1alpha1.Primary:
		return replicationv1alpha1.PrimaryState
	case replicationv1alpha1.Secondary, replicationv1alpha1.Resync:
		return replicationv1alpha1.SecondaryState
	default:
		return replicationv1alpha1.UnknownState
	}
}

func setStatus(vgr *replicationv1alpha1.VolumeGroupReplication, desired replicationv1alpha1.ReplicationState, withConditions bool, now time.Time) {
	st := &vgr.Status
	state := StateFor(desired)
	if st.State != state || st.ObservedGeneration != vgr.Generation {
		st.LastCompletionTime = &metav1.Time{Time: now}
	}
	st.State = state
	st.ObservedGeneration = vgr.Generation
	st.Message = fmt.Sprintf("volume group is %s", state)
	if !withConditions {
		st.Conditions = nil
		return
	}
	gen := vgr.Generation
	reason := "Promoted"
	if state == replicationv1alpha1.SecondaryState {
		reason = "Demoted"
	}
	for _, c := range []metav1.Condition{
		{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: reason},
		{Type: replicationv1alpha1.ConditionValidated, Status: metav1.ConditionTrue, Reason: "PrerequisiteMet"},
		{Type: replicationv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "Healthy"},
		{Type: replicationv1alpha1.ConditionResyncing, Status: metav1.ConditionFalse, Reason: "NotResyncing"},
	} {
		c.ObservedGeneration = gen
		c.Message = st.Message
		meta.SetStatusCondition(&st.Conditions, c)
	}
}
