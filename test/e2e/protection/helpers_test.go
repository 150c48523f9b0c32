package protection_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
	"github.com/siterecovery/siterecovery/test/env"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	"github.com/siterecovery/siterecovery/test/sim/kubelet"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// zone is a three-cluster zone whose workload clusters each run, on one worker
// node (env.Nodes): the ProtectionGroup controller, the KubeVirt simulator (VMIs
// on that node), the storage simulator (binds PVCs and stages block devices in
// the node's kubelet folder), a kubelet stand-in for pod deletion (kwok on a
// whole control plane, env.Options.ControlPlane), and the real
// drbd-node-agent on the in-process DRBD simulator.
type zone struct {
	*env.Env
	fabric *drbdsim.Fabric
	dir    string
	// devices holds the contents of the zone's block volumes (both clusters).
	devices string
	// procs are the zone's controllers, which a fault kills and restarts;
	// workloads and agents are its maps.
	procs     *env.Processes
	workloads map[string]*env.Process
	agents    map[string]*env.Process
	quorum    *env.Process
	// drbdVersions are the simulated drbd-utils and module versions of a
	// cluster's node ({utils, kernel}); unset: the simulator's defaults.
	drbdVersions map[string][2]string
}

// The claim re-check runs every couple of seconds here, so that every test
// also shows that a re-check of a Protected request changes nothing.
var quorumOptions = setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond, ClaimRecheckInterval: 2 * time.Second}

func newZone(t testing.TB) *zone { return newZoneWith(t, env.Options{}, quorumOptions) }

// newZoneWith is newZone with the zone's options o and quorum-manager's q.
func newZoneWith(t testing.TB, o env.Options, q setup.QuorumOptions) *zone {
	z := &zone{Env: env.New(t, o), dir: t.TempDir(), devices: storagesim.TempDeviceDir(t)}
	z.procs = z.NewProcesses()
	z.workloads, z.agents = z.procs.Workloads, z.procs.Agents
	z.fabric = z.DRBD(t)
	require.NoError(t, z.fabric.SetSyncRate(1<<30))
	// qemu's exit closes its disks a moment after the VMI is gone: DRBD
	// refuses secondary and down until then.
	require.NoError(t, z.fabric.SetCloseLinger(300*time.Millisecond))
	for _, cluster := range []string{env.Primary, env.DR} {
		if !z.ControlPlane() { // kwok plays the node on a whole control plane
			n := env.Nodes[cluster]
			setNodeReady(t, z.Client(cluster), n.Name, n.Address, true)
		}
		z.startWorkload(t, cluster)
		z.startAgent(t, cluster)
	}
	z.quorum = z.procs.StartQuorum(t, q)
	return z
}

// startWorkload (re)starts everything of a workload cluster but its agent.
func (z *zone) startWorkload(t testing.TB, cluster string) {
	z.procs.StartWorkloadWith(t, cluster, func(t testing.TB) *env.Process { return z.workload(t, cluster) })
}

func (z *zone) workload(t testing.TB, cluster string) *env.Process {
	n := env.Nodes[cluster]
	return z.Manager(t, cluster, "workload", ctrl.Options{}, func(mgr ctrl.Manager) error {
		if err := protectiongroup.SetupWithManager(mgr); err != nil {
			return err
		}
		// A running VMI's qemu holds its DRBD devices open.
		disks := guest.NewHolder(guest.NewCluster(cluster, mgr.GetAPIReader(), z.fabric, z.devices), z.fabric, drbdsim.ErrNotHeld)
		vmOpts := z.KubeVirtOptions(cluster, 100*time.Millisecond, 100*time.Millisecond)
		vmOpts.Disks = disks
		if err := kubevirtsim.SetupWithManager(mgr, vmOpts); err != nil {
			return err
		}
		if err := storagesim.SetupWithManager(mgr, storagesim.Options{KubeletDirs: map[string]string{n.Name: z.kubeletDir(cluster)}, DeviceDir: z.devices}); err != nil {
			return err
		}
		if z.ControlPlane() {
			return nil // kwok ends the pods' containers
		}
		return kubelet.SetupWithManager(mgr)
	})
}

func (z *zone) kubeletDir(cluster string) string {
	return filepath.Join(z.dir, env.Nodes[cluster].Name, "kubelet")
}

// startAgent (re)starts the drbd-node-agent of each of a cluster's nodes
// (env.Env.WorkerNodes; startAgentOn for the others than the first); each
// keeps its resource files across restarts, as on a real node.
func (z *zone) startAgent(t testing.TB, cluster string) {
	n := env.Nodes[cluster]
	cfg := nodeagent.Config{
		NodeName: n.Name, Hostname: n.Name, ReplicationAddress: n.Address,
		ResourceDir:         filepath.Join(z.dir, n.Name, "drbd.d"),
		KubeletDir:          z.kubeletDir(cluster),
		DrbdadmPath:         "drbdadm",
		DrbdsetupPath:       "drbdsetup",
		Exec:                z.drbdExec(cluster),
		StatusInterval:      50 * time.Millisecond,
		ReplicationNetworks: env.ReplicationNetworks,
	}
	z.procs.StartAgentWith(t, cluster, func(t testing.TB) *env.Process {
		agents := []*env.Process{z.Manager(t, cluster, "drbd-node-agent", ctrl.Options{}, func(mgr ctrl.Manager) error { return nodeagent.Setup(mgr, cfg) })}
		for _, other := range z.WorkerNodes(cluster)[1:] {
			agents = append(agents, z.startAgentOn(t, cluster, other.Name, other.Address))
		}
		return env.Together(agents...)
	})
}

