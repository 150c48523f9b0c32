package testfailover_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	"github.com/siterecovery/siterecovery/test/sim/virtapi"
)

// TestTestFailoverConsistency: a group that asks for application consistency
// gets test snapshots cut while its running source guests are frozen through
// KubeVirt's freeze subresource (the virt-api simulator, aggregated into the
// primary's API server), recorded in the test's status and as the group's
// last point; a guest whose agent does not answer makes the point Crash and is
// named; a cut that outlasts the freeze bound is Crash, and the guests are
// thawed either way. vm-00 replicates with protocol C, whose replica holds
// what the frozen source completed at once; vm-01 with protocol A, whose
// writes in flight the cut waits for, frozen, until the source's fresh
// readings show them drained. A crash-mode group's status is not written. The zone's
// quorum identity is the chart's (minted kubeconfigs), so the freeze rights
// are proven too.
func TestTestFailoverConsistency(t *testing.T) {
	// (The planned failover's drain is TestPlannedFailoverFreezesBeforeTheStop's;
	// VolSync copies are TestWhyUnfreezable's.)
	z := newZoneWith(t, 2, zoneOptions{env: env.Options{MintedKubeconfigs: true}, protocol: srv1alpha1.ProtocolC,
		protocols: map[string]srv1alpha1.ReplicationProtocol{"vm-01": srv1alpha1.ProtocolA}})
	guests := guest.New()
	api := virtapi.Start(t, z.Clusters[env.Primary], guests)
	vm0 := types.NamespacedName{Namespace: env.AppNS, Name: z.vms[0]}
	vm1 := types.NamespacedName{Namespace: env.AppNS, Name: z.vms[1]}
	z.waitRunning(env.Primary, vm0, vm1)

	t.Run("crash-mode group is not written", func(t *testing.T) {
		z.t = t
		tf := z.waitPhase(z.testFailover("crash-mode", env.DR, nil), srv1alpha1.TestFailoverSucceeded)
		require.NotNil(t, tf.Status.Consistency)
		require.Equal(t, srv1alpha1.ConsistencyCrash, tf.Status.Consistency.Consistency, "the test records its own point")
		g := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, g))
		require.Nil(t, g.Status.Consistency, "a group that does not ask for Application consistency gets no lastPoint")
	})

	t.Run("application point", func(t *testing.T) {
		z.t = t
		z.setConsistency(30)
		tf := z.waitPhase(z.testFailover("app-consistent", env.DR, nil), srv1alpha1.TestFailoverSucceeded)
		p := tf.Status.Consistency
		require.NotNil(t, p)
		require.Equal(t, srv1alpha1.ConsistencyApplication, p.Consistency, p.Message)
		require.Equal(t, "TestFailover", p.Source)
		require.Empty(t, p.CrashConsistentVMs)
		// The snapshot simulator cuts a snapshot 1.5 s after it is asked for.
		require.Positive(t, p.FrozenMilliseconds)
		require.Equal(t, p.Time, z.lastPoint().Time, "the group's last point is the test's")
		z.assertThawed(guests, vm0, vm1)
		require.Equal(t, 2, api.Calls("freeze"), "each running source guest was frozen once")
	})

	t.Run("protocol A: drained before the cut", func(t *testing.T) {
		z.t = t
		z.setConsistency(30)
		z.drainedBeforeTheCut(guests, vm0, vm1)
	})

	t.Run("guest agent does not answer", func(t *testing.T) {
		z.t = t
		z.setConsistency(30)
		guests.SetAgent(vm1, false)
		t.Cleanup(func() { guests.SetAgent(vm1, true) })
		tf := z.waitPhase(z.testFailover("agent-silent", env.DR, nil), srv1alpha1.TestFailoverSucceeded)
		p := tf.Status.Consistency
		require.NotNil(t, p)
		require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
		require.Equal(t, []string{vm1.String()}, p.CrashConsistentVMs, "the VM whose agent did not answer is named")
		require.Contains(t, p.Message, "Guest agent is not responding")
		lp := z.lastPoint()
		require.Equal(t, srv1alpha1.ConsistencyCrash, lp.Consistency)
		require.Equal(t, []string{vm1.String()}, lp.CrashConsistentVMs)
		z.assertThawed(guests, vm0)
	})

	t.Run("cut outlasts the freeze bound", func(t *testing.T) {
		z.t = t
		// The snapshot simulator holds every cut until both guests were
		// thawed, so no cut can land within the bound however the machine's
		// load shifts the timings (a delay alone did not: the simulator
		// counts its delay from a creationTimestamp of whole seconds).
		// Held cuts end the freeze at the bound whatever its size; 6 s gives
		// each freeze call a third of it, so none is cut off mid-call and
		// lands after the thaw.
		z.setConsistency(6)
		thawed := api.Calls("unfreeze")
		z.holdCuts.Store(true)
		t.Cleanup(func() { z.holdCuts.Store(false) })
		name := z.testFailover("bound", env.DR, nil)
		env.Eventually(t, timeout, "both guests thawed with the cuts held", func() error {
			if n := api.Calls("unfreeze") - thawed; n < 2 {
				return fmt.Errorf("%d thaws", n)
			}
			return nil
		})
		z.holdCuts.Store(false)
		tf := z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
		p := tf.Status.Consistency
		require.NotNil(t, p)
		require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
		require.Contains(t, p.Message, "thawed before the snapshots were cut")
		z.assertThawed(guests, vm0, vm1)
	})
}

// setConsistency asks the group for application consistency with a freeze
// bound of seconds, until the test ends.
func (z *zone) setConsistency(seconds int32) {
	z.withGroupSpec(func(s *srv1alpha1.ProtectionGroupSpec) {
		s.Consistency = &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: seconds}
	}, func(s *srv1alpha1.ProtectionGroupSpec) { s.Consistency = nil })
}

func (z *zone) lastPoint() *srv1alpha1.ConsistencyPoint {
	z.t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, g))
	require.NotNil(z.t, g.Status.Consistency, "the group records its last point")
	require.NotNil(z.t, g.Status.Consistency.LastPoint)
	return g.Status.Consistency.LastPoint
}

// waitRunning waits until the VMs run on cluster: only running guests are frozen.
func (z *zone) waitRunning(cluster string, vms ...types.NamespacedName) {
	for _, vm := range vms {
		env.Eventually(z.t, timeout, vm.String()+" running on "+cluster, func() error {
			vmi := &kubevirtv1.VirtualMachineInstance{}
			if err := z.Client(cluster).Get(z.ctx, vm, vmi); err != nil {
				return err
			}
			if vmi.Status.Phase != kubevirtv1.Running {
				return &phaseError{phase: string(vmi.Status.Phase)}
			}
			return nil
		})
	}
}

type phaseError struct{ phase string }

func (e *phaseError) Error() string { return "phase " + e.phase }

// assertThawed: the guests are not frozen, and their VMIs say so.
func (z *zone) assertThawed(guests *guest.Guests, vms ...types.NamespacedName) {
	z.t.Helper()
	for _, vm := range vms {
		require.False(z.t, guests.Frozen(vm), "%s is thawed", vm)
		vmi := &kubevirtv1.VirtualMachineInstance{}
		require.NoError(z.t, z.Client(env.Primary).Get(z.ctx, vm, vmi))
		require.Empty(z.t, vmi.Status.FSFreezeStatus, "%s's VMI says it is thawed", vm)
	}
}
