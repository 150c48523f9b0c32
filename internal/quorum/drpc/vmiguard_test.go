package drpc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// The workload copy says Stopped, but the cluster's API server still has the
// VMI (a cache that lags after a restart): the VRG must not be asked to turn
// secondary under it, and PeerReady says which VMI it waits for.
func TestSecondaryWaitsForVMIGone(t *testing.T) {
	const cluster = "dr"
	ctx := context.Background()
	d := drpc("app-1", "", "", "primary")
	d.Status.Phase, d.Status.Progression = drv1alpha1.DRStateDeployed, drv1alpha1.ProgressionCompleted
	s, vmi, direct := stoppedWithVMI(&d, "primary", cluster, cluster)
	r := &Reconciler{}

	done, err := r.ensureSecondary(ctx, s, cluster)
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, drv1alpha1.Primary, s.vrgs[cluster].Spec.ReplicationState, "no secondary VRG write while the VMI exists")
	require.Error(t, direct.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "app-1"}, &drv1alpha1.VolumeReplicationGroup{}))
	r.setConditions(s, nil)
	peer := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionPeerReady)
	require.NotNil(t, peer)
	require.Contains(t, peer.Message, "waiting for VirtualMachineInstance apps/vm-1 on dr to be gone before its VRG turns secondary")

	require.NoError(t, direct.Delete(ctx, vmi))
	s.waiting = ""
	_, err = r.ensureSecondary(ctx, s, cluster)
	require.NoError(t, err)
	require.Equal(t, drv1alpha1.Secondary, s.vrgs[cluster].Spec.ReplicationState, "the VRG turns secondary once the VMI is gone")
}

// A failover with the source reachable starts nothing on the target while the
// source's API server still has a VMI of the group, even once its workload
// copy says Stopped.
func TestFailoverWaitsForSourceVMIGone(t *testing.T) {
	const src, tgt = "primary", "dr"
	ctx := context.Background()
	d := drpc("app-1", drv1alpha1.ActionFailover, tgt, src)
	d.Status.Phase = drv1alpha1.DRStateFailingOver
	s, vmi, srcDirect := stoppedWithVMI(&d, src, tgt, src)
	r := &Reconciler{}

	_, err := r.failover(ctx, s, src, tgt)
	require.NoError(t, err)
	require.Equal(t, "VirtualMachineInstance apps/vm-1 on primary to be gone before the application starts on dr", s.waiting)
	require.Nil(t, s.vrgs[tgt], "no primary VRG asked on the target")

	require.NoError(t, srcDirect.Delete(ctx, vmi))
	_, err = r.failover(ctx, s, src, tgt)
	require.NoError(t, err)
	require.NotNil(t, s.vrgs[tgt])
	require.Equal(t, drv1alpha1.Primary, s.vrgs[tgt].Spec.ReplicationState, "the target is promoted once the source's VMI is gone")
}

// stoppedWithVMI is the scope of d, placed on current, whose one-VM group's
// workload copy on cluster says Stopped while that cluster's API server still
// has the VM's running VMI; both clusters answer, the other through an empty
// client. It returns the VMI and cluster's client.
func stoppedWithVMI(d *drv1alpha1.DRPlacementControl, current, other, cluster string) (*scope, *kubevirtv1.VirtualMachineInstance, client.Client) {
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "vm-1"},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running}}
	direct := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(vmi).Build()
	remotes := map[string]*remote.Remote{current: {Direct: fake.NewClientBuilder().WithScheme(scheme.New()).Build()},
		other: {Direct: fake.NewClientBuilder().WithScheme(scheme.New()).Build()}}
	remotes[cluster] = &remote.Remote{Direct: direct}

	d.Status.PreferredDecision.ClusterName = current
	group := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-1"},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "vm-1"}}}}
	stopped := group.DeepCopy()
	stopped.Generation, stopped.Spec.DesiredState = 1, srv1alpha1.StateStopped
	stopped.Status.ObservedGeneration, stopped.Status.CurrentState = 1, srv1alpha1.StateStopped
	s := &scope{drpc: d, policy: &drv1alpha1.DRPolicy{}, group: group, vrgNamespace: "apps", clusters: []string{current, other},
		remotes: remotes, unreachable: map[string]error{}, copies: map[string]*srv1alpha1.ProtectionGroup{cluster: stopped},
		vrgs: map[string]*drv1alpha1.VolumeReplicationGroup{cluster: vrg("app-1", drv1alpha1.Primary, drv1alpha1.PrimaryState)}}
	return s, vmi, direct
}
