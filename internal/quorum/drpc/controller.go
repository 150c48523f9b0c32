package drpc

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "drpc"

// Finalizer holds a DRPC until its VRGs are deleted on both clusters.
const Finalizer = "drpc.dr.siterecovery.trilio.io/finalizer"

// Requeue intervals. Remote watches, health changes and the peer watcher drive
// the controller; these are only the safety net.
const (
	unreachableRetry = 30 * time.Second
	syncingRetry     = time.Second
	// waitRetry is a safety net only: remote VRG and ProtectionGroup events
	// wake a waiting DRPC first.
	waitRetry      = 5 * time.Second
	consensusRetry = time.Minute
)

// maxConcurrentReconciles lets every peer of a global group write its
// GlobalAction status at once when the last of them agrees: the latency of
// consensus over a group is bounded by these status writes, and the API server
// takes them faster together than in waves.
const maxConcurrentReconciles = 50

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// policies, keeps its finalizer and decisions on DRPCs and writes their status,
// and patches the quorum ProtectionGroup a DRPC drives.
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols/status,verbs=get;update;patch
// The VolSync key Secret it creates names it as its controller (blockOwnerDeletion).
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols/finalizers,verbs=update
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;create;delete
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler runs DRPlacementControls.
type Reconciler struct {
	Client client.Client
	// APIReader reads the VolSync key Secrets past the cache.
	APIReader client.Reader
	Remote    remote.ClusterCache
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	Metrics   *Metrics
}

// SetupWithManager registers the controller, its field indexes, the peer
// watcher (a change of one DRPC of a global group wakes all its peers) and the remote watches on VRGs and workload ProtectionGroups.
// Call it before the manager starts, so that the watches exist before any
// cluster connects.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache) error {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock: clock.RealClock{}, Metrics: defaultMetrics}
	if err := indexDRPCs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		For(&drv1alpha1.DRPlacementControl{}, builder.WithPredicates(predicate.Not[client.Object](decisionWritten()))).
		// The DRPC watcher: a change of one global DRPC's action or target, or its
		// deletion, wakes every peer with the same global-vgr label. Ahead of other
		// work: when a whole group agrees at once, the follow-ups of the first peers
		// (their own status updates, their VRG writes) wait until every peer has
		// seen the consensus.
		Watches(&drv1alpha1.DRPlacementControl{}, flow.WithPriority(handler.EnqueueRequestsFromMapFunc(r.peersOf), flow.HighPriority),
			builder.WithPredicates(peerTrigger())).
		// The last peer to record consensus starts the action of the whole group.
		Watches(&drv1alpha1.DRPlacementControl{}, handler.EnqueueRequestsFromMapFunc(r.groupStarted),
			builder.WithPredicates(consensusRecorded())).
		Watches(&drv1alpha1.DRPolicy{}, handler.EnqueueRequestsFromMapFunc(r.drpcsOfPolicy)).
		WatchesRawSource(r.remoteEvents()).
		Complete(r)
}

// Reconcile advances one DRPC as far as the clusters allow.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &drv1alpha1.DRPlacementControl{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{drpc: d, before: d.DeepCopy(), now: r.Clock.Now()}
	if !d.DeletionTimestamp.IsZero() {
		res, err := r.finalize(ctx, s)
		return flow.Result(res, err)
	}
	if controllerutil.AddFinalizer(d, Finalizer) {
		if err := r.Client.Patch(ctx, d, client.MergeFrom(s.before)); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		s.before = d.DeepCopy()
	}
	res, err := flow.RunPhases(ctx, s, r.load, r.validate, r.connect, r.adoptGlobalLabel, r.ensureKey, r.place)
	if s.syncing {
		res = flow.Soonest(res, flow.After(syncingRetry))
	}
	r.setConditions(s, err)
	if werr := r.writeStatus(ctx, s); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	r.Metrics.observe(s)
	return flow.Result(res, err)
}

// writeStatus writes the status only when it changed and then records the
// transitions of this reconcile.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	st := &s.drpc.Status
	st.ObservedGeneration = s.drpc.Generation
	st.LastUpdateTime = s.before.Status.LastUpdateTime
	changed := !equality.Semantic.DeepEqual(s.before.Status, *st)
	if changed {
		st.LastUpdateTime = &metav1.Time{Time: s.now}
	}
	return flow.WriteStatus(ctx, r.Client, r.Recorder, s.drpc, changed, s.events)
}
