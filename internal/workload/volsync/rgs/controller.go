package rgs

import (
	"context"
	"errors"
	"fmt"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/freeze"
)

// ControllerName names the controller, its logger and its events.
const ControllerName = "replicationgroupsource"

// Finalizer holds a ReplicationGroupSource until everything it created is gone.
const Finalizer = "dr.siterecovery.trilio.io/replication-group-source"

// RBAC on the workload cluster: the controller runs the cycles of the
// ReplicationGroupSources, takes and deletes VolumeGroupSnapshots, restores and
// deletes the read-only PVCs, drives the ReplicationSources and reads the
// snapshots, PVs and classes that map PVCs to member snapshots.
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupsources,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupsources/status,verbs=get;update;patch
// The snapshots, restored claims and ReplicationSources it creates name it as their
// controller (blockOwnerDeletion).
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupsources/finalizers,verbs=update
// +kubebuilder:rbac:groups=groupsnapshot.storage.k8s.io,resources=volumegroupsnapshots,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=groupsnapshot.storage.k8s.io,resources=volumegroupsnapshotcontents;volumegroupsnapshotclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots;volumesnapshotcontents,verbs=get;list;watch
// +kubebuilder:rbac:groups=volsync.backube,resources=replicationsources,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=core,resources=persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch

// maxConcurrentReconciles: the cut of an Application group holds its reconcile
// while the guests are frozen, up to the group's freezeTimeoutSeconds (see
// takeSnapshot); with a single worker every other group's cycle would wait
// behind it. controller-runtime never gives one group to two workers at once.
const maxConcurrentReconciles = 4

// Reconciler reconciles the ReplicationGroupSources of one workload cluster.
type Reconciler struct {
	Client client.Client
	// APIReader reads the ReplicationGroupSource past the cache: a reconcile
	// that acted on a copy from before the last cycle completed would take that
	// cycle's deleted snapshot again.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	// HoldAfter is how long a step of a cycle reports its summary before it
	// names the PVCs it waits on; zero is DefaultHoldAfter.
	HoldAfter time.Duration
	// Freezer freezes the guests of a group that asks for application-
	// consistent points; nil takes every point crash-consistent.
	Freezer freeze.Client

	steps steps
}

// SetupWithManager registers the controller.
func SetupWithManager(mgr ctrl.Manager) error {
	fc, err := freeze.NewRESTClient(mgr.GetConfig())
	if err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor(ControllerName), Clock: clock.RealClock{},
		Freezer: fc}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&drv1alpha1.ReplicationGroupSource{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Owns(&groupsnapshotv1.VolumeGroupSnapshot{}).
		Owns(&volsyncv1alpha1.ReplicationSource{}).
		// The group's PVCs (a storage class changes, a restore binds).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.sourcesInNamespace)).
		Complete(r)
}

func (r *Reconciler) sourcesInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	list := &drv1alpha1.ReplicationGroupSourceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
	}
	return out
}

// Reconcile advances the group's cycle by as many steps as are ready.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rgs := &drv1alpha1.ReplicationGroupSource{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, rgs); err != nil {
		if apierrors.IsNotFound(err) {
			r.steps.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rgs.DeletionTimestamp.IsZero() {
		r.steps.forget(req.NamespacedName)
		return ctrl.Result{}, r.finalize(ctx, rgs)
	}
	if !controllerutil.ContainsFinalizer(rgs, Finalizer) {
		before := rgs.DeepCopy()
		controllerutil.AddFinalizer(rgs, Finalizer)
		if err := r.Client.Patch(ctx, rgs, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	s := &scope{rgs: rgs, before: rgs.DeepCopy(), now: r.Clock.Now()}
	res, err := flow.RunPhases(ctx, s, r.validate, r.schedule, r.snapshot, r.restore, r.replicate, r.complete)
	if recheck := r.setReady(s, err); recheck > 0 {
		res = flow.Soonest(res, flow.After(recheck))
	}
	if werr := r.writeStatus(ctx, s); werr != nil {
		err = errors.Join(err, werr)
	}
	return flow.Result(res, err)
}

func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	changed := !equality.Semantic.DeepEqual(s.before.Status, s.rgs.Status)
	if _, err := flow.NewStatusWriter(r.Client, nil).Write(ctx, s.rgs, flow.Change{Changed: changed}); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	for _, e := range s.events {
		r.Recorder.Event(s.rgs, e.Type, e.Reason, e.Message)
	}
	return nil
}
