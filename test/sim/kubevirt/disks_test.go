package kubevirt_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// recordingDisks holds VMIs' disks in memory: what qemu has open, and
// whether each VMI still existed when its disks were closed.
type recordingDisks struct {
	mu         sync.Mutex
	cl         client.Client
	open       map[string]bool
	failOpens  int
	closedLive []bool
}

func (d *recordingDisks) Open(_ context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failOpens > 0 {
		d.failOpens--
		return errors.New("disk busy")
	}
	d.open[vmi.Name] = true
	return nil
}

func (d *recordingDisks) Close(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	err := d.cl.Get(ctx, client.ObjectKeyFromObject(vmi), &kubevirtv1.VirtualMachineInstance{})
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, vmi.Name)
	d.closedLive = append(d.closedLive, err == nil)
	return nil
}

func (d *recordingDisks) holds(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.open[name]
}

// TestDisksHeldWhileTheVMIRuns: a running VMI's disks are open (a disk that
// cannot be opened keeps the VM starting until it can), and they are closed
// before the VMI goes, as qemu exits before virt-launcher's pod.
func TestDisksHeldWhileTheVMIRuns(t *testing.T) {
	disks := &recordingDisks{open: map[string]bool{}, failOpens: 2}
	cl := startSimulatorWith(t, kubevirtsim.Options{StartDelay: startDelay, StopDelay: stopDelay, Disks: disks})
	disks.cl = cl
	vm := newVM("held")
	vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	require.NoError(t, cl.Create(t.Context(), vm))
	waitFor(t, "VM running", vmIs(t, cl, "held", kubevirtv1.VirtualMachineStatusRunning))
	require.True(t, disks.holds("held"), "the running VMI holds its disks, after two failed opens")

	setRunStrategy(t, cl, "held", kubevirtv1.RunStrategyHalted)
	waitFor(t, "VM stopped", vmIs(t, cl, "held", kubevirtv1.VirtualMachineStatusStopped))
	require.False(t, disks.holds("held"), "a stopped VM holds nothing")
	disks.mu.Lock()
	defer disks.mu.Unlock()
	require.NotEmpty(t, disks.closedLive)
	require.True(t, disks.closedLive[len(disks.closedLive)-1], "the disks closed while the VMI still existed")
}
