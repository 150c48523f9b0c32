package protection

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// SetupWithManager registers the controller with mgr and its remote watches with
// rm.
//
// Wake-ups: the request itself (spec changes, deletion, annotations such as
// srv1alpha1.ForceUnprotectAnnotation), its zone, zone health changes, and on the
// workload clusters the DRBDResources, PVCs and replica holder pods it created
// (by label) and the VM it names. The holder pods' watch is how a placement
// hears that the scheduler bound the pod, or why it cannot; like every remote
// kind it is scoped to the DR namespace's label (remote.scopeOf), so it costs
// the DR namespace's own pods, not the cluster's. A request being deleted
// also wakes on changes of its quorum group, of the group's workload copies
// and of the group's FailoverRequests, which its removal waits on. One
// reconcile runs at a time, which the port allocation relies on.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache, o Options) error {
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Remote:    rm,
		Recorder:  mgr.GetEventRecorderFor(ControllerName),
		Options:   o,
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controllerOptions()).
		For(&srv1alpha1.ProtectionRequest{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&srv1alpha1.ProtectionZone{}, handler.EnqueueRequestsFromMapFunc(r.requestsOfZone),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&srv1alpha1.ProtectionGroup{}, handler.EnqueueRequestsFromMapFunc(r.deletingOfGroup),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&srv1alpha1.FailoverRequest{}, handler.EnqueueRequestsFromMapFunc(r.deletingOfFailover)).
		WatchesRawSource(rm.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
			{Object: &srv1alpha1.DRBDResource{}, Map: byLabel},
			{Object: &corev1.PersistentVolumeClaim{}, Map: byLabel},
			{Object: &corev1.Pod{}, Map: byLabel},
			{Object: &kubevirtv1.VirtualMachine{}, Map: r.byVM},
			{Object: &srv1alpha1.ProtectionGroup{}, Map: r.byGroupCopy},
		}, Clusters: remote.ZoneMap(r.requestsOfZone)})).
		Complete(r)
}

// controllerOptions runs one reconcile at a time and retries a failed one with
// flow's capped backoff: a request whose status writes failed all through a
// quorum API server outage would otherwise sleep for minutes after it.
func controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: 1, RateLimiter: flow.RetryLimiter()}
}

// byLabel maps an object this controller created back to its request, when the
// object belongs to the DR namespace of the watch.
func byLabel(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[srv1alpha1.ProtectionRequestLabel] == "" || l[srv1alpha1.DRNamespaceLabel] != key.Namespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: key.Namespace, Name: l[srv1alpha1.ProtectionRequestLabel]}}}
}

// byVM maps a VM of a zone cluster to the unfinished or deleted requests naming it.
func (r *Reconciler) byVM(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	list := &srv1alpha1.ProtectionRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if p.Spec.ZoneRef.Name == key.Zone && active(&p) &&
			p.Spec.VirtualMachine.Namespace == obj.GetNamespace() && p.Spec.VirtualMachine.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

// requestsOfZone maps a zone to its unfinished or deleted requests.
func (r *Reconciler) requestsOfZone(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &srv1alpha1.ProtectionRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if p.Spec.ZoneRef.Name == obj.GetName() && active(&p) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

// active is true for requests the controller still has work for: unfinished or
// being deleted.
func active(p *srv1alpha1.ProtectionRequest) bool {
	return !terminal(p.Status.Phase) || !p.DeletionTimestamp.IsZero()
}

// byGroupCopy maps a workload copy of a group to the deleted requests of the
// group, which wait for pg-sync to update it.
func (r *Reconciler) byGroupCopy(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != key.Namespace {
		return nil
	}
	return r.deleting(ctx, key.Namespace, obj.GetName())
}

// deletingOfGroup maps a quorum group to its deleted requests, which wait for
// its activeCluster (a failback) or its membership.
func (r *Reconciler) deletingOfGroup(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.deleting(ctx, obj.GetNamespace(), obj.GetName())
}

// deletingOfFailover maps a FailoverRequest to the deleted requests of its
// group, which wait for it to end.
func (r *Reconciler) deletingOfFailover(ctx context.Context, obj client.Object) []reconcile.Request {
	f, ok := obj.(*srv1alpha1.FailoverRequest)
	if !ok {
		return nil
	}
	return r.deleting(ctx, f.Namespace, f.Spec.ProtectionGroupRef.Name)
}

func (r *Reconciler) deleting(ctx context.Context, namespace, group string) []reconcile.Request {
	list := &srv1alpha1.ProtectionRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if !p.DeletionTimestamp.IsZero() && p.Spec.ProtectionGroupRef.Name == group {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}
