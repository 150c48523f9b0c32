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
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(pvc("bound", "pv-1"), pvc("unbound", ""), pvc("unstaged", "pv-2")).Build()
	k := &KubeletDevices{Reader: c, KubeletDir: kubelet}
	dev := filepath.Join(kubelet, "plugins/kubernetes.io/csi/volumeDevices/pv-1/dev")
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(dev, "pod-uid-1")))

	vol := func(pvc string) srv1alpha1.DRBDVolume {
		return srv1alpha1.DRBDVolume{Number: 0, BackingPVC: &srv1alpha1.LocalObjectReference{Name: pvc}}
	}
	p, err := k.DevicePath(context.Background(), "vms", vol("bound"))
	require.NoError(t, err)
	assert.Equal(t, "/dev/null", p)

	for pvcName, want := range map[string]string{
		"missing":  "PVC vms/missing not found",
		"unbound":  "not bound",
		"unstaged": "not staged on this node",
	} {
		_, err := k.DevicePath(context.Background(), "vms", vol(pvcName))
		assert.True(t, errors.Is(err, ErrDeviceMissing), pvcName)
		assert.ErrorContains(t, err, want)
	}
}

func TestResourceConfigMapping(t *testing.T) {
	obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Name: "vm1"}, Spec: srv1alpha1.DRBDResourceSpec{
		NodeName: "node-a", NodeID: 0, Port: 7005,
		Volumes: []srv1alpha1.DRBDVolume{{Number: 1, Minor: 11, BackingPVC: &srv1alpha1.LocalObjectReference{Name: "d1"}}, {Number: 0, Minor: 10, DevicePath: "/dev/sdb"}},
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
