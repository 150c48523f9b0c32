package testfailover_test

import (
	"fmt"
	"slices"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/kstatus"
)

var fullTrail = []string{"Pending", "Snapshotting", "Restoring", "Booting", "Verifying", "CleaningUp"}

// TestTestFailover runs every scenario on one zone (each test uses its own
// isolated namespace): starting three API servers per scenario would not fit the
// CI machine. The clusters are whole control planes: the test VMs run in
// launcher pods the scheduler places on their restored claims' nodes.
func TestTestFailover(t *testing.T) {
	z := newZoneWith(t, 2, zoneOptions{env: controlPlane})
	prod := z.production()

	t.Run("passes", func(t *testing.T) {
		z.t = t
		name := z.testFailover("passes", env.DR, nil)
		tf := z.waitPhase(name, srv1alpha1.TestFailoverVerifying)
		// kstatus (what kubectl wait, Argo CD and Flux read): InProgress while
		// the test runs, Current once it passed.
		require.Equal(t, status.InProgressStatus, kstatus.Compute(t, tf).Status, "in %s", tf.Status.Phase)
		z.assertIsolatedCopies(tf)
		tf = z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
		require.Equal(t, status.CurrentStatus, kstatus.Compute(t, tf).Status)
		require.Equal(t, append(fullTrail, "Succeeded"), phases(tf))
		require.Len(t, tf.Status.Results, 3*len(z.vms), "VMReady, GuestAgent and Probe per VM")
		for _, r := range tf.Status.Results {
			require.True(t, r.Passed, "%s/%s: %s", r.VM, r.Check, r.Message)
			require.NotNil(t, r.Time)
		}
		require.True(t, meta.IsStatusConditionTrue(tf.Status.Conditions, srv1alpha1.ConditionReady))
		require.True(t, meta.IsStatusConditionTrue(tf.Status.Conditions, testfailover.ConditionCleanedUp))
		require.NotNil(t, tf.Status.CompletionTime)
		z.assertLeavesNothing(tf)
		z.assertProductionUntouched(prod)
		waitResultCount(t, "succeeded")
	})

	t.Run("probe fails", func(t *testing.T) {
		z.t = t
		name := z.testFailover("probe-fails", env.DR, nil)
		tf := z.waitPhase(name, srv1alpha1.TestFailoverFailed)
		require.Equal(t, append(fullTrail, "Failed"), phases(tf))
		require.Equal(t, testfailover.ReasonChecksFailed, readyReason(tf))
		require.Equal(t, status.FailedStatus, kstatus.Compute(t, tf).Status, "a failed check is Failed, not InProgress")
		var probes int
		for _, r := range tf.Status.Results {
			if r.Check == testfailover.CheckProbe {
				probes++
				require.False(t, r.Passed)
				require.Contains(t, r.Message, "BackoffLimitExceeded")
			} else {
				require.True(t, r.Passed, "%s/%s", r.VM, r.Check)
			}
		}
		require.Equal(t, len(z.vms), probes)
		waitResultCount(t, "failed")
		z.assertLeavesNothing(tf)
		z.assertProductionUntouched(prod)
	})

	t.Run("deleted midway", func(t *testing.T) {
		z.t = t
		name := z.testFailover("deleted-midway", env.DR, nil)
		tf := z.waitPhase(name, srv1alpha1.TestFailoverVerifying)
		env.Eventually(t, timeout, "probe Jobs created", func() error {
			return z.expectCount(&batchv1.JobList{}, tf, len(z.vms))
		})
		// The probe Jobs get no verdict here, so they and their Services
		// stay for this look at what the probe reaches.
		z.assertProbeSelectsTheVMOnly(tf)
		require.NoError(t, z.Client(env.Quorum).Delete(z.ctx, tf))
		env.Eventually(t, timeout, "TestFailover gone", func() error {
			err := z.Client(env.Quorum).Get(z.ctx, client.ObjectKeyFromObject(tf), &srv1alpha1.TestFailover{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%w)", err)
		})
		z.assertLeavesNothing(tf)
		z.assertProductionUntouched(prod)
	})

	t.Run("quorum-manager restarted", func(t *testing.T) {
		z.t = t
		name := z.testFailover("restarted", env.DR, nil)
		restart := func() {
			z.procs.Quorum.Stop(t)
			// The zone's test owns the new process: it outlives this subtest.
			z.procs.RestartQuorum(z.root)
		}
		// Each restart comes in the phase named or, when the poll missed it,
		// the first one after it: Booting can last a single reconcile, as the
		// simulator starts VMs at once.
		for _, phase := range []srv1alpha1.TestFailoverPhase{srv1alpha1.TestFailoverSnapshotting, srv1alpha1.TestFailoverBooting} {
			t.Logf("quorum-manager restarted in %s", z.waitReached(name, phase).Status.Phase)
			restart()
		}
		tf := z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
		require.Equal(t, append(fullTrail, "Succeeded"), phases(tf), "each phase entered exactly once despite two restarts")
		z.assertLeavesNothing(tf)
		z.assertProductionUntouched(prod)
	})

	t.Run("replica not up to date", func(t *testing.T) {
		z.t = t
		// vm-00's DR replica falls behind (protocol A writes the link drops
		// before delivering them become out-of-sync blocks; the primary, with
		// quorum majority here, could not write while disconnected), then
		// resyncs slowly: Inconsistent, SyncTarget. vm-01's stays UpToDate.
		fabric := z.DRBD(t)
		syncing, res := z.vms[0], srv1alpha1.DRBDResourceName(z.vms[0])
		require.NoError(t, fabric.SetSyncRate(1))
		t.Cleanup(func() {
			require.NoError(t, fabric.SetSyncRate(1<<30))
			z.waitDRBD(env.DR, syncing, drUpToDate)
		})
		require.NoError(t, fabric.Write(res, env.Nodes[env.Primary].Name, 64<<10))
		require.NoError(t, fabric.Disconnect(res))
		require.NoError(t, fabric.Connect(res))
		z.waitDRBD(env.DR, syncing, func(r *srv1alpha1.DRBDResource) bool {
			return len(r.Status.Volumes) == 1 && r.Status.Volumes[0].DiskState == "Inconsistent" &&
				len(r.Status.Peers) == 1 && len(r.Status.Peers[0].Volumes) == 1 && r.Status.Peers[0].Volumes[0].ReplicationState == "SyncTarget"
		})

		name := z.testFailover("replica-syncing", env.DR, nil)
		tf := z.waitPhase(name, srv1alpha1.TestFailoverFailed)
		require.Equal(t, []string{"Pending", "Snapshotting", "CleaningUp", "Failed"}, phases(tf), "failed at once, through the cleanup")
		require.Equal(t, testfailover.ReasonReplicaNotUpToDate, readyReason(tf))
		msg := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady).Message
		t.Logf("refused: %s", msg)
		for _, want := range []string{
			fmt.Sprintf("VM %s/%s: DR replica %s volume 0 (PVC %s-disk) is Inconsistent (SyncTarget from %s, ", env.AppNS, syncing, res, syncing, env.Nodes[env.Primary].Name),
			"% in sync)", "a test failover boots only UpToDate replicas", "start the test again",
		} {
			require.Contains(t, msg, want)
		}
		require.NotContains(t, msg, z.vms[1], "the other VM's replica is UpToDate")
		require.Empty(t, tf.Status.Results, "nothing was booted, so nothing was verified")
		z.assertLeavesNothing(tf)
		z.assertProductionUntouched(prod)
	})

	t.Run("no VolumeSnapshotClass for the driver", func(t *testing.T) {
		z.t = t
		z.testNoSnapshotClass(prod)
	})

	t.Run("bad input is rejected", func(t *testing.T) {
		z.t = t
		for _, tc := range []struct {
			name, target, group, reason, message string
		}{
			{"unknown-group", env.DR, "nope", srv1alpha1.ReasonGroupNotFound, "ProtectionGroup dr-production/nope not found"},
			{"not-in-zone", "mars", group, srv1alpha1.ReasonInvalidTarget, `"mars" is not a cluster of zone production`},
			{"active-cluster", env.Primary, group, srv1alpha1.ReasonInvalidTarget, "is the active cluster of group production-pg"},
		} {
			name := z.testFailover(tc.name, tc.target, func(tf *srv1alpha1.TestFailover) { tf.Spec.ProtectionGroupRef.Name = tc.group })
			tf := z.waitPhase(name, srv1alpha1.TestFailoverFailed)
			require.Equal(t, tc.reason, readyReason(tf), tc.name)
			require.Contains(t, meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady).Message, tc.message)
			require.Equal(t, []string{"Pending", "Failed"}, phases(tf))
			require.Empty(t, tf.Finalizers)
		}
		err := z.Client(env.Quorum).Create(z.ctx, newTestFailover("zero-timeout", env.DR, func(tf *srv1alpha1.TestFailover) { tf.Spec.TimeoutSeconds = 0 }))
		// 0 is the zero value and omitted, so the default applies; a negative value is refused.
		if err == nil {
			err = z.Client(env.Quorum).Create(z.ctx, newTestFailover("negative-timeout", env.DR, func(tf *srv1alpha1.TestFailover) { tf.Spec.TimeoutSeconds = -1 }))
		}
		require.Error(t, err)
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		require.Contains(t, err.Error(), "timeoutSeconds")
	})
}

