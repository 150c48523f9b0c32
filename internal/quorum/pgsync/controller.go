package pgsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "pg-sync"

// FieldOwner is the field manager of everything pg-sync writes.
const FieldOwner = "siterecovery-pg-sync"

// Finalizer keeps a quorum ProtectionGroup until pg-sync removed its workload
// copies and the standby VMs it created from every cluster of the zone.
const Finalizer = "siterecovery.trilio.io/pg-sync"

// CreatedByLabel marks, with the value ControllerName, the standby VMs pg-sync
// created. Only those are ever deleted: pg-sync also writes its labels onto a VM
// it found in place (the original VM on the primary while the group is failed
// over), and that VM must never go.
const CreatedByLabel = "siterecovery.trilio.io/created-by"

// Requeue intervals. Remote events, health changes and quorum changes drive the
// controller; these are only the safety net.
const (
	// unreachableRequeue is the retry of a cluster that is down or not connected;
	// its return is also announced by the health prober.
	unreachableRequeue = 30 * time.Second
	// syncingRequeue is the retry while a reachable cluster's cache fills.
	syncingRequeue = 5 * time.Second
	// conflictRequeue retries a status write that lost an optimistic lock.
	conflictRequeue = time.Second
	// companionResync is how often a group with companion objects is synced
	// again, to carry their changes at the source to the copies.
	companionResync = time.Minute
)

// Reasons specific to pg-sync.
const (
	reasonCacheSyncing = "CacheSyncing"
	// reasonRelabelled is the event of a group VM whose DR namespace label
	// pg-sync put back.
	reasonRelabelled = "Relabelled"
)

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// zones and groups, keeps its finalizer on groups and writes their status.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler syncs quorum ProtectionGroups to the clusters of their zone.
type Reconciler struct {
	Client   client.Client
	Remote   remote.ClusterCache
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
}

// SetupWithManager registers the controller, its field indexes and its remote
// watches on workload ProtectionGroups and VirtualMachines. Call it before the
// manager starts, so that the watches exist before any cluster connects.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache) error {
	r := &Reconciler{
		Client:   mgr.GetClient(),
		Remote:   rm,
		Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock:    clock.RealClock{},
	}
	if err := indexGroups(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.ProtectionGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&srv1alpha1.ProtectionZone{}, handler.EnqueueRequestsFromMapFunc(r.groupsOfZone),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(r.remoteEvents()).
		Complete(r)
}

// Reconcile syncs one quorum group to every cluster of its zone and reports the
// outcome in its status. One cluster's failure never stops the others.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	group := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, group); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{group: group, before: group.DeepCopy(), now: r.Clock.Now()}
	if !group.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	// Before the first copy or standby exists.
	if err := r.ensureFinalizer(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			return flow.After(conflictRequeue), nil
		}
		return ctrl.Result{}, err
	}
	res, err := flow.RunPhases(ctx, s, r.loadZone, r.loadSources, r.loadCompanions, r.syncClusters)
	if hasCompanions(group) {
		// Companions at the source are not watched (the remote caches hold
		// only labelled objects): their changes are picked up this often.
		res = flow.Soonest(res, flow.After(companionResync))
	}
	setStatus(s)
	switch perr := r.writeStatus(ctx, s); {
	case apierrors.IsConflict(perr):
		// The cache has not caught up with a write yet: retry quietly.
		res = flow.Soonest(res, flow.After(conflictRequeue))
	case perr != nil:
		err = errors.Join(err, perr)
	}
	res, err = flow.Result(res, err)
	if err != nil {
		// Backoff decides; controller-runtime ignores a result next to an error.
		res = ctrl.Result{}
	}
	return res, err
}

// loadZone reads the group's zone and checks that the group names a cluster of it.
func (r *Reconciler) loadZone(ctx context.Context, s *scope) (ctrl.Result, error) {
	g := s.group
	if g.Spec.ZoneRef == nil || g.Spec.ZoneRef.Name == "" {
		s.specErr = flow.Stalled(srv1alpha1.ReasonInvalidSpec, "spec.zoneRef is not set")
		return ctrl.Result{}, s.specErr
	}
	zone := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.ZoneRef.Name}, zone); err != nil {
		if apierrors.IsNotFound(err) {
			// The zone watch brings the group back when the zone appears.
			s.specErr = flow.Stalled(srv1alpha1.ReasonZoneNotFound, "ProtectionZone %s not found", g.Spec.ZoneRef.Name)
			return ctrl.Result{}, s.specErr
		}
		return ctrl.Result{}, err
	}
	if !slices.ContainsFunc(zone.Spec.Clusters, func(c srv1alpha1.ZoneCluster) bool { return c.Name == g.Spec.ActiveCluster }) {
		s.specErr = flow.Stalled(srv1alpha1.ReasonInvalidSpec, "spec.activeCluster %q is not a cluster of ProtectionZone %s", g.Spec.ActiveCluster, zone.Name)
		return ctrl.Result{}, s.specErr
	}
	s.zone = zone
	return ctrl.Result{}, nil
}

