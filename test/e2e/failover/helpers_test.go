package failover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

const (
	group   = "production-pg"
	timeout = 90 * time.Second
)

// zone is a protected group of VMs on a running three-cluster zone.
type zone struct {
	*env.Env
	t      testing.TB
	vms    []string
	quorum *env.Process
	// workload holds the workload managers and DRBD agents of both clusters,
	// as first started.
	workload []*env.Process
	// procs are the zone's controllers, which a fault kills and restarts.
	procs *env.Processes
	ctx   context.Context
}

type zoneOptions struct {
	vms int
	// minted connects quorum-manager to the workload clusters with the
	// kubeconfigs scripts/bootstrap-zone.sh mints, as in production.
	minted                    bool
	vmStartDelay, vmStopDelay time.Duration
	// drStartDelay, when set, replaces vmStartDelay on the DR cluster.
	drStartDelay time.Duration
	// latency puts a latency proxy between quorum-manager and each API
	// server (env.Options.Latency).
	latency bool
	// quorum are quorum-manager's options; a probe every second if zero.
	quorum setup.QuorumOptions
	// controlPlane runs the clusters as whole control planes
	// (env.Options.ControlPlane), for the flows' end-to-end tests.
	controlPlane bool
}

// quorumOptions are o.quorum, with a probe every second unless set.
func (o zoneOptions) quorumOptions() setup.QuorumOptions {
	q := o.quorum
	if q.ProbeInterval == 0 {
		q.ProbeInterval = time.Second
	}
	return q
}

// newZone starts the zone with the workload tier, DRBD agents and quorum-manager,
// and a group of running VMs on the primary whose disks replicate to the DR
// cluster, as the protection flow leaves them.
func newZone(t testing.TB, o zoneOptions) *zone {
	z := &zone{Env: env.New(t, env.Options{MintedKubeconfigs: o.minted, Latency: o.latency, ControlPlane: o.controlPlane}), t: t, ctx: context.Background()}
	z.procs = z.NewProcesses()
	for _, c := range []string{env.Primary, env.DR} {
		start := o.vmStartDelay
		if c == env.DR && o.drStartDelay > 0 {
			start = o.drStartDelay
		}
		z.workload = append(z.workload,
			z.procs.StartWorkload(t, c, env.WorkloadOptions{VMStartDelay: start, VMStopDelay: o.vmStopDelay}),
			z.procs.StartAgent(t, c))
	}
	z.quorum = z.procs.StartQuorum(t, o.quorumOptions())
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))

	var refs []srv1alpha1.VirtualMachineReference
	for i := range o.vms {
		name := fmt.Sprintf("vm-%02d", i)
		z.vms = append(z.vms, name)
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS})
		vms := map[string]*kubevirtv1.VirtualMachine{env.Primary: vm(name, kubevirtv1.RunStrategyAlways), env.DR: vm(name, kubevirtv1.RunStrategyHalted)}
		on := map[string]env.Node{env.Primary: env.Nodes[env.Primary], env.DR: env.Nodes[env.DR]}
		if o.controlPlane {
			// The DR replicas spread over the DR cluster's nodes, as
			// protection's holder pods place them, and each VM's disk is its
			// frontend on its replica's node, as protection leaves it.
			workers := z.WorkerNodes(env.DR)
			on[env.DR] = workers[i%len(workers)]
			for cluster, v := range vms {
				z.CreateFrontend(t, cluster, v, name+"-disk", int32(1000+i), on[cluster].Name)
			}
		}
		z.create(env.Primary, vms[env.Primary])
		z.create(env.DR, vms[env.DR])
		z.CreateReplica(z.t, env.Primary, env.DRBDReplicaOn(group, name, env.Primary, env.DR, on[env.Primary], on[env.DR], 0, int32(7000+i)))
		z.CreateReplica(z.t, env.DR, env.DRBDReplicaOn(group, name, env.DR, env.Primary, on[env.DR], on[env.Primary], 1, int32(7000+i)))
	}
	for _, name := range z.vms {
		z.waitDRBD(env.Primary, name, "connected", func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
		require.NoError(t, fabric.MarkUpToDate(drbdName(name), env.Nodes[env.Primary].Name))
		z.setPrimary(env.Primary, name)
	}
	for _, name := range z.vms {
		z.waitDRBD(env.Primary, name, "Primary and in sync", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
	}
	z.create(env.Primary, env.WorkloadGroup(group, refs, srv1alpha1.StateRunning))
	z.create(env.DR, env.WorkloadGroup(group, refs, srv1alpha1.StateStopped))
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
			ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
	})
	z.waitGroup(env.Primary, srv1alpha1.StateRunning)
	z.waitGroup(env.DR, srv1alpha1.StateStopped)
	return z
}

// in is z as seen by subtest t, so that its helpers fail t, not the test that
// started the zone.
func (z *zone) in(t *testing.T) *zone {
	c := *z
	c.t = t
	return &c
}

func vm(name string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
}

func drbdName(vm string) string { return srv1alpha1.DRBDResourceName(vm) }