// drbdExec is the simulated drbdadm and drbdsetup of a cluster's node.
func (z *zone) drbdExec(cluster string) drbdsim.Executor {
	v := z.drbdVersions[cluster]
	return drbdsim.Executor{StateDir: z.fabric.StateDir, Node: env.Nodes[cluster].Name, UtilsVersion: v[0], KernelVersion: v[1]}
}

// setNodeReady creates the node if needed and sets its Ready condition and address.
func setNodeReady(t testing.TB, c client.Client, name, ip string, ready bool) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if err := c.Create(t.Context(), n); err != nil {
		require.True(t, apierrors.IsAlreadyExists(err), err)
		require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(n), n))
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	// On a whole control plane the node lifecycle controller writes a new
	// node too (taints): retry on its conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		return c.Status().Update(t.Context(), n)
	}))
}

// makePVC creates a 1Gi PVC that the storage simulator binds, and waits for it.
func makePVC(t testing.TB, c client.Client, name, class string, mode corev1.PersistentVolumeMode) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(mode),
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	require.NoError(t, c.Create(t.Context(), pvc))
	env.Eventually(t, wait, "PVC "+name+" bound", func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("PVC %s is %q", name, pvc.Status.Phase)
		}
		return nil
	})
}

// makeVM creates a VM with the given volumes (a disk per volume) and runStrategy Always.
func makeVM(t testing.TB, c client.Client, name string, volumes ...kubevirtv1.Volume) {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       kubevirtv1.VirtualMachineInstanceSpec{Volumes: volumes},
			},
		},
	}
	for _, v := range volumes {
		vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: v.Name})
	}
	require.NoError(t, c.Create(t.Context(), vm))
	// A user protects a running VM: its replica goes to the node the VMI runs
	// on, which is where the test's agent runs.
	env.Eventually(t, wait, name+" running", func() error {
		return c.Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: name}, &kubevirtv1.VirtualMachineInstance{})
	})
}

func pvcVolume(name, claim string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

func dvVolume(name, dv string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: dv}}}
}

func cloudInitVolume() kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}}
}

func containerDiskVolume(name string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora"}}}
}

func newRequest(name, vm string) *srv1alpha1.ProtectionRequest {
	return newRequestIn(name, vm, "prod-pg")
}

func newRequestIn(name, vm, group string) *srv1alpha1.ProtectionRequest {
	return &srv1alpha1.ProtectionRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.ProtectionRequestSpec{
			VirtualMachine:     srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: vm},
			ZoneRef:            srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group},
		},
	}
}

// phaseIs waits for a request phase; for Failed it also checks the Ready reason.
func phaseIs(ctx context.Context, q client.Client, name string, want srv1alpha1.ProtectionPhase, reason string) func() error {
	return func() error {
		r := &srv1alpha1.ProtectionRequest{}
		if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, r); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(r.Status.Conditions, srv1alpha1.ConditionReady)
		desc := fmt.Sprintf("phase %q", r.Status.Phase)
		if ready != nil {
			desc += fmt.Sprintf(" Ready=%s/%s: %s", ready.Status, ready.Reason, ready.Message)
		}
		if r.Status.Phase != want {
			return fmt.Errorf("%s, want %s", desc, want)
		}
		if reason != "" && (ready == nil || ready.Reason != reason) {
			return fmt.Errorf("%s, want reason %s", desc, reason)
		}
		return nil
	}
}

func getRequest(t *testing.T, q client.Client, name string) *srv1alpha1.ProtectionRequest {
	t.Helper()
	r := &srv1alpha1.ProtectionRequest{}
	require.NoError(t, q.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: name}, r))
	return r
}

func replicaIn(t *testing.T, c client.Client, name string) *srv1alpha1.DRBDResource {
	t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: name}, r))
	return r
}

func getVM(t *testing.T, c client.Client, name string) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: name}, vm))
	return vm
}

func vmRunning(t *testing.T, c client.Client, name string) func() error {
	return func() error {
		vm := &kubevirtv1.VirtualMachine{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: name}, vm); err != nil {
			return err
		}
		if vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusRunning || !vm.Status.Ready {
			return fmt.Errorf("vm %s is %q ready=%v", name, vm.Status.PrintableStatus, vm.Status.Ready)
		}
		return nil
	}
}

// askProtection creates VM vm on the primary (p) with one block disk,
// <vm>-root, waits until it runs, and asks the quorum cluster (q) to protect
// it in request protect-<vm>.
func askProtection(t *testing.T, q, p client.Client, vm string) {
	t.Helper()
	makePVC(t, p, vm+"-root", "standard", corev1.PersistentVolumeBlock)
	makeVM(t, p, vm, pvcVolume("rootdisk", vm+"-root"))
	env.Eventually(t, wait, vm+" running", vmRunning(t, p, vm))
	require.NoError(t, q.Create(t.Context(), newRequest("protect-"+vm, vm)))
}

// protectVM is askProtection until the request is Protected, which it
// returns.
func protectVM(t *testing.T, q, p client.Client, vm string) *srv1alpha1.ProtectionRequest {
	t.Helper()
	askProtection(t, q, p, vm)
	env.Eventually(t, wait, "protect-"+vm+" Protected", phaseIs(t.Context(), q, "protect-"+vm, srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	return getRequest(t, q, "protect-"+vm)
}

// claims maps each disk of a VM to the claim it names (PVC or DataVolume).
func claims(vm *kubevirtv1.VirtualMachine) map[string]string {
	out := map[string]string{}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out[v.Name] = "pvc:" + v.PersistentVolumeClaim.ClaimName
		case v.DataVolume != nil:
			out[v.Name] = "dv:" + v.DataVolume.Name
		}
	}
	return out
}
