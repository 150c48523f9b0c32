package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/siterecovery/siterecovery/test/harness"
)

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, kubevirtv1.AddToScheme(s))
	return s
}

func newVM(name string) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &halted,
			Template:    &kubevirtv1.VirtualMachineInstanceTemplateSpec{},
		},
	}
}

func TestZone(t *testing.T) {
	began := time.Now()
	z := harness.Start(t, harness.Options{Scheme: testScheme(t)}, harness.Quorum, harness.Primary, harness.DR)
	t.Logf("3 clusters started in parallel in %s", time.Since(began).Round(time.Millisecond))
	require.Len(t, z.Clusters, 3)

	t.Run("each cluster answers and has the CRDs", func(t *testing.T) {
		hosts := map[string]bool{}
		for name, c := range z.Clusters {
			assert.Equal(t, name, c.Name)
			hosts[c.Config.Host] = true
			vm := newVM("crd-check")
			require.NoError(t, c.Client.Create(t.Context(), vm), "cluster %s", name)
			var got kubevirtv1.VirtualMachineList
			require.NoError(t, c.Client.List(t.Context(), &got, client.InNamespace("default")))
			assert.Len(t, got.Items, 1, "cluster %s", name)
		}
		assert.Len(t, hosts, 3, "every cluster has its own API server")
	})

	t.Run("kubeconfig works from a fresh client", func(t *testing.T) {
		for name, c := range z.Clusters {
			assert.NotContains(t, string(c.Kubeconfig), "exec:")
			assert.NotContains(t, string(c.Kubeconfig), "auth-provider")
			cfg, err := clientcmd.RESTConfigFromKubeConfig(c.Kubeconfig)
			require.NoError(t, err, "cluster %s", name)
			cl, err := client.New(cfg, client.Options{Scheme: testScheme(t)})
			require.NoError(t, err)
			var ns corev1.Namespace
			require.NoError(t, cl.Get(t.Context(), client.ObjectKey{Name: "default"}, &ns), "cluster %s", name)
		}
	})

	t.Run("outage of one API server", func(t *testing.T) {
		primary, dr := z.Clusters[harness.Primary], z.Clusters[harness.DR]
		before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-outage", Namespace: "default"},
			Data: map[string]string{"k": "v"}}
		require.NoError(t, primary.Client.Create(t.Context(), before))

		stopBegan := time.Now()
		require.NoError(t, primary.StopAPIServer())
		t.Logf("StopAPIServer took %s", time.Since(stopBegan).Round(time.Millisecond))

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		err := primary.Client.Get(ctx, client.ObjectKeyFromObject(before), &corev1.ConfigMap{})
		require.Error(t, err, "primary must not answer during the outage")
		t.Logf("request during outage: %v", err)
		require.NoError(t, dr.Client.Get(t.Context(), client.ObjectKey{Name: "default"}, &corev1.Namespace{}),
			"dr keeps answering")

		startBegan := time.Now()
		require.NoError(t, primary.StartAPIServer())
		t.Logf("StartAPIServer (until /readyz) took %s", time.Since(startBegan).Round(time.Millisecond))

		var got corev1.ConfigMap
		require.NoError(t, primary.Client.Get(t.Context(), client.ObjectKeyFromObject(before), &got),
			"the old client works again")
		assert.Equal(t, "v", got.Data["k"], "data survived the outage")
		var vms kubevirtv1.VirtualMachineList
		require.NoError(t, primary.Client.List(t.Context(), &vms, client.InNamespace("default")))
		assert.Len(t, vms.Items, 1, "custom resources survived the outage")

		cfg, err := clientcmd.RESTConfigFromKubeConfig(primary.Kubeconfig)
		require.NoError(t, err)
		cl, err := client.New(cfg, client.Options{Scheme: testScheme(t)})
		require.NoError(t, err)
		require.NoError(t, cl.Get(t.Context(), client.ObjectKeyFromObject(before), &corev1.ConfigMap{}),
			"the kubeconfig taken before the outage works again")
	})

	t.Run("garbage collection on demand, also after a restart", func(t *testing.T) {
		for name, c := range z.Clusters {
			assert.NotEmpty(t, c.DebugSocket(), "cluster %s", name)
		}
		require.NoError(t, z.CollectGarbage(t.Context()))
	})
}

