package protection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func TestAllocation(t *testing.T) {
	u := usage{ports: map[int32]bool{7000: true, 7002: true}, minors: map[int32]bool{MinorBase: true, MinorBase + 2: true}}
	p, ok := u.freePort()
	assert.True(t, ok)
	assert.Equal(t, int32(7001), p)
	assert.Equal(t, int32(MinorBase+1), u.takeMinor())
	assert.Equal(t, int32(MinorBase+3), u.takeMinor(), "a taken minor is not handed out twice")

	full := usage{ports: map[int32]bool{}}
	for p := int32(srv1alpha1.DRBDPortMin); p <= srv1alpha1.DRBDPortMax; p++ {
		full.ports[p] = true
	}
	_, ok = full.freePort()
	assert.False(t, ok)
}

func TestSyncState(t *testing.T) {
	vols := []srv1alpha1.ProtectedVolume{{Disk: "a", Volume: 0}, {Disk: "b", Volume: 1}}
	dr := &srv1alpha1.DRBDResource{Spec: srv1alpha1.DRBDResourceSpec{NodeName: "dr"}}
	prim := &srv1alpha1.DRBDResource{Status: srv1alpha1.DRBDResourceStatus{Peers: []srv1alpha1.DRBDPeerStatus{{NodeName: "dr",
		Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0, PeerDiskState: "UpToDate", PercentInSync: "100.00"}, {Number: 1, PeerDiskState: "Inconsistent", PercentInSync: "42.00"}}}}}}
	done, progress := syncState(vols, prim, dr)
	assert.False(t, done)
	assert.Equal(t, "volume 0 (a) UpToDate, volume 1 (b) 42.00%", progress)

	dr.Status.Volumes = []srv1alpha1.DRBDVolumeStatus{{Number: 1, DiskState: "UpToDate"}}
	done, _ = syncState(vols, prim, dr)
	assert.True(t, done, "the DR side's own UpToDate counts as well")
}

func TestHaltAndRestore(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: new(kubevirtv1.RunStrategyRerunOnFailure)}}
	assert.True(t, halt(vm))
	assert.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy)
	assert.False(t, halt(vm), "halting twice changes nothing")
	assert.True(t, restore(vm))
	assert.Equal(t, kubevirtv1.RunStrategyRerunOnFailure, *vm.Spec.RunStrategy)
	assert.False(t, restore(vm))

	halted := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: new(kubevirtv1.RunStrategyHalted)}}
	assert.False(t, halt(halted), "a halted VM stays halted and gets no annotation")
	assert.False(t, wantsRunning(halted))

	legacy := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Running: new(true)}}
	assert.True(t, halt(legacy))
	assert.False(t, *legacy.Spec.Running)
	assert.Nil(t, legacy.Spec.RunStrategy, "spec.running style is kept")
	assert.True(t, restore(legacy))
	assert.True(t, *legacy.Spec.Running)
}

func TestSwapBack(t *testing.T) {
	vols := []srv1alpha1.ProtectedVolume{
		{Disk: "root", SourcePVC: "root", TargetPVC: "root", FrontendPVC: "root-drbd"},
		{Disk: "data", SourcePVC: "data", TargetPVC: "data", FrontendPVC: "data-drbd"},
	}
	protectedVM := func() *kubevirtv1.VirtualMachine {
		vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
				{Name: "root", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "root"}}},
				{Name: "data", VolumeSource: pvcVolumeSource("data")},
				{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{}}},
			}}}}}
		assert.NoError(t, swapVolumes(vm, vols))
		assert.True(t, onFrontend(vm, vols))
		return vm
	}
	for _, tc := range []struct {
		name        string
		original    bool
		annotations func(map[string]string)
		want        []kubevirtv1.VolumeSource
	}{
		{name: "back to the recorded volumes", original: true,
			want: []kubevirtv1.VolumeSource{{DataVolume: &kubevirtv1.DataVolumeSource{Name: "root"}}, pvcVolumeSource("data")}},
		{name: "without the record, the source PVCs", original: true,
			annotations: func(a map[string]string) { delete(a, OriginalVolumesAnnotation) },
			want:        []kubevirtv1.VolumeSource{pvcVolumeSource("root"), pvcVolumeSource("data")}},
		{name: "the DR backing PVCs",
			want: []kubevirtv1.VolumeSource{pvcVolumeSource("root"), pvcVolumeSource("data")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := protectedVM()
			if tc.annotations != nil {
				tc.annotations(vm.Annotations)
			}
			assert.NoError(t, swapBack(vm, vols, tc.original))
			assert.False(t, onFrontend(vm, vols))
			assert.NotContains(t, vm.Annotations, OriginalVolumesAnnotation)
			for i, want := range tc.want {
				assert.Equal(t, want, vm.Spec.Template.Spec.Volumes[i].VolumeSource, vm.Spec.Template.Spec.Volumes[i].Name)
			}
			assert.NotNil(t, vm.Spec.Template.Spec.Volumes[2].CloudInitNoCloud, "other volumes are left alone")
		})
	}
}
