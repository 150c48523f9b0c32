package protection_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// makeNode creates a Ready node with an InternalIP.
func makeNode(t *testing.T, c client.Client, name, ip string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	require.NoError(t, c.Create(t.Context(), n))
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	require.NoError(t, c.Status().Update(t.Context(), n))
}

// makeBoundPVC creates a PV and a PVC bound to it (the test API server has no PV
// controller, so the PVC's status is written here).
func makeBoundPVC(t *testing.T, c client.Client, name, class string, mode corev1.PersistentVolumeMode) {
	t.Helper()
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(mode),
			StorageClassName: class,
			ClaimRef:         &corev1.ObjectReference{Namespace: env.AppNS, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "test.csi.example.com", VolumeHandle: name}},
		},
	}
	require.NoError(t, c.Create(t.Context(), pv))
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(mode),
			StorageClassName: ptr.To(class),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	require.NoError(t, c.Create(t.Context(), pvc))
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	require.NoError(t, c.Status().Update(t.Context(), pvc))
}

// makeVM creates a VM with the given volumes (a disk per volume) and runStrategy Always.
func makeVM(t *testing.T, c client.Client, name string, volumes ...kubevirtv1.Volume) {
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
	return &srv1alpha1.ProtectionRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.ProtectionRequestSpec{
			VirtualMachine:     srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: vm},
			ZoneRef:            srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "prod-pg"},
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

// fakeAgents stands in for the drbd-node-agents of both workload clusters: for
// every DRBDResource it reports the node's address, the role, and once peers are
// set a connection whose initial sync completes at once, unless the resource is
// held (then the DR side stays Inconsistent at 42%).
type fakeAgents struct {
	mu   sync.Mutex
	held map[string]bool
}

func (f *fakeAgents) hold(res string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[res] = on
}

func (f *fakeAgents) isHeld(res string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[res]
}

func startFakeAgents(t *testing.T, clusters map[client.Client]map[string]string) *fakeAgents {
	f := &fakeAgents{held: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for c, addrs := range clusters {
				f.step(ctx, c, addrs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func (f *fakeAgents) step(ctx context.Context, c client.Client, addrs map[string]string) {
	list := &srv1alpha1.DRBDResourceList{}
	if err := c.List(ctx, list); err != nil {
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		held := f.isHeld(d.Name)
		st := srv1alpha1.DRBDResourceStatus{
			ObservedGeneration: d.Generation, Address: addrs[d.Spec.NodeName], Role: string(d.Spec.Role),
			LastUpdateTime: d.Status.LastUpdateTime,
		}
		for _, v := range d.Spec.Volumes {
			disk := "UpToDate"
			if d.Spec.Role == srv1alpha1.RoleSecondary && (len(d.Spec.Peers) == 0 || held) {
				disk = "Inconsistent"
			}
			st.Volumes = append(st.Volumes, srv1alpha1.DRBDVolumeStatus{Number: v.Number, Minor: v.Minor, DiskState: disk})
		}
		for _, p := range d.Spec.Peers {
			ps := srv1alpha1.DRBDPeerStatus{NodeName: p.NodeName, NodeID: p.NodeID, ConnectionState: "Connected"}
			for _, v := range d.Spec.Volumes {
				pv := srv1alpha1.DRBDPeerVolumeStatus{Number: v.Number, ReplicationState: "Established", PeerDiskState: "UpToDate", PercentInSync: "100.00"}
				if d.Spec.Role == srv1alpha1.RolePrimary && held {
					pv.ReplicationState, pv.PeerDiskState, pv.PercentInSync = "SyncSource", "Inconsistent", "42.00"
				}
				ps.Volumes = append(ps.Volumes, pv)
			}
			st.Peers = append(st.Peers, ps)
		}
		if equality.Semantic.DeepEqual(st, d.Status) {
			continue
		}
		d.Status = st
		_ = c.Status().Update(ctx, d)
	}
}
