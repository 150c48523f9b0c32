package testfailover_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// dbThenWeb is the two-tier plan: vm-00, named in its production namespace,
// gated on TCP port 5432 within timeout; then vm-01, named alone.
func (z *zone) dbThenWeb(timeout int32) *srv1alpha1.BootPlan {
	return &srv1alpha1.BootPlan{OnStageTimeout: srv1alpha1.StageTimeoutStop, Stages: []srv1alpha1.BootStage{
		{Name: "db", VirtualMachines: []string{env.AppNS + "/" + z.vms[0]}, TimeoutSeconds: timeout,
			Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}},
		{Name: "web", VirtualMachines: []string{z.vms[1]}, TimeoutSeconds: 60},
	}}
}

// testBootPlanInOrder: the second stage's test VM is not created, and its
// instance never runs, while the first stage's gate waits; once the gate's
// probe Job reaches the first VM's address, the second starts and the test
// passes with both stages Succeeded.
func (z *zone) testBootPlanInOrder(t *testing.T) {
	z.setBootPlan(z.dbThenWeb(60))
	name := "boot-in-order"
	ns := "sr-test-" + name
	vmis := faultmatrix.WatchVMIs(t, t.Context(), z.Scheme, ns, map[string]*rest.Config{env.DR: z.Clusters[env.DR].Config})
	z.testFailover(name, env.DR, nil)

	tf := z.waitBoot(name, func(b *srv1alpha1.BootStatus) bool {
		return len(b.Stages) == 2 && strings.Contains(b.Stages[0].Message, "has no address to probe yet")
	})
	require.Equal(t, srv1alpha1.StageStarting, tf.Status.Boot.Stages[0].Phase)
	require.Equal(t, []string{ns + "/" + z.vms[0]}, tf.Status.Boot.Stages[0].VirtualMachines, "the production namespace's name maps to the test VM")
	require.Equal(t, srv1alpha1.StagePending, tf.Status.Boot.Stages[1].Phase)
	require.Equal(t, srv1alpha1.TestFailoverBooting, tf.Status.Phase)
	dr := z.Client(env.DR)
	require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: z.vms[0]}, &kubevirtv1.VirtualMachine{}))
	err := dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: z.vms[1]}, &kubevirtv1.VirtualMachine{})
	require.True(t, apierrors.IsNotFound(err), "the web stage's test VM is not created before the db gate passes: %v", err)
	require.False(t, vmis.SawOn(env.DR, z.vms[1]), "the web stage's test VM never ran before the db gate passed")

	// virt-handler reports the guest's address; the gate's probe Job reaches it.
	z.setAddress(ns, z.vms[0], "10.244.1.5")
	tf = z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
	boot := tf.Status.Boot
	t.Logf("boot: %s", bootSummary(boot))
	require.Equal(t, srv1alpha1.StageSucceeded, boot.Stages[0].Phase)
	require.Contains(t, boot.Stages[0].Message, "every VM passed the TCP gate")
	require.Equal(t, srv1alpha1.StageSucceeded, boot.Stages[1].Phase)
	require.False(t, boot.Stages[1].StartTime.Before(boot.Stages[0].CompletionTime), "web started once db ended")
	require.NotNil(t, boot.CompletionTime)
	require.False(t, boot.Stopped)
	require.Len(t, tf.Status.Results, 3*len(z.vms))
	for _, r := range tf.Status.Results {
		require.True(t, r.Passed, "%s/%s: %s", r.VM, r.Check, r.Message)
	}
	require.True(t, vmis.SawOn(env.DR, z.vms[1]))
	z.assertLeavesNothing(tf)
}

