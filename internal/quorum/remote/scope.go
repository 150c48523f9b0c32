package remote

import (
	"context"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/boot"
)

// scope is what a connection's cache watches of one kind: the objects the DR
// namespace owns, not everything the workload cluster holds. A
// quorum-manager's memory and the watch events it receives then follow what
// it protects, and DR namespaces sharing a cluster each watch their own.
type scope struct {
	labels labels.Selector // nil: any labels
	fields fields.Selector // nil: any fields
}

// scopeOf is the scope of obj's kind for the DR namespace of key.
//
// By default a kind is watched through the DR namespace label
// (srv1alpha1.DRNamespaceLabel): every object the product creates on a
// workload cluster carries it, and protection and pg-sync put it on the VMs
// and PVCs they take into a group before they wait on any event of them. The
// API server then sends neither the objects of other DR namespaces nor the
// cluster's unrelated ones. An object that loses the label leaves the watch
// with a delete event carrying its last labelled state (kubernetes
// staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go,
// convertToWatchEvent), which maps it to its flow; the flow reads it directly
// and labels it again (pg-sync) or holds.
//
// The exceptions:
//   - ProtectionGroup copies live in the DR namespace, and only there;
//   - StorageClasses and VolumeGroupReplicationClasses are the cluster
//     administrator's: unlabelled, cluster-scoped and few. DRPolicy discovery
//     reads them all.
func scopeOf(key Key, obj runtime.Object) scope {
	switch obj.(type) {
	case *srv1alpha1.ProtectionGroup:
		return scope{fields: fields.OneTermEqualSelector("metadata.namespace", key.Namespace)}
	case *storagev1.StorageClass, *replicationv1alpha1.VolumeGroupReplicationClass:
		return scope{}
	}
	return scope{labels: labels.SelectorFromSet(labels.Set{srv1alpha1.DRNamespaceLabel: key.Namespace})}
}

// newScopedInformer is the informer of a connection's cache: boot's, whose
// lists and watches carry each kind's scope. It narrows at the informer rather
// than through cache.Options.ByObject, which resolves every listed kind with
// the API server's discovery when the cache is built: a connection must be
// buildable while the cluster is down or lacks a CRD (csi-addons').
func newScopedInformer(key Key) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return boot.NewInformer(scoped{lw: toolscache.ToListerWatcherWithContext(lw), scope: scopeOf(key, obj)}, obj, resync, indexers)
	}
}

// scoped adds a scope to every list and watch of lw.
type scoped struct {
	lw    toolscache.ListerWatcherWithContext
	scope scope
}

func (s scoped) options(o metav1.ListOptions) metav1.ListOptions {
	if s.scope.labels != nil {
		o.LabelSelector = and(o.LabelSelector, s.scope.labels.String())
	}
	if s.scope.fields != nil {
		o.FieldSelector = and(o.FieldSelector, s.scope.fields.String())
	}
	return o
}

// and joins two selectors in their string form: a comma is AND in both the
// label and the field selector syntax.
func and(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func (s scoped) List(o metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), o)
}

func (s scoped) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

func (s scoped) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return s.lw.ListWithContext(ctx, s.options(o))
}

func (s scoped) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.lw.WatchWithContext(ctx, s.options(o))
}