func newTestFailover(name, target string, mutate func(*srv1alpha1.TestFailover)) *srv1alpha1.TestFailover {
	tf := &srv1alpha1.TestFailover{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.TestFailoverSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group, Namespace: env.Namespace},
			TargetCluster:      target, TimeoutSeconds: 600,
			Checks: srv1alpha1.VerificationChecks{VMReadyTimeoutSeconds: 60, GuestAgent: true,
				Probe: &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeTCP, Port: 22, TimeoutSeconds: 10}},
		},
	}
	if mutate != nil {
		mutate(tf)
	}
	return tf
}

func (z *zone) testFailover(name, target string, mutate func(*srv1alpha1.TestFailover)) string {
	z.t.Helper()
	z.create(env.Quorum, newTestFailover(name, target, mutate))
	return name
}

func (z *zone) request(name string) *srv1alpha1.TestFailover {
	z.t.Helper()
	tf := &srv1alpha1.TestFailover{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, tf))
	return tf
}

func (z *zone) waitPhase(name string, phase srv1alpha1.TestFailoverPhase) *srv1alpha1.TestFailover {
	z.t.Helper()
	var tf *srv1alpha1.TestFailover
	env.Eventually(z.t, timeout, name+" "+string(phase), func() error {
		tf = z.request(name)
		if tf.Status.Phase != phase {
			if (tf.Status.Phase == srv1alpha1.TestFailoverFailed || tf.Status.Phase == srv1alpha1.TestFailoverSucceeded) && phase != tf.Status.Phase {
				z.t.Fatalf("%s ended %s: %+v", name, tf.Status.Phase, tf.Status.Conditions)
			}
			c := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady)
			return fmt.Errorf("phase %s: %+v", tf.Status.Phase, c)
		}
		return nil
	})
	return tf
}

