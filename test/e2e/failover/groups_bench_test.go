package failover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// BenchmarkFailover10Groups fails 10 groups of 20 VMs over at once, each
// group on a node of its own on both clusters (10 agents per cluster), against
// the floor of the same 200 VMs in 10 groups. With a flat cost per group its
// ratio stays that of BenchmarkFailover20VMs.
//
//	go test ./test/e2e/failover -run '^$' -bench 'Failover10Groups$' -benchtime 1x -v
func BenchmarkFailover10Groups(b *testing.B) {
	z, names, groups := newGroupsZone(b, 10, 20)
	fs := z.newFloor(b, names, groups)
	runFailoverPairs(b, z, fs, 5)
}

// newGroupsZone is newZone with n groups of size VMs, group g on node g of
// each workload cluster.
func newGroupsZone(t testing.TB, n, size int) (*zone, []string, [][]string) {
	z := &zone{Env: env.New(t, env.Options{}), t: t, ctx: t.Context()}
	node := func(c string, g int) (string, string) {
		if g == 0 {
			return env.Nodes[c].Name, env.Nodes[c].Address
		}
		side := 1
		if c == env.DR {
			side = 2
		}
		return fmt.Sprintf("%s-worker-g%d", c, g), fmt.Sprintf("10.9.%d.%d", side, g)
	}
	for _, c := range []string{env.Primary, env.DR} {
		z.workload = append(z.workload, z.StartWorkload(t, c, env.WorkloadOptions{}))
		for g := range n {
			name, addr := node(c, g)
			if g > 0 {
				z.AddNode(t, c, name, addr)
			}
			z.workload = append(z.workload, z.StartAgentOn(t, c, name, addr))
		}
	}
	z.quorum = z.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))
	names := make([]string, n)
	groups := make([][]string, n)
	for g := range n {
		names[g] = fmt.Sprintf("group-%02d", g)
		pn, pa := node(env.Primary, g)
		dn, da := node(env.DR, g)
		for i := range size {
			vmName := fmt.Sprintf("g%02d-vm-%02d", g, i)
			groups[g] = append(groups[g], vmName)
			z.vms = append(z.vms, vmName)
			z.create(env.Primary, vm(vmName, kubevirtv1.RunStrategyAlways))
			z.create(env.DR, vm(vmName, kubevirtv1.RunStrategyHalted))
			port := int32(7000 + i)
			p := env.DRBDReplica(names[g], vmName, env.Primary, env.DR, 0, port)
			p.Spec.NodeName, p.Spec.Peers[0].NodeName, p.Spec.Peers[0].Address = pn, dn, da
			d := env.DRBDReplica(names[g], vmName, env.DR, env.Primary, 1, port)
			d.Spec.NodeName, d.Spec.Peers[0].NodeName, d.Spec.Peers[0].Address = dn, pn, pa
			z.CreateReplica(t, env.Primary, p)
			z.CreateReplica(t, env.DR, d)
		}
	}
	for g, vms := range groups {
		pn, _ := node(env.Primary, g)
		for _, name := range vms {
			z.waitDRBD(env.Primary, name, "connected", func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
			require.NoError(t, fabric.MarkUpToDate(drbdName(name), pn))
			z.setPrimary(env.Primary, name)
		}
	}
	for g, vms := range groups {
		refs := make([]srv1alpha1.VirtualMachineReference, len(vms))
		for i, name := range vms {
			z.waitDRBD(env.Primary, name, "Primary and in sync", func(r *srv1alpha1.DRBDResource) bool {
				return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
			})
			refs[i] = srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS}
		}
		z.create(env.Primary, env.WorkloadGroup(names[g], refs, srv1alpha1.StateRunning))
		z.create(env.DR, env.WorkloadGroup(names[g], refs, srv1alpha1.StateStopped))
		z.create(env.Quorum, &srv1alpha1.ProtectionGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: names[g]},
			Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
				ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
		})
	}
	for _, g := range names {
		waitGroupState(z, env.Primary, g, srv1alpha1.StateRunning)
		waitGroupState(z, env.DR, g, srv1alpha1.StateStopped)
	}
	return z, names, groups
}

func waitGroupState(z *zone, cluster, name string, state srv1alpha1.GroupState) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "group "+name+" "+string(state)+" on "+cluster, func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, pg); err != nil {
			return err
		}
		if pg.Status.CurrentState != state {
			return fmt.Errorf("currentState %q", pg.Status.CurrentState)
		}
		return nil
	})
}
