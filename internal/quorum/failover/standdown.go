package failover

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
// disconnected.
//
// Once stood down, the cluster discards its diverged writes and rejoins
// (standdown_rejoin.go), unless the operator holds them with
// HoldDivergedAnnotation. The group's StoodDown condition says where the
// stand-down is, and Diverged what diverged and where the rejoin is. An
// operator who removes the record instead ends the stand-down: the condition
// goes and nothing more is asked of either cluster.
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
}

func setupStandDown(mgr ctrl.Manager, rm remote.ClusterCache) error {
	r := &StandDown{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Remote: rm, Recorder: mgr.GetEventRecorderFor(StandDownControllerName)}
	// The condition lets the removal of the record through, so that the
	// condition goes with it.
	concerned := predicate.NewPredicateFuncs(func(o client.Object) bool {
		g, ok := o.(*srv1alpha1.ProtectionGroup)
		return ok && !fencesNothingOff(g)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(StandDownControllerName).
		For(&srv1alpha1.ProtectionGroup{}, builder.WithPredicates(concerned)).
		WatchesRawSource(rm.Source(StandDownControllerName, remote.Events{Kinds: []remote.Kind{
			{Object: &srv1alpha1.ProtectionGroup{}, Map: r.groupOfRemote},
			{Object: &srv1alpha1.DRBDResource{}, Map: r.groupOfReplica},
		}, Clusters: r.groupsFencingOff})).
		Complete(r)
}

// fencesNothingOff: the group neither records a fenced-off cluster nor
// carries a StoodDown condition to clear.
func fencesNothingOff(g *srv1alpha1.ProtectionGroup) bool {
	return g.Annotations[srv1alpha1.FencedOffAnnotation] == "" &&
		meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionStoodDown) == nil
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

func (r *StandDown) groupOfRemote(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	return r.ifConcerned(ctx, types.NamespacedName{Namespace: key.Namespace, Name: obj.GetName()})
}

func (r *StandDown) groupOfReplica(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	g := obj.GetLabels()[srv1alpha1.ProtectionGroupLabel]
	if g == "" {
		return nil
	}
	return r.ifConcerned(ctx, types.NamespacedName{Namespace: key.Namespace, Name: g})
}

// ifConcerned wakes the group only when it has something to stand down (or
// a condition to clear): every replica event of every group passes here,
// and almost no group fences anything off. A group that comes to record a
// fenced-off cluster is woken by that change of its own.
func (r *StandDown) ifConcerned(ctx context.Context, key types.NamespacedName) []reconcile.Request {
	if quiet, err := r.concernsNothing(ctx, key); quiet && err == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// Reconcile stands the group's fenced-off cluster down, once it answers.
func (r *StandDown) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Every replica event of every group wakes this controller, and almost
	// no group fences anything off: the cache answers for those, so a
	// failover of 20 VMs does not cost the quorum API server a read per
	// replica change. A new record's event wakes the group again, so no
	// record is missed; a group that has one is decided on a fresh read.
	if quiet, err := r.concernsNothing(ctx, req.NamespacedName); quiet || err != nil {
		return ctrl.Result{}, err
	}
	g := &srv1alpha1.ProtectionGroup{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	fenced := g.Annotations[srv1alpha1.FencedOffAnnotation]
	if fenced == "" || fenced == g.Spec.ActiveCluster || g.Spec.ZoneRef == nil {
		// No record: a failback rejoined the cluster, or the operator
		// removed the record. Nothing more is asked of either cluster.
		return ctrl.Result{}, r.endStandDown(ctx, g)
	}
	lease := &coordinationv1.Lease{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: srv1alpha1.FailoverLockName(g.Name)}, lease)
	if err == nil {
		return ctrl.Result{RequeueAfter: standDownRecheck}, nil // a request owns the group
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	key := remote.Key{Namespace: g.Namespace, Zone: g.Spec.ZoneRef.Name, Cluster: fenced}
	rc, err := remote.Answering(r.Remote, key)
	if err != nil {
		// Still cut off: its return wakes the group.
		log.FromContext(ctx).V(1).Info("fenced-off cluster not reached", "cluster", fenced, "reason", err.Error())
		return ctrl.Result{RequeueAfter: standDownRecheck}, r.standingDown(ctx, g, fmt.Sprintf(
			"waiting for %s, fenced off during an unplanned failover, to answer: its VMs may still run there, cut off from %s, where group %s runs; once it answers, the group is stopped there and its DRBD replicas demoted to Secondary",
			fenced, g.Spec.ActiveCluster, g.Name))
	}
	st, err := r.standDownCluster(ctx, rc, g)
	if err != nil {
		return ctrl.Result{}, err
	}
	if st.asked != "" {
		r.Recorder.Eventf(g, "Warning", srv1alpha1.ReasonStoodDown,
			"%s, fenced off during an unplanned failover, answers again while group %s runs on %s: %s there; it stays disconnected from %s until it rejoins (see the StoodDown condition)",
			fenced, g.Name, g.Spec.ActiveCluster, st.asked, g.Spec.ActiveCluster)
	}
	if st.waits != "" {
		return ctrl.Result{RequeueAfter: unreachableRetry}, r.standingDown(ctx, g, fmt.Sprintf(
			"%s, fenced off during an unplanned failover, answers again while group %s runs on %s: %s",
			fenced, g.Name, g.Spec.ActiveCluster, st.waits))
	}
	if err := r.stoodDown(ctx, g, fenced); err != nil || g.Annotations[srv1alpha1.FencedOffByAnnotation] == "" {
		return ctrl.Result{}, err
	}
	pass, err := r.rejoinReturned(ctx, g, rc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pass.waits != "" {
		log.FromContext(ctx).V(1).Info("rejoining the returned cluster", "cluster", fenced, "waits", pass.waits)
		return ctrl.Result{RequeueAfter: rejoinRecheck}, r.rejoinWaits(ctx, g, pass.waits)
	}
	return ctrl.Result{}, nil
}

// concernsNothing reports, from the cache, that the group is gone or
// fences nothing off.
func (r *StandDown) concernsNothing(ctx context.Context, key types.NamespacedName) (bool, error) {
	g := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, key, g, readOnly); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	return fencesNothingOff(g), nil
}

// standDownPass is where one pass left the stand-down.
type standDownPass struct {
	// asked is what the pass asked of the fenced-off cluster ("" when nothing).
	asked string
	// waits is what the stand-down still waits for ("" once done).
	waits string
}

// standDownCluster stops the group on the fenced-off cluster, then demotes
// its replicas there.
func (r *StandDown) standDownCluster(ctx context.Context, rc *remote.Remote, g *srv1alpha1.ProtectionGroup) (standDownPass, error) {
	fenced := g.Annotations[srv1alpha1.FencedOffAnnotation]
	pg, err := workloadGroup(ctx, rc, g.Namespace, g.Name)
	if apierrors.IsNotFound(err) {
		return standDownPass{waits: fmt.Sprintf("waiting for the copy of group %s on %s to be read", g.Name, fenced)}, nil
	}
	if err != nil {
		return standDownPass{}, err
	}
	var asked []string
	if pg.Spec.DesiredState != srv1alpha1.StateStopped {
		if err := setDesiredState(ctx, rc, g.Namespace, g.Name, srv1alpha1.StateStopped); err != nil {
			return standDownPass{}, err
		}
		asked = append(asked, "stopping its VMs")
	}
	if !settled(pg, srv1alpha1.StateStopped) {
		return standDownPass{asked: strings.Join(asked, " and "),
			waits: fmt.Sprintf("waiting for group %s to stop there (currentState %q) before its DRBD replicas are demoted to Secondary", g.Name, pg.Status.CurrentState)}, nil
	}
	want := secondaryIntent()
	if !asks(pg, want) {
		if err := setIntent(ctx, rc, g.Namespace, g.Name, want); err != nil {
			return standDownPass{asked: strings.Join(asked, " and ")}, err
		}
		asked = append(asked, "demoting its DRBD replicas to Secondary")
	}
	res, err := drbdResources(ctx, rc, g.Name)
	if err != nil {
		return standDownPass{asked: strings.Join(asked, " and ")}, err
	}
	secondary := carries(pg, res, want)
	for i := range res {
		secondary = secondary && res[i].Status.Role == string(srv1alpha1.RoleSecondary)
	}
	st := standDownPass{asked: strings.Join(asked, " and ")}
	if !secondary {
		st.waits = fmt.Sprintf("group %s is stopped there; waiting for its DRBD replicas to become Secondary", g.Name)
	}
	return st, nil
}
