package monitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "replication-monitor"

// Defaults of a ReplicationGroupStatus' spec.
const (
	DefaultPollingIntervalSeconds = 30
	DefaultRPOObjectiveSeconds    = 300
)

// Options tune the monitor; the zero value is production's.
type Options struct {
	// Clock is the monitor's time source (lag, RPO episodes); real by default.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles defaults to 2.
	MaxConcurrentReconciles int
}

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// groups and zones and creates and updates the ReplicationGroupStatus and
// RPOEvents it owns. Owner references block the owner's deletion, which needs
// update on the group's finalizers.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols;drpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=replicationgroupstatuses,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=replicationgroupstatuses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=rpoevents,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=rpoevents/status,verbs=get;update;patch

// Reconciler keeps the ReplicationGroupStatus and RPOEvents of each quorum
// ProtectionGroup.
type Reconciler struct {
	Client  client.Client
	Remote  remote.ClusterCache
	Clock   clock.PassiveClock
	Metrics *Metrics
}

// SetupWithManager registers the monitor with production options.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache) error {
	return SetupWithOptions(mgr, rm, Options{})
}

// SetupWithOptions registers the monitor and its remote watches; it must run
// before rm connects any cluster. Wake-ups: the group's spec, the
// ReplicationGroupStatus' spec (or its deletion), every DRBDResource change on
// the workload clusters (by the protection-group label) and cluster health
// changes, both coalesced per group (coalesce.go), and a requeue after
// pollingIntervalSeconds or when a lag will cross the objective, whichever is
// first.
func SetupWithOptions(mgr ctrl.Manager, rm remote.ClusterCache, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 2
	}
	r := &Reconciler{Client: mgr.GetClient(), Remote: rm, Clock: o.Clock, Metrics: defaultMetrics}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}).
		For(&srv1alpha1.ProtectionGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&srv1alpha1.ReplicationGroupStatus{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The Offloaded and VolSync groups: their DRPC's sync time and protection.
		Watches(&drv1alpha1.DRPlacementControl{}, handler.EnqueueRequestsFromMapFunc(groupOfDRPC)).
		WatchesRawSource(flow.DelayedSource(rm.Source(ControllerName, remote.Events{
			Kinds:    []remote.Kind{{Object: &srv1alpha1.DRBDResource{}, Map: groupOfDRBDResource}},
			Clusters: r.groupsOfZone,
		}), remoteEventDelay)).
		Complete(r)
}

// Reconcile evaluates one group: it reads its DRBDResources from the remote
// caches, aggregates them with the previous status, applies the RPO episode
// transition and writes the status when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	group := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, group); err != nil {
		if apierrors.IsNotFound(err) {
			// The ReplicationGroupStatus goes with the group (owner reference).
			r.Metrics.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !group.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	rgs, err := r.ensureStatusObject(ctx, group)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := Input{Group: group, Generation: rgs.Generation, ObjectiveSeconds: objectiveOf(rgs, group),
		Previous: &rgs.Status, Now: r.Clock.Now()}
	synced, err := r.readSynced(ctx, group)
	if err != nil {
		return ctrl.Result{}, err
	}
	if synced == nil {
		if err := r.readSides(ctx, group, &in); err != nil {
			if errors.Is(err, errCacheSyncing) {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, err
		}
	}
	if in.Event, err = r.openEvent(ctx, rgs); err != nil {
		return ctrl.Result{}, err
	}
	var out Output
	if synced != nil {
		out = AggregateSynced(in, *synced)
	} else {
		out = Aggregate(in)
	}
	if err := r.applyEpisode(ctx, group, out.Episode); err != nil {
		return ctrl.Result{}, err
	}
	if out.Changed {
		rgs.Status = out.Status
	}
	if err := flow.WriteStatus(ctx, r.Client, nil, rgs, out.Changed, nil); err != nil {
		return ctrl.Result{}, err
	}
	r.Metrics.record(group.Name, in.ObjectiveSeconds, &out.Status)
	if synced != nil {
		r.Metrics.recordSynced(group.Name, synced)
	}
	return ctrl.Result{RequeueAfter: requeueAfter(rgs, out.NextBreach, in.Now)}, nil
}

// ensureStatusObject returns the group's ReplicationGroupStatus, creating it
// with the group's objective and the default polling interval.
func (r *Reconciler) ensureStatusObject(ctx context.Context, group *srv1alpha1.ProtectionGroup) (*srv1alpha1.ReplicationGroupStatus, error) {
	rgs := &srv1alpha1.ReplicationGroupStatus{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(group), rgs)
	if err == nil || !apierrors.IsNotFound(err) {
		return rgs, err
	}
	rgs = &srv1alpha1.ReplicationGroupStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: group.Namespace, Name: group.Name,
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group.Name}},
		Spec: srv1alpha1.ReplicationGroupStatusSpec{
			ProtectionGroupRef:     srv1alpha1.ProtectionGroupReference{Name: group.Name, Namespace: group.Namespace},
			RPOObjectiveSeconds:    objectiveOf(nil, group),
			PollingIntervalSeconds: DefaultPollingIntervalSeconds,
		},
	}
	if err := ctrl.SetControllerReference(group, rgs, r.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Client.Create(ctx, rgs); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ReplicationGroupStatus %s exists but is not in the cache yet: %w", group.Name, err)
		}
		return nil, err
	}
	return rgs, nil
}

// objectiveOf is the ReplicationGroupStatus' objective, defaulted from the group.
func objectiveOf(rgs *srv1alpha1.ReplicationGroupStatus, group *srv1alpha1.ProtectionGroup) int32 {
	if rgs != nil && rgs.Spec.RPOObjectiveSeconds > 0 {
		return rgs.Spec.RPOObjectiveSeconds
	}
	if o := group.Spec.Replication.RPOObjectiveSeconds; o > 0 {
		return o
	}
	return DefaultRPOObjectiveSeconds
}

// requeueAfter re-evaluates within the polling interval, and as soon as a lag
// crosses the objective so that a breach is raised on time.
func requeueAfter(rgs *srv1alpha1.ReplicationGroupStatus, nextBreach *time.Time, now time.Time) time.Duration {
	poll := time.Duration(rgs.Spec.PollingIntervalSeconds) * time.Second
	if poll <= 0 {
		poll = DefaultPollingIntervalSeconds * time.Second
	}
	if nextBreach != nil {
		if d := nextBreach.Sub(now); d > 0 && d < poll {
			return d
		}
	}
	return poll
}