// waitReached waits until the request is in phase or a later one, ended or
// not.
func (z *zone) waitReached(name string, phase srv1alpha1.TestFailoverPhase) *srv1alpha1.TestFailover {
	z.t.Helper()
	var tf *srv1alpha1.TestFailover
	env.Eventually(z.t, timeout, name+" in "+string(phase)+" or later", func() error {
		if tf = z.request(name); phaseIndex(tf.Status.Phase) < phaseIndex(phase) {
			return fmt.Errorf("phase %q", tf.Status.Phase)
		}
		return nil
	})
	return tf
}

func phases(tf *srv1alpha1.TestFailover) []string {
	var out []string
	for _, p := range tf.Status.PhaseHistory {
		out = append(out, p.Phase)
	}
	return out
}

func readyReason(tf *srv1alpha1.TestFailover) string {
	if c := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// assertIsolatedCopies checks the running test: its VMs use restored PVCs, fresh
// identities and the pod network only, behind a deny-all NetworkPolicy.
func (z *zone) assertIsolatedCopies(tf *srv1alpha1.TestFailover) {
	t := z.t
	t.Helper()
	ns := tf.Status.IsolatedNamespace
	require.Equal(t, "sr-test-"+tf.Name, ns)
	dr := z.Client(env.DR)
	np := &networkingv1.NetworkPolicy{}
	require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: testfailover.NetworkPolicyName}, np))
	require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes)
	for _, name := range z.vms {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: name}, vm))
		spec := vm.Spec.Template.Spec
		require.Len(t, spec.Networks, 1)
		require.NotNil(t, spec.Networks[0].Pod, "pod network only")
		require.Len(t, spec.Domain.Devices.Interfaces, 1)
		require.NotContains(t, []string{"52:54:00:00:00:01", "52:54:00:00:00:02"}, spec.Domain.Devices.Interfaces[0].MacAddress)
		require.NotEmpty(t, spec.Domain.Devices.Interfaces[0].MacAddress)
		require.NotEqual(t, "5d307ca9-b3ef-428c-8861-06e72d69f223", string(spec.Domain.Firmware.UUID))
		require.NotContains(t, vm.Spec.Template.ObjectMeta.Annotations, "k8s.v1.cni.cncf.io/networks")
		claim := spec.Volumes[0].PersistentVolumeClaim.ClaimName
		restored := &corev1.PersistentVolumeClaim{}
		require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: claim}, restored))
		require.Equal(t, corev1.ClaimBound, restored.Status.Phase)
		require.Equal(t, "VolumeSnapshot", restored.Spec.DataSource.Kind)
		// The snapshot copies the DRBD backing PVC, not the /dev/drbd frontend.
		src := &snapshotv1.VolumeSnapshot{}
		require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: claim}, src))
		require.Equal(t, name+"-disk", *src.Spec.Source.PersistentVolumeClaimName)
	}
}

