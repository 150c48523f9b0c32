package testfailover

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "test-failover"

// DefaultProbeImage runs the probe Jobs: busybox has nc and wget.
const DefaultProbeImage = "busybox:1.36"

// pollEvery is how often an active test looks at what it does not watch
// (snapshots, Jobs, VMIs); watched VMs and PVCs wake it earlier.
const pollEvery = 2 * time.Second

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// tests, groups and zones, keeps its finalizer on tests and writes their status.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=testfailovers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=testfailovers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler executes TestFailovers.
type Reconciler struct {
	Client client.Client
	// Reader reads the TestFailover itself past the cache: a stale copy would
	// rerun a finished phase and could recreate objects after the cleanup.
	Reader     client.Reader
	Remote     *remote.Manager
	Recorder   record.EventRecorder
	Clock      clock.PassiveClock
	Metrics    *Metrics
	ProbeImage string

	remoteEvents *remote.Requests
}

// SetupWithManager registers the controller. Changes of the test's VMs and PVCs
// on the workload clusters (informers other quorum controllers already hold)
// wake the test through a channel source; snapshots and Jobs are polled, so a
// workload cluster without the snapshot CRDs never blocks the shared caches.
func SetupWithManager(mgr ctrl.Manager, rm *remote.Manager) error {
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock: clock.RealClock{}, Metrics: defaultMetrics, ProbeImage: DefaultProbeImage,
		remoteEvents: remote.NewRequests(1024)}
	r.watchRemote()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.TestFailover{}).
		WatchesRawSource(r.remoteEvents.Source()).
		Complete(r)
}

// Reconcile advances one test by as many phases as it can.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tf := &srv1alpha1.TestFailover{}
	if err := r.Reader.Get(ctx, req.NamespacedName, tf); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{tf: tf, before: tf.DeepCopy(), now: r.Clock.Now()}
	if terminal(tf.Status.Phase) {
		// Everything was cleaned up before the terminal phase was written.
		return ctrl.Result{}, r.removeFinalizer(ctx, tf)
	}
	if tf.Status.Phase == "" {
		s.tf.Status.StartTime = &metav1.Time{Time: s.now}
		s.enter(srv1alpha1.TestFailoverPending, "validating test of group %s on %s", tf.Spec.ProtectionGroupRef.Name, tf.Spec.TargetCluster)
	}
	switch {
	case tf.DeletionTimestamp != nil && tf.Status.Phase == srv1alpha1.TestFailoverPending:
		s.reject(ReasonDeleted, "deleted before the test started; nothing was created")
	case tf.DeletionTimestamp != nil && active(tf.Status.Phase):
		s.conclude(false, ReasonDeleted, "the TestFailover was deleted during %s", tf.Status.Phase)
	case active(tf.Status.Phase) && !s.now.Before(s.deadline()):
		s.conclude(false, ReasonTimeout, "timed out after timeoutSeconds=%d in %s", tf.Spec.TimeoutSeconds, tf.Status.Phase)
	}

	wait, err := r.advance(ctx, s)
	if werr := r.writeStatus(ctx, s); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if terminal(s.tf.Status.Phase) {
		r.Metrics.observe(s)
		return ctrl.Result{}, r.removeFinalizer(ctx, s.tf)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	next := pollEvery
	if wait != nil {
		next = min(next, *wait)
	}
	if active(s.tf.Status.Phase) {
		next = min(next, max(s.deadline().Sub(s.now), 0)+time.Millisecond)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// advance runs the current phase and, whenever a phase completes, the next one.
// A problem that retrying cannot fix ends the test: rejected in Pending, where
// nothing exists yet, and through the cleanup anywhere else.
func (r *Reconciler) advance(ctx context.Context, s *scope) (*time.Duration, error) {
	for range 10 {
		phase := s.tf.Status.Phase
		var wait *time.Duration
		var err error
		switch phase {
		case srv1alpha1.TestFailoverPending:
			wait, err = r.pending(ctx, s)
		case srv1alpha1.TestFailoverSnapshotting:
			wait, err = r.snapshotting(ctx, s)
		case srv1alpha1.TestFailoverRestoring:
			wait, err = r.restoring(ctx, s)
		case srv1alpha1.TestFailoverBooting:
			wait, err = r.booting(ctx, s)
		case srv1alpha1.TestFailoverVerifying:
			wait, err = r.verifying(ctx, s)
		case srv1alpha1.TestFailoverCleaningUp:
			wait, err = r.cleaningUp(ctx, s)
		default:
			return nil, nil
		}
		if ie, ok := asInvalid(err); ok {
			if phase == srv1alpha1.TestFailoverPending {
				s.reject(ie.Reason, ie.Message)
			} else {
				s.conclude(false, ie.Reason, "%s", ie.Message)
			}
			continue
		}
		var ue *UnreachableError
		if errors.As(err, &ue) {
			s.waiting("%s", ue.Error())
			return ptr.To(pollEvery), nil
		}
		if err != nil || s.tf.Status.Phase == phase {
			return wait, err
		}
	}
	return nil, nil
}

func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	s.tf.Status.ObservedGeneration = s.tf.Generation
	return flow.WriteStatus(ctx, r.Client, r.Recorder, s.tf,
		!equality.Semantic.DeepEqual(s.before.Status, s.tf.Status), s.events)
}

func (r *Reconciler) addFinalizer(ctx context.Context, tf *srv1alpha1.TestFailover) error {
	if controllerutil.ContainsFinalizer(tf, Finalizer) {
		return nil
	}
	obj := tf.DeepCopy()
	controllerutil.AddFinalizer(obj, Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(tf, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	tf.Finalizers, tf.ResourceVersion = obj.Finalizers, obj.ResourceVersion
	return nil
}

func (r *Reconciler) removeFinalizer(ctx context.Context, tf *srv1alpha1.TestFailover) error {
	if !controllerutil.ContainsFinalizer(tf, Finalizer) {
		return nil
	}
	obj := tf.DeepCopy()
	controllerutil.RemoveFinalizer(obj, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, obj, client.MergeFrom(tf)))
}
