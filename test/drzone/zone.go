package drzone

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
	"github.com/siterecovery/siterecovery/test/env"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	"github.com/siterecovery/siterecovery/test/sim/kubelet"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// Group is the protected group of the zone.
const Group = "production-pg"

// Timeout bounds each wait of the fixture.
const Timeout = 2 * time.Minute

// SnapshotClass is the VolumeSnapshotClass on both workload clusters.
const SnapshotClass = "csi-snapclass"

// Options shape the zone.
type Options struct {
	// VMs is the number of group VMs, named vm-00, vm-01, ...
	VMs int
	// RPOObjectiveSeconds is the group's RPO objective; the default when 0.
	RPOObjectiveSeconds int32
	// Unprotected are VMs created running on the primary with a PVC-backed
	// disk "<vm>-disk", not in any group: what an operator protects.
	Unprotected []string
}

// Zone is the running zone.
type Zone struct {
	*env.Env
	T   testing.TB
	Ctx context.Context
	// VMs are the group's VMs.
	VMs []string
	// QuorumManager is the running quorum-manager; StartQuorumManager starts
	// a new one (after a rebuild of the quorum cluster).
	QuorumManager *env.Process
	dir           string
	// devices holds the contents of the zone's block volumes (both clusters).
	devices string
}

// New builds the zone and waits until the group runs on the primary, healthy
// and ready to fail over.
func New(t testing.TB, o Options) *Zone {
	z := &Zone{Env: env.New(t, env.Options{}), T: t, Ctx: context.Background(), dir: t.TempDir(), devices: storagesim.TempDeviceDir(t)}
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))
	for _, c := range []string{env.Primary, env.DR} {
		z.setNodeReady(c)
		z.startWorkload(c)
		z.startAgent(c, fabric)
	}
	z.StartQuorumManager()

	var refs []srv1alpha1.VirtualMachineReference
	for i := range o.VMs {
		name := fmt.Sprintf("vm-%02d", i)
		z.VMs = append(z.VMs, name)
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS})
		replica := map[string]*srv1alpha1.DRBDResource{
			env.Primary: env.DRBDReplica(Group, name, env.Primary, env.DR, 0, int32(7000+i)),
			env.DR:      env.DRBDReplica(Group, name, env.DR, env.Primary, 1, int32(7000+i)),
		}
		for c, r := range replica {
			z.replicatedDisk(c, name, r.Spec.Volumes[0].Minor)
			z.CreateReplica(z.T, c, r)
		}
		z.Create(env.Primary, VM(name, name+"-disk"+frontendSuffix, kubevirtv1.RunStrategyAlways))
		z.Create(env.DR, VM(name, name+"-disk"+frontendSuffix, kubevirtv1.RunStrategyHalted))
	}
	for _, name := range z.VMs {
		z.WaitDRBD(env.Primary, name, func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
		require.NoError(t, fabric.MarkUpToDate(srv1alpha1.DRBDResourceName(name), env.Nodes[env.Primary].Name))
		r := z.DRBDResource(env.Primary, name)
		before := r.DeepCopy()
		r.Spec.Role = srv1alpha1.RolePrimary
		require.NoError(t, z.Client(env.Primary).Patch(z.Ctx, r, client.MergeFrom(before)))
	}
	for _, name := range z.VMs {
		z.WaitDRBD(env.Primary, name, func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState == "Connected" &&
				r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
	}
	z.Create(env.Primary, env.WorkloadGroup(Group, refs, srv1alpha1.StateRunning))
	z.Create(env.DR, env.WorkloadGroup(Group, refs, srv1alpha1.StateStopped))
	z.Create(env.Quorum, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: Group},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
			ZoneRef:     &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: o.RPOObjectiveSeconds}},
	})
	for _, name := range o.Unprotected {
		z.Create(env.Primary, PVC(name+"-disk", "", "standard", ""))
		z.Create(env.Primary, VM(name, name+"-disk", kubevirtv1.RunStrategyAlways))
	}
	z.installAgentDaemonSets()
	z.WaitRunning(env.Primary)
	env.Eventually(t, Timeout, "replication status healthy", func() error {
		rgs := &srv1alpha1.ReplicationGroupStatus{}
		if err := z.Client(env.Quorum).Get(z.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: Group}, rgs); err != nil {
			return err
		}
		if rgs.Status.Health != srv1alpha1.HealthHealthy || !rgs.Status.FailoverReady {
			return fmt.Errorf("health %s, failoverReady %v", rgs.Status.Health, rgs.Status.FailoverReady)
		}
		return nil
	})
	return z
}

