package vrg

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func pvcOn(name string, pc *drv1alpha1.PeerClass) pvcInfo {
	return pvcInfo{pvc: &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("sc")},
	}, peerClass: pc, storageID: "sid"}
}

func TestGroupOf(t *testing.T) {
	a := &drv1alpha1.PeerClass{StorageClassName: "sc", GroupReplicationID: "rg-a", Global: true}
	b := &drv1alpha1.PeerClass{StorageClassName: "sc", GroupReplicationID: "rg-b", Global: true}
	local := &drv1alpha1.PeerClass{StorageClassName: "sc", GroupReplicationID: "rg-c"}

	id, problem := groupOf([]pvcInfo{pvcOn("p1", a), pvcOn("p2", a)})
	require.Equal(t, "rg-a", id)
	require.Empty(t, problem)

	id, problem = groupOf(nil)
	require.Empty(t, id+problem, "no PVCs is no group and no error")

	_, problem = groupOf([]pvcInfo{pvcOn("p1", a), pvcOn("p2", b)})
	require.Equal(t, "PVCs map to different GroupReplicationIDs: ns/p1=rg-a, ns/p2=rg-b", problem)

	_, problem = groupOf([]pvcInfo{pvcOn("p1", local), pvcOn("p2", nil)})
	require.Equal(t, `PVCs map to no global peer class: ns/p1 (peer class "sc" is not global), ns/p2 (storageClass "sc", storageID "sid")`, problem)
}

func TestMatchPeerClassByStorageID(t *testing.T) {
	v := &drv1alpha1.VolumeReplicationGroup{Spec: drv1alpha1.VolumeReplicationGroupSpec{Async: &drv1alpha1.VRGAsyncSpec{
		PeerClasses: []drv1alpha1.PeerClass{
			{StorageClassName: "sc", StorageID: []string{"sid-1", "sid-2"}, GroupReplicationID: "one"},
			{StorageClassName: "sc", StorageID: []string{"sid-3", "sid-4"}, GroupReplicationID: "two"},
		},
	}}}
	require.Equal(t, "two", matchPeerClass(v, "sc", "sid-4").GroupReplicationID)
	require.Equal(t, "one", matchPeerClass(v, "sc", "sid-2").GroupReplicationID)
	require.Nil(t, matchPeerClass(v, "sc", "sid-9"))
	require.Nil(t, matchPeerClass(v, "other", "sid-1"))
}

func TestZeroInterval(t *testing.T) {
	for in, want := range map[string]bool{"0m": true, "0h": true, "00d": true, "5m": false, "": false, "1h": false} {
		v := &drv1alpha1.VolumeReplicationGroup{Spec: drv1alpha1.VolumeReplicationGroupSpec{Async: &drv1alpha1.VRGAsyncSpec{SchedulingInterval: in}}}
		require.Equal(t, want, zeroInterval(v), in)
	}
	require.False(t, zeroInterval(&drv1alpha1.VolumeReplicationGroup{}))
}

// A per-PVC DataReady from an older generation counts as Progressing even when True:
// the consensus gate held PVC processing after a spec change.
func TestAggregateTreatsStalePVCConditionsAsProgressing(t *testing.T) {
	ready := func(gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: drv1alpha1.ConditionDataReady, Status: metav1.ConditionTrue, Reason: drv1alpha1.ReasonReady,
			Message: drv1alpha1.MessagePVCReady, ObservedGeneration: gen}}
	}
	v := &drv1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	v.Spec.ReplicationState = drv1alpha1.Primary
	v.Status.ProtectedPVCs = []drv1alpha1.ProtectedPVC{{Name: "p1", Namespace: "ns", Conditions: ready(3)}, {Name: "p2", Namespace: "ns", Conditions: ready(2)}}
	s := &scope{vrg: v, before: v.DeepCopy()}
	got := aggregateOne(s, drv1alpha1.ConditionDataReady)
	require.Equal(t, metav1.ConditionFalse, got.Status)
	require.Equal(t, drv1alpha1.ReasonProgressing, got.Reason)
	require.Contains(t, got.Message, "ns/p2")

	s.progress = "Waiting for VRGs to agree on state primary, pending: b/b"
	require.Equal(t, s.progress, aggregateOne(s, drv1alpha1.ConditionDataReady).Message)

	v.Status.ProtectedPVCs[1].Conditions = ready(3)
	s.progress = ""
	got = aggregateOne(s, drv1alpha1.ConditionDataReady)
	require.Equal(t, [3]string{"True", drv1alpha1.ReasonReady, drv1alpha1.MessagePVCReady}, [3]string{string(got.Status), got.Reason, got.Message})
}

