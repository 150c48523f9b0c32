package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func TestKubeletDevices(t *testing.T) {
	kubelet := t.TempDir()
	pvc := func(name, pv string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}}
	}
	k := &KubeletDevices{KubeletDir: kubelet}
	dev := filepath.Join(kubelet, "plugins/kubernetes.io/csi/volumeDevices/pv-1/dev")
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(dev, "pod-uid-1")))

	p, err := k.DevicePath(context.Background(), pvc("bound", "pv-1"))
	require.NoError(t, err)
	assert.Equal(t, "/dev/null", p)

	_, err = k.DevicePath(context.Background(), pvc("unstaged", "pv-2"))
	assert.True(t, errors.Is(err, ErrDeviceMissing))
	assert.ErrorContains(t, err, "not staged on this node")
}

// TestBackingClaim: the agent hands DRBD only the device of a bound,
// block-mode claim labelled with the DRBDResource's own DR namespace and
// protection request; anything else is refused (or waited for, while the
// claim is missing or unbound).
func TestBackingClaim(t *testing.T) {
	own := map[string]string{srv1alpha1.DRNamespaceLabel: "dr-a", srv1alpha1.ProtectionRequestLabel: "protect-vm1"}
	claim := func(name string, labels map[string]string, mode corev1.PersistentVolumeMode, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name, Labels: labels},
			Spec:   corev1.PersistentVolumeClaimSpec{VolumeMode: &mode, VolumeName: "pv-" + name},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	other := map[string]string{srv1alpha1.DRNamespaceLabel: "dr-b", srv1alpha1.ProtectionRequestLabel: "protect-vm1"}
	otherRequest := map[string]string{srv1alpha1.DRNamespaceLabel: "dr-a", srv1alpha1.ProtectionRequestLabel: "protect-vm2"}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		claim("ok", own, corev1.PersistentVolumeBlock, corev1.ClaimBound),
		claim("unlabelled", nil, corev1.PersistentVolumeBlock, corev1.ClaimBound),
		claim("other-dr-namespace", other, corev1.PersistentVolumeBlock, corev1.ClaimBound),
		claim("other-request", otherRequest, corev1.PersistentVolumeBlock, corev1.ClaimBound),
		claim("filesystem", own, corev1.PersistentVolumeFilesystem, corev1.ClaimBound),
		claim("pending", own, corev1.PersistentVolumeBlock, corev1.ClaimPending),
	).Build()
	r := &Reconciler{PVCs: c}
	obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "vm1", Labels: own}}
	ref := func(n string) *srv1alpha1.LocalObjectReference { return &srv1alpha1.LocalObjectReference{Name: n} }

	pvc, err := r.backingClaim(context.Background(), obj, ref("ok"))
	require.NoError(t, err)
	assert.Equal(t, "pv-ok", pvc.Spec.VolumeName)
	for name, want := range map[string]string{
		"unlabelled":         `label siterecovery.trilio.io/dr-namespace is ""`,
		"other-dr-namespace": `label siterecovery.trilio.io/dr-namespace is "dr-b", the DRBDResource's "dr-a"`,
		"other-request":      `label siterecovery.trilio.io/protection-request is "protect-vm2"`,
		"filesystem":         "not in Block volume mode",
	} {
		_, err := r.backingClaim(context.Background(), obj, ref(name))
		var refused *refusal
		assert.True(t, errors.As(err, &refused), "%s: %v", name, err)
		assert.ErrorContains(t, err, want, name)
	}
	for name, want := range map[string]string{"missing": "PVC vms/missing not found", "pending": "not bound"} {
		_, err := r.backingClaim(context.Background(), obj, ref(name))
		assert.True(t, errors.Is(err, ErrDeviceMissing), name)
		assert.ErrorContains(t, err, want, name)
	}
	unlabelled := obj.DeepCopy()
	delete(unlabelled.Labels, srv1alpha1.ProtectionRequestLabel)
	_, err = r.backingClaim(context.Background(), unlabelled, ref("ok"))
	assert.ErrorContains(t, err, "DRBDResource vm1 has no siterecovery.trilio.io/protection-request label")
}

func TestNetworks(t *testing.T) {
	var n Networks
	require.NoError(t, n.Set("10.0.0.0/16, fd00::/64"))
	require.NoError(t, n.Set("192.168.7.1/24"))
	assert.Equal(t, "10.0.0.0/16,fd00::/64,192.168.7.0/24", n.String())
	for addr, in := range map[string]bool{"10.0.3.4": true, "10.1.0.1": false, "fd00::2": true, "fd01::2": false,
		"192.168.7.200": true, "::ffff:10.0.0.9": true, "8.8.8.8": false, "not-an-ip": false} {
		assert.Equal(t, in, n.Contains(addr), addr)
	}
	assert.ErrorContains(t, n.Set("10.0.0.0"), "not a CIDR")
	spec := &srv1alpha1.DRBDResourceSpec{Peers: []srv1alpha1.DRBDPeer{{NodeName: "b", Address: "10.0.1.1"}, {NodeName: "c", Address: "203.0.113.9"}}}
	require.NotNil(t, n.refusedPeer(spec))
	assert.Equal(t, "c", n.refusedPeer(spec).NodeName)
}

func TestResourceConfigMapping(t *testing.T) {
	obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Name: "vm1"}, Spec: srv1alpha1.DRBDResourceSpec{
		NodeName: "node-a", NodeID: 0, Port: 7005,
		Volumes: []srv1alpha1.DRBDVolume{{Number: 1, Minor: 11, BackingPVC: &srv1alpha1.LocalObjectReference{Name: "d1"}}, {Number: 0, Minor: 10, BackingPVC: &srv1alpha1.LocalObjectReference{Name: "d0"}}},
		Peers:   []srv1alpha1.DRBDPeer{{NodeName: "node-b", NodeID: 1, Address: "10.0.0.2", Port: 7005}},
	}}
	rc := resourceConfig(obj, "10.0.0.1", map[int32]string{0: "/dev/sdb", 1: "/dev/block/8:16"}, map[int32]string{1: "/dev/block/8:32"})
	require.NoError(t, rc.Validate())
	assert.Equal(t, "/dev/block/8:32", rc.Volumes[0].MetaDisk, "volume 1 keeps its metadata on its metadata PVC")
	assert.Equal(t, "internal", rc.Volumes[1].MetaDisk, "volume 0 names no metadata PVC")
	assert.Equal(t, "A", rc.Protocol, "CRD default")
	assert.Equal(t, "majority", rc.Quorum.Quorum)
	assert.Equal(t, "io-error", rc.Quorum.OnNoQuorum)
	assert.Equal(t, "10.0.0.1", rc.Nodes[0].Address)
	assert.Equal(t, 7005, rc.Nodes[1].Port)
	assert.Equal(t, "/dev/block/8:16", rc.Volumes[0].Disk)

	obj.Spec.Peers[0].NodeName = "node-a" // the CRD cannot know the local node's name
	rc = resourceConfig(obj, "10.0.0.1", map[int32]string{0: "/dev/sdb", 1: "/dev/sdc"}, nil)
	assert.ErrorContains(t, rc.Validate(), "duplicate hostname")
	assert.Contains(t, string(topLevelConfig("/etc/drbd.d/sr")), `include "/etc/drbd.d/sr/*.res";`)
}
