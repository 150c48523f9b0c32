package failover_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkFailoverWriteFloor measures what BenchmarkFailover20VMs cannot go
// below on the machine it runs on: the writes a planned failover of 20 VMs
// cannot do without, made by a plain client on the same three API servers with
// every controller stopped, in the flow's order and with its fan-out (10 writes
// in flight per cluster). Per VM: stop (VM run strategy, VMI deletion, VM
// status), demote (spec, status of both replicas), promote (spec, status of
// both replicas), start (VM run strategy, VMI creation, VM status): 12 writes,
// 240 per failover. No events, no group or request status, no reads: objects
// are read before the clock starts, and each write's answer feeds the next.
//
//	go test ./internal/quorum/failover -run '^$' -bench FailoverWriteFloor -benchtime 10x -v
func BenchmarkFailoverWriteFloor(b *testing.B) {
	z := newZone(b, zoneOptions{vms: 20})
	z.quorum.Stop(b)
	for _, p := range z.workload {
		p.Stop(b)
	}
	ctx := context.Background()
	var total []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src, tgt := env.Primary, env.DR
		if i%2 == 1 {
			src, tgt = tgt, src
		}
		b.StopTimer()
		f := z.readFloor(ctx, src, tgt)
		if _, err := z.Zone.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		cpu := harness.SampleCPU()
		b.StartTimer()
		start := time.Now()
		if err := f.run(ctx); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		total = append(total, elapsed)
		b.Logf("%s to %s: %s, %s", src, tgt, elapsed.Round(time.Millisecond), harness.SampleCPU().Since(cpu))
	}
	b.StopTimer()
	sort.Slice(total, func(i, j int) bool { return total[i] < total[j] })
	b.ReportMetric(float64(total[len(total)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(total[len(total)-1].Milliseconds()), "max-ms")
}

// floor is one failover's objects, read before the clock starts.
type floor struct {
	src, tgt         client.Client
	srcVMs, tgtVMs   []*kubevirtv1.VirtualMachine
	srcVMIs          []*kubevirtv1.VirtualMachineInstance
	srcDRBD, tgtDRBD []*srv1alpha1.DRBDResource
}

func (z *zone) readFloor(ctx context.Context, src, tgt string) *floor {
	z.t.Helper()
	f := &floor{src: z.Client(src), tgt: z.Client(tgt)}
	for _, name := range z.vms {
		key := client.ObjectKey{Namespace: env.AppNS, Name: name}
		dkey := client.ObjectKey{Namespace: env.AppNS, Name: drbdName(name)}
		sv, tv, si := &kubevirtv1.VirtualMachine{}, &kubevirtv1.VirtualMachine{}, &kubevirtv1.VirtualMachineInstance{}
		sd, td := &srv1alpha1.DRBDResource{}, &srv1alpha1.DRBDResource{}
		for _, get := range []error{f.src.Get(ctx, key, sv), f.tgt.Get(ctx, key, tv), f.src.Get(ctx, key, si),
			f.src.Get(ctx, dkey, sd), f.tgt.Get(ctx, dkey, td)} {
			if get != nil {
				z.t.Fatalf("reading %s: %v", name, get)
			}
		}
		f.srcVMs, f.tgtVMs, f.srcVMIs = append(f.srcVMs, sv), append(f.tgtVMs, tv), append(f.srcVMIs, si)
		f.srcDRBD, f.tgtDRBD = append(f.srcDRBD, sd), append(f.tgtDRBD, td)
	}
	return f
}

// run makes the failover's writes, phase after phase as the controllers would.
func (f *floor) run(ctx context.Context) error {
	n := len(f.srcVMs)
	phases := []func(i int) error{
		func(i int) error { return stopVM(ctx, f.src, f.srcVMs[i], f.srcVMIs[i]) },
		func(i int) error {
			return moveRole(ctx, f.src, f.srcDRBD[i], srv1alpha1.RoleSecondary, f.tgt, f.tgtDRBD[i], true)
		},
		func(i int) error {
			return moveRole(ctx, f.tgt, f.tgtDRBD[i], srv1alpha1.RolePrimary, f.src, f.srcDRBD[i], false)
		},
		func(i int) error { return startVM(ctx, f.tgt, f.tgtVMs[i], f.srcVMIs[i]) },
	}
	for _, phase := range phases {
		if err := flow.ForEach(parallelWrites, n, phase); err != nil {
			return err
		}
	}
	return nil
}

const parallelWrites = 10

func stopVM(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) error {
	if err := setRunStrategy(ctx, c, vm, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	if err := c.Delete(ctx, vmi); err != nil {
		return err
	}
	return setVMStatus(ctx, c, vm, false)
}

func startVM(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, template *kubevirtv1.VirtualMachineInstance) error {
	if err := setRunStrategy(ctx, c, vm, kubevirtv1.RunStrategyAlways); err != nil {
		return err
	}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, kubevirtv1.VirtualMachineGroupVersionKind)}},
		Spec: template.Spec, Status: template.Status,
	}
	if err := c.Create(ctx, vmi); err != nil {
		return err
	}
	return setVMStatus(ctx, c, vm, true)
}

func setRunStrategy(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, s kubevirtv1.VirtualMachineRunStrategy) error {
	before := vm.DeepCopy()
	vm.Spec.RunStrategy = ptr.To(s)
	return c.Patch(ctx, vm, client.MergeFrom(before))
}

func setVMStatus(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, running bool) error {
	before := vm.DeepCopy()
	vm.Status.Created, vm.Status.Ready = running, running
	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
	ready := corev1.ConditionFalse
	if running {
		vm.Status.PrintableStatus, ready = kubevirtv1.VirtualMachineStatusRunning, corev1.ConditionTrue
	}
	vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{Type: kubevirtv1.VirtualMachineReady, Status: ready,
		LastTransitionTime: metav1.Now()}}
	return c.Status().Patch(ctx, vm, client.MergeFrom(before))
}

// moveRole sets role on one replica, reports it in that replica's status, and
// reports the peer's new role in the other replica's status.
func moveRole(ctx context.Context, c client.Client, res *srv1alpha1.DRBDResource, role srv1alpha1.DRBDRole,
	peerC client.Client, peer *srv1alpha1.DRBDResource, peerPromotable bool) error {
	before := res.DeepCopy()
	res.Spec.Role, res.Spec.Quorum = role, srv1alpha1.QuorumForRole(role)
	if err := c.Patch(ctx, res, client.MergeFrom(before)); err != nil {
		return err
	}
	res.Status.Role, res.Status.Promotable = string(role), role == srv1alpha1.RolePrimary
	res.Status.ObservedGeneration = res.Generation
	if err := c.Status().Update(ctx, res); err != nil {
		return fmt.Errorf("status of %s: %w", res.Name, err)
	}
	for j := range peer.Status.Peers {
		peer.Status.Peers[j].PeerRole = string(role)
	}
	peer.Status.Promotable = peerPromotable
	return peerC.Status().Update(ctx, peer)
}
