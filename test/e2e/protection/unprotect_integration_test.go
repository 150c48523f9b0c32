package protection_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

func TestUnprotect(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(t.Output())))
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	top := t

	// protect protects a running VM with a DataVolume root disk and a PVC data
	// disk in group and waits until pg-sync built its DR standby.
	protect := func(t *testing.T, vm, group string) {
		makePVC(t, p, vm+"-root", "standard", corev1.PersistentVolumeBlock)
		makePVC(t, p, vm+"-data", "standard", corev1.PersistentVolumeBlock)
		makeVM(t, p, vm, dvVolume("rootdisk", vm+"-root"), pvcVolume("datadisk", vm+"-data"), cloudInitVolume())
		env.Eventually(t, wait, vm+" running", vmRunning(t, p, vm))
		require.NoError(t, q.Create(ctx, newRequestIn("protect-"+vm, vm, group)))
		env.Eventually(t, wait, "protect-"+vm+" Protected", phaseIs(ctx, q, "protect-"+vm, srv1alpha1.ProtectionProtected, protection.ReasonProtected))
		env.Eventually(t, wait, vm+" standby on DR", func() error {
			return d.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: vm}, &kubevirtv1.VirtualMachine{})
		})
	}
	original := func(vm string) map[string]string {
		return map[string]string{"rootdisk": "dv:" + vm + "-root", "datadisk": "pvc:" + vm + "-data"}
	}

	t.Run("running VM", func(t *testing.T) {
		protect(t, "vm1", "prod-pg")
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-vm1")))
		env.Eventually(t, wait, "protect-vm1 gone", gone(q, "protect-vm1"))

		vm := getVM(t, p, "vm1")
		assert.Equal(t, original("vm1"), claims(vm), "back on the original volumes, DataVolume included")
		assert.NotContains(t, vm.Annotations, protection.OriginalVolumesAnnotation)
		assert.NotContains(t, vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
		assert.NotContains(t, vm.Labels, srv1alpha1.ProtectionGroupLabel)
		assert.Equal(t, kubevirtv1.RunStrategyAlways, *vm.Spec.RunStrategy)
		require.NoError(t, vmRunning(t, p, "vm1")())
		nothingLeft(t, z, "protect-vm1")
		assert.Equal(t, []string(nil), members(t, q, "prod-pg"), "the VM left the group, which stays")
		for _, pvc := range []string{"vm1-root", "vm1-data"} {
			require.NoError(t, p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: pvc}, &corev1.PersistentVolumeClaim{}), "source PVCs stay")
		}
		env.Eventually(t, wait, "pg-sync deleted the DR standby", func() error {
			return absent(d, &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "vm1"}})
		})
		env.Eventually(t, wait, "Unprotected event", eventSeen(q, "protect-vm1", corev1.EventTypeNormal, protection.ReasonUnprotected))
	})

	t.Run("crash mid-way", func(t *testing.T) {
		protect(t, "vm2", "prod-pg")
		// With the DR agent down its DRBDResource cannot go: the removal stops
		// with the VM stopped and its frontends gone.
		z.agents[env.DR].Stop(t)
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-vm2")))
		env.Eventually(t, wait, "removal waits for the DR agent", readyIs(q, "protect-vm2", protection.ReasonRemovingReplication, "DRBDResource apps/vm-vm2 on dr-cluster"))
		vm := getVM(t, p, "vm2")
		assert.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy)
		assert.Equal(t, string(kubevirtv1.RunStrategyAlways), vm.Annotations[srv1alpha1.PreviousRunStrategyAnnotation])
		assert.Equal(t, map[string]string{"rootdisk": "pvc:vm2-root-drbd", "datadisk": "pvc:vm2-data-drbd"}, claims(vm), "disks are swapped once DRBD is down")
		for _, c := range []client.Client{p, d} {
			require.NoError(t, absent(c, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "vm2-root-drbd"}}))
		}
		assert.NotContains(t, members(t, q, "prod-pg"), "vm2")
		require.Equal(t, protection.ReasonStaysOnPrimary,
			meta.FindStatusCondition(getRequest(t, q, "protect-vm2").Status.Conditions, protection.ConditionUnprotecting).Reason)

		z.quorum.Stop(t)
		z.startAgent(top, env.DR)
		z.quorum = z.StartQuorum(top, quorumOptions)
		env.Eventually(t, wait, "protect-vm2 gone", gone(q, "protect-vm2"))
		vm = getVM(t, p, "vm2")
		assert.Equal(t, original("vm2"), claims(vm))
		assert.Equal(t, kubevirtv1.RunStrategyAlways, *vm.Spec.RunStrategy, "the strategy kept before the crash is restored")
		assert.NotContains(t, vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
		env.Eventually(t, wait, "vm2 running", vmRunning(t, p, "vm2"))
		nothingLeft(t, z, "protect-vm2")
	})

	t.Run("failed over", func(t *testing.T) {
		protect(t, "vm3", "fo-pg")
		require.NoError(t, q.Create(ctx, &srv1alpha1.FailoverRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "fo-to-dr"},
			Spec: srv1alpha1.FailoverRequestSpec{
				ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "fo-pg", Namespace: env.Namespace},
				TargetCluster:      env.DR, FailoverType: srv1alpha1.FailoverPlanned, DrainTimeoutSeconds: 60, BatchBootTimeoutSeconds: 60,
			},
		}))
		env.Eventually(t, wait, "failover completed", func() error {
			fr := &srv1alpha1.FailoverRequest{}
			if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "fo-to-dr"}, fr); err != nil {
				return err
			}
			if fr.Status.Phase != srv1alpha1.FailoverCompleted {
				return fmt.Errorf("failover %s: %s", fr.Status.Phase, fr.Status.Message)
			}
			return nil
		})
		env.Eventually(t, wait, "vm3 running on DR", vmRunning(t, d, "vm3"))

		// Held: replication of a VM that runs on DR is not torn down.
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-vm3")))
		env.Eventually(t, wait, "held", readyIs(q, "protect-vm3", protection.ReasonFailedOver, "fail back to primary-cluster first"))
		env.Eventually(t, wait, "FailedOver event", eventSeen(q, "protect-vm3", corev1.EventTypeWarning, protection.ReasonFailedOver))
		ready := meta.FindStatusCondition(getRequest(t, q, "protect-vm3").Status.Conditions, srv1alpha1.ConditionReady)
		assert.Contains(t, ready.Message, srv1alpha1.ForceUnprotectAnnotation)
		assert.Equal(t, []string{"vm3"}, members(t, q, "fo-pg"))
		require.NoError(t, vmRunning(t, d, "vm3")())
		replicaIn(t, d, "vm-vm3")

		// Forced: the VM stays on DR, on its DR backing PVCs.
		req := getRequest(t, q, "protect-vm3")
		patched := req.DeepCopy()
		patched.Annotations = map[string]string{srv1alpha1.ForceUnprotectAnnotation: "true"}
		require.NoError(t, q.Patch(ctx, patched, client.MergeFrom(req)))
		env.Eventually(t, wait, "protect-vm3 gone", gone(q, "protect-vm3"))
		drVM := getVM(t, d, "vm3")
		assert.Equal(t, map[string]string{"rootdisk": "pvc:vm3-root", "datadisk": "pvc:vm3-data"}, claims(drVM), "DR VM on the DR backing PVCs")
		assert.NotContains(t, drVM.Labels, srv1alpha1.ProtectionGroupLabel)
		require.NoError(t, vmRunning(t, d, "vm3")())
		primVM := getVM(t, p, "vm3")
		assert.Equal(t, original("vm3"), claims(primVM))
		assert.Equal(t, kubevirtv1.RunStrategyHalted, *primVM.Spec.RunStrategy, "the primary's VM stays stopped")
		assert.NotContains(t, primVM.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
		assert.Equal(t, kubevirtv1.VirtualMachineStatusStopped, primVM.Status.PrintableStatus)
		nothingLeft(t, z, "protect-vm3")
		for _, pvc := range []string{"vm3-root", "vm3-data"} {
			require.NoError(t, d.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: pvc}, &corev1.PersistentVolumeClaim{}), "DR backing PVCs stay")
		}
		g := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "fo-pg"}, g))
		assert.Empty(t, g.Spec.VirtualMachines)
		assert.Equal(t, env.DR, g.Spec.ActiveCluster)
		// pg-sync keeps both VMs: one runs on the active cluster, the other is the
		// original VM, not a standby it created.
		require.NoError(t, d.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm3"}, &kubevirtv1.VirtualMachine{}))
		require.NoError(t, p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm3"}, &kubevirtv1.VirtualMachine{}))
	})

	t.Run("DR cluster down", func(t *testing.T) {
		protect(t, "vm4", "prod-pg")
		// The harness's API server only stops once the watches on it are gone.
		z.workloads[env.DR].Stop(t)
		z.agents[env.DR].Stop(t)
		require.NoError(t, z.Clusters[env.DR].StopAPIServer())
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-vm4")))
		env.Eventually(t, wait, "held while DR is down", readyIs(q, "protect-vm4", srv1alpha1.ReasonClusterUnreachable, "dr-cluster"))
		require.NoError(t, vmRunning(t, p, "vm4")(), "nothing is done to the VM while a cluster cannot be reached")
		assert.Contains(t, members(t, q, "prod-pg"), "vm4")

		require.NoError(t, z.Clusters[env.DR].StartAPIServer())
		z.startWorkload(top, env.DR)
		z.startAgent(top, env.DR)
		env.Eventually(t, wait, "protect-vm4 gone", gone(q, "protect-vm4"))
		assert.Equal(t, original("vm4"), claims(getVM(t, p, "vm4")))
		env.Eventually(t, wait, "vm4 running", vmRunning(t, p, "vm4"))
		nothingLeft(t, z, "protect-vm4")
	})

	t.Run("deleted during validation", func(t *testing.T) {
		require.NoError(t, q.Create(ctx, newRequest("protect-ghost", "ghost")))
		env.Eventually(t, wait, "Failed", phaseIs(ctx, q, "protect-ghost", srv1alpha1.ProtectionFailed, srv1alpha1.ReasonVMNotFound))
		assert.Contains(t, getRequest(t, q, "protect-ghost").Finalizers, protection.Finalizer)
		require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-ghost")))
		env.Eventually(t, wait, "protect-ghost gone", gone(q, "protect-ghost"))
	})
}

