package pgsync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	groupName = "production-pg"
	wait      = 30 * time.Second
)

var groupKey = client.ObjectKey{Namespace: env.Namespace, Name: groupName}

func vmKey(name string) client.ObjectKey { return client.ObjectKey{Namespace: env.AppNS, Name: name} }

// newVM returns a running VM whose root disk is a DataVolume (with its
// dataVolumeTemplate) or a plain PVC.
func newVM(name string, dataVolume bool) *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name, Labels: map[string]string{"app": name}}}
	vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	root := kubevirtv1.Volume{Name: "root"}
	if dataVolume {
		root.DataVolume = &kubevirtv1.DataVolumeSource{Name: name + "-root"}
		vm.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: name + "-root"}}}
	} else {
		root.PersistentVolumeClaim = &kubevirtv1.PersistentVolumeClaimVolumeSource{}
		root.PersistentVolumeClaim.ClaimName = name + "-root"
	}
	data := kubevirtv1.Volume{Name: "data"}
	data.PersistentVolumeClaim = &kubevirtv1.PersistentVolumeClaimVolumeSource{}
	data.PersistentVolumeClaim.ClaimName = name + "-data"
	vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{Resources: kubevirtv1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
			Volumes: []kubevirtv1.Volume{root, data},
		},
	}
	return vm
}

func refs(names ...string) []srv1alpha1.VirtualMachineReference {
	out := make([]srv1alpha1.VirtualMachineReference, 0, len(names))
	for _, n := range names {
		out = append(out, srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: n})
	}
	return out
}

func patch[T client.Object](t *testing.T, c client.Client, key client.ObjectKey, obj T, mutate func(T)) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Get(ctx, key, obj))
	before := obj.DeepCopyObject().(T)
	mutate(obj)
	require.NoError(t, c.Patch(ctx, obj, client.MergeFrom(before)))
}

// synced checks the quorum copy's Synced condition and per-cluster inSync flags.
func synced(c client.Client, want metav1.ConditionStatus, reason string, inSync map[string]bool) func() error {
	return func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := c.Get(context.Background(), groupKey, g); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionSynced)
		if cond == nil || cond.Status != want || (reason != "" && cond.Reason != reason) || cond.ObservedGeneration != g.Generation {
			return fmt.Errorf("Synced %+v, want %s/%s", cond, want, reason)
		}
		for cluster, wantSync := range inSync {
			st := clusterState(g, cluster)
			if st == nil || st.InSync != wantSync || st.LastSyncTime == nil {
				return fmt.Errorf("cluster %s state %+v, want inSync=%v", cluster, st, wantSync)
			}
		}
		return nil
	}
}

func clusterState(g *srv1alpha1.ProtectionGroup, cluster string) *srv1alpha1.ClusterGroupState {
	for i := range g.Status.Clusters {
		if g.Status.Clusters[i].Cluster == cluster {
			return &g.Status.Clusters[i]
		}
	}
	return nil
}

var allInSync = map[string]bool{env.Primary: true, env.DR: true}

// copyIs checks a workload copy's VMs, desiredState and labels.
func copyIs(c client.Client, desired srv1alpha1.GroupState, vms ...string) func() error {
	return func() error {
		cp := &srv1alpha1.ProtectionGroup{}
		if err := c.Get(context.Background(), groupKey, cp); err != nil {
			return err
		}
		if cp.Spec.DesiredState != desired {
			return fmt.Errorf("desiredState %q, want %q", cp.Spec.DesiredState, desired)
		}
		if cp.Labels[srv1alpha1.ZoneLabel] != env.ZoneName || cp.Labels[srv1alpha1.ProtectionGroupLabel] != groupName {
			return fmt.Errorf("labels %v", cp.Labels)
		}
		if fmt.Sprint(cp.Spec.VirtualMachines) != fmt.Sprint(refs(vms...)) {
			return fmt.Errorf("virtualMachines %v, want %v", cp.Spec.VirtualMachines, vms)
		}
		return nil
	}
}

