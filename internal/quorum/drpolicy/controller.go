package drpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "drpolicy"

// Reasons of the Validated condition.
const (
	ReasonSucceeded        = "Succeeded"
	ReasonClusterNotInZone = "ClusterNotInZone"
	ReasonInvalidSelector  = "InvalidSelector"
	// ReasonKindNotServed: a cluster does not serve VolumeGroupReplicationClass
	// (csi-addons CRDs missing); the connection watches it once installed.
	ReasonKindNotServed = "KindNotServed"
)

// unreachableRetry is the safety net while a cluster is unreachable; its return
// is announced by the health prober, which usually wakes the policy earlier.
// syncingRetry is the retry while a reachable cluster's cache fills.
const (
	unreachableRetry = 30 * time.Second
	syncingRetry     = time.Second
	// unservedRetry: the connection retries unserved kinds every minute.
	unservedRetry = remote.DefaultUnservedRetry
)

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// policies and zones and writes policy status.
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler discovers the peer classes of DRPolicies.
type Reconciler struct {
	Client   client.Client
	Remote   remote.ClusterCache
	Recorder record.EventRecorder
}

// SetupWithManager registers the controller and its remote watches on
// StorageClasses and VolumeGroupReplicationClasses. Call it before the manager
// starts, so that the watches exist before any cluster connects.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache) error {
	r := &Reconciler{Client: mgr.GetClient(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName)}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&drv1alpha1.DRPolicy{}).
		Watches(&srv1alpha1.ProtectionZone{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfZone)).
		WatchesRawSource(rm.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
			{Object: &storagev1.StorageClass{}, Map: r.policiesOfRemote},
			{Object: &replicationv1alpha1.VolumeGroupReplicationClass{}, Map: r.policiesOfRemote},
		}, Clusters: r.policiesOfChangedCluster})).
		Complete(r)
}

// Reconcile discovers one policy's peer classes and writes its status if it
// changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &drv1alpha1.DRPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := p.DeepCopy()
	peerClasses, err := r.discover(ctx, p)
	if err == nil {
		p.Status.PeerClasses = peerClasses
		setValidated(p, metav1.ConditionTrue, ReasonSucceeded, fmt.Sprintf("%d peer classes discovered on %s", len(peerClasses), joinClusters(p)))
	} else {
		// Keep the last discovered peer classes: a failover must still find them
		// while one of the clusters is down.
		setValidated(p, metav1.ConditionFalse, flow.ReasonOf(err, srv1alpha1.ReasonClusterUnreachable), err.Error())
	}
	// Ready follows Validated: a cluster that does not answer is retried
	// (Reconciling), a policy naming no zone or a bad selector is Stalled.
	flow.ReadyFrom(&p.Status.Conditions, p.Generation, srv1alpha1.ConditionValidated, err)
	if werr := r.writeStatus(ctx, before, p); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	return flow.Result(ctrl.Result{}, err)
}

// discover reads the classes on both clusters and pairs them.
func (r *Reconciler) discover(ctx context.Context, p *drv1alpha1.DRPolicy) ([]drv1alpha1.PeerClass, error) {
	if len(p.Spec.DRClusters) != 2 {
		return nil, flow.Stalled(ReasonClusterNotInZone, "drClusters must name exactly two clusters, got %d", len(p.Spec.DRClusters))
	}
	zone, err := r.zoneOf(ctx, p)
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(&p.Spec.ReplicationClassSelector)
	if err != nil {
		return nil, flow.Stalled(ReasonInvalidSelector, "replicationClassSelector: %w", err)
	}
	sides := make([]clusterClasses, 0, 2)
	for _, name := range p.Spec.DRClusters {
		key := remote.Key{Namespace: p.Namespace, Zone: zone.Name, Cluster: name}
		rc, err := r.Remote.Get(key)
		if err != nil {
			retry := unreachableRetry
			if r.Remote.Health(key).Reachable() {
				// Connected and reachable: the cache is filling.
				retry = syncingRetry
			}
			return nil, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, retry, "cluster %s: %w", name, err)
		}
		c := clusterClasses{name: name}
		scs := &storagev1.StorageClassList{}
		if err := rc.Cached.List(ctx, scs); err != nil {
			return nil, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cluster %s: listing StorageClasses: %w", name, err)
		}
		c.storageClasses = scs.Items
		if pairsGroupClasses(zone.Spec.StorageBackend) {
			vgrcs := &replicationv1alpha1.VolumeGroupReplicationClassList{}
			err = rc.Cached.List(ctx, vgrcs, client.MatchingLabelsSelector{Selector: selector})
			switch {
			case remote.IsNotServed(err):
				return nil, flow.Waiting(ReasonKindNotServed, unservedRetry, "%w (csi-addons CRDs not installed); install them on cluster %s: zone %s uses the %s backend, which replicates through VolumeGroupReplications",
					err, name, zone.Name, zone.Spec.StorageBackend)
			case err != nil:
				return nil, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cluster %s: listing VolumeGroupReplicationClasses: %w", name, err)
			}
			c.groupClasses = vgrcs.Items
		}
		sides = append(sides, c)
	}
	if zone.Spec.StorageBackend == srv1alpha1.BackendVolSync {
		return discoverVolSync(sides[0], sides[1]), nil
	}
	return discover(sides[0], sides[1]), nil
}

// pairsGroupClasses reports whether a backend's peer classes pair
// VolumeGroupReplicationClasses. Only the Offloaded backend's do: a DRBD or
// VolSync zone's clusters need not serve the csi-addons kinds at all, so
// their absence there is no reason to wait.
func pairsGroupClasses(backend srv1alpha1.StorageBackend) bool {
	return backend == srv1alpha1.BackendOffloaded
}

// zoneOf finds the zone of the policy's namespace whose clusters include both
// drClusters.
func (r *Reconciler) zoneOf(ctx context.Context, p *drv1alpha1.DRPolicy) (*srv1alpha1.ProtectionZone, error) {
	zones := &srv1alpha1.ProtectionZoneList{}
	if err := r.Client.List(ctx, zones, client.InNamespace(p.Namespace)); err != nil {
		return nil, err
	}
	for _, z := range zones.Items {
		names := make([]string, 0, len(z.Spec.Clusters))
		for _, c := range z.Spec.Clusters {
			names = append(names, c.Name)
		}
		if slices.Contains(names, p.Spec.DRClusters[0]) && slices.Contains(names, p.Spec.DRClusters[1]) {
			return &z, nil
		}
	}
	return nil, flow.Stalled(srv1alpha1.ReasonZoneNotFound, "no ProtectionZone in %s has both clusters %s", p.Namespace, joinClusters(p))
}

// writeStatus writes the status only when it changed, and records an event when
// the Validated condition changed status.
func (r *Reconciler) writeStatus(ctx context.Context, before, p *drv1alpha1.DRPolicy) error {
	p.Status.ObservedGeneration = p.Generation
	if equality.Semantic.DeepEqual(before.Status, p.Status) {
		return nil
	}
	// An update with the resourceVersion read: a stale read fails with a
	// conflict and is retried with a fresh copy.
	out, err := flow.NewStatusWriter(r.Client, nil).Write(ctx, p, flow.Change{Changed: true})
	if err != nil || !out.Wrote {
		return err
	}
	if ev, ok := validatedTransition(before, p); ok {
		r.Recorder.Event(p, ev.kind, ev.reason, ev.message)
	}
	return nil
}
