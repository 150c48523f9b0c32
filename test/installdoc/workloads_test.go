package installdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/installed"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// What step 6 protects: a running VM with one Block PVC of the mapped class.
const (
	appNamespace = "apps"
	vmName       = "web"
	storageClass = "standard"
	release      = "siterecovery"
)

// workloadPrerequisites is step 0 on a workload cluster, as far as a test
// cluster needs it: KubeVirt's API. Its Ready worker node is kwok's
// (env.NodeSpecs).
func workloadPrerequisites(t *testing.T, e *env.Env, cluster string) {
	t.Helper()
	dir := filepath.Join(harness.RepoRoot(), "test", "crds", "thirdparty")
	_, err := envtest.InstallCRDs(e.Clusters[cluster].Config, envtest.CRDInstallOptions{ErrorIfPathMissing: true, Paths: []string{
		filepath.Join(dir, "kubevirt.io_virtualmachines.yaml"), filepath.Join(dir, "kubevirt.io_virtualmachineinstances.yaml")}})
	require.NoError(t, err, "%s: KubeVirt CRDs", cluster)
}

// startWorkload runs the pods of the workload chart on a cluster:
// pg-controller, serving the webhooks helm installed, and the agent of each
// of kwok's nodes (env.ControlPlaneNodes) on the DRBD simulator (drbdsim in
// place of drbdadm and drbdsetup, sharing the simulated network's state).
// KubeVirt and the storage provisioner are simulators with admin rights, in
// the test process; kwok is the kubelet.
func startWorkload(t *testing.T, e *env.Env, h *host, state, dir, cluster string) {
	t.Helper()
	nodes := env.ControlPlaneNodes(cluster)
	kubeletDirs := map[string]string{}
	for _, n := range nodes {
		kubeletDirs[n.Name] = filepath.Join(dir, n.Name, "kubelet")
	}
	// The simulators stand for Kubernetes' own controllers (the volume
	// binder, the kubelet) and KubeVirt's: an identity in kube-system, which
	// the workload webhooks let bind the replication stack's PVCs, with the
	// rights of those controllers (all, here).
	require.NoError(t, e.Client(cluster).Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-simulators"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "test-simulators"}},
	}))
	e.ManagerAs(t, cluster, "simulators", [2]string{"kube-system", "test-simulators"}, ctrl.Options{}, func(mgr ctrl.Manager) error {
		// VMIs run in launcher pods that kube-scheduler places and kwok runs.
		if err := kubevirtsim.SetupWithManager(mgr, kubevirtsim.Options{StartDelay: 100 * time.Millisecond, StopDelay: 100 * time.Millisecond, LauncherPods: true}); err != nil {
			return err
		}
		return storagesim.SetupWithManager(mgr, storagesim.Options{KubeletDirs: kubeletDirs, DeviceDir: storagesim.TempDeviceDir(t)})
	})
	h.start(t, pod{cluster: cluster, Pod: installed.Pod{Name: "pg-controller-" + cluster, Bin: "pg-controller",
		Kind: "Deployment", Namespace: systemNamespace, Workload: "pg-controller", Set: serveWebhooks(t, e, cluster, release, systemNamespace)}})
	drbdadm, drbdsetup := drbdsim.Build(t, filepath.Join(dir, "sim"))
	for _, n := range nodes {
		h.start(t, pod{cluster: cluster, Pod: installed.Pod{Name: "drbd-node-agent-" + n.Name, Bin: "drbd-node-agent",
			Kind: "DaemonSet", Namespace: systemNamespace, Workload: "drbd-node-agent",
			Fields: map[string]string{"spec.nodeName": n.Name, "status.hostIP": n.Address},
			// The host folders the DaemonSet mounts, and the image's drbd-utils.
			Set: map[string]string{"--resource-dir": filepath.Join(dir, n.Name, "drbd.d"), "--kubelet-dir": kubeletDirs[n.Name],
				"--drbdadm": drbdadm, "--drbdsetup": drbdsetup},
			Env: []string{"DRBDSIM_NODE=" + n.Name, "__DRBD_NODE__=" + n.Name, "DRBDSIM_STATE_DIR=" + state}}})
	}
}

