package fake_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

var key = remote.Key{Namespace: "dr", Zone: "zone", Cluster: "primary"}

func started(t *testing.T, src interface {
	Start(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error
}) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); q.ShutDown() })
	require.NoError(t, src.Start(ctx, q))
	return q
}

func names(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var out []string
	for q.Len() > 0 {
		r, _ := q.Get()
		out = append(out, r.Name)
		q.Done(r)
	}
	return out
}

// Every write through a fake cluster, typed or applied, reaches the sources
// that watch its kind, as the object stored; other kinds reach nobody.
func TestWritesReachTheWatchingSources(t *testing.T) {
	ctx := context.Background()
	f := fake.New(scheme.New())
	c := f.Add(key)
	byName := func(_ context.Context, k remote.Key, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: k.Namespace, Name: o.GetName() + "/" + o.GetLabels()["state"]}}}
	}
	q := started(t, f.Source("groups", remote.Events{Kinds: []remote.Kind{{Object: &srv1alpha1.ProtectionGroup{}, Map: byName}}}))

	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "g", Labels: map[string]string{"state": "new"}}}
	require.NoError(t, c.Create(ctx, pg))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "unwatched"}}))
	require.Equal(t, []string{"g/new"}, names(q))

	// A server-side apply of part of the object: the source sees all of it.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("ProtectionGroup"))
	u.SetNamespace("dr")
	u.SetName("g")
	u.SetLabels(map[string]string{"state": "applied"})
	require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"), client.ForceOwnership))
	require.Equal(t, []string{"g/applied"}, names(q))

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pg), pg))
	pg.Status.CurrentState = srv1alpha1.StateRunning
	require.NoError(t, c.Status().Update(ctx, pg))
	require.NoError(t, c.Delete(ctx, pg))
	require.Equal(t, []string{"g/applied"}, names(q), "a status write and a delete are events too (one request, deduplicated)")

	f.Trigger(ctx, key, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Name: "h"}})
	require.Equal(t, []string{"h/"}, names(q))
}

// Reachability: a cluster never added has no connection, one that is syncing
// cannot be read, an unreachable one answers from its cache but not
// directly; each change of verdict reaches the sources.
func TestReachability(t *testing.T) {
	ctx := context.Background()
	f := fake.New(scheme.New())
	_, err := f.Get(key)
	require.ErrorIs(t, err, remote.ErrNotConnected)
	require.Equal(t, remote.NotConnected, f.Health(key).State)

	f.Add(key, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "cm"}})
	q := started(t, f.Source("zones", remote.Events{Clusters: remote.ZoneRequests}))
	require.True(t, f.Health(key).Reachable())

	f.SetSynced(key, false)
	_, err = f.Get(key)
	require.ErrorIs(t, err, remote.ErrNotConnected)
	f.SetSynced(key, true)

	f.SetState(key, remote.Unreachable)
	h := f.Health(key)
	require.True(t, h.Unreachable())
	require.Equal(t, srv1alpha1.ReasonAPIServerDown, h.Reason())
	rc, err := f.Get(key)
	require.NoError(t, err)
	require.NoError(t, rc.Cached.Get(ctx, client.ObjectKey{Namespace: "dr", Name: "cm"}, &corev1.ConfigMap{}), "the cache answers with what it holds")
	require.Error(t, rc.Direct.Get(ctx, client.ObjectKey{Namespace: "dr", Name: "cm"}, &corev1.ConfigMap{}), "the API server does not")

	require.Eventually(t, func() bool { return q.Len() == 1 }, 5*time.Second, time.Millisecond, "the change reaches the source")
	require.Equal(t, []string{"zone"}, names(q))
}