// assertLeavesNothing: no object with the test's label remains on the DR
// cluster and its namespace is gone or Terminating (no namespace controller).
func (z *zone) assertLeavesNothing(tf *srv1alpha1.TestFailover) {
	t := z.t
	t.Helper()
	for _, l := range []client.ObjectList{&snapshotv1.VolumeSnapshotList{}, &snapshotv1.VolumeSnapshotContentList{},
		&corev1.PersistentVolumeClaimList{}, &kubevirtv1.VirtualMachineList{}, &kubevirtv1.VirtualMachineInstanceList{},
		&batchv1.JobList{}, &networkingv1.NetworkPolicyList{}, &corev1.ServiceList{}} {
		require.NoError(t, z.expectCount(l, tf, 0))
	}
	ns := &corev1.Namespace{}
	err := z.Client(env.DR).Get(z.ctx, client.ObjectKey{Name: "sr-test-" + tf.Name}, ns)
	if err == nil {
		require.NotNil(t, ns.DeletionTimestamp, "isolated namespace deleted")
	} else {
		require.True(t, apierrors.IsNotFound(err), "%v", err)
	}
}

func (z *zone) expectCount(l client.ObjectList, tf *srv1alpha1.TestFailover, n int) error {
	if err := z.Client(env.DR).List(z.ctx, l, client.MatchingLabels{testfailover.LabelName: tf.Name}); err != nil {
		return err
	}
	if got := meta.LenList(l); got != n {
		return fmt.Errorf("%T: %d objects, want %d", l, got, n)
	}
	return nil
}

