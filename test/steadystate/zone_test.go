package steadystate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// Shape of the steady-state fleet: two zones of one DR namespace, each a
// primary and a DR cluster of nodesPerCluster nodes; groupsPerZone groups of
// vmsPerGroup VMs per zone, group g on node g % nodesPerCluster of both
// clusters, so that each node holds groupsPerZone/nodesPerCluster ×
// vmsPerGroup = 100 DRBD resources.
const (
	drNamespace     = "dr-production"
	appNS           = "apps"
	nodesPerCluster = 5
	groupsPerZone   = 50
	vmsPerGroup     = 10
)

// pairs are the fleet's pairs of workload clusters.
var pairs = []string{"zone-a", "zone-b"}

func primaryOf(pair string) string { return pair + "-primary" }
func drOf(pair string) string      { return pair + "-dr" }

// tenant is one DR namespace's zone on a pair of workload clusters: its
// groups of VMs, in an application namespace of its own.
type tenant struct {
	drNamespace, appNS, zone, pair string
	groups, vmsPerGroup            int
}

// steadyTenants is BenchmarkSteadyState's fleet: one DR namespace, a zone on
// each pair.
func steadyTenants() []tenant {
	out := make([]tenant, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, tenant{drNamespace: drNamespace, appNS: appNS, zone: p, pair: p, groups: groupsPerZone, vmsPerGroup: vmsPerGroup})
	}
	return out
}

// node is a simulated worker of a workload cluster.
type node struct{ name, address string }

func nodeOf(cluster string, k int) node {
	side := 1
	if cluster[len(cluster)-2:] == "dr" {
		side = 2
	}
	z := 1
	if cluster[:6] == "zone-b" {
		z = 2
	}
	return node{fmt.Sprintf("%s-w%d", cluster, k), fmt.Sprintf("10.%d.%d.%d", z, side, k+1)}
}

// fleet is the five clusters, the tenants' VMs, and the binaries.
type fleet struct {
	t       testing.TB
	z       *harness.Zone
	dir     string
	bin     string
	groups  map[string][]string // drNamespace/zone/group → VM names
	ports   map[string]int32    // node → DRBD resources placed on it
	placed  map[string]int      // pair → groups placed on it
	procs   []*process
	memory  string // state of the in-process DRBD simulator
	files   string // state shared by the agent binaries' drbdsim
	drbdadm string
	setup   string
	// measuredPair, when set, runs the agent binary on node 0 of that pair's
	// clusters (measured); every other agent runs in this process.
	measuredPair string
	// made holds the namespaces and Secrets seed created, by cluster.
	made map[string]bool
}

func clusterNames() []string {
	out := []string{"quorum"}
	for _, p := range pairs {
		out = append(out, primaryOf(p), drOf(p))
	}
	return out
}

func (f *fleet) client(cluster string) client.Client { return f.z.Clusters[cluster].Client }

// newFleet starts the clusters and builds the binaries.
func newFleet(t testing.TB, measuredPair string) *fleet {
	harness.RequireAPIServers(t)   // before building anything
	ctrl.SetLogger(logr.Discard()) // the in-process simulators and agents; the binaries log to files
	f := &fleet{t: t, dir: t.TempDir(), groups: map[string][]string{}, ports: map[string]int32{}, placed: map[string]int{}, measuredPair: measuredPair, made: map[string]bool{}}
	f.bin = filepath.Join(f.dir, "bin")
	require.NoError(t, os.MkdirAll(f.bin, 0o755))
	out, err := exec.Command("go", "build", "-o", f.bin,
		"github.com/siterecovery/siterecovery/cmd/quorum-manager",
		"github.com/siterecovery/siterecovery/cmd/pg-controller",
		"github.com/siterecovery/siterecovery/cmd/drbd-node-agent").CombinedOutput()
	require.NoError(t, err, "building the binaries: %s", out)
	f.drbdadm, f.setup = drbdsim.Build(t, f.bin)
	f.memory, f.files = filepath.Join(f.dir, "drbd-memory"), filepath.Join(f.dir, "drbd-files")
	for _, d := range []string{f.memory, f.files} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	drbdsim.UseMemory(t, f.memory)
	f.z = harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, clusterNames()...)
	return f
}

