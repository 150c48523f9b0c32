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
