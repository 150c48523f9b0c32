package protectiongroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
	"github.com/siterecovery/siterecovery/test/harness"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

const (
	appNS   = "apps"
	groupNS = "dr-production"
	wait    = 30 * time.Second
)

// startCluster runs one workload cluster with the ProtectionGroup controller and
// the KubeVirt simulator, and returns a client to it.
func startCluster(t *testing.T) client.Client {
	t.Helper()
	return startClusterWith(t, kubevirtsim.Options{StartDelay: 20 * time.Millisecond, StopDelay: 20 * time.Millisecond})
}

// startClusterWith is startCluster with the simulator's options.
func startClusterWith(t *testing.T, sim kubevirtsim.Options) client.Client {
	t.Helper()
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, "primary")
	cluster := zone.Clusters["primary"]
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		// Each test starts its own manager in this one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, protectiongroup.SetupWithManager(mgr))
	require.NoError(t, kubevirtsim.SetupWithManager(mgr, sim))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	c := cluster.Client
	for _, ns := range []string{appNS, groupNS} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	return c
}

// newVM returns a VM in one of the two KubeVirt styles: the deprecated
// spec.running, or spec.runStrategy.
func newVM(name string, deprecatedRunning bool, strategy kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS}}
	if deprecatedRunning {
		vm.Spec.Running = ptr.To(true)
	} else {
		vm.Spec.RunStrategy = ptr.To(strategy)
	}
	vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
	return vm
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		if last = cond(); last == nil {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %v", what, last)
}

func groupState(ctx context.Context, c client.Client, want srv1alpha1.GroupState) func() error {
	return func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g); err != nil {
			return err
		}
		if g.Status.CurrentState != want || g.Status.ObservedGeneration != g.Generation {
			return fmt.Errorf("currentState %q (generation %d observed %d), want %q", g.Status.CurrentState, g.Generation, g.Status.ObservedGeneration, want)
		}
		return nil
	}
}

// createRunningGroup creates the group "pg" of refs, asked to run, and waits
// until it runs.
func createRunningGroup(t *testing.T, ctx context.Context, c client.Client, refs []srv1alpha1.VirtualMachineReference) {
	t.Helper()
	require.NoError(t, c.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: groupNS},
		Spec:       srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateRunning, VirtualMachines: refs},
	}))
	eventually(t, "group running", groupState(ctx, c, srv1alpha1.StateRunning))
}

func setDesired(t *testing.T, ctx context.Context, c client.Client, state srv1alpha1.GroupState, mutate ...func(*srv1alpha1.ProtectionGroup)) {
	t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g))
	before := g.DeepCopy()
	g.Spec.DesiredState = state
	for _, m := range mutate {
		m(g)
	}
	require.NoError(t, c.Patch(ctx, g, client.MergeFrom(before)))
}