// createWebVM is what step 6 says apps/web must be: a running VM whose disk
// is a Block PVC of a mapped StorageClass.
func createWebVM(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}))
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: vmName + "-root"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(storageClass),
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	require.NoError(t, c.Create(ctx, pvc))
	env.Eventually(t, time.Minute, "the VM's PVC bound", func() error {
		got := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), got); err != nil {
			return err
		}
		if got.Status.Phase != corev1.ClaimBound {
			return os.ErrNotExist
		}
		return nil
	})
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: vmName},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": vmName}},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "root"}}}},
					Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}},
				},
			},
		},
	}
	// Every VM write passes pg-controller's webhook, which serves once its
	// certificate is in place.
	env.Eventually(t, time.Minute, "apps/web created", func() error {
		if err := c.Create(ctx, vm.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
	env.Eventually(t, time.Minute, "apps/web running", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(vm), &kubevirtv1.VirtualMachineInstance{})
	})
}

// pluginPath puts the test binary on PATH as kubectl-siterecovery (TestMain).
func pluginPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(self, filepath.Join(dir, pluginName)))
	return dir
}

// step6 runs step 6 of the page on the installed zone: the workload pods
// run, apps/web runs on the primary, and the page's commands validate the
// zone, protect the VM and show its group.
func step6(t *testing.T, e *env.Env, h *host, sh *runner, blocks []string) {
	t.Helper()
	ctx := t.Context()
	require.NotEmpty(t, blocks, "docs/install.md has no command block in step 6")
	dir := t.TempDir()
	state := filepath.Join(dir, "drbd-state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	require.NoError(t, (&drbdsim.Fabric{StateDir: state}).SetSyncRate(1<<30))
	sim := filepath.Join(dir, "sim")
	require.NoError(t, os.MkdirAll(sim, 0o755))
	for _, cluster := range []string{env.Primary, env.DR} {
		startWorkload(t, e, h, state, dir, cluster)
	}
	createWebVM(t, e.Client(env.Primary))

	// The plugin is this test binary; the page's `go install` of it is
	// therefore not run.
	var run []string
	for _, b := range blocks {
		if !strings.HasPrefix(strings.TrimSpace(b), "go install ./cmd/kubectl-siterecovery") {
			run = append(run, b)
		}
	}
	require.Len(t, run, 1, "step 6: the plugin install, then one block of kubectl siterecovery commands")
	six := &runner{sh.With("PATH=" + pluginPath(t) + ":" + sh.Path())}
	out := six.run(t, "6", run)

	q := e.Client(env.Quorum)
	req := onlyRequest(t, q)
	require.Equal(t, srv1alpha1.ProtectionProtected, req.Status.Phase, "the ProtectionRequest of apps/web: %+v", req.Status.Conditions)
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: "web"}, g))
	require.Contains(t, g.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: appNamespace, Name: vmName}, "group web holds apps/web")
	for _, cluster := range []string{env.Primary, env.DR} {
		require.NoError(t, e.Client(cluster).Get(ctx, client.ObjectKey{Namespace: appNamespace, Name: srv1alpha1.DRBDResourceName(vmName)}, &srv1alpha1.DRBDResource{}),
			"%s: apps/web's DRBDResource", cluster)
	}
	agents := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "drbd-agent") {
			agents++
			require.Contains(t, line, "ok", "validate's agent row: %s", line)
		}
	}
	require.Equal(t, 2, agents, "validate has one agent row per workload cluster:\n%s", out)
	require.True(t, webRow(out, ""), "status shows group web active on primary:\n%s", out)
	// Health comes from the replication monitor's ReplicationGroupStatus,
	// which quorum-manager evaluates on its own after the protection: the
	// page's status may have run before it. The same command shows it.
	env.Eventually(t, 2*time.Minute, "status shows group web Healthy", func() error {
		if webRow(out, "Healthy") {
			return nil
		}
		again, err := six.Run("kubectl siterecovery status web -n dr-production")
		if err != nil {
			return fmt.Errorf("%w\n%s", err, again)
		}
		if !webRow(again, "Healthy") {
			return fmt.Errorf("not Healthy yet:\n%s", again)
		}
		return nil
	})
}

// webRow reports whether status output out has group web's row, active on
// the primary, with health when it is not empty.
func webRow(out, health string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "web" && f[1] == "primary" && (health == "" || slices.Contains(f, health)) {
			return true
		}
	}
	return false
}

func onlyRequest(t *testing.T, q client.Client) *srv1alpha1.ProtectionRequest {
	t.Helper()
	list := &srv1alpha1.ProtectionRequestList{}
	require.NoError(t, q.List(t.Context(), list, client.InNamespace(drNamespace)))
	require.Len(t, list.Items, 1, "step 6 made one ProtectionRequest")
	return &list.Items[0]
}
