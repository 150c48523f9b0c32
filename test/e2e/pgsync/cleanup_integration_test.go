package pgsync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/pgsync"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestPGSyncCleanup: standbys of VMs that leave a group are deleted, a deleted
// group's copies and standbys go from every cluster, and nothing that runs, is
// on the active cluster or was not created by pg-sync is ever deleted.
func TestPGSyncCleanup(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(t.Output())))
	e := env.New(t, env.Options{})
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond})
	e.StartWorkload(t, env.Primary, env.WorkloadOptions{})
	drWorkload := e.StartWorkload(t, env.DR, env.WorkloadOptions{})
	ctx := context.Background()
	q, primary, dr := e.Client(env.Quorum), e.Client(env.Primary), e.Client(env.DR)

	// "legacy" already exists on the DR cluster, made by hand: pg-sync adopts it
	// as its standby but did not create it.
	for _, name := range []string{"db", "web", "cache", "legacy"} {
		require.NoError(t, primary.Create(ctx, newVM(name, name == "db")))
	}
	legacy := newVM("legacy", false)
	legacy.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	require.NoError(t, dr.Create(ctx, legacy))
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: groupName},
		Spec: srv1alpha1.ProtectionGroupSpec{
			ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}, ActiveCluster: env.Primary,
			VirtualMachines: refs("db", "web", "cache", "legacy"),
		},
	}))
	for _, name := range []string{"db", "web", "cache", "legacy"} {
		env.Eventually(t, wait, "standby "+name, standbyIs(dr, name, "1Gi"))
	}
	env.Eventually(t, wait, "synced", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	require.Equal(t, pgsync.ControllerName, getVM(t, dr, "web").Labels[pgsync.CreatedByLabel])
	require.NotContains(t, getVM(t, dr, "legacy").Labels, pgsync.CreatedByLabel)
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, groupKey, g))
	require.Contains(t, g.Finalizers, pgsync.Finalizer)

	// web and legacy leave the group: web's standby goes, legacy (not created
	// by pg-sync) stays; nothing changes on the active cluster.
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.VirtualMachines = refs("db", "cache") })
	env.Eventually(t, wait, "web standby deleted", vmGone(dr, "web"))
	env.Eventually(t, wait, "synced after removal", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	require.NoError(t, dr.Get(ctx, vmKey("legacy"), &kubevirtv1.VirtualMachine{}), "a VM pg-sync did not create is never deleted")
	for _, name := range []string{"db", "web", "cache", "legacy"} {
		require.NoError(t, primary.Get(ctx, vmKey(name), &kubevirtv1.VirtualMachine{}), name)
	}

	// A standby that runs when its VM leaves the group is left in place and
	// reported, and goes once it is halted.
	patch(t, dr, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateRunning })
	env.Eventually(t, wait, "db runs on DR", vmStatus(dr, "db", kubevirtv1.VirtualMachineStatusRunning))
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.VirtualMachines = refs("cache") })
	env.Eventually(t, wait, "running standby reported", func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := q.Get(ctx, groupKey, g); err != nil {
			return err
		}
		if st := clusterState(g, env.DR); st == nil || !strings.Contains(st.Message, "apps/db is not in the group but is Running") {
			return fmt.Errorf("dr state %+v", st)
		}
		return nil
	})
	require.NoError(t, vmStatus(dr, "db", kubevirtv1.VirtualMachineStatusRunning)(), "a running standby is never deleted")
	patch(t, dr, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateStopped })
	patch(t, dr, vmKey("db"), &kubevirtv1.VirtualMachine{}, func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	})
	env.Eventually(t, wait, "db standby deleted once halted", vmGone(dr, "db"))

	// A second group, failed over to DR: its standby (created by pg-sync) runs
	// on the active cluster, and the original VM, halted on the primary, carries
	// pg-sync's labels since pg-sync adopted it as the standby there.
	const foGroup = "failedover-pg"
	foKey := client.ObjectKey{Namespace: env.Namespace, Name: foGroup}
	require.NoError(t, primary.Create(ctx, newVM("app", false)))
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: foGroup},
		Spec: srv1alpha1.ProtectionGroupSpec{
			ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}, ActiveCluster: env.Primary, VirtualMachines: refs("app"),
		},
	}))
	env.Eventually(t, wait, "app standby", func() error { return dr.Get(ctx, vmKey("app"), &kubevirtv1.VirtualMachine{}) })
	env.Eventually(t, wait, "fo copies", func() error {
		for _, c := range []client.Client{primary, dr} {
			if err := c.Get(ctx, foKey, &srv1alpha1.ProtectionGroup{}); err != nil {
				return err
			}
		}
		return nil
	})
	// What a failover does: stop on the primary, run on DR, flip activeCluster.
	patch(t, primary, foKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateStopped })
	env.Eventually(t, wait, "app stopped on primary", vmStatus(primary, "app", kubevirtv1.VirtualMachineStatusStopped))
	patch(t, dr, foKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateRunning })
	env.Eventually(t, wait, "app runs on DR", vmStatus(dr, "app", kubevirtv1.VirtualMachineStatusRunning))
	patch(t, q, foKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.ActiveCluster = env.DR })
	env.Eventually(t, wait, "original app adopted on the primary", func() error {
		if l := getVM(t, primary, "app").Labels; l[srv1alpha1.ProtectionGroupLabel] != foGroup {
			return fmt.Errorf("labels %v", l)
		}
		return nil
	})

	// Both groups are deleted while the DR cluster is down: the finalizers hold
	// with the reason, the primary is cleaned meanwhile.
	drWorkload.Stop(t)
	require.NoError(t, e.Clusters[env.DR].StopAPIServer())
	for _, key := range []client.ObjectKey{groupKey, foKey} {
		require.NoError(t, q.Delete(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}))
	}
	for _, key := range []client.ObjectKey{groupKey, foKey} {
		env.Eventually(t, wait, key.Name+" held while DR is down", func() error {
			g := &srv1alpha1.ProtectionGroup{}
			if err := q.Get(ctx, key, g); err != nil {
				return err
			}
			c := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionSynced)
			if c == nil || c.Reason != srv1alpha1.ReasonAPIServerDown || !strings.Contains(c.Message, "dr-cluster") {
				return fmt.Errorf("Synced %+v", c)
			}
			return nil
		})
		env.Eventually(t, wait, key.Name+" primary copy deleted", func() error { return absent(primary, key, &srv1alpha1.ProtectionGroup{}) })
	}
	require.NoError(t, e.Clusters[env.DR].StartAPIServer())
	e.StartWorkload(t, env.DR, env.WorkloadOptions{})
	for _, key := range []client.ObjectKey{groupKey, foKey} {
		env.Eventually(t, wait, key.Name+" deleted", func() error { return absent(q, key, &srv1alpha1.ProtectionGroup{}) })
		require.NoError(t, absent(dr, key, &srv1alpha1.ProtectionGroup{}), "DR copy")
	}
	require.NoError(t, vmGone(dr, "cache")(), "a halted standby on a non-active cluster goes with its group")
	require.NoError(t, vmStatus(dr, "app", kubevirtv1.VirtualMachineStatusRunning)(), "the VM on the active cluster stays and runs")
	require.NoError(t, primary.Get(ctx, vmKey("app"), &kubevirtv1.VirtualMachine{}), "the original VM is never deleted")
	require.NoError(t, dr.Get(ctx, vmKey("legacy"), &kubevirtv1.VirtualMachine{}))
	for _, name := range []string{"db", "web", "cache", "legacy"} {
		require.NoError(t, vmStatus(primary, name, kubevirtv1.VirtualMachineStatusRunning)(), "production VM %s untouched", name)
	}
}

func getVM(t *testing.T, c client.Client, name string) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, c.Get(context.Background(), vmKey(name), vm))
	return vm
}

func vmGone(c client.Client, name string) func() error {
	return func() error { return absent(c, vmKey(name), &kubevirtv1.VirtualMachine{}) }
}

func absent(c client.Client, key client.ObjectKey, obj client.Object) error {
	err := c.Get(context.Background(), key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%T %s still exists", obj, key)
}

func vmStatus(c client.Client, name string, want kubevirtv1.VirtualMachinePrintableStatus) func() error {
	return func() error {
		vm := &kubevirtv1.VirtualMachine{}
		if err := c.Get(context.Background(), vmKey(name), vm); err != nil {
			return err
		}
		if vm.Status.PrintableStatus != want {
			return fmt.Errorf("VM %s is %q, want %q", name, vm.Status.PrintableStatus, want)
		}
		return nil
	}
}