// standbyIs checks a standby VM on the DR cluster: PVC volumes only, no
// dataVolumeTemplates, pg-sync labels and the given memory request.
func standbyIs(c client.Client, name, memory string) func() error {
	return func() error {
		vm := &kubevirtv1.VirtualMachine{}
		if err := c.Get(context.Background(), vmKey(name), vm); err != nil {
			return err
		}
		if len(vm.Spec.DataVolumeTemplates) != 0 {
			return fmt.Errorf("dataVolumeTemplates %v", vm.Spec.DataVolumeTemplates)
		}
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim == nil || v.DataVolume != nil {
				return fmt.Errorf("volume %s is not a PVC volume: %+v", v.Name, v.VolumeSource)
			}
		}
		if claim := vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName; claim != name+"-root" {
			return fmt.Errorf("root claim %q", claim)
		}
		if vm.Labels[srv1alpha1.ProtectionGroupLabel] != groupName || vm.Labels[srv1alpha1.ZoneLabel] != env.ZoneName {
			return fmt.Errorf("labels %v", vm.Labels)
		}
		if got := vm.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory]; got.String() != memory {
			return fmt.Errorf("memory %s, want %s", got.String(), memory)
		}
		return nil
	}
}

func setMemory(t *testing.T, c client.Client, name, memory string) {
	patch(t, c, vmKey(name), &kubevirtv1.VirtualMachine{}, func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse(memory)
	})
}

// setRPO changes the quorum copy and waits until both copies show it: proof
// that pg-sync ran a full pass after everything the test did before.
func setRPO(t *testing.T, e *env.Env, rpo int32) {
	t.Helper()
	patch(t, e.Client(env.Quorum), groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.Replication.RPOObjectiveSeconds = rpo
	})
	for _, cluster := range []string{env.Primary, env.DR} {
		env.Eventually(t, wait, cluster+" copy rpo", func() error {
			cp := &srv1alpha1.ProtectionGroup{}
			if err := e.Client(cluster).Get(context.Background(), groupKey, cp); err != nil {
				return err
			}
			if cp.Spec.Replication.RPOObjectiveSeconds != rpo {
				return fmt.Errorf("rpo %d", cp.Spec.Replication.RPOObjectiveSeconds)
			}
			return nil
		})
	}
}