func (z *zone) create(cluster string, obj client.Object) {
	z.t.Helper()
	require.NoError(z.t, z.Client(cluster).Create(z.ctx, obj))
}

// setPrimary asks the VM's DRBD resource on cluster to be Primary.
func (z *zone) setPrimary(cluster, vmName string) {
	z.t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.t, z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: drbdName(vmName)}, r))
	before := r.DeepCopy()
	r.Spec.Role = srv1alpha1.RolePrimary
	require.NoError(z.t, z.Client(cluster).Patch(z.ctx, r, client.MergeFrom(before)))
}

func (z *zone) drbd(cluster, vmName string) *srv1alpha1.DRBDResource {
	z.t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.t, z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: drbdName(vmName)}, r))
	return r
}

func (z *zone) waitDRBD(cluster, vmName, what string, ok func(*srv1alpha1.DRBDResource) bool) {
	z.t.Helper()
	env.Eventually(z.t, timeout, cluster+" "+vmName+" "+what, func() error {
		r := &srv1alpha1.DRBDResource{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: drbdName(vmName)}, r); err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("status %+v", r.Status)
		}
		return nil
	})
}

// primaryWithoutQuorum gives the primary's replicas a Primary's quorum
// (off), as protection sets them up: a replication outage must not fail the
// production VMs' I/O.
func (z *zone) primaryWithoutQuorum() {
	for _, vm := range z.vms {
		r := z.drbd(env.Primary, vm)
		before := r.DeepCopy()
		r.Spec.Quorum = srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
		require.NoError(z.t, z.Client(env.Primary).Patch(z.ctx, r, client.MergeFrom(before)))
		z.waitDRBD(env.Primary, vm, "quorum off applied", func(d *srv1alpha1.DRBDResource) bool {
			return d.Status.ObservedGeneration >= r.Generation
		})
	}
}

func (z *zone) waitGroup(cluster string, state srv1alpha1.GroupState) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "group "+string(state)+" on "+cluster, func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg); err != nil {
			return err
		}
		// A state reported for an older spec (the Running written just
		// before a stop took effect) does not count.
		if pg.Status.CurrentState != state || pg.Status.ObservedGeneration != pg.Generation {
			return fmt.Errorf("currentState %q (generation %d observed %d)", pg.Status.CurrentState, pg.Generation, pg.Status.ObservedGeneration)
		}
		return nil
	})
}

// failover creates a FailoverRequest and returns its name.
func (z *zone) failover(name, target string, typ srv1alpha1.FailoverType, mutate ...func(*srv1alpha1.FailoverRequest)) string {
	z.t.Helper()
	fr := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.FailoverRequestSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group, Namespace: env.Namespace},
			TargetCluster:      target, FailoverType: typ, DrainTimeoutSeconds: 120, BatchBootTimeoutSeconds: 300,
		},
	}
	for _, m := range mutate {
		m(fr)
	}
	z.create(env.Quorum, fr)
	return name
}

func (z *zone) request(name string) *srv1alpha1.FailoverRequest {
	z.t.Helper()
	fr := &srv1alpha1.FailoverRequest{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, fr))
	return fr
}

// waitPhase waits for a request to reach phase and returns it.
func (z *zone) waitPhase(name string, phase srv1alpha1.FailoverPhase) *srv1alpha1.FailoverRequest {
	z.t.Helper()
	var fr *srv1alpha1.FailoverRequest
	env.Eventually(z.t, timeout, name+" "+string(phase), func() error {
		fr = z.request(name)
		if fr.Status.Phase != phase {
			if (fr.Status.Phase == srv1alpha1.FailoverFailed || fr.Status.Phase == srv1alpha1.FailoverCompleted) && phase != fr.Status.Phase {
				z.t.Fatalf("%s ended %s: %s", name, fr.Status.Phase, fr.Status.Message)
			}
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	return fr
}

func readyReason(fr *srv1alpha1.FailoverRequest) string {
	if c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func phases(fr *srv1alpha1.FailoverRequest) []string {
	var out []string
	for _, p := range fr.Status.PhaseHistory {
		out = append(out, p.Phase)
	}
	return out
}

// recordVMIs records the group's instances on both workload clusters for the
// test's rest, for a run that keeps its API servers up.
func (z *zone) recordVMIs() *faultmatrix.VMIs {
	ctx, cancel := context.WithCancel(z.ctx)
	z.t.Cleanup(cancel)
	return faultmatrix.WatchVMIs(z.t, ctx, z.Scheme, env.AppNS, z.workloadConfigs())
}

// recordVMIsThroughOutages is recordVMIs for runs that stop API servers.
func (z *zone) recordVMIsThroughOutages() *faultmatrix.VMIs {
	ctx, cancel := context.WithCancel(z.ctx)
	z.t.Cleanup(cancel)
	return faultmatrix.RecordVMIs(z.t, ctx, z.Scheme, env.AppNS, z.workloadConfigs())
}

func (z *zone) workloadConfigs() map[string]*rest.Config {
	return map[string]*rest.Config{env.Primary: z.Clusters[env.Primary].Config, env.DR: z.Clusters[env.DR].Config}
}
