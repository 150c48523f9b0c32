package protectiongroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// A group holds its status for a moment after it asks its VMs to change, so
// that a quick transition is written once. A slow one must still show: VMs
// that take seconds to stop or start report Stopping and Starting while they
// do, and the group reaches its desired state afterwards.
func TestSlowTransitionsAreReported(t *testing.T) {
	// The transitions last several seconds: the held write, the VMs' status
	// and the group's reconcile all come out of that window, and the test's
	// poll must land in what is left of it on a loaded machine.
	c := startClusterWith(t, kubevirtsim.Options{StartDelay: 8 * time.Second, StopDelay: 8 * time.Second})
	ctx := context.Background()
	var refs []srv1alpha1.VirtualMachineReference
	for i := range 3 {
		name := fmt.Sprintf("vm-%d", i)
		require.NoError(t, c.Create(ctx, newVM(name, false, kubevirtv1.RunStrategyAlways)))
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: appNS})
	}
	createRunningGroup(t, ctx, c, refs)

	setDesired(t, ctx, c, srv1alpha1.StateStopped)
	eventually(t, "group reported stopping", groupState(ctx, c, srv1alpha1.StateStopping))
	eventually(t, "group stopped", groupState(ctx, c, srv1alpha1.StateStopped))

	setDesired(t, ctx, c, srv1alpha1.StateRunning)
	eventually(t, "group reported starting", groupState(ctx, c, srv1alpha1.StateStarting))
	eventually(t, "group running again", groupState(ctx, c, srv1alpha1.StateRunning))
}