// TestStopLeavesNoProcesses starts a zone with StartE, stops it and checks (through
// /proc) that no etcd or kube-apiserver of that zone is left and its directory is gone.
func TestStopLeavesNoProcesses(t *testing.T) {
	harness.RequireAPIServers(t)
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	z, err := harness.StartE(t.Context(), harness.Options{CRDDirectoryPaths: []string{}}, "solo")
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = z.Stop()
		}
	})
	c := z.Clusters["solo"]
	require.Len(t, processesMentioning(t, c.Dir), 2, "etcd and kube-apiserver run")

	require.NoError(t, c.StopAPIServer())
	require.Len(t, processesMentioning(t, c.Dir), 1, "only etcd runs during an outage")
	require.NoError(t, c.StartAPIServer())

	require.NoError(t, z.Stop())
	stopped = true
	assert.Empty(t, processesMentioning(t, c.Dir))
	_, err = os.Stat(z.Dir)
	assert.True(t, os.IsNotExist(err), "zone directory removed")
	require.NoError(t, z.Stop(), "Stop is idempotent")
}

// processesMentioning lists "pid cmdline" of processes whose command line contains s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		if strings.Trim(e.Name(), "0123456789") != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, s) {
			found = append(found, fmt.Sprintf("%s %.120s", e.Name(), cmd))
		}
	}
	return found
}

func TestStartERejectsBadNames(t *testing.T) {
	for _, names := range [][]string{nil, {"a", "a"}, {"Primary"}, {""}} {
		_, err := harness.StartE(t.Context(), harness.Options{}, names...)
		assert.Error(t, err, "names %q", names)
	}
}

func TestDefaultCRDPaths(t *testing.T) {
	paths := harness.DefaultCRDPaths()
	require.Contains(t, paths, filepath.Join(harness.RepoRoot(), "test", "crds", "thirdparty"))
	for _, p := range paths {
		info, err := os.Stat(p)
		require.NoError(t, err)
		assert.True(t, info.IsDir())
	}
}

func TestBinaryDirHonoursKubebuilderAssets(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := harness.BinaryDir()
	require.ErrorContains(t, err, "KUBEBUILDER_ASSETS")
}

func TestThirdPartyCRDsParse(t *testing.T) {
	opts := envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(harness.RepoRoot(), "test", "crds", "thirdparty")},
		ErrorIfPathMissing: true,
	}
	require.NoError(t, envtest.ReadCRDFiles(&opts))
	var names []string
	for _, crd := range opts.CRDs {
		names = append(names, crd.Name)
	}
	assert.ElementsMatch(t, []string{
		"virtualmachines.kubevirt.io",
		"virtualmachineinstances.kubevirt.io",
		"volumegroupreplications.replication.storage.openshift.io",
		"volumegroupreplicationclasses.replication.storage.openshift.io",
		"volumegroupreplicationcontents.replication.storage.openshift.io",
		"replicationsources.volsync.backube",
		"replicationdestinations.volsync.backube",
		"volumesnapshots.snapshot.storage.k8s.io",
		"volumesnapshotclasses.snapshot.storage.k8s.io",
		"volumesnapshotcontents.snapshot.storage.k8s.io",
		"volumegroupsnapshots.groupsnapshot.storage.k8s.io",
		"volumegroupsnapshotclasses.groupsnapshot.storage.k8s.io",
		"volumegroupsnapshotcontents.groupsnapshot.storage.k8s.io",
		"network-attachment-definitions.k8s.cni.cncf.io",
	}, names)
}