// measured reports whether node k of cluster runs the agent binary: node 0
// of the measured pair's two clusters, a pair whose resources peer only with
// each other.
func (f *fleet) measured(cluster string, k int) bool {
	return f.measuredPair != "" && k == 0 && strings.HasPrefix(cluster, f.measuredPair+"-")
}

// seed creates the nodes, on its first call, and the namespaces, kubeconfig
// Secrets, and each tenant's zone, VMs and DRBD resources as the protection
// flow leaves them.
func (f *fleet) seed(ctx context.Context, tenants []tenant) {
	t := f.t
	for _, name := range clusterNames()[1:] {
		if f.made["nodes/"+name] {
			continue
		}
		f.made["nodes/"+name] = true
		for k := range nodesPerCluster {
			n := nodeOf(name, k)
			require.NoError(t, f.client(name).Create(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"kubernetes.io/hostname": n.name}},
				Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.address}}},
			}))
		}
	}
	namespaces := f.made
	ensure := func(cluster, ns string) {
		if !namespaces[cluster+"/"+ns] {
			namespaces[cluster+"/"+ns] = true
			require.NoError(t, f.client(cluster).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		}
	}
	for _, tn := range tenants {
		p, d := primaryOf(tn.pair), drOf(tn.pair)
		ensure("quorum", tn.drNamespace)
		for _, c := range []string{p, d} {
			ensure(c, tn.drNamespace)
			ensure(c, tn.appNS)
			// The workload chart's DRBD peer-auth namespace (drbd-peer-auth.yaml).
			ensure(c, srv1alpha1.PeerAuthNamespace(tn.drNamespace))
			if !namespaces["secret/"+tn.drNamespace+"/"+c] {
				namespaces["secret/"+tn.drNamespace+"/"+c] = true
				require.NoError(t, f.client("quorum").Create(ctx, &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: tn.drNamespace, Name: c + "-kubeconfig"},
					Data:       map[string][]byte{srv1alpha1.KubeconfigSecretKey: f.z.Clusters[c].Kubeconfig},
				}))
			}
		}
		require.NoError(t, f.client("quorum").Create(ctx, &srv1alpha1.ProtectionZone{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.drNamespace, Name: tn.zone},
			Spec: srv1alpha1.ProtectionZoneSpec{
				StorageBackend: srv1alpha1.BackendDRBD,
				Clusters: []srv1alpha1.ZoneCluster{
					{Name: p, Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: p + "-kubeconfig"}},
					{Name: d, Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: d + "-kubeconfig"}},
				},
				StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: "standard", TargetStorageClass: "standard"}},
			},
		}))
		for g := range tn.groups {
			// Groups go round the nodes of their pair, whatever their tenant.
			k := f.placed[tn.pair] % nodesPerCluster
			f.placed[tn.pair]++
			group := fmt.Sprintf("%s-g%02d", tn.zone, g)
			for v := range tn.vmsPerGroup {
				vm := fmt.Sprintf("%s-vm%d", group, v)
				key := tn.drNamespace + "/" + tn.zone + "/" + group
				f.groups[key] = append(f.groups[key], vm)
				pn, dn := nodeOf(p, k), nodeOf(d, k)
				i := f.ports[pn.name]
				f.ports[pn.name]++
				f.ports[dn.name]++
				require.NoError(t, f.client(p).Create(ctx, newVM(tn, vm, kubevirtv1.RunStrategyAlways)))
				require.NoError(t, f.client(d).Create(ctx, newVM(tn, vm, kubevirtv1.RunStrategyHalted)))
				f.createReplica(p, k, replica(tn, group, vm, pn, dn, d, 0, i))
				f.createReplica(d, k, replica(tn, group, vm, dn, pn, p, 1, i))
			}
		}
	}
}

// newVM is a VM of the tenant as protection leaves it: labelled with its DR
// namespace.
func newVM(tn tenant, name string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.appNS, Name: name, Labels: map[string]string{srv1alpha1.DRNamespaceLabel: tn.drNamespace}},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
}