func TestReadyForSecondaryByAction(t *testing.T) {
	deleting := metav1.Now()
	pvc := func(name string, deleted bool) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		if deleted {
			p.DeletionTimestamp, p.Finalizers = &deleting, []string{PVCFinalizer}
		}
		return p
	}
	mounting := func(claim string) []corev1.Volume {
		return []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
	objs := []client.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: mounting("used-by-pod")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: mounting("free")},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		&kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"}, Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Volumes: []kubevirtv1.Volume{{Name: "d", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "used-by-vmi"}}}},
		}},
		// Workload copies of two groups, in the DR namespace: one stopped, one
		// still stopping.
		&srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Name: "stopped", Namespace: "dr", Generation: 2},
			Spec:   srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateStopped},
			Status: srv1alpha1.ProtectionGroupStatus{ObservedGeneration: 2, CurrentState: srv1alpha1.StateStopped}},
		&srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Name: "stopping", Namespace: "dr", Generation: 2},
			Spec:   srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateStopped},
			Status: srv1alpha1.ProtectionGroupStatus{ObservedGeneration: 2, CurrentState: "stopping"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, claimIndex, func(o client.Object) []string { return podClaims(o.(*corev1.Pod)) }).
		WithIndex(&kubevirtv1.VirtualMachineInstance{}, claimIndex, func(o client.Object) []string {
			return vmiClaims(o.(*kubevirtv1.VirtualMachineInstance))
		}).
		WithIndex(&srv1alpha1.ProtectionGroup{}, groupNameIndex, func(o client.Object) []string { return []string{o.GetName()} }).
		Build()
	r := &Reconciler{Client: c}
	group := ""
	check := func(action drv1alpha1.DRAction, pvcs ...*corev1.PersistentVolumeClaim) []string {
		s := &scope{vrg: &drv1alpha1.VolumeReplicationGroup{Spec: drv1alpha1.VolumeReplicationGroupSpec{Action: action, ProtectionGroupRef: group}}}
		for _, p := range pvcs {
			s.pvcs = append(s.pvcs, pvcInfo{pvc: p})
		}
		notReady, err := r.readyForSecondary(context.Background(), s)
		require.NoError(t, err)
		return notReady
	}
	require.Empty(t, check(drv1alpha1.ActionFailover, pvc("free", false)))
	require.Empty(t, check(drv1alpha1.ActionFailover))
	require.Equal(t, []string{"ns/used-by-pod (used by pod running)", "ns/used-by-vmi (used by VirtualMachineInstance vm)"},
		check(drv1alpha1.ActionFailover, pvc("used-by-pod", false), pvc("used-by-vmi", false)))
	notDeleted := "ns/free (not deleted, and its application has not stopped here)"
	require.Equal(t, []string{notDeleted}, check(drv1alpha1.ActionRelocate, pvc("free", false)))
	require.Empty(t, check(drv1alpha1.ActionRelocate, pvc("free", true)))
	require.Equal(t, []string{"ns/used-by-pod (used by pod running)"}, check(drv1alpha1.ActionRelocate, pvc("used-by-pod", true)))

	// A VRG of a ProtectionGroup: a group stopped on this cluster stands for the
	// application deleted with its PVCs; a group still stopping does not, and
	// a stopped group's PVC still in use is not ready either.
	group = "stopping"
	require.Equal(t, []string{notDeleted}, check(drv1alpha1.ActionRelocate, pvc("free", false)))
	group = "stopped"
	require.Empty(t, check(drv1alpha1.ActionRelocate, pvc("free", false)))
	require.Equal(t, []string{"ns/used-by-vmi (used by VirtualMachineInstance vm)"}, check(drv1alpha1.ActionRelocate, pvc("used-by-vmi", false)))
	group = "absent"
	require.Equal(t, []string{notDeleted}, check(drv1alpha1.ActionRelocate, pvc("free", false)))
}