// testBootGateTimesOut: a gate whose probe never answers times the first
// stage out; under onStageTimeout Stop the second stage's test VM is never
// created, and the test fails with the stage named.
func (z *zone) testBootGateTimesOut(t *testing.T) {
	// The gate's wait must outlast what the test does before it: see the
	// VMI, give it an address, and the probe Job's creation (else the
	// message says the VM had no address, or was not Ready).
	z.setBootPlan(z.dbThenWeb(20))
	name := "boot-gate-times-out" // its probe Jobs get no verdict (probeVerdicts)
	ns := "sr-test-" + name
	vmis := faultmatrix.WatchVMIs(t, t.Context(), z.Scheme, ns, map[string]*rest.Config{env.DR: z.Clusters[env.DR].Config})
	z.testFailover(name, env.DR, func(tf *srv1alpha1.TestFailover) { tf.Spec.Checks.Probe = nil })
	z.waitBoot(name, func(b *srv1alpha1.BootStatus) bool {
		return len(b.Stages) > 0 && b.Stages[0].Phase == srv1alpha1.StageStarting
	})
	z.setAddress(ns, z.vms[0], "10.244.1.6")

	tf := z.waitPhase(name, srv1alpha1.TestFailoverFailed)
	boot := tf.Status.Boot
	t.Logf("boot: %s", bootSummary(boot))
	require.True(t, boot.Stopped)
	require.Equal(t, srv1alpha1.StageTimedOut, boot.Stages[0].Phase)
	require.Contains(t, boot.Stages[0].Message, fmt.Sprintf("timed out after 20s waiting for the TCP gate: %s/%s has not answered TCP on port 5432 yet", ns, z.vms[0]))
	require.Equal(t, srv1alpha1.StageSkipped, boot.Stages[1].Phase)

	require.Equal(t, testfailover.ReasonChecksFailed, readyReason(tf))
	ready := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady).Message
	t.Logf("verdict: %s", ready)
	require.Contains(t, ready, "the boot plan stopped at stage db (TimedOut)")
	results := map[string]srv1alpha1.CheckResult{}
	for _, r := range tf.Status.Results {
		results[r.VM+"/"+r.Check] = r
	}
	require.Len(t, results, 4, "VMReady and GuestAgent per VM")
	require.True(t, results[z.vms[0]+"/VMReady"].Passed, "the db VM started and became Ready")
	require.True(t, results[z.vms[0]+"/GuestAgent"].Passed)
	web := results[z.vms[1]+"/VMReady"]
	require.False(t, web.Passed)
	require.Contains(t, web.Message, "not started: boot stage db did not succeed (TimedOut: timed out after 20s")
	require.Contains(t, web.Message, "and the plan's onStageTimeout is Stop")
	require.Equal(t, "not run: the boot plan did not start the test VM", results[z.vms[1]+"/GuestAgent"].Message)
	require.True(t, vmis.SawOn(env.DR, z.vms[0]))
	require.False(t, vmis.SawOn(env.DR, z.vms[1]), "the web stage's test VM never ran")
	z.assertLeavesNothing(tf)
}

// setBootPlan sets the quorum copy's spec.boot, which test failover reads,
// and removes it again when the test ends.
func (z *zone) setBootPlan(plan *srv1alpha1.BootPlan) {
	z.withGroupSpec(func(s *srv1alpha1.ProtectionGroupSpec) { s.Boot = plan }, func(s *srv1alpha1.ProtectionGroupSpec) { s.Boot = nil })
}

// withGroupSpec changes the quorum group's spec for the rest of the test,
// and undoes the change when it ends.
func (z *zone) withGroupSpec(change, undo func(*srv1alpha1.ProtectionGroupSpec)) {
	t := z.t
	t.Helper()
	c := z.Client(env.Quorum)
	patch := func(f func(*srv1alpha1.ProtectionGroupSpec)) {
		g := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, c.Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, g))
		before := g.DeepCopy()
		f(&g.Spec)
		require.NoError(t, c.Patch(z.ctx, g, client.MergeFrom(before)))
	}
	patch(change)
	t.Cleanup(func() { patch(undo) })
	// The controllers read the group from quorum-manager's cache, which a
	// test failover created next could otherwise outrun: pg-sync, on the
	// same cache, stamps the generation it saw.
	env.Eventually(t, timeout, "quorum-manager saw the group's change", func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := c.Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, g); err != nil {
			return err
		}
		if g.Status.ObservedGeneration < g.Generation {
			return fmt.Errorf("generation %d, observed %d", g.Generation, g.Status.ObservedGeneration)
		}
		return nil
	})
}

// setAddress plays virt-handler, which reports a running guest's interface
// addresses on its VMI (the KubeVirt simulator reports none). The VMI
// keeps its status in the object.
func (z *zone) setAddress(ns, vm, ip string) {
	t := z.t
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"interfaces":[{"name":"default","ipAddress":%q,"ipAddresses":[%q]}]}}`, ip, ip)
	env.Eventually(t, timeout, "address of "+ns+"/"+vm, func() error {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		vmi.Namespace, vmi.Name = ns, vm
		return z.Client(env.DR).Patch(z.ctx, vmi, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
}

// waitBoot waits until the test's status.boot satisfies ok.
func (z *zone) waitBoot(name string, ok func(*srv1alpha1.BootStatus) bool) *srv1alpha1.TestFailover {
	z.t.Helper()
	var tf *srv1alpha1.TestFailover
	env.Eventually(z.t, timeout, name+" boot", func() error {
		tf = z.request(name)
		if tf.Status.Boot == nil || !ok(tf.Status.Boot) {
			return fmt.Errorf("phase %s, boot %s", tf.Status.Phase, bootSummary(tf.Status.Boot))
		}
		return nil
	})
	return tf
}

func bootSummary(b *srv1alpha1.BootStatus) string {
	if b == nil {
		return "none"
	}
	var out []string
	for _, s := range b.Stages {
		out = append(out, fmt.Sprintf("%s %s (%s)", s.Name, s.Phase, s.Message))
	}
	return strings.Join(out, "; ")
}
