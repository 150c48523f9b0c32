package remote_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestUnservedKindIsRetried: a DRBD-only workload cluster does not serve
// csi-addons' VolumeGroupReplicationClass, which a quorum controller watches
// on every cluster. The connection must still sync and deliver the kinds the
// cluster serves; once the CRD is installed there, the kind is watched without
// a reconnect.
func TestUnservedKindIsRetried(t *testing.T) {
	ctx := context.Background()
	root := harness.RepoRoot()
	// This project's CRDs only: no csi-addons, KubeVirt or snapshot kinds.
	z := harness.Start(t, harness.Options{Scheme: scheme.New(), CRDDirectoryPaths: []string{
		filepath.Join(root, "charts", "protectionzone", "crds"),
		filepath.Join(root, "charts", "workload-control-plane", "crds"),
	}}, "drbd-only")
	c := z.Clusters["drbd-only"]
	m := remote.NewManager(scheme.New(), logr.Discard(), remote.Options{UnservedRetry: 500 * time.Millisecond})
	seen := make(chan string, 64)
	record := func(_ context.Context, _ remote.Key, o client.Object) []reconcile.Request {
		seen <- o.GetName()
		return nil
	}
	m.Source("test", remote.Events{Kinds: []remote.Kind{
		{Object: &replicationv1alpha1.VolumeGroupReplicationClass{}, Map: record},
		{Object: &corev1.ConfigMap{}, Map: record},
	}})
	key := remote.Key{Namespace: "dr", Zone: "zone", Cluster: "drbd-only"}
	require.NoError(t, m.Connect(ctx, key, c.Kubeconfig, remote.Limits{QPS: 50, Burst: 100, Timeout: 5 * time.Second}),
		"a cluster that does not serve a watched kind still connects")
	running, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() { _ = m.Start(running) }()
	env.Eventually(t, 30*time.Second, "remote cache synced without the unserved kind", func() error {
		_, err := m.Get(key)
		return err
	})
	waitFor := func(name, what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-seen:
				if got == name {
					return
				}
			case <-deadline:
				t.Fatalf("the remote source never delivered %s", what)
			}
		}
	}
	// Labelled with the key's DR namespace: the cache watches only what its
	// DR namespace owns.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "served-kind",
		Labels: map[string]string{srv1alpha1.DRNamespaceLabel: key.Namespace}}}
	require.NoError(t, c.Client.Create(ctx, cm))
	waitFor(cm.Name, "a ConfigMap (a served kind) while another kind is not served")
	before, err := m.Get(key)
	require.NoError(t, err)
	err = before.Cached.List(ctx, &replicationv1alpha1.VolumeGroupReplicationClassList{})
	require.True(t, remote.IsNotServed(err), "a cached list of an unserved kind is a NotServedError, got %v", err)
	require.ErrorContains(t, err, "does not serve VolumeGroupReplicationClass")

	// The CRD arrives later; a class created before the kind is watched is
	// delivered by the new watch's initial list.
	_, err = envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{ErrorIfPathMissing: true, Paths: []string{
		filepath.Join(root, "test", "crds", "thirdparty", "replication.storage.openshift.io_volumegroupreplicationclasses.yaml")}})
	require.NoError(t, err)
	vgrc := &replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "installed-later"},
		Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: "example.com/csi"}}
	require.NoError(t, c.Client.Create(ctx, vgrc))
	waitFor(vgrc.Name, "a VolumeGroupReplicationClass after its CRD was installed, without a reconnect")
	rc, err := m.Get(key)
	require.NoError(t, err)
	require.NoError(t, rc.Cached.List(ctx, &replicationv1alpha1.VolumeGroupReplicationClassList{}), "the kind is cached now")
}