func TestPGSync(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(t.Output())))
	e := env.New(t, env.Options{})
	quorum := e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond})
	e.StartWorkload(t, env.Primary, env.WorkloadOptions{})
	drWorkload := e.StartWorkload(t, env.DR, env.WorkloadOptions{})
	ctx := context.Background()
	q, primary, dr := e.Client(env.Quorum), e.Client(env.Primary), e.Client(env.DR)

	// A group of two VMs on the primary: one on a DataVolume, one on PVCs.
	require.NoError(t, primary.Create(ctx, newVM("db", true)))
	require.NoError(t, primary.Create(ctx, newVM("web", false)))
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: groupName},
		Spec: srv1alpha1.ProtectionGroupSpec{
			ZoneRef:         &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			ActiveCluster:   env.Primary,
			VirtualMachines: refs("db", "web"),
			Replication:     srv1alpha1.ReplicationSettings{Protocol: srv1alpha1.ProtocolC, RPOObjectiveSeconds: 60},
		},
	}))
	env.Eventually(t, wait, "primary copy", copyIs(primary, srv1alpha1.StateRunning, "db", "web"))
	env.Eventually(t, wait, "dr copy", copyIs(dr, srv1alpha1.StateStopped, "db", "web"))
	for _, name := range []string{"db", "web"} {
		env.Eventually(t, wait, "standby "+name, standbyIs(dr, name, "1Gi"))
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, dr.Get(ctx, vmKey(name), vm))
		require.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy)
		require.Nil(t, vm.Spec.Running)
	}
	env.Eventually(t, wait, "synced", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	env.Eventually(t, wait, "primary running, with each VM's state on each site", func() error {
		g := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, q.Get(ctx, groupKey, g))
		if st := clusterState(g, env.Primary); st.CurrentState != srv1alpha1.StateRunning {
			return fmt.Errorf("primary currentState %q", st.CurrentState)
		}
		// The quorum copy carries what each workload copy reports per VM, so
		// that the CLI and the console show it without a workload kubeconfig.
		for cluster, want := range map[string]string{env.Primary: "Running", env.DR: "Stopped"} {
			st := clusterState(g, cluster)
			if len(st.VirtualMachines) != 2 {
				return fmt.Errorf("%s: VMs %+v", cluster, st.VirtualMachines)
			}
			for _, vm := range st.VirtualMachines {
				if vm.PrintableStatus != want {
					return fmt.Errorf("%s: %s/%s is %q, want %s", cluster, vm.Namespace, vm.Name, vm.PrintableStatus, want)
				}
			}
		}
		return nil
	})
	// Nothing on the active cluster was changed.
	db := &kubevirtv1.VirtualMachine{}
	require.NoError(t, primary.Get(ctx, vmKey("db"), db))
	require.Len(t, db.Spec.DataVolumeTemplates, 1)
	require.Empty(t, db.Labels[srv1alpha1.ProtectionGroupLabel])

	// Adding a VM adds it to both copies and builds its standby.
	require.NoError(t, primary.Create(ctx, newVM("cache", true)))
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.VirtualMachines = refs("db", "web", "cache") })
	env.Eventually(t, wait, "primary copy has cache", copyIs(primary, srv1alpha1.StateRunning, "db", "web", "cache"))
	env.Eventually(t, wait, "dr copy has cache", copyIs(dr, srv1alpha1.StateStopped, "db", "web", "cache"))
	env.Eventually(t, wait, "standby cache", standbyIs(dr, "cache", "1Gi"))

	// A template change on the primary reaches the standby; the standby's run
	// fields and annotations, which the DR cluster's pg-controller owns, stay.
	patch(t, dr, vmKey("web"), &kubevirtv1.VirtualMachine{}, func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.RunStrategy = nil
		vm.Spec.Running = ptr.To(false)
		vm.Annotations = map[string]string{srv1alpha1.PreviousRunStrategyAnnotation: "RerunOnFailure", "example.com/keep": "yes"}
	})
	setMemory(t, primary, "web", "2Gi")
	env.Eventually(t, wait, "standby web memory", standbyIs(dr, "web", "2Gi"))
	web := &kubevirtv1.VirtualMachine{}
	require.NoError(t, dr.Get(ctx, vmKey("web"), web))
	require.Nil(t, web.Spec.RunStrategy)
	require.Equal(t, ptr.To(false), web.Spec.Running)
	require.Equal(t, "RerunOnFailure", web.Annotations[srv1alpha1.PreviousRunStrategyAnnotation])
	require.Equal(t, "yes", web.Annotations["example.com/keep"])
	env.Eventually(t, wait, "synced after template change", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))

	// A boot plan follows the quorum copy, and its removal too (boot_integration_test.go).
	checkBootPlanSync(t, e)
	checkConsistencySync(t, e)
	// The network mapping reaches the standby (network_integration_test.go).
	checkNetworkMapping(t, e)

	// A desiredState the failover-controller set is not reverted.
	patch(t, primary, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateStopped })
	setRPO(t, e, 120)
	require.NoError(t, copyIs(primary, srv1alpha1.StateStopped, "db", "web", "cache")())
	patch(t, primary, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateRunning })

	// A standby that runs on the DR cluster while the primary is active is
	// reported and left alone.
	patch(t, dr, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateRunning })
	env.Eventually(t, wait, "running standby reported", func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := q.Get(ctx, groupKey, g); err != nil {
			return err
		}
		if st := clusterState(g, env.DR); st == nil || st.InSync || !strings.Contains(st.Message, "apps/db is Running on non-active cluster") {
			return fmt.Errorf("dr state %+v", st)
		}
		return synced(q, metav1.ConditionFalse, srv1alpha1.ReasonDrift, map[string]bool{env.Primary: true, env.DR: false})()
	})
	require.NoError(t, dr.Get(ctx, vmKey("db"), db))
	setMemory(t, primary, "db", "3Gi")
	setRPO(t, e, 180)
	require.NoError(t, standbyIs(dr, "db", "1Gi")(), "a running standby must not be changed")
	after := &kubevirtv1.VirtualMachine{}
	require.NoError(t, dr.Get(ctx, vmKey("db"), after))
	require.Equal(t, db.Generation, after.Generation)
	// Once the DR side is stopped again the standby catches up.
	patch(t, dr, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateStopped })
	env.Eventually(t, wait, "standby db caught up", standbyIs(dr, "db", "3Gi"))
	env.Eventually(t, wait, "synced after DR stopped", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))

	// The DR API server goes down: reported as unreachable, the primary stays
	// synced; when it returns the group is synced again without a trigger.
	// The DR cluster's own controllers are stopped first: the harness's
	// kube-apiserver does not stop within its deadline while their watches drain.
	drWorkload.Stop(t)
	require.NoError(t, e.Clusters[env.DR].StopAPIServer())
	env.Eventually(t, wait, "dr unreachable", func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := q.Get(ctx, groupKey, g); err != nil {
			return err
		}
		if st := clusterState(g, env.DR); st == nil || !strings.Contains(st.Message, "unreachable") {
			return fmt.Errorf("dr state %+v", st)
		}
		return synced(q, metav1.ConditionFalse, srv1alpha1.ReasonAPIServerDown, map[string]bool{env.Primary: true, env.DR: false})()
	})
	require.NoError(t, e.Clusters[env.DR].StartAPIServer())
	e.StartWorkload(t, env.DR, env.WorkloadOptions{})
	env.Eventually(t, wait, "synced after DR returned", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))

	// quorum-manager restarts: nothing is duplicated or rewritten.
	generations := map[string]int64{}
	for _, cluster := range []string{env.Primary, env.DR} {
		cp := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, e.Client(cluster).Get(ctx, groupKey, cp))
		generations[cluster] = cp.Generation
	}
	quorum.Stop(t)
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond})
	setRPO(t, e, 240)
	env.Eventually(t, wait, "synced after restart", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	for _, cluster := range []string{env.Primary, env.DR} {
		groups := &srv1alpha1.ProtectionGroupList{}
		require.NoError(t, e.Client(cluster).List(ctx, groups))
		require.Len(t, groups.Items, 1, cluster)
		require.Equal(t, generations[cluster]+1, groups.Items[0].Generation, "%s: only the rpo change was written", cluster)
		vms := &kubevirtv1.VirtualMachineList{}
		require.NoError(t, e.Client(cluster).List(ctx, vms))
		require.Len(t, vms.Items, 3, cluster)
	}
	require.NoError(t, copyIs(primary, srv1alpha1.StateRunning, "db", "web", "cache")())
	require.NoError(t, copyIs(dr, srv1alpha1.StateStopped, "db", "web", "cache")())

	// The DR namespace label removed by hand from the source VM and from its
	// standby: quorum-manager's caches, which watch only what carries the
	// label, see both leave. pg-sync reads them directly, puts the label back
	// and says so in an event, and a change of the source reaches the standby
	// again.
	for _, c := range []client.Client{primary, dr} {
		patch(t, c, vmKey("web"), &kubevirtv1.VirtualMachine{}, func(vm *kubevirtv1.VirtualMachine) {
			delete(vm.Labels, srv1alpha1.DRNamespaceLabel)
		})
	}
	for name, c := range map[string]client.Client{env.Primary: primary, env.DR: dr} {
		env.Eventually(t, wait, name+" web labelled again", func() error {
			vm := &kubevirtv1.VirtualMachine{}
			if err := c.Get(ctx, vmKey("web"), vm); err != nil {
				return err
			}
			if vm.Labels[srv1alpha1.DRNamespaceLabel] != env.Namespace {
				return fmt.Errorf("labels %v", vm.Labels)
			}
			return nil
		})
	}
	env.Eventually(t, wait, "relabelling reported", func() error {
		events := &corev1.EventList{}
		if err := q.List(ctx, events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, ev := range events.Items {
			if ev.Reason == "Relabelled" && ev.InvolvedObject.Name == groupName && strings.Contains(ev.Message, "apps/web") {
				for _, cluster := range []string{env.Primary, env.DR} {
					if strings.Contains(ev.Message, "cluster "+cluster+" ") {
						seen[cluster] = true
					}
				}
			}
		}
		if !seen[env.Primary] || !seen[env.DR] {
			return fmt.Errorf("Relabelled events seen for %v", seen)
		}
		return nil
	})
	setMemory(t, primary, "web", "4Gi")
	env.Eventually(t, wait, "standby web follows its source again", standbyIs(dr, "web", "4Gi"))
}