// prodState is what production looks like before any test.
type prodState struct {
	vms   map[string]*kubevirtv1.VirtualMachine
	pvcs  map[string]pvcState
	drbds map[string]*srv1alpha1.DRBDResource
}

func (z *zone) production() prodState {
	p := prodState{vms: map[string]*kubevirtv1.VirtualMachine{}, pvcs: map[string]pvcState{}, drbds: map[string]*srv1alpha1.DRBDResource{}}
	for _, name := range z.vms {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(z.t, z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, vm))
		p.vms[name] = vm
		for _, c := range []string{name + "-disk", name + "-disk-drbd"} {
			pvc := &corev1.PersistentVolumeClaim{}
			require.NoError(z.t, z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: c}, pvc))
			p.pvcs[c] = pvcStateOf(pvc)
		}
		for _, cluster := range []string{env.Primary, env.DR} {
			r := &srv1alpha1.DRBDResource{}
			require.NoError(z.t, z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm-" + name}, r))
			p.drbds[cluster+"/"+name] = r
		}
	}
	return p
}

// pvcState is what a test failover must leave as it was on a production PVC.
// Not its resourceVersion: the snapshot-controller adds and removes its
// pvc-as-source-protection finalizer while it snapshots the PVC.
type pvcState struct {
	Spec                corev1.PersistentVolumeClaimSpec
	Labels, Annotations map[string]string
	Finalizers          []string
}

func pvcStateOf(pvc *corev1.PersistentVolumeClaim) pvcState {
	return pvcState{Spec: pvc.Spec, Labels: pvc.Labels, Annotations: pvc.Annotations,
		Finalizers: slices.DeleteFunc(slices.Clone(pvc.Finalizers), func(f string) bool {
			return f == "snapshot.storage.kubernetes.io/pvc-as-source-protection"
		})}
}

// assertProductionUntouched: the standby VMs are still Halted and their specs
// unchanged (the simulators keep writing their status), their
// PVCs unchanged, the DRBD specs unchanged and replication still connected (DRBD
// status keeps moving, so only spec and generation are compared).
func (z *zone) assertProductionUntouched(before prodState) {
	t := z.t
	t.Helper()
	after := z.production()
	for name, vm := range before.vms {
		require.Equal(t, vm.Generation, after.vms[name].Generation, "standby VM %s untouched", name)
		require.Equal(t, vm.Spec, after.vms[name].Spec, "standby VM %s untouched", name)
		require.Equal(t, kubevirtv1.RunStrategyHalted, *after.vms[name].Spec.RunStrategy)
		require.False(t, after.vms[name].Status.Ready)
		err := z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, &kubevirtv1.VirtualMachineInstance{})
		require.True(t, apierrors.IsNotFound(err), "standby VM %s never ran", name)
	}
	require.Equal(t, before.pvcs, after.pvcs, "production PVCs untouched")
	for key, r := range before.drbds {
		a := after.drbds[key]
		require.Equal(t, r.Spec, a.Spec, "DRBDResource %s spec", key)
		require.Equal(t, r.Generation, a.Generation, "DRBDResource %s generation", key)
	}
	for _, name := range z.vms {
		r := after.drbds[env.DR+"/"+name]
		require.Equal(t, "Secondary", r.Status.Role, "DR replica of %s stays Secondary", name)
		require.Len(t, r.Status.Peers, 1, "replication of %s keeps running", name)
	}
}

// waitResultCount waits until siterecovery_test_failover_results_total
// counts a test of the group with result: the controller counts it just
// after it wrote the terminal phase the test saw.
func waitResultCount(t *testing.T, result string) {
	t.Helper()
	env.Eventually(t, timeout, "siterecovery_test_failover_results_total{result="+result+"} counted", func() error {
		if n := resultCount(result); n < 1 {
			return fmt.Errorf("%s: %v", result, n)
		}
		return nil
	})
}

// resultCount reads siterecovery_test_failover_results_total for the group.
func resultCount(result string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != "siterecovery_test_failover_results_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["protection_group"] == group && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
