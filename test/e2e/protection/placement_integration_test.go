package protection_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// TestDRReplicasSpreadAcrossNodes protects three VMs of one group onto a DR
// cluster of three workers in two zones, where kube-scheduler places the
// replica holder pods: each DR replica lands on a node of its own, so a
// failover does not have to fit the whole group on one node. (Pinned by
// nodeName to "the first Ready node", every replica went to one node.) The
// nodes are cordoned at first: the first request holds, saying why the
// scheduler cannot place its holder, until they are uncordoned, and then
// moves on when the scheduler binds the pod, which only the holder pods'
// watch tells it (no timer wakes a waiting placement).
func TestDRReplicasSpreadAcrossNodes(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	workers := []struct{ name, address, zone string }{
		{env.Nodes[env.DR].Name, env.Nodes[env.DR].Address, "dr-zone-a"},
		{"dr-worker-2", "10.0.1.2", "dr-zone-a"},
		{"dr-worker-3", "10.0.1.3", "dr-zone-b"},
	}
	for i, w := range workers {
		if i > 0 {
			z.AddNode(t, env.DR, w.name, w.address)
			z.startAgentOn(t, env.DR, w.name, w.address)
		}
		n := &corev1.Node{}
		require.NoError(t, d.Get(ctx, client.ObjectKey{Name: w.name}, n))
		n.Labels[corev1.LabelTopologyZone] = w.zone
		n.Spec.Unschedulable = true
		require.NoError(t, d.Update(ctx, n))
	}
	uncordon := func() {
		for _, w := range workers {
			n := &corev1.Node{}
			require.NoError(t, d.Get(ctx, client.ObjectKey{Name: w.name}, n))
			n.Spec.Unschedulable = false
			require.NoError(t, d.Update(ctx, n))
		}
	}

	vms := []string{"spread-a", "spread-b", "spread-c"}
	for _, vm := range vms {
		makePVC(t, p, vm+"-root", "standard", corev1.PersistentVolumeBlock)
		makeVM(t, p, vm, pvcVolume("rootdisk", vm+"-root"))
		require.NoError(t, q.Create(ctx, newRequestIn("protect-"+vm, vm, "spread")))
		if vm == vms[0] {
			env.Eventually(t, wait, "protect-"+vm+" held for the scheduler", func() error {
				if err := phaseIs(ctx, q, "protect-"+vm, srv1alpha1.ProtectionCreatingReplication, protection.ReasonReplicaUnscheduled)(); err != nil {
					return err
				}
				c := meta.FindStatusCondition(getRequest(t, q, "protect-"+vm).Status.Conditions, protection.ConditionReplicaProvisioned)
				if c == nil || !strings.Contains(c.Message, "the scheduler cannot place it") || !strings.Contains(c.Message, "unschedulable") {
					return fmt.Errorf("condition %+v", c)
				}
				return nil
			})
			uncordon()
		}
		// One at a time, as a group is usually built: each placement sees
		// the replicas placed before it.
		env.Eventually(t, 2*wait, "protect-"+vm+" Protected", phaseIs(ctx, q, "protect-"+vm, srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	}
	on := map[string]string{}
	for _, vm := range vms {
		res := replicaIn(t, d, srv1alpha1.DRBDResourceName(vm))
		pod := &corev1.Pod{}
		require.NoError(t, d.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: protection.HolderName(vm)}, pod))
		require.Empty(t, pod.Spec.Affinity, "the DR holder names no node")
		require.Equal(t, pod.Spec.NodeName, res.Spec.NodeName, "the replica is where the scheduler put its holder")
		on[res.Spec.NodeName] = vm
	}
	require.Len(t, on, 3, "each DR replica on a node of its own: %v", on)
}

// startAgentOn runs the drbd-node-agent of another node of a cluster. It
// reads the kubelet folder of the cluster's first node, where the storage
// simulator stages every volume: the simulated storage attaches anywhere.
func (z *zone) startAgentOn(t testing.TB, cluster, name, address string) *env.Process {
	cfg := nodeagent.Config{
		NodeName: name, Hostname: name, ReplicationAddress: address,
		ResourceDir:         filepath.Join(z.dir, name, "drbd.d"),
		KubeletDir:          z.kubeletDir(cluster),
		DrbdadmPath:         "drbdadm",
		DrbdsetupPath:       "drbdsetup",
		Exec:                drbdsim.Executor{StateDir: z.fabric.StateDir, Node: name},
		StatusInterval:      50 * time.Millisecond,
		ReplicationNetworks: env.ReplicationNetworks,
	}
	return z.Manager(t, cluster, fmt.Sprintf("drbd-node-agent-%s", name), ctrl.Options{}, func(mgr ctrl.Manager) error { return nodeagent.Setup(mgr, cfg) })
}

// TestProtectOntoWaitForFirstConsumerStorage protects a VM onto a DR
// cluster whose target StorageClass binds on first consumer: the target
// claims are provisioned on the node the scheduler picks for the replica
// holder. (A holder pinned by nodeName never has the scheduler select a node
// for its claims, which then stay Pending, and the protection with them.)
func TestProtectOntoWaitForFirstConsumerStorage(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	require.NoError(t, d.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: storagesim.Driver,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}))

	makePVC(t, p, "wffc-root", "standard", corev1.PersistentVolumeBlock)
	makeVM(t, p, "wffc", pvcVolume("rootdisk", "wffc-root"))
	require.NoError(t, q.Create(ctx, newRequest("protect-wffc", "wffc")))
	env.Eventually(t, wait, "protect-wffc Protected", phaseIs(ctx, q, "protect-wffc", srv1alpha1.ProtectionProtected, protection.ReasonProtected))

	req := getRequest(t, q, "protect-wffc")
	target := &corev1.PersistentVolumeClaim{}
	require.NoError(t, d.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: req.Status.Volumes[0].TargetPVC}, target))
	res := replicaIn(t, d, srv1alpha1.DRBDResourceName("wffc"))
	require.Equal(t, res.Spec.NodeName, target.Annotations["volume.kubernetes.io/selected-node"], "provisioned for the replica's node")
}

// node is the node of a workload cluster the zone runs an agent on, by name.
func (z *zone) node(t testing.TB, cluster, name string) env.Node {
	t.Helper()
	for _, n := range z.WorkerNodes(cluster) {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("%s has no node %q with an agent", cluster, name)
	return env.Node{}
}
