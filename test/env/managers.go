package env

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
	wsetup "github.com/siterecovery/siterecovery/internal/workload/setup"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

// Process is an in-process manager that a test can stop (a crash or a restart).
type Process struct {
	Quorum *setup.Quorum
	// Cache is the manager's cache. A benchmark reads through its informers
	// what the controllers see, when and as they see it, without a watch of
	// its own adding load to the machine it measures.
	Cache  cache.Cache
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	// companions stop with the process (the simulators of a workload cluster).
	companions []*Process
}

// Stop stops the manager and waits for it to return.
func (p *Process) Stop(t testing.TB) {
	p.once.Do(func() {
		p.cancel()
		require.NoError(t, <-p.done)
		for _, c := range p.companions {
			c.Stop(t)
		}
	})
}

// Together is one process of several (a cluster's node agents): stopping it
// stops them all; its Cache is the first's.
func Together(ps ...*Process) *Process {
	ps[0].companions = append(ps[0].companions, ps[1:]...)
	return ps[0]
}

// Manager runs a controller manager against a cluster of the zone until the
// test ends; register adds its controllers. name labels its log lines.
func (e *Env) Manager(t testing.TB, cluster, name string, opts ctrl.Options, register func(ctrl.Manager) error) *Process {
	t.Helper()
	return e.startManager(t, identity(e.Clusters[cluster].Config, name), name+"@"+cluster, opts, register)
}

// ManagerAs is Manager acting as a service account (namespace, name) of the
// cluster, whatever ChartRBACEnv says: for a component whose least-privilege
// roles a test proves.
func (e *Env) ManagerAs(t testing.TB, cluster, name string, serviceAccount [2]string, opts ctrl.Options, register func(ctrl.Manager) error) *Process {
	t.Helper()
	return e.startManager(t, impersonate(e.Clusters[cluster].Config, serviceAccount), name+"@"+cluster, opts, register)
}

func (e *Env) startManager(t testing.TB, cfg *rest.Config, logName string, opts ctrl.Options, register func(ctrl.Manager) error) *Process {
	t.Helper()
	opts.Logger = e.Logger(t, logName)
	opts.Scheme = e.Scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	if opts.Cache.DefaultTransform == nil {
		opts.Cache.DefaultTransform = boot.CacheOptions("").DefaultTransform // as the binaries run
	}
	if opts.Cache.NewInformer == nil {
		opts.Cache.NewInformer = boot.NewInformer
	}
	if opts.MapperProvider == nil {
		opts.MapperProvider = boot.NewRESTMapper
	}
	// Several managers (one per cluster and node) share this process.
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := ctrl.NewManager(cfg, opts)
	require.NoError(t, err)
	require.NoError(t, register(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{Cache: mgr.GetCache(), cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// WorkloadOptions tune the workload tier of one cluster.
type WorkloadOptions struct {
	// VMStartDelay and VMStopDelay are the KubeVirt simulator's delays.
	VMStartDelay, VMStopDelay time.Duration
	// Offloaded, when set, runs the VRG reconciler and a storage array simulator
	// too (offloaded.go).
	Offloaded *OffloadedStorage
	// VolSync, when set, runs the VolSync path and its simulators (volsync.go).
	VolSync *VolSyncStorage
}

// StartWorkload runs pg-controller and the KubeVirt simulator against a workload
// cluster, each in a manager of its own as in a real cluster: pg-controller's
// cache then holds what its own binary's would (wsetup.CacheByObject), and
// stopping the returned process stops both.
func (e *Env) StartWorkload(t testing.TB, cluster string, o WorkloadOptions) *Process {
	if o.VolSync != nil {
		return e.Manager(t, cluster, "pg-controller", ctrl.Options{}, func(mgr ctrl.Manager) error {
			return e.registerVolSync(cluster, mgr, o)
		})
	}
	if chartRBAC() {
		return e.startWorkloadAsChart(t, cluster, o)
	}
	sims := e.Manager(t, cluster, "simulators", ctrl.Options{}, func(mgr ctrl.Manager) error {
		if o.Offloaded != nil {
			// The array reports no conditions, as a LUN-level array with
			// schedulingInterval 0m does.
			if err := storagearray.SetupWithManager(mgr, storagearray.Options{Delay: o.Offloaded.ArrayDelay, Sync: o.Offloaded.Sync, Conditions: o.Offloaded.Sync != nil}); err != nil {
				return err
			}
		}
		return kubevirtsim.SetupWithManager(mgr, e.KubeVirtOptions(cluster, o.VMStartDelay, o.VMStopDelay))
	})
	p := e.Manager(t, cluster, "pg-controller", ctrl.Options{Cache: cache.Options{ByObject: wsetup.CacheByObject()}},
		func(mgr ctrl.Manager) error {
			if o.Offloaded != nil {
				return e.registerOffloaded(cluster, mgr, o)
			}
			return protectiongroup.SetupWithManager(mgr)
		})
	p.companions = append(p.companions, sims)
	return p
}

// StartQuorum runs quorum-manager, scoped to the DR namespace, against the
// quorum cluster.
func (e *Env) StartQuorum(t testing.TB, q setup.QuorumOptions) *Process {
	var quorum *setup.Quorum
	p := e.startManager(t, identity(e.quorumConfig(), "quorum-manager"), "quorum-manager@"+Quorum, ctrl.Options{Cache: boot.CacheOptions(Namespace)},
		func(mgr ctrl.Manager) error {
			var err error
			quorum, err = setup.AddToManager(mgr, q)
			return err
		})
	p.Quorum = quorum
	return p
}