// nothingLeft checks that no object carries the request's label on either
// workload cluster.
func nothingLeft(t *testing.T, z *zone, request string) {
	t.Helper()
	sel := client.MatchingLabels{srv1alpha1.ProtectionRequestLabel: request}
	for _, cluster := range []string{env.Primary, env.DR} {
		c := z.Client(cluster)
		for _, list := range []client.ObjectList{&corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}, &corev1.PodList{}, &srv1alpha1.DRBDResourceList{}, &corev1.SecretList{}} {
			require.NoError(t, c.List(t.Context(), list, sel))
			n := meta.LenList(list)
			assert.Zero(t, n, "%s: %T of %s left", cluster, list, request)
		}
		a := &srv1alpha1.DRBDAllocation{}
		require.NoError(t, client.IgnoreNotFound(c.Get(t.Context(), client.ObjectKey{Name: srv1alpha1.DRBDAllocationName}, a)))
		for _, cl := range a.Spec.Claims {
			assert.NotEqual(t, request, cl.Request, "%s: the claim of %s (port %d) was not released", cluster, request, cl.Port)
		}
	}
}

func gone(q client.Client, name string) func() error {
	return func() error {
		return absent(q, &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}})
	}
}

func absent(c client.Client, obj client.Object) error {
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%T %s still exists", obj, obj.GetName())
}

// readyIs waits for the request's Ready reason and a part of its message.
func readyIs(q client.Client, name, reason, says string) func() error {
	return func() error {
		r := &srv1alpha1.ProtectionRequest{}
		if err := q.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, r); err != nil {
			return err
		}
		c := meta.FindStatusCondition(r.Status.Conditions, srv1alpha1.ConditionReady)
		if c == nil || c.Reason != reason || !strings.Contains(c.Message, says) {
			return fmt.Errorf("Ready %+v, want %s saying %q", c, reason, says)
		}
		return nil
	}
}

func eventSeen(q client.Client, name, kind, reason string) func() error {
	return func() error {
		list := &corev1.EventList{}
		if err := q.List(context.Background(), list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == name && ev.Type == kind && ev.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event %s for %s", kind, reason, name)
	}
}

// members are the names of a quorum group's VMs.
func members(t *testing.T, q client.Client, group string) []string {
	t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: group}, g))
	var out []string
	for _, vm := range g.Spec.VirtualMachines {
		out = append(out, vm.Name)
	}
	return out
}