// StartQuorumManager runs quorum-manager against the quorum cluster.
func (z *Zone) StartQuorumManager() {
	z.QuorumManager = z.StartQuorum(z.T, setup.QuorumOptions{ProbeInterval: time.Second})
}

// kubeletDir is the kubelet folder of a cluster's node: the storage simulator
// stages block volumes there and the agent resolves backing PVCs from it.
func (z *Zone) kubeletDir(cluster string) string {
	return filepath.Join(z.dir, env.Nodes[cluster].Name, "kubelet")
}

// startWorkload runs, against a workload cluster: the snapshot-controller,
// pg-controller, the KubeVirt simulator (VMIs on the cluster's node), the
// storage simulator, the CSI driver's part of snapshots (the snapshot
// simulator) and a kubelet stand-in for pod deletion.
func (z *Zone) startWorkload(cluster string) {
	n := env.Nodes[cluster]
	require.NoError(z.T, z.Clusters[cluster].StartSnapshotController(z.Ctx))
	z.Manager(z.T, cluster, "workload", ctrl.Options{}, func(mgr ctrl.Manager) error {
		if err := protectiongroup.SetupWithManager(mgr); err != nil {
			return err
		}
		if err := kubevirtsim.SetupWithManager(mgr, kubevirtsim.Options{NodeName: n.Name}); err != nil {
			return err
		}
		// Restored claims are the snapshot simulator's to bind, after their data.
		if err := storagesim.SetupWithManager(mgr, storagesim.Options{KubeletDirs: map[string]string{n.Name: z.kubeletDir(cluster)}, SkipRestores: true, DeviceDir: z.devices}); err != nil {
			return err
		}
		// Snapshots of the storage simulator's volumes, by its CSI driver, as
		// the class below: a test failover picks the class of the disk's
		// driver, and the snapshot-controller gives the content the class's.
		if err := snapshotsim.SetupWithManager(mgr, snapshotsim.Options{ReadyDelay: 200 * time.Millisecond, Driver: storagesim.Driver}); err != nil {
			return err
		}
		return kubelet.SetupWithManager(mgr)
	})
	z.Create(cluster, &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: SnapshotClass}, Driver: storagesim.Driver,
		DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete})
}

// startAgent runs the real drbd-node-agent of the cluster's node on the DRBD
// simulator.
func (z *Zone) startAgent(cluster string, fabric *drbdsim.Fabric) {
	n := env.Nodes[cluster]
	cfg := nodeagent.Config{
		NodeName: n.Name, Hostname: n.Name, ReplicationAddress: n.Address,
		ResourceDir:         filepath.Join(z.dir, n.Name, "drbd.d"),
		KubeletDir:          z.kubeletDir(cluster),
		DrbdadmPath:         "drbdadm",
		DrbdsetupPath:       "drbdsetup",
		Exec:                drbdsim.Executor{StateDir: fabric.StateDir, Node: n.Name},
		StatusInterval:      50 * time.Millisecond,
		ReplicationNetworks: env.ReplicationNetworks,
	}
	// Its cache holds its own node's replicas, as the binary's does.
	z.Manager(z.T, cluster, "drbd-node-agent", ctrl.Options{Cache: cache.Options{ByObject: nodeagent.CacheByObject(n.Name)}},
		func(mgr ctrl.Manager) error { return nodeagent.Setup(mgr, cfg) })
}

// setNodeReady marks the cluster's node Ready: the protection flow places a DR
// replica on a Ready node.
func (z *Zone) setNodeReady(cluster string) {
	n := &corev1.Node{}
	c := z.Client(cluster)
	require.NoError(z.T, c.Get(z.Ctx, client.ObjectKey{Name: env.Nodes[cluster].Name}, n))
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	require.NoError(z.T, c.Status().Update(z.Ctx, n))
}

// installAgentDaemonSets creates what a real workload cluster has and the
// in-process agents do not: the agent's DaemonSet with a ready pod on the node.
func (z *Zone) installAgentDaemonSets() {
	labels := map[string]string{"app.kubernetes.io/name": "drbd-node-agent"}
	for _, c := range []string{env.Primary, env.DR} {
		z.EnsureNamespace(c, "siterecovery-system")
		z.Create(c, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "drbd-node-agent", Labels: labels},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}},
		})
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "drbd-node-agent-1", Labels: labels},
			Spec:       corev1.PodSpec{NodeName: env.Nodes[c].Name, Containers: []corev1.Container{{Name: "agent", Image: "agent"}}},
		}
		z.Create(c, pod)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		require.NoError(z.T, z.Client(c).Status().Update(z.Ctx, pod))
	}
}