// replica is one side of a VM's DRBD pair; i numbers the resource on its
// node (the primary side's node, whose count both sides share).
func replica(tn tenant, group, vm string, local, peer node, peerCluster string, nodeID, i int32) *srv1alpha1.DRBDResource {
	port := 7000 + i
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.appNS, Name: srv1alpha1.DRBDResourceName(vm),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group, srv1alpha1.DRNamespaceLabel: tn.drNamespace,
				srv1alpha1.ProtectionRequestLabel: "protect-" + vm}},
		Spec: srv1alpha1.DRBDResourceSpec{
			NodeName: local.name, NodeID: nodeID, Port: port, Protocol: srv1alpha1.ProtocolA,
			Role:    srv1alpha1.RoleSecondary,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000 + i, BackingPVC: &srv1alpha1.LocalObjectReference{Name: vm + "-disk"}}},
			Peers: []srv1alpha1.DRBDPeer{{NodeName: peer.name, NodeID: 1 - nodeID,
				Address: peer.address, Port: port, Cluster: peerCluster}},
		},
	}
}

// createReplica creates r on node k of cluster after its backing claim, bound
// and labelled with r's request, as the agent requires; for the node whose
// agent is the binary it also stages the claim's device in the node's kubelet
// folder (a link to /dev/null: the DRBD simulator needs no contents), as the
// kubelet does. The in-process agents resolve devices with env.SimDevices.
func (f *fleet) createReplica(cluster string, k int, r *srv1alpha1.DRBDResource) {
	t, ctx := f.t, context.Background()
	claim := r.Spec.Volumes[0].BackingPVC.Name
	pv := "backing-" + cluster + "-" + claim
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: claim, Labels: map[string]string{
			srv1alpha1.DRNamespaceLabel: r.Labels[srv1alpha1.DRNamespaceLabel], srv1alpha1.ProtectionRequestLabel: r.Labels[srv1alpha1.ProtectionRequestLabel]}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode: ptr.To(corev1.PersistentVolumeBlock), StorageClassName: ptr.To(""), VolumeName: pv,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	require.NoError(t, f.client(cluster).Create(ctx, pvc))
	pvc.Status.Phase = corev1.ClaimBound
	require.NoError(t, f.client(cluster).Status().Update(ctx, pvc))
	if f.measured(cluster, k) {
		dev := filepath.Join(f.dir, "nodes", nodeOf(cluster, k).name, "kubelet", "plugins", "kubernetes.io", "csi", "volumeDevices", pv, "dev")
		require.NoError(t, os.MkdirAll(dev, 0o755))
		require.NoError(t, os.Symlink("/dev/null", filepath.Join(dev, "holder")))
	}
	require.NoError(t, f.client(cluster).Create(ctx, r))
}

