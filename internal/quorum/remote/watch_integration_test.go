package remote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestCacheWatchOutlivesRequestTimeout: the timeout of a zone's client
// settings bounds requests, not the remote cache's watches. A watch cut at
// each timeout would be opened again for as long as quorum-manager runs, on
// every cluster and for every watched kind. The watches end when the
// controller manager that runs the remote Manager stops.
func TestCacheWatchOutlivesRequestTimeout(t *testing.T) {
	ctx := context.Background()
	z := harness.Start(t, harness.Options{Scheme: scheme.New()}, "workload")
	c := z.Clusters["workload"]
	m := remote.NewManager(scheme.New(), logr.Discard(), remote.Options{})
	seen := make(chan reconcile.Request, 16)
	m.Source("test", remote.Events{Kinds: []remote.Kind{{Object: &corev1.ConfigMap{},
		Map: func(_ context.Context, _ remote.Key, o client.Object) []reconcile.Request {
			seen <- reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
			return nil
		}}}})
	key := remote.Key{Namespace: "dr", Zone: "zone", Cluster: "workload"}
	const timeout = time.Second
	require.NoError(t, m.Connect(ctx, key, c.Kubeconfig, remote.Limits{QPS: 50, Burst: 100, Timeout: timeout}))
	running, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- m.Start(running) }()
	t.Cleanup(stop)
	env.Eventually(t, 30*time.Second, "remote cache synced", func() error {
		_, err := m.Get(key)
		return err
	})
	before, err := c.RequestCounts(ctx)
	require.NoError(t, err)

	// Nothing but time can show that a watch was not cut: three timeouts pass.
	time.Sleep(3 * timeout)
	// Labelled with the key's DR namespace: the cache watches only what its
	// DR namespace owns.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after-the-timeouts",
		Labels: map[string]string{srv1alpha1.DRNamespaceLabel: key.Namespace}}}
	require.NoError(t, c.Client.Create(ctx, cm))
	deadline := time.After(30 * time.Second)
	for got := false; !got; {
		select {
		case r := <-seen:
			got = r.Name == cm.Name
		case <-deadline:
			t.Fatal("the remote cache did not see a ConfigMap created after three request timeouts")
		}
	}
	after, err := c.RequestCounts(ctx)
	require.NoError(t, err)
	// The API server counts a watch when it ends; an open watch is not counted.
	const watches = "WATCH configmaps/"
	require.Zero(t, after[watches]-before[watches], "the cache's ConfigMap watch ended and was opened again within three request timeouts")

	// When the controller manager stops, so do the connections: the watch ends.
	stop()
	require.NoError(t, <-stopped)
	env.Eventually(t, 30*time.Second, "the cache's watch ended with its manager", func() error {
		now, err := c.RequestCounts(ctx)
		if err != nil {
			return err
		}
		if now[watches] == after[watches] {
			return fmt.Errorf("the ConfigMap watch is still open")
		}
		return nil
	})
	require.ErrorIs(t, m.Connect(ctx, key, c.Kubeconfig, remote.Limits{QPS: 50, Burst: 100, Timeout: 2 * timeout}), remote.ErrStopped)
}
