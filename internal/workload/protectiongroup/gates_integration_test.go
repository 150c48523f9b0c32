package protectiongroup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// holdFinalizer keeps a stopped VM's VMI in place, as a VM whose shutdown
// takes long does.
const holdFinalizer = "test.siterecovery.io/hold"

// readyMessage waits until the group's Ready condition message says want.
func readyMessage(ctx context.Context, c client.Client, want string) func() error {
	return func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionReady)
		if cond == nil || !strings.Contains(cond.Message, want) {
			return fmt.Errorf("Ready condition %+v, want a message with %q", cond, want)
		}
		return nil
	}
}

func replicaRole(ctx context.Context, c client.Client, r *srv1alpha1.DRBDResource) srv1alpha1.DRBDRole {
	got := &srv1alpha1.DRBDResource{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		return ""
	}
	return got.Spec.Role
}

// TestStopAndDemoteWaitsForTheVMI: a failover step asks "stop and demote" in
// one write; the replica stays Primary while the VM's VMI exists, the Ready
// condition names the VM it waits for, and the demotion follows once the
// VMI is gone.
func TestStopAndDemoteWaitsForTheVMI(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, newVM("vm-a", false, kubevirtv1.RunStrategyAlways)))
	res := replica("pg", "vm-a", "node-a", 7000)
	res.Spec.Role = srv1alpha1.RolePrimary
	require.NoError(t, c.Create(ctx, res))
	res.Status = srv1alpha1.DRBDResourceStatus{Role: "Primary", Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "UpToDate"}}}
	require.NoError(t, c.Status().Update(ctx, res))
	require.NoError(t, c.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: groupNS},
		Spec: srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateRunning,
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-a", Namespace: appNS}},
			DRBD:            &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RolePrimary}},
	}))
	eventually(t, "group running", groupState(ctx, c, srv1alpha1.StateRunning))

	vmi := &kubevirtv1.VirtualMachineInstance{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "vm-a"}, vmi))
	before := vmi.DeepCopy()
	vmi.Finalizers = append(vmi.Finalizers, holdFinalizer)
	require.NoError(t, c.Patch(ctx, vmi, client.MergeFrom(before)))

	q := srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	setDesired(t, ctx, c, srv1alpha1.StateStopped, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.DRBD = &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RoleSecondary, Quorum: &q}
	})
	eventually(t, "the VM stopping", func() error {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi))
		if vmi.DeletionTimestamp == nil {
			return fmt.Errorf("VMI not deleted yet")
		}
		return nil
	})
	eventually(t, "the demotion held", readyMessage(ctx, c,
		"holding DRBD Secondary until every VM has stopped: apps/vm-a still has a VirtualMachineInstance"))
	require.Equal(t, srv1alpha1.RolePrimary, replicaRole(ctx, c, res), "no demotion under a VMI")

	before = vmi.DeepCopy()
	vmi.Finalizers = nil
	require.NoError(t, c.Patch(ctx, vmi, client.MergeFrom(before)))
	eventually(t, "the replica demoted once the VMI is gone", func() error {
		if role := replicaRole(ctx, c, res); role != srv1alpha1.RoleSecondary {
			return fmt.Errorf("replica asked %q", role)
		}
		return nil
	})
	eventually(t, "group stopped", groupState(ctx, c, srv1alpha1.StateStopped))
}

// TestPromoteAndRunStartsOnlyOnPrimary: "promote and run" in one write
// promotes the replicas at once and starts the VMs only once every replica
// reports Primary, naming the replicas it waits for meanwhile.
func TestPromoteAndRunStartsOnlyOnPrimary(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, newVM("vm-a", false, kubevirtv1.RunStrategyHalted)))
	res := replica("pg", "vm-a", "node-b", 7000)
	require.NoError(t, c.Create(ctx, res))
	res.Status = srv1alpha1.DRBDResourceStatus{Role: "Secondary", Promotable: true, Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "UpToDate"}}}
	require.NoError(t, c.Status().Update(ctx, res))
	require.NoError(t, c.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: groupNS},
		Spec: srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateStopped,
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-a", Namespace: appNS}}},
	}))
	eventually(t, "group stopped", groupState(ctx, c, srv1alpha1.StateStopped))

	q := srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
	setDesired(t, ctx, c, srv1alpha1.StateRunning, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.DRBD = &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RolePrimary, Quorum: &q}
	})
	eventually(t, "the start held", readyMessage(ctx, c,
		"holding VM starts until every DRBD replica is Primary (0 of 1 are): waiting for apps/"+res.Name))
	require.Equal(t, srv1alpha1.RolePrimary, replicaRole(ctx, c, res), "the promotion is not held")
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "vm-a"}, vm))
	require.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy, "no start on a Secondary")

	// The agent reports the promotion.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(res), res))
	res.Status.Role = "Primary"
	require.NoError(t, c.Status().Update(ctx, res))
	eventually(t, "group running", groupState(ctx, c, srv1alpha1.StateRunning))
}