// inProcess runs a manager against a cluster in this process until the test
// ends: the KubeVirt simulators and the agents that are not measured.
func (f *fleet) inProcess(cluster string, register func(ctrl.Manager) error) {
	mgr, err := ctrl.NewManager(f.z.Clusters[cluster].Config, ctrl.Options{
		Scheme: scheme.New(), Logger: logr.Discard(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:          boot.CacheOptions(""),
		MapperProvider: boot.NewRESTMapper,
		Controller:     config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(f.t, err)
	require.NoError(f.t, register(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("%s manager: %v", cluster, err)
		}
	})
}

// startWorkload runs the simulators and agents, then pg-controller, on every
// workload cluster.
func (f *fleet) startWorkload() {
	for _, c := range clusterNames()[1:] {
		f.inProcess(c, func(mgr ctrl.Manager) error { return kubevirtsim.SetupWithManager(mgr, kubevirtsim.Options{}) })
		for k := range nodesPerCluster {
			n := nodeOf(c, k)
			if f.measured(c, k) {
				f.run("drbd-node-agent-"+n.name, c, []string{"DRBDSIM_NODE=" + n.name, "__DRBD_NODE__=" + n.name, "DRBDSIM_STATE_DIR=" + f.files},
					"--node-name="+n.name, "--replication-address="+n.address,
					"--resource-dir="+filepath.Join(f.dir, "nodes", n.name, "drbd.d"),
					"--kubelet-dir="+filepath.Join(f.dir, "nodes", n.name, "kubelet"),
					"--replication-networks="+env.ReplicationNetworks.String(),
					"--drbdadm="+f.drbdadm, "--drbdsetup="+f.setup)
				continue
			}
			cfg := nodeagent.Config{
				NodeName: n.name, Hostname: n.name, ReplicationAddress: n.address,
				ResourceDir: filepath.Join(f.dir, "nodes", n.name, "drbd.d"),
				DrbdadmPath: "drbdadm", DrbdsetupPath: "drbdsetup",
				Exec:           drbdsim.Executor{StateDir: f.memory, Node: n.name},
				Devices:        env.SimDevices{},
				StatusInterval: 50 * time.Millisecond,
				// Every node's address (10.<zone>.<side>.<k>) lies in it.
				ReplicationNetworks: env.ReplicationNetworks,
			}
			f.inProcess(c, func(mgr ctrl.Manager) error { return nodeagent.Setup(mgr, cfg) })
		}
		f.run("pg-controller-"+c, c, nil)
	}
}

// startQuorum runs the quorum-manager of a DR namespace; extra arguments
// (its metrics address) follow.
func (f *fleet) startQuorum(drNamespace string, args ...string) *process {
	return f.run("quorum-manager-"+drNamespace, "quorum", nil, append([]string{"--namespace=" + drNamespace}, args...)...)
}

// fabric is the DRBD simulator's state of node k's pair.
func (f *fleet) fabric(cluster string, k int) *drbdsim.Fabric {
	if f.measured(cluster, k) {
		return &drbdsim.Fabric{StateDir: f.files}
	}
	return &drbdsim.Fabric{StateDir: f.memory}
}

// protect makes every primary replica Primary and in sync, then creates the
// tenants' groups' copies on the workload clusters and the quorum cluster.
func (f *fleet) protect(ctx context.Context, tenants []tenant) {
	t := f.t
	for _, pair := range pairs {
		p := primaryOf(pair)
		f.waitReplicas(ctx, p, "connected", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.MetadataCreated && len(r.Status.Peers) == 1
		})
		list := &srv1alpha1.DRBDResourceList{}
		require.NoError(t, f.client(p).List(ctx, list))
		for i := range list.Items {
			r := &list.Items[i]
			if r.Spec.Role == srv1alpha1.RolePrimary {
				continue // protected by an earlier call
			}
			k := int(r.Spec.NodeName[len(r.Spec.NodeName)-1] - '0')
			require.NoError(t, f.fabric(p, k).MarkUpToDate(r.Name, r.Spec.NodeName))
			before := r.DeepCopy()
			r.Spec.Role = srv1alpha1.RolePrimary
			require.NoError(t, f.client(p).Patch(ctx, r, client.MergeFrom(before)))
		}
		f.waitReplicas(ctx, p, "Primary and in sync", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && len(r.Status.Peers[0].Volumes) == 1 &&
				r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
	}
	for _, tn := range tenants {
		p, d := primaryOf(tn.pair), drOf(tn.pair)
		for g := range tn.groups {
			group := fmt.Sprintf("%s-g%02d", tn.zone, g)
			vms := f.groups[tn.drNamespace+"/"+tn.zone+"/"+group]
			refs := make([]srv1alpha1.VirtualMachineReference, len(vms))
			for i, vm := range vms {
				refs[i] = srv1alpha1.VirtualMachineReference{Namespace: tn.appNS, Name: vm}
			}
			for c, s := range map[string]srv1alpha1.GroupState{p: srv1alpha1.StateRunning, d: srv1alpha1.StateStopped} {
				require.NoError(t, f.client(c).Create(ctx, &srv1alpha1.ProtectionGroup{
					ObjectMeta: metav1.ObjectMeta{Namespace: tn.drNamespace, Name: group},
					Spec:       srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, DesiredState: s},
				}))
			}
			require.NoError(t, f.client("quorum").Create(ctx, &srv1alpha1.ProtectionGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: tn.drNamespace, Name: group},
				Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: p,
					ZoneRef: &srv1alpha1.LocalObjectReference{Name: tn.zone}},
			}))
		}
	}
}

// waitReplicas polls until every replica of cluster satisfies ok.
func (f *fleet) waitReplicas(ctx context.Context, cluster, what string, ok func(*srv1alpha1.DRBDResource) bool) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		list := &srv1alpha1.DRBDResourceList{}
		require.NoError(f.t, f.client(cluster).List(ctx, list))
		missing := 0
		var example string
		for i := range list.Items {
			if !ok(&list.Items[i]) {
				missing++
				example = list.Items[i].Name
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: %d replicas not %s, e.g. %s", cluster, missing, what, example)
		}
		time.Sleep(time.Second)
	}
}
