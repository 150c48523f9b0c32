package vrg

import (
	"context"
	"errors"
	"fmt"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Options configure the controller.
type Options struct {
	// OperatorNamespace is where global VGRs are created; DefaultOperatorNamespace
	// when empty.
	OperatorNamespace string
}

// RBAC on the workload cluster: the controller keeps its finalizer on
// VRGs and writes their status, labels and holds the PVCs they protect, drives
// the VolumeGroupReplications, and reads the classes, StorageClasses, groups,
// pods and VMIs that say whether the PVCs are in use.
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=volumereplicationgroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=volumereplicationgroups/status,verbs=get;update;patch
// The VolSync groups it creates name it as their controller (blockOwnerDeletion).
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=volumereplicationgroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumegroupreplications,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=replication.storage.openshift.io,resources=volumegroupreplicationclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupsources;replicationgroupdestinations,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=groupsnapshot.storage.k8s.io,resources=volumegroupsnapshotclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=volsync.backube,resources=replicationsources;replicationdestinations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=create;delete

// Reconciler reconciles the VolumeReplicationGroups of one workload cluster.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache, to pick up a VGR a peer has just created.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	Options   Options
}

// SetupWithManager registers the controller, its indexes and watches.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.OperatorNamespace == "" {
		opts.OperatorNamespace = DefaultOperatorNamespace
	}
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorderFor(ControllerName),
		Clock:     clock.RealClock{},
		Options:   opts,
	}
	if err := indexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	inOperatorNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == opts.OperatorNamespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Every change, the controller's own status writes included: a reconcile
		// that decided on a stale cached copy runs again once the cache has
		// caught up, and ends without a write when nothing is left to change.
		For(&drv1alpha1.VolumeReplicationGroup{}).
		// Peers: state, GlobalSecondary and deletions of the group's other VRGs.
		Watches(&drv1alpha1.VolumeReplicationGroup{}, handler.EnqueueRequestsFromMapFunc(r.peersOf)).
		Watches(&replicationv1alpha1.VolumeGroupReplication{}, handler.EnqueueRequestsFromMapFunc(r.vrgsOfVGR), builder.WithPredicates(inOperatorNamespace)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.vrgsInNamespace)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.vrgsInNamespace), builder.WithPredicates(predicate.NewPredicateFuncs(mountsPVC))).
		Watches(&kubevirtv1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(r.vrgsInNamespace), builder.WithPredicates(predicate.NewPredicateFuncs(mountsPVC))).
		Watches(&srv1alpha1.ProtectionGroup{}, handler.EnqueueRequestsFromMapFunc(r.vrgsOfGroup)).
		// The VolSync path: each group's half reports its cycles.
		Owns(&drv1alpha1.ReplicationGroupSource{}).
		Owns(&drv1alpha1.ReplicationGroupDestination{}).
		Complete(r)
}

// Reconcile drives one VRG's PVCs and the shared global VGR towards
// spec.replicationState and reports status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vrg := &drv1alpha1.VolumeReplicationGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, vrg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{vrg: vrg, before: vrg.DeepCopy(), now: r.Clock.Now()}
	if !vrg.DeletionTimestamp.IsZero() {
		return flow.Result(ctrl.Result{}, r.finalize(ctx, s))
	}
	res, err := flow.RunPhases(ctx, s, r.ensureFinalizer, r.loadPVCs, r.labelGroup, r.reachConsensus, r.replicate)
	setStatus(s)
	if perr := r.writeStatus(ctx, s); perr != nil {
		err = errors.Join(err, perr)
	}
	return flow.Result(res, err)
}

// patchMeta changes the VRG's metadata and keeps the scope's copies in step, so that
// the later status patch carries only status.
func (r *Reconciler) patchMeta(ctx context.Context, s *scope, mutate func(*drv1alpha1.VolumeReplicationGroup)) error {
	patched := s.vrg.DeepCopy()
	mutate(patched)
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(s.vrg, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.vrg.ObjectMeta = *patched.ObjectMeta.DeepCopy()
	s.before.ObjectMeta = *patched.ObjectMeta.DeepCopy()
	return nil
}

// writeStatus writes the status when it changed and records transitions as
// events. flow.StatusWriter updates the status with the resourceVersion it was
// read with, so a stale read fails with a conflict instead of overwriting a
// newer status.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.before.Status, s.vrg.Status) {
		return nil
	}
	s.vrg.Status.LastUpdateTime = &metav1.Time{Time: s.now}
	out, err := flow.NewStatusWriter(r.Client, nil).Write(ctx, s.vrg, flow.Change{Changed: true})
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	if out.Wrote {
		r.recordTransitions(s)
	}
	return nil
}

func (r *Reconciler) recordTransitions(s *scope) {
	from, to := s.before.Status.State, s.vrg.Status.State
	if from != to {
		if from == "" {
			from = drv1alpha1.UnknownState
		}
		r.Recorder.Eventf(s.vrg, corev1.EventTypeNormal, reasonStateChanged, "state %s -> %s (desired %s)", from, to, s.vrg.Spec.ReplicationState)
	}
	for _, t := range []string{drv1alpha1.ConditionGlobalState, drv1alpha1.ConditionGlobalSecondary, drv1alpha1.ConditionDataReady} {
		was := meta.FindStatusCondition(s.before.Status.Conditions, t)
		now := meta.FindStatusCondition(s.vrg.Status.Conditions, t)
		if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
			continue
		}
		kind := corev1.EventTypeNormal
		if now.Reason == drv1alpha1.ReasonError {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(s.vrg, kind, now.Reason, "%s %s: %s", t, now.Status, now.Message)
	}
}
