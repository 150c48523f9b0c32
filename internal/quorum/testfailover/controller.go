package testfailover

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "test-failover"

// DefaultProbeImage runs the probe Jobs: the siterecovery-probe image
// (cmd/siterecovery-probe), whose entrypoint takes -tcp or -http and -timeout.
// The chart sets the tag of its own release.
const DefaultProbeImage = "ghcr.io/siterecovery/siterecovery-probe:0.1.0"

// pollEvery is how often an active test looks at what it does not watch
// (snapshots, Jobs, VMIs); watched VMs and PVCs wake it earlier.
const pollEvery = 2 * time.Second

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// tests, groups and zones, keeps its finalizer on tests and writes their status.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=testfailovers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=testfailovers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/status,verbs=patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options tune the controller; the zero value is the default.
type Options struct {
	// ProbeImage runs the probe Jobs (the siterecovery-probe entrypoint); DefaultProbeImage if
	// empty. Clusters without access to ghcr.io set a mirrored copy.
	ProbeImage string
	// AllowedNamespaces are the application namespaces whose VMs the DR
	// namespace may protect, and so clone; nil checks nothing, empty allows
	// none (checkNamespacesAllowed).
	AllowedNamespaces []string
}

// Reconciler executes TestFailovers.
type Reconciler struct {
	Client client.Client
	// Reader reads the TestFailover itself past the cache: a stale copy would
	// rerun a finished phase and could recreate objects after the cleanup.
	Reader     client.Reader
	Remote     remote.ClusterCache
	Recorder   record.EventRecorder
	Clock      clock.PassiveClock
	Metrics    *Metrics
	ProbeImage string
	// AllowedNamespaces: Options.AllowedNamespaces.
	AllowedNamespaces []string
}

// SetupWithManager registers the controller. Changes of the test's VMs and PVCs
// on the workload clusters (informers other quorum controllers already hold)
// wake the test through its remote event source; snapshots and Jobs are polled, so a
// workload cluster without the snapshot CRDs never blocks the shared caches.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache, o Options) error {
	if o.ProbeImage == "" {
		o.ProbeImage = DefaultProbeImage
	}
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock: clock.RealClock{}, Metrics: defaultMetrics, ProbeImage: o.ProbeImage, AllowedNamespaces: o.AllowedNamespaces}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.TestFailover{}).
		WatchesRawSource(r.remoteEvents()).
		Complete(r)
}

// Reconcile advances one test by as many phases as it can.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tf := &srv1alpha1.TestFailover{}
	if err := r.Reader.Get(ctx, req.NamespacedName, tf); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := newScope(tf, r.Clock.Now())
	// s.tf is tf: the deferred call sees the last status written.
	defer r.Metrics.progress(tf)
	if terminal(tf.Status.Phase) {
		// Everything was cleaned up before the terminal phase was written.
		return ctrl.Result{}, r.removeFinalizer(ctx, tf)
	}
	if tf.Status.Phase == "" {
		s.tf.Status.StartTime = &metav1.Time{Time: s.now}
		r.Metrics.started(tf.Spec.ProtectionGroupRef.Name)
		s.trail.Enter(srv1alpha1.TestFailoverPending, "validating test of group %s on %s", tf.Spec.ProtectionGroupRef.Name, tf.Spec.TargetCluster)
	}
	switch {
	case tf.DeletionTimestamp != nil && tf.Status.Phase == srv1alpha1.TestFailoverPending:
		s.reject(ReasonDeleted, "deleted before the test started; nothing was created")
	case tf.DeletionTimestamp != nil && active(tf.Status.Phase):
		s.conclude(false, ReasonDeleted, "the TestFailover was deleted during %s", tf.Status.Phase)
	case active(tf.Status.Phase) && !s.now.Before(s.deadline()):
		s.conclude(false, ReasonTimeout, "timed out after timeoutSeconds=%d in %s", tf.Spec.TimeoutSeconds, tf.Status.Phase)
	}

	res, err := r.runner().Run(ctx, s)
	if werr := r.writeStatus(ctx, s); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if terminal(s.tf.Status.Phase) {
		r.Metrics.observe(s)
		return ctrl.Result{}, r.removeFinalizer(ctx, s.tf)
	}
	if res, err = flow.Result(res, err); err != nil {
		return ctrl.Result{}, err
	}
	next := pollEvery
	if res.RequeueAfter > 0 {
		next = min(next, res.RequeueAfter)
	}
	if active(s.tf.Status.Phase) {
		next = min(next, max(s.deadline().Sub(s.now), 0)+time.Millisecond)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// runner runs the step of the test's phase and, whenever a step completes its
// phase, the next one. A problem that retrying cannot fix (a Stalled error)
// ends the test: rejected in Pending, where nothing exists yet, and through the
// cleanup anywhere else, which then runs in the same reconcile.
func (r *Reconciler) runner() flow.Runner[*scope, srv1alpha1.TestFailoverPhase] {
	steps := map[srv1alpha1.TestFailoverPhase]flow.Phase[*scope]{
		srv1alpha1.TestFailoverPending:      r.pending,
		srv1alpha1.TestFailoverSnapshotting: r.snapshotting,
		srv1alpha1.TestFailoverRestoring:    r.restoring,
		srv1alpha1.TestFailoverBooting:      r.booting,
		srv1alpha1.TestFailoverVerifying:    r.verifying,
		srv1alpha1.TestFailoverCleaningUp:   r.cleaningUp,
	}
	return flow.Runner[*scope, srv1alpha1.TestFailoverPhase]{
		Phase:  func(s *scope) srv1alpha1.TestFailoverPhase { return s.tf.Status.Phase },
		Step:   func(s *scope) flow.Phase[*scope] { return steps[s.tf.Status.Phase] },
		Report: report,
		Limit:  10,
	}
}

// report shows a step's error on the test.
func report(s *scope, err error) {
	e := flow.As(err)
	switch {
	case e == nil:
	case e.Kind == flow.KindStalled && s.tf.Status.Phase == srv1alpha1.TestFailoverPending:
		s.reject(e.Reason, e.Error())
	case e.Kind == flow.KindStalled:
		s.conclude(false, e.Reason, "%s", e.Error())
	case e.Kind == flow.KindWaiting:
		s.trail.Wait(e.Reason, "%s", e.Error())
	}
}

func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	s.tf.Status.ObservedGeneration = s.tf.Generation
	_, err := flow.NewStatusWriter(r.Client, r.Recorder).Write(ctx, s.tf, flow.Change{
		Changed: !equality.Semantic.DeepEqual(s.before.Status, s.tf.Status), Events: s.trail.Events})
	return err
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