func TestGroupOfTwentyVMsStopsAndStarts(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()

	// 20 VMs: every third uses the deprecated spec.running, the rest runStrategy
	// Always or RerunOnFailure, which a start must restore.
	var refs []srv1alpha1.VirtualMachineReference
	strategies := map[string]kubevirtv1.VirtualMachineRunStrategy{}
	for i := range 20 {
		name := fmt.Sprintf("vm-%02d", i)
		strategy := kubevirtv1.RunStrategyAlways
		if i%2 == 0 {
			strategy = kubevirtv1.RunStrategyRerunOnFailure
		}
		deprecated := i%3 == 0
		if !deprecated {
			strategies[name] = strategy
		}
		require.NoError(t, c.Create(ctx, newVM(name, deprecated, strategy)))
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: appNS})
	}
	createRunningGroup(t, ctx, c, refs)

	setDesired(t, ctx, c, srv1alpha1.StateStopped)
	eventually(t, "group stopped", groupState(ctx, c, srv1alpha1.StateStopped))
	for _, ref := range refs {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: ref.Name}, vm))
		require.False(t, vm.Spec.Running != nil && vm.Spec.RunStrategy != nil, "%s: both run fields set", ref.Name)
		if want, ok := strategies[ref.Name]; ok {
			require.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy, ref.Name)
			require.Equal(t, string(want), vm.Annotations[srv1alpha1.PreviousRunStrategyAnnotation], ref.Name)
		} else {
			require.False(t, *vm.Spec.Running, ref.Name)
		}
		require.Equal(t, kubevirtv1.VirtualMachineStatusStopped, vm.Status.PrintableStatus)
	}
	vmis := &kubevirtv1.VirtualMachineInstanceList{}
	require.NoError(t, c.List(ctx, vmis, client.InNamespace(appNS)))
	require.Empty(t, vmis.Items, "a stopped group leaves no VirtualMachineInstance")

	setDesired(t, ctx, c, srv1alpha1.StateRunning)
	eventually(t, "group running again", groupState(ctx, c, srv1alpha1.StateRunning))
	for _, ref := range refs {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: ref.Name}, vm))
		if want, ok := strategies[ref.Name]; ok {
			require.Equal(t, want, *vm.Spec.RunStrategy, "%s: start restores the strategy it had", ref.Name)
			require.NotContains(t, vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
			require.Nil(t, vm.Spec.Running)
		} else {
			require.True(t, *vm.Spec.Running, ref.Name)
			require.Nil(t, vm.Spec.RunStrategy)
		}
	}
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g))
	require.Len(t, g.Status.VirtualMachines, 20)
	for _, v := range g.Status.VirtualMachines {
		require.Equal(t, "Running", v.PrintableStatus)
		require.True(t, v.Ready)
		require.NotNil(t, v.Since)
	}
	require.True(t, meta.IsStatusConditionTrue(g.Status.Conditions, srv1alpha1.ConditionReady))
	require.True(t, meta.IsStatusConditionFalse(g.Status.Conditions, srv1alpha1.ConditionDegraded))
}

func TestVMDeletedMidTransitionAndVMAdded(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	var refs []srv1alpha1.VirtualMachineReference
	for i := range 4 {
		name := fmt.Sprintf("vm-%d", i)
		require.NoError(t, c.Create(ctx, newVM(name, i == 0, kubevirtv1.RunStrategyAlways)))
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: appNS})
	}
	createRunningGroup(t, ctx, c, refs)

	// A VM deleted while the group stops: the group is Degraded and says which VM,
	// and the others still stop.
	setDesired(t, ctx, c, srv1alpha1.StateStopped)
	require.NoError(t, c.Delete(ctx, &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm-2", Namespace: appNS}}))
	eventually(t, "group degraded", groupState(ctx, c, srv1alpha1.StateDegraded))
	eventually(t, "the other VMs stopped", func() error {
		for _, n := range []string{"vm-0", "vm-1", "vm-3"} {
			vm := &kubevirtv1.VirtualMachine{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: n}, vm); err != nil {
				return err
			}
			if vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusStopped {
				return fmt.Errorf("%s is %s", n, vm.Status.PrintableStatus)
			}
		}
		return nil
	})
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g))
	degraded := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionDegraded)
	require.NotNil(t, degraded)
	require.Equal(t, metav1.ConditionTrue, degraded.Status)
	require.Equal(t, srv1alpha1.ReasonVMNotFound, degraded.Reason)
	require.Contains(t, degraded.Message, "apps/vm-2")

	// Removing it from the group resolves the condition.
	setDesired(t, ctx, c, srv1alpha1.StateStopped, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.VirtualMachines = []srv1alpha1.VirtualMachineReference{refs[0], refs[1], refs[3]}
	})
	eventually(t, "group stopped", groupState(ctx, c, srv1alpha1.StateStopped))

	// A VM added to a running group is started.
	setDesired(t, ctx, c, srv1alpha1.StateRunning)
	eventually(t, "group running", groupState(ctx, c, srv1alpha1.StateRunning))
	require.NoError(t, c.Create(ctx, newVM("vm-new", false, kubevirtv1.RunStrategyHalted)))
	setDesired(t, ctx, c, srv1alpha1.StateRunning, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.VirtualMachines = append(g.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Name: "vm-new", Namespace: appNS})
	})
	eventually(t, "group with the new VM running", groupState(ctx, c, srv1alpha1.StateRunning))
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "vm-new"}, vm))
	require.Equal(t, kubevirtv1.RunStrategyAlways, *vm.Spec.RunStrategy)
}