// syncClusters syncs every zone cluster in turn and keeps the soonest requeue
// that an unreachable or syncing cluster asks for.
func (r *Reconciler) syncClusters(ctx context.Context, s *scope) (ctrl.Result, error) {
	var res ctrl.Result
	var errs []error
	for _, zc := range s.zone.Spec.Clusters {
		c := r.syncCluster(ctx, s, zc.Name)
		s.clusters = append(s.clusters, c)
		if c.err != nil {
			r2, err := flow.Result(ctrl.Result{}, c.err)
			res = flow.Soonest(res, r2)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return res, errors.Join(errs...)
}

// syncCluster brings one cluster's workload copy and, on a non-active cluster,
// its standby VMs in line with the quorum copy: a standby of a VM that left the
// group is deleted.
func (r *Reconciler) syncCluster(ctx context.Context, s *scope, cluster string) clusterResult {
	c := clusterResult{name: cluster}
	rem, err := r.connect(s, cluster)
	if err != nil {
		c.err, c.reason = err, flow.ReasonOf(err, remote.ReasonNotConnected)
		return c
	}
	if err := r.syncCopy(ctx, s, rem, &c); err != nil {
		c.err, c.reason = err, flow.ReasonOf(err, srv1alpha1.ReasonWriteFailed)
		return c
	}
	if cluster == s.group.Spec.ActiveCluster {
		return c
	}
	if err := r.syncStandbys(ctx, s, rem, &c); err != nil {
		c.err, c.reason = err, flow.ReasonOf(err, srv1alpha1.ReasonWriteFailed)
		return c
	}
	if err := r.deleteStandbys(ctx, s, rem, rem.Cached, &c, s.group.Spec.VirtualMachines); err != nil {
		c.err, c.reason = err, flow.ReasonOf(err, srv1alpha1.ReasonWriteFailed)
		return c
	}
	if err := r.syncCompanions(ctx, s, rem, &c); err != nil {
		c.err, c.reason = err, flow.ReasonOf(err, srv1alpha1.ReasonWriteFailed)
	}
	return c
}

// connect returns a cluster's remote when it is reachable and its cache synced.
// Messages name the cluster, never anything from its kubeconfig.
func (r *Reconciler) connect(s *scope, cluster string) (*remote.Remote, error) {
	key := remote.Key{Namespace: s.group.Namespace, Zone: s.zone.Name, Cluster: cluster}
	switch h := r.Remote.Health(key); {
	case !h.Connected():
		return nil, flow.Waiting(remote.ReasonNotConnected, unreachableRequeue,
			"cluster %s is not connected (see the ProtectionZone's Reachable condition)", cluster)
	case !h.Reachable() && !h.Unreachable():
		return nil, flow.Waiting(remote.ReasonNotConnected, unreachableRequeue, "cluster %s: waiting for the first health probe", cluster)
	case h.Unreachable():
		// The cache would answer with what it saw last; acting on that is unsafe.
		return nil, flow.Waiting(srv1alpha1.ReasonAPIServerDown, unreachableRequeue,
			"cluster %s is unreachable: its API server does not answer the health probe", cluster)
	}
	rem, err := r.Remote.Get(key)
	if err != nil {
		return nil, flow.Waiting(reasonCacheSyncing, syncingRequeue, "cluster %s is reachable but its cache has not synced yet", cluster)
	}
	return rem, nil
}

// writeStatus writes the status when it changed through flow.StatusWriter, an
// update with the resourceVersion it was read with, so that conditions other
// controllers set in between are not lost: a stale read fails with a conflict.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	out, err := flow.NewStatusWriter(r.Client, nil).Write(ctx, s.group,
		flow.Change{Changed: !equality.Semantic.DeepEqual(s.before.Status, s.group.Status)})
	switch {
	case apierrors.IsConflict(err):
		return err
	case err != nil:
		return fmt.Errorf("writing status: %w", err)
	}
	if out.Wrote {
		r.recordTransition(s)
	}
	return nil
}

func (r *Reconciler) recordTransition(s *scope) {
	now := meta.FindStatusCondition(s.group.Status.Conditions, srv1alpha1.ConditionSynced)
	was := meta.FindStatusCondition(s.before.Status.Conditions, srv1alpha1.ConditionSynced)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	kind := corev1.EventTypeNormal
	if now.Status != "True" {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Event(s.group, kind, now.Reason, now.Message)
}
