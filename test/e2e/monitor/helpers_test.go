package monitor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/monitor"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/zone"
	"github.com/siterecovery/siterecovery/test/env"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

const (
	group     = "production-pg"
	objective = 30
	timeout   = 90 * time.Second
)

// mzone is a group of VMs whose DRBDResources replicate from the primary to the
// DR cluster through the simulator, watched by a replication-monitor that runs on
// an injected clock.
type mzone struct {
	*env.Env
	t      *testing.T
	ctx    context.Context
	fabric *drbdsim.Fabric
	clock  *clocktesting.FakeClock
	vms    []string
	stop   func()
	pokes  int
}

func newMonitorZone(t *testing.T, vms int) *mzone {
	z := &mzone{Env: env.New(t, env.Options{}), t: t, ctx: context.Background(),
		clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second))}
	z.StartAgent(t, env.Primary)
	z.StartAgent(t, env.DR)
	z.fabric = z.DRBD(t)
	require.NoError(t, z.fabric.SetSyncRate(1<<30))
	var refs []srv1alpha1.VirtualMachineReference
	for i := range vms {
		name := fmt.Sprintf("vm-%02d", i)
		z.vms = append(z.vms, name)
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS})
		z.CreateReplica(t, env.Primary, env.DRBDReplica(group, name, env.Primary, env.DR, 0, int32(7000+i)))
		z.CreateReplica(t, env.DR, env.DRBDReplica(group, name, env.DR, env.Primary, 1, int32(7000+i)))
	}
	for _, name := range z.vms {
		z.waitDRBD(name, "connected", func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
		require.NoError(t, z.fabric.MarkUpToDate(srv1alpha1.DRBDResourceName(name), env.Nodes[env.Primary].Name))
		r := z.drbd(env.Primary, name)
		before := r.DeepCopy()
		r.Spec.Role = srv1alpha1.RolePrimary
		require.NoError(t, z.Client(env.Primary).Patch(z.ctx, r, client.MergeFrom(before)))
	}
	for _, name := range z.vms {
		z.waitDRBD(name, "Primary and in sync", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && len(r.Status.Peers[0].Volumes) == 1 &&
				r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
	}
	require.NoError(t, z.Client(env.Quorum).Create(z.ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
			ZoneRef:     &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: objective}},
	}))
	z.startMonitor()
	return z
}

// startMonitor runs quorum-manager's zone controller (which connects the
// clusters) and the replication-monitor on the fake clock.
func (z *mzone) startMonitor() {
	mgr, err := ctrl.NewManager(z.Clusters[env.Quorum].Config, ctrl.Options{
		Scheme: z.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{env.Namespace: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(z.t, err)
	rm := remote.NewManager(mgr.GetScheme(), ctrl.Log.WithName("remote"), remote.Options{})
	require.NoError(z.t, mgr.Add(&remote.Prober{Manager: rm, Interval: time.Second}))
	require.NoError(z.t, zone.SetupWithManager(mgr, rm))
	require.NoError(z.t, monitor.SetupWithOptions(mgr, rm, monitor.Options{Clock: z.clock}))
	ctx, cancel := context.WithCancel(z.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	z.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(z.t, <-done)
		}
	}
	z.t.Cleanup(z.stop)
}

func (z *mzone) drbd(cluster, vmName string) *srv1alpha1.DRBDResource {
	z.t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.t, z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vmName)}, r))
	return r
}

func (z *mzone) waitDRBD(vmName, what string, ok func(*srv1alpha1.DRBDResource) bool) {
	z.t.Helper()
	env.Eventually(z.t, timeout, vmName+" "+what, func() error {
		if r := z.drbd(env.Primary, vmName); !ok(r) {
			return fmt.Errorf("status %+v", r.Status)
		}
		return nil
	})
}

func (z *mzone) rgs() *srv1alpha1.ReplicationGroupStatus {
	z.t.Helper()
	r := &srv1alpha1.ReplicationGroupStatus{}
	require.NoError(z.t, client.IgnoreNotFound(z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, r)))
	return r
}

// waitStatus waits until the ReplicationGroupStatus satisfies ok.
func (z *mzone) waitStatus(what string, ok func(*srv1alpha1.ReplicationGroupStatus) error) *srv1alpha1.ReplicationGroupStatus {
	z.t.Helper()
	var r *srv1alpha1.ReplicationGroupStatus
	env.Eventually(z.t, timeout, what, func() error {
		r = z.rgs()
		return ok(r)
	})
	return r
}

func (z *mzone) events() []srv1alpha1.RPOEvent {
	z.t.Helper()
	list := &srv1alpha1.RPOEventList{}
	require.NoError(z.t, z.Client(env.Quorum).List(z.ctx, list, client.InNamespace(env.Namespace)))
	return list.Items
}

// poke touches an unrelated annotation of a remote DRBDResource, which wakes the
// monitor through its remote watch, and waits until the monitor reconciled since.
func (z *mzone) poke() {
	z.t.Helper()
	before := reconciles(z.t)
	z.pokes++
	r := z.drbd(env.Primary, z.vms[len(z.vms)-1])
	patch := client.MergeFrom(r.DeepCopy())
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations["test.siterecovery.trilio.io/poke"] = fmt.Sprint(z.pokes)
	require.NoError(z.t, z.Client(env.Primary).Patch(z.ctx, r, patch))
	env.Eventually(z.t, timeout, "a reconcile after the poke", func() error {
		if n := reconciles(z.t); n <= before {
			return fmt.Errorf("%v reconciles", n)
		}
		return nil
	})
}

// reconciles is the monitor's reconcile count from controller-runtime's metrics.
func reconciles(t *testing.T) float64 {
	fams, err := metrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range fams {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == monitor.ControllerName {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func volume0(r *srv1alpha1.ReplicationGroupStatus, vm string) *srv1alpha1.VolumeReplicationState {
	for i := range r.Status.VirtualMachines {
		if v := &r.Status.VirtualMachines[i]; v.Name == vm && len(v.Volumes) > 0 {
			return &v.Volumes[0]
		}
	}
	return nil
}
