package failover

import (
	"context"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// StandDownControllerName names the controller that stands a returned
// fenced-off cluster down.
const StandDownControllerName = "failover-standdown"

// standDownRecheck is how often a group whose fenced-off cluster is not
// stood down looks again without an event.
const standDownRecheck = 30 * time.Second

// A cluster that an unplanned failover fenced off (FencedOffAnnotation) kept
// its replicas Primary and may have kept its VMs running while it was cut off.
// When its API server answers again while the group runs elsewhere, the
// stand-down controller stops the group there and demotes its replicas to
// Secondary, without waiting for a failback request: the fenced-off copy must
// not go on serving a stale, diverging copy of the VMs. It discards nothing
// and leaves the active cluster's fencing in place, so the two copies stay
// disconnected; a planned failback rejoins the cluster (rejoin.go).
//
// It stays out of the way of any request: while the group's failover Lease
// is held, the request owns the group, and the group is read through the API
// server, so a failback that has just rejoined and cleared the record is never
// demoted after it.

// StandDown stands a group's returned fenced-off cluster down.
type StandDown struct {
	Client    client.Client
	APIReader client.Reader
	Remote    remote.ClusterCache
	Recorder  record.EventRecorder

	// standing holds the groups with a stand-down under way, so that its
	// end is told once.
	standing sync.Map
}

func setupStandDown(mgr ctrl.Manager, rm remote.ClusterCache) error {
	r := &StandDown{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Remote: rm, Recorder: mgr.GetEventRecorderFor(StandDownControllerName)}
	fencedOff := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetAnnotations()[srv1alpha1.FencedOffAnnotation] != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(StandDownControllerName).
		For(&srv1alpha1.ProtectionGroup{}, builder.WithPredicates(fencedOff)).
		WatchesRawSource(rm.Source(StandDownControllerName, remote.Events{Kinds: []remote.Kind{
			{Object: &srv1alpha1.ProtectionGroup{}, Map: r.groupOfRemote},
			{Object: &srv1alpha1.DRBDResource{}, Map: r.groupOfReplica},
		}, Clusters: r.groupsFencingOff})).
		Complete(r)
}

// groupsFencingOff wakes, on a change of a cluster's reachability, the groups
// that record it as fenced off.
func (r *StandDown) groupsFencingOff(ctx context.Context, key remote.Key) []reconcile.Request {
	list := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, g := range list.Items {
		if g.Annotations[srv1alpha1.FencedOffAnnotation] == key.Cluster {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
		}
	}
	return out
}

func (r *StandDown) groupOfRemote(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: key.Namespace, Name: obj.GetName()}}}
}

func (r *StandDown) groupOfReplica(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	g := obj.GetLabels()[srv1alpha1.ProtectionGroupLabel]
	if g == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: key.Namespace, Name: g}}}
}

// Reconcile stands the group's fenced-off cluster down, once it answers.
func (r *StandDown) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Every replica event of every group wakes this controller, and almost
	// no group fences anything off: the cache answers for those, so a
	// failover of 20 VMs does not cost the quorum API server a read per
	// replica change. A new record's event wakes the group again, so no
	// record is missed; a group that has one is decided on a fresh read.
	if quiet, err := r.fencesNothingOff(ctx, req.NamespacedName); quiet || err != nil {
		return ctrl.Result{}, err
	}
	g := &srv1alpha1.ProtectionGroup{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	fenced := g.Annotations[srv1alpha1.FencedOffAnnotation]
	if fenced == "" || fenced == g.Spec.ActiveCluster || g.Spec.ZoneRef == nil {
		return ctrl.Result{}, nil
	}
	lease := &coordinationv1.Lease{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: srv1alpha1.FailoverLockName(g.Name)}, lease)
	if err == nil {
		return ctrl.Result{RequeueAfter: standDownRecheck}, nil // a request owns the group
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	rc, err := r.Remote.Get(remote.Key{Namespace: g.Namespace, Zone: g.Spec.ZoneRef.Name, Cluster: fenced})
	if err != nil {
		// Still cut off: its return wakes the group.
		log.FromContext(ctx).V(1).Info("fenced-off cluster not reached", "cluster", fenced, "reason", err.Error())
		return ctrl.Result{RequeueAfter: standDownRecheck}, nil
	}
	done, what, err := r.standDownCluster(ctx, rc, g)
	if err != nil {
		return ctrl.Result{}, err
	}
	if what != "" {
		r.Recorder.Eventf(g, "Warning", srv1alpha1.ReasonStoodDown,
			"%s, fenced off during an unplanned failover, answers again while group %s runs on %s: %s there; it stays fenced off (disconnected from %s) until a planned failback to it rejoins it",
			fenced, g.Name, g.Spec.ActiveCluster, what, g.Spec.ActiveCluster)
	}
	if !done {
		r.standing.Store(req.NamespacedName, true)
		return ctrl.Result{RequeueAfter: unreachableRetry}, nil
	}
	if _, was := r.standing.LoadAndDelete(req.NamespacedName); was {
		r.Recorder.Eventf(g, "Normal", srv1alpha1.ReasonStoodDown,
			"%s stood down: group %s is stopped there and its DRBD replicas are Secondary, disconnected from %s, where the group runs; fail back with a planned FailoverRequest to %s annotated %s=%s to rejoin it",
			fenced, g.Name, g.Spec.ActiveCluster, fenced, srv1alpha1.DiscardDivergedAnnotation, g.Name)
	}
	return ctrl.Result{}, nil
}

// standDownCluster stops the group on the fenced-off cluster, then demotes
// its replicas there. It returns whether both are done, and what it asked
// for in this pass ("" when nothing).
func (r *StandDown) standDownCluster(ctx context.Context, rc *remote.Remote, g *srv1alpha1.ProtectionGroup) (bool, string, error) {
	pg, err := workloadGroup(ctx, rc, g.Namespace, g.Name)
	if err != nil {
		return false, "", client.IgnoreNotFound(err)
	}
	var asked []string
	if pg.Spec.DesiredState != srv1alpha1.StateStopped {
		if err := setDesiredState(ctx, rc, g.Namespace, g.Name, srv1alpha1.StateStopped); err != nil {
			return false, "", err
		}
		asked = append(asked, "stopping its VMs")
	}
	if !settled(pg, srv1alpha1.StateStopped) {
		return false, strings.Join(asked, " and "), nil
	}
	want := secondaryIntent()
	if !asks(pg, want) {
		if err := setIntent(ctx, rc, g.Namespace, g.Name, want); err != nil {
			return false, strings.Join(asked, " and "), err
		}
		asked = append(asked, "demoting its DRBD replicas to Secondary")
	}
	res, err := drbdResources(ctx, rc, g.Name)
	if err != nil {
		return false, strings.Join(asked, " and "), err
	}
	secondary := carries(pg, res, want)
	for i := range res {
		secondary = secondary && res[i].Status.Role == string(srv1alpha1.RoleSecondary)
	}
	return secondary, strings.Join(asked, " and "), nil
}

// fencesNothingOff reports, from the cache, that the group is gone or
// records no fenced-off cluster.
func (r *StandDown) fencesNothingOff(ctx context.Context, key types.NamespacedName) (bool, error) {
	g := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, key, g); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	return g.Annotations[srv1alpha1.FencedOffAnnotation] == "", nil
}
