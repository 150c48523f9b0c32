package setup

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The cached Pod keeps what the in-use check reads: the PVCs it mounts and
// its phase; containers and the rest are dropped.
func TestSlimPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{"big": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{
				{Name: "disk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	out, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := out.(*corev1.Pod)
	if p.Name != "p" || p.Namespace != "ns" || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("identity or phase lost: %+v", p)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data" {
		t.Fatalf("volumes %+v, want the PVC only", p.Spec.Volumes)
	}
	if len(p.Spec.Containers) != 0 || p.Annotations != nil || p.ManagedFields != nil || p.Status.PodIP != "" {
		t.Fatalf("kept more than it reads: %+v", p)
	}
}

// The cached VM keeps its run fields, annotations (the previous run strategy)
// and status; not its template.
func TestSlimVM(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", Annotations: map[string]string{"a": "b"}},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}}}},
		Status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusRunning, Ready: true},
	}
	out, err := slimVM(vm)
	if err != nil {
		t.Fatal(err)
	}
	v := out.(*kubevirtv1.VirtualMachine)
	if *v.Spec.RunStrategy != kubevirtv1.RunStrategyAlways || !v.Status.Ready || v.Annotations["a"] != "b" {
		t.Fatalf("lost what the group reads: %+v", v)
	}
	if v.Spec.Template != nil {
		t.Fatalf("kept the template")
	}
}

// The cached VMI keeps its disks (PVCs and data volumes), phase, and what a
// boot gate reads: the Ready and AgentConnected conditions and the first
// interface's address.
func TestSlimVMI(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
			{Name: "a", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{}}},
			{Name: "b", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "dv"}}},
			{Name: "c", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
		}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "n",
			Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
				{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue, Message: "m"},
				{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue},
				{Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionFalse},
			},
			Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5", MAC: "02:00:00:00:00:01"}, {IP: "10.1.0.5"}}},
	}
	out, err := slimVMI(vmi)
	if err != nil {
		t.Fatal(err)
	}
	v := out.(*kubevirtv1.VirtualMachineInstance)
	if len(v.Spec.Volumes) != 2 || v.Status.Phase != kubevirtv1.Running || v.Status.NodeName != "" {
		t.Fatalf("slim VMI %+v", v)
	}
	wantConds := []kubevirtv1.VirtualMachineInstanceCondition{
		{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue},
		{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue},
	}
	if !reflect.DeepEqual(v.Status.Conditions, wantConds) {
		t.Fatalf("conditions %+v, want %+v", v.Status.Conditions, wantConds)
	}
	if !reflect.DeepEqual(v.Status.Interfaces, []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5"}}) {
		t.Fatalf("interfaces %+v, want the first one's address only", v.Status.Interfaces)
	}
}

// A tombstone passes through untouched.
func TestSlimTombstone(t *testing.T) {
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p"}
	for _, f := range []func(any) (any, error){slimPod, slimVM, slimVMI} {
		if out, err := f(tomb); err != nil || out != any(tomb) {
			t.Fatalf("tombstone changed: %v %v", out, err)
		}
	}
}

// The cached Node keeps its taints (the lost-quorum taint) and labels; not
// its status.
func TestSlimNode(t *testing.T) {
	taint := corev1.Taint{Key: "drbd.linbit.com/lost-quorum", Effect: corev1.TaintEffectNoSchedule}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Labels: map[string]string{"kubernetes.io/hostname": "w1"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{taint}, PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"registry.example.com/big:1"}, SizeBytes: 1 << 30}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}},
	}
	out, err := slimNode(node)
	if err != nil {
		t.Fatal(err)
	}
	n := out.(*corev1.Node)
	if n.Name != "w1" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != taint || n.Labels["kubernetes.io/hostname"] != "w1" {
		t.Fatalf("lost what the group reads: %+v", n)
	}
	if len(n.Status.Images) != 0 || len(n.Status.Addresses) != 0 || n.Spec.PodCIDR != "" {
		t.Fatalf("kept more than it reads: %+v", n)
	}
}
