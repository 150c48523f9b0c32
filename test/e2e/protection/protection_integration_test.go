package protection_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

const wait = 60 * time.Second

// Every workload cluster runs the real drbd-node-agent on the DRBD simulator
// (see newZone), on whole control planes: the VMs run in launcher pods and
// the replica holders are placed by kube-scheduler and run by kwok.
func TestProtectionFlow(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(t.Output())))
	z := newZoneWith(t, env.Options{ControlPlane: true}, quorumOptions)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	// Each workload cluster has three nodes in two zones, each with its agent:
	// the primary replica goes to the VMI's node, the DR replica where the
	// scheduler puts its holder pod.
	top := t // processes started in subtests must outlive them

	t.Run("happy path", func(t *testing.T) {
		makePVC(t, p, "vm1-root", "standard", corev1.PersistentVolumeBlock)
		makePVC(t, p, "vm1-data", "standard", corev1.PersistentVolumeBlock)
		makeVM(t, p, "vm1", dvVolume("rootdisk", "vm1-root"), pvcVolume("datadisk", "vm1-data"), cloudInitVolume())
		env.Eventually(t, wait, "vm1 running", vmRunning(t, p, "vm1"))

		require.NoError(t, q.Create(ctx, newRequest("protect-vm1", "vm1")))
		env.Eventually(t, wait, "protect-vm1 Protected", phaseIs(ctx, q, "protect-vm1", srv1alpha1.ProtectionProtected, protection.ReasonProtected))

		req := getRequest(t, q, "protect-vm1")
		var phases []string
		for _, h := range req.Status.PhaseHistory {
			phases = append(phases, h.Phase)
		}
		assert.Equal(t, []string{"Pending", "Validating", "ProvisioningTarget", "CreatingReplication", "SwitchingFrontend",
			"WaitingForInitialSync", "AddingToGroup", "Protected"}, phases, "the VM runs on DRBD before the initial sync")
		assert.NotNil(t, req.Status.CompletionTime)
		assert.Equal(t, int32(7000), req.Status.Port)
		require.Len(t, req.Status.Volumes, 2)
		for _, c := range []string{srv1alpha1.ConditionValidated, protection.ConditionReplicaProvisioned, protection.ConditionInitialSyncComplete, protection.ConditionFrontendSwitched} {
			assert.True(t, meta.IsStatusConditionTrue(req.Status.Conditions, c), c)
		}

		// DR backing PVCs.
		for _, name := range []string{"vm1-root", "vm1-data"} {
			pvc := &corev1.PersistentVolumeClaim{}
			require.NoError(t, d.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, pvc))
			assert.Equal(t, corev1.PersistentVolumeBlock, *pvc.Spec.VolumeMode)
			assert.Equal(t, "standard", *pvc.Spec.StorageClassName)
			assert.Equal(t, "1Gi", pvc.Spec.Resources.Requests.Storage().String())
		}
		// Metadata PVCs on both sides: DRBD writes nothing into the VM's disks.
		for cluster, c := range map[string]client.Client{env.Primary: p, env.DR: d} {
			for _, name := range []string{"vm1-root", "vm1-data"} {
				pvc := &corev1.PersistentVolumeClaim{}
				require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: protection.MetaPVCName(name)}, pvc), cluster)
				assert.Equal(t, corev1.PersistentVolumeBlock, *pvc.Spec.VolumeMode)
				assert.Equal(t, "1Mi", pvc.Spec.Resources.Requests.Storage().String(), "DRBD's metadata of a 1 GiB disk")
				assert.Equal(t, srv1alpha1.ObjectRoleMetadata, pvc.Labels[srv1alpha1.ObjectRoleLabel])
			}
		}
		// DRBDResources with peers.
		prim, dr := replicaIn(t, p, "vm-vm1"), replicaIn(t, d, "vm-vm1")
		primaryNode, drNode := z.node(t, env.Primary, prim.Spec.NodeName), z.node(t, env.DR, dr.Spec.NodeName)
		assert.Equal(t, z.VMINode(t, env.Primary, "vm1"), primaryNode.Name, "primary replica on the VMI's node")
		assert.Equal(t, int32(0), prim.Spec.NodeID)
		assert.Equal(t, int32(1), dr.Spec.NodeID)
		assert.Equal(t, srv1alpha1.RolePrimary, prim.Spec.Role)
		assert.Equal(t, srv1alpha1.RoleSecondary, dr.Spec.Role)
		assert.Equal(t, srv1alpha1.QuorumOff, prim.Spec.Quorum.Policy, "a link outage must not stop the production VM's I/O")
		assert.Equal(t, srv1alpha1.QuorumMajority, dr.Spec.Quorum.Policy, "the DR replica is fenced by quorum")
		assert.Equal(t, srv1alpha1.ProtocolA, prim.Spec.Protocol)
		assert.Equal(t, []srv1alpha1.DRBDPeer{{NodeName: drNode.Name, NodeID: 1, Address: drNode.Address, Port: 7000, Cluster: env.DR}}, prim.Spec.Peers)
		assert.Equal(t, []srv1alpha1.DRBDPeer{{NodeName: primaryNode.Name, NodeID: 0, Address: primaryNode.Address, Port: 7000, Cluster: env.Primary}}, dr.Spec.Peers)
		assert.False(t, prim.Spec.ForcePromotion, "the initial forced promotion is cleared after the sync")
		assert.Equal(t, "Primary", prim.Status.Role, "the real agent promoted the primary replica")
		require.Len(t, prim.Spec.Volumes, 2)
		assert.Equal(t, "vm1-root", prim.Spec.Volumes[0].BackingPVC.Name)
		assert.Equal(t, "vm1-root-drbdmeta", prim.Spec.Volumes[0].MetaPVC.Name)
		assert.Equal(t, prim.Spec.Volumes, dr.Spec.Volumes, "same minors and backing names on both sides")
		// Holder pods and frontends on both sides.
		for cluster, c := range map[string]client.Client{env.Primary: p, env.DR: d} {
			pod := &corev1.Pod{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm-vm1-replica"}, pod), cluster)
			assert.Len(t, pod.Spec.Containers[0].VolumeDevices, 4, "two disks and their metadata")
			for i, v := range req.Status.Volumes {
				pv := &corev1.PersistentVolume{}
				require.NoError(t, c.Get(ctx, client.ObjectKey{Name: protection.FrontendPVName(env.AppNS, v.SourcePVC)}, pv), cluster)
				assert.Equal(t, fmt.Sprintf("/dev/drbd%d", prim.Spec.Volumes[i].Minor), pv.Spec.Local.Path)
				assert.Equal(t, v.FrontendPVC, pv.Spec.ClaimRef.Name)
				assert.Equal(t, corev1.PersistentVolumeReclaimRetain, pv.Spec.PersistentVolumeReclaimPolicy)
				pvc := &corev1.PersistentVolumeClaim{}
				require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: v.SourcePVC + "-drbd"}, pvc), cluster)
				assert.Equal(t, pv.Name, pvc.Spec.VolumeName)
			}
		}
		// The VM runs on its frontend PVCs and carries the group label.
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm1"}, vm))
		claims := map[string]string{}
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[v.Name] = v.PersistentVolumeClaim.ClaimName
			}
			assert.Nil(t, v.DataVolume, "DataVolume volumes become PVC volumes")
		}
		assert.Equal(t, map[string]string{"rootdisk": "vm1-root-drbd", "datadisk": "vm1-data-drbd"}, claims)
		assert.JSONEq(t, `{"rootdisk":{"kind":"DataVolume","name":"vm1-root"},"datadisk":{"kind":"PersistentVolumeClaim","name":"vm1-data"}}`,
			vm.Annotations[protection.OriginalVolumesAnnotation])
		assert.NotContains(t, vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
		assert.Equal(t, kubevirtv1.RunStrategyAlways, *vm.Spec.RunStrategy)
		assert.Equal(t, "prod-pg", vm.Labels[srv1alpha1.ProtectionGroupLabel])
		require.NoError(t, vmRunning(t, p, "vm1")())
		// The quorum group has it.
		group := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "prod-pg"}, group))
		assert.Contains(t, group.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: "vm1"})
		assert.Equal(t, env.Primary, group.Spec.ActiveCluster)
		assert.Equal(t, env.ZoneName, group.Spec.ZoneRef.Name)
	})

	t.Run("bad input", func(t *testing.T) {
		makeVM(t, p, "vm-cd", containerDiskVolume("boot"))
		makePVC(t, p, "vm-fast-disk", "fast", corev1.PersistentVolumeBlock)
		makeVM(t, p, "vm-fast", pvcVolume("disk", "vm-fast-disk"))
		makePVC(t, p, "vm-fs-disk", "standard", corev1.PersistentVolumeFilesystem)
		makeVM(t, p, "vm-fs", pvcVolume("disk", "vm-fs-disk"))
		for _, tc := range []struct{ req, vm, reason, says string }{
			{"protect-ghost", "ghost", srv1alpha1.ReasonVMNotFound, "ghost"},
			{"protect-cd", "vm-cd", protection.ReasonUnsupportedVolume, `disk "boot" is a containerDisk`},
			{"protect-fast", "vm-fast", protection.ReasonNoStorageMapping, `StorageClass "fast"`},
			{"protect-fs", "vm-fs", protection.ReasonVolumeModeNotBlock, "volumeMode Block"},
			{"protect-vm1-again", "vm1", protection.ReasonAlreadyProtected, "vm1"},
		} {
			require.NoError(t, q.Create(ctx, newRequest(tc.req, tc.vm)))
			env.Eventually(t, wait, tc.req+" Failed", phaseIs(ctx, q, tc.req, srv1alpha1.ProtectionFailed, tc.reason))
			ready := meta.FindStatusCondition(getRequest(t, q, tc.req).Status.Conditions, srv1alpha1.ConditionReady)
			assert.Contains(t, ready.Message, tc.says, tc.req)
		}
	})

	t.Run("crash while waiting for the initial sync", func(t *testing.T) {
		makePVC(t, p, "vm2-disk", "standard", corev1.PersistentVolumeBlock)
		makeVM(t, p, "vm2", pvcVolume("disk", "vm2-disk"))
		env.Eventually(t, wait, "vm2 running", vmRunning(t, p, "vm2"))
		require.NoError(t, z.fabric.SetSyncRate(1)) // 1 KiB/s: the sync stays under way
		require.NoError(t, q.Create(ctx, newRequest("protect-vm2", "vm2")))
		env.Eventually(t, wait, "WaitingForInitialSync", phaseIs(ctx, q, "protect-vm2", srv1alpha1.ProtectionWaitingForInitialSync, srv1alpha1.ReasonSyncing))
		z.quorum.Stop(t)
		require.NoError(t, z.fabric.SetSyncRate(1<<30))
		env.Eventually(t, wait, "the sync finishes while quorum-manager is down", func() error {
			r := replicaIn(t, d, "vm-vm2")
			if len(r.Status.Volumes) == 0 || r.Status.Volumes[0].DiskState != "UpToDate" {
				return fmt.Errorf("DR replica %+v", r.Status.Volumes)
			}
			return nil
		})
		z.quorum = z.StartQuorum(top, quorumOptions)
		env.Eventually(t, wait, "protect-vm2 Protected", phaseIs(ctx, q, "protect-vm2", srv1alpha1.ProtectionProtected, protection.ReasonProtected))

		req := getRequest(t, q, "protect-vm2")
		assert.Equal(t, int32(7001), req.Status.Port, "one port, allocated once")
		for cluster, c := range map[string]client.Client{env.Primary: p, env.DR: d} {
			list := &srv1alpha1.DRBDResourceList{}
			require.NoError(t, c.List(ctx, list, client.MatchingLabels{srv1alpha1.ProtectionRequestLabel: "protect-vm2"}))
			require.Len(t, list.Items, 1, cluster)
			assert.Equal(t, int32(7001), list.Items[0].Spec.Port)
			assert.NotEqual(t, replicaIn(t, c, "vm-vm1").Spec.Volumes[0].Minor, list.Items[0].Spec.Volumes[0].Minor, "minors unique")
			if cluster == env.DR {
				assert.NotEqual(t, replicaIn(t, c, "vm-vm1").Spec.NodeName, list.Items[0].Spec.NodeName, "the group's DR replicas spread over the nodes")
			}
			pods := &corev1.PodList{}
			require.NoError(t, c.List(ctx, pods, client.MatchingLabels{srv1alpha1.ProtectionRequestLabel: "protect-vm2"}))
			assert.Len(t, pods.Items, 1, cluster)
		}
		entered := 0
		for _, h := range req.Status.PhaseHistory {
			if h.Phase == string(srv1alpha1.ProtectionCreatingReplication) {
				entered++
			}
		}
		assert.Equal(t, 1, entered, "no phase is entered twice")
		group := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "prod-pg"}, group))
		assert.Len(t, group.Spec.VirtualMachines, 2, "both VMs in the group, none lost")
	})

	t.Run("initial sync timeout", func(t *testing.T) {
		makePVC(t, p, "vm3-disk", "standard", corev1.PersistentVolumeBlock)
		makeVM(t, p, "vm3", pvcVolume("disk", "vm3-disk"))
		require.NoError(t, z.fabric.SetSyncRate(1))
		t.Cleanup(func() { require.NoError(t, z.fabric.SetSyncRate(1<<30)) })
		req := newRequest("protect-vm3", "vm3")
		req.Spec.InitialSyncTimeoutSeconds = 2
		require.NoError(t, q.Create(ctx, req))
		env.Eventually(t, wait, "protect-vm3 Failed", phaseIs(ctx, q, "protect-vm3", srv1alpha1.ProtectionFailed, protection.ReasonInitialSyncTimeout))
		ready := meta.FindStatusCondition(getRequest(t, q, "protect-vm3").Status.Conditions, srv1alpha1.ConditionReady)
		assert.Contains(t, ready.Message, "volume 0 (disk)")
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm3"}, vm))
		assert.Equal(t, "vm3-disk-drbd", vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName,
			"the VM runs on DRBD, whose primary replica is complete: a failed initial sync does not stop it")
		require.NoError(t, vmRunning(t, p, "vm3")())

		// Deleting the failed request removes what it had created.
		replicaIn(t, d, "vm-vm3")
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-vm3")))
		env.Eventually(t, wait, "protect-vm3 gone", gone(q, "protect-vm3"))
		nothingLeft(t, z, "protect-vm3")
		env.Eventually(t, wait, "vm3 runs on its own disk again", func() error {
			vm := &kubevirtv1.VirtualMachine{}
			if err := p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm3"}, vm); err != nil {
				return err
			}
			if claim := vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName; claim != "vm3-disk" {
				return fmt.Errorf("vm3 names %s", claim)
			}
			return vmRunning(t, p, "vm3")()
		})
	})

	t.Run("removed while the VM is stopped for the attach", func(t *testing.T) {
		makePVC(t, p, "vm4-disk", "standard", corev1.PersistentVolumeBlock)
		makeVM(t, p, "vm4", pvcVolume("disk", "vm4-disk"))
		env.Eventually(t, wait, "vm4 running", vmRunning(t, p, "vm4"))
		// Without the primary's agent the primary replica never reports its
		// address: the request holds in CreatingReplication with the VM stopped.
		z.agents[env.Primary].Stop(t)
		require.NoError(t, q.Create(ctx, newRequest("protect-vm4", "vm4")))
		env.Eventually(t, wait, "vm4 stopped for DRBD to attach its disk", func() error {
			if err := phaseIs(ctx, q, "protect-vm4", srv1alpha1.ProtectionCreatingReplication, protection.ReasonWaitingForAgent)(); err != nil {
				return err
			}
			vm := &kubevirtv1.VirtualMachine{}
			if err := p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm4"}, vm); err != nil {
				return err
			}
			if vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusStopped {
				return fmt.Errorf("vm4 is %s", vm.Status.PrintableStatus)
			}
			return nil
		})
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-vm4")))
		env.Eventually(t, wait, "protect-vm4 gone", gone(q, "protect-vm4"))
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm4"}, vm))
		assert.Equal(t, "vm4-disk", vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		assert.Equal(t, kubevirtv1.RunStrategyAlways, *vm.Spec.RunStrategy, "the VM gets back the strategy it had")
		assert.NotContains(t, vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
		env.Eventually(t, wait, "vm4 runs again", vmRunning(t, p, "vm4"))
		nothingLeft(t, z, "protect-vm4")
		z.startAgent(top, env.Primary)
	})
}
