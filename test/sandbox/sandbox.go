package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/installed"
	"github.com/siterecovery/siterecovery/test/oidcissuer"
	"github.com/siterecovery/siterecovery/test/process"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
	"github.com/siterecovery/siterecovery/test/sim/virtapi"
)

// Names of the sandbox zone.
const (
	zoneName    = "demo"
	drNamespace = "dr-demo"
	// zoneWebhookNamespace is where the protectionzone chart would run its
	// cluster-wide ProtectionZone webhook.
	zoneWebhookNamespace = "siterecovery-system"
	appNS                = "demo-apps"
	groupName            = "demo-group"
	primary              = "primary"
	dr                   = "dr"
)

// node is a worker node of a workload cluster: kwok plays it, and a
// drbd-node-agent runs for it against the DRBD simulator.
type node struct{ name, address, zone string }

// nodes are each workload cluster's three workers, in two zones: the
// scheduler places the replicas and the VMs among them.
var nodes = map[string][]node{
	primary: {{"primary-worker-1", "10.0.0.1", "primary-zone-a"}, {"primary-worker-2", "10.0.0.2", "primary-zone-a"}, {"primary-worker-3", "10.0.0.3", "primary-zone-b"}},
	dr:      {{"dr-worker-1", "10.0.1.1", "dr-zone-a"}, {"dr-worker-2", "10.0.1.2", "dr-zone-a"}, {"dr-worker-3", "10.0.1.3", "dr-zone-b"}},
}

// nodeSpecs are the nodes kwok plays in a cluster of the sandbox.
func nodeSpecs(cluster string) []harness.NodeSpec {
	ns := nodes[cluster]
	if ns == nil { // the quorum cluster runs no workload
		return []harness.NodeSpec{{Name: cluster + "-worker-1", Zone: cluster + "-zone-a", CPU: "8", Memory: "32Gi"}}
	}
	out := make([]harness.NodeSpec, 0, len(ns))
	for _, n := range ns {
		out = append(out, harness.NodeSpec{Name: n.name, Zone: n.zone, CPU: "16", Memory: "64Gi", Address: n.address})
	}
	return out
}

type sandbox struct {
	o      options
	zone   *harness.Zone
	procs  []*process.Process
	cancel context.CancelFunc
	fabric *drbdsim.Fabric
	state  string
	// devices holds the block volumes' contents (storagesim.Options.DeviceDir),
	// under /dev/shm; removed at shutdown.
	devices string
	vs      *volsyncSims   // nil without -volsync
	of      *offloadedSims // nil without -offloaded
	// issuer and oidcSecret are the test OIDC issuer (nil without -oidc)
	// and the console's client secret there.
	issuer     *oidcissuer.Issuer
	oidcSecret string
	// links stand between quorum-manager and each workload cluster's API
	// server: a partition cuts one while the site's own controllers, which
	// reach their API server directly, run on.
	links map[string]*env.LatencyProxy
	// guests plays the demo VMs' operating systems; controlURL is the base
	// URL of the control API (empty until it runs).
	guests     *sandboxGuests
	controlURL string
	// metrics is each DR namespace's quorum-manager metrics address, with
	// -prometheus (metricsAddresses).
	metrics map[string]string
	// proxies front the API servers for helm, kubectl and bootstrap-zone.sh,
	// whose shell runs the install; host runs the charts' pods.
	proxies map[string]*installed.VersionProxy
	shell   *installed.Shell
	host    *installed.Host
	// stops stop the simulators that are no controllers (virt-api).
	stops []func()
}

// newSandbox starts the clusters and installs the product as docs/install.md
// says (install.go): the charts with helm, the zones connected with
// scripts/bootstrap-zone.sh, and the charts' pods run as processes with
// their own ServiceAccounts' tokens. Only the simulators, which stand in for
// other vendors' software, keep admin rights.
func newSandbox(ctx context.Context, o options) (*sandbox, error) {
	sb := &sandbox{o: o, state: filepath.Join(o.workDir, "drbd-state")}
	// Each cluster is a whole control plane: kube-controller-manager,
	// kube-scheduler and kwok's nodes, with a kubeadm cluster's admission
	// plugins, so the product meets what a real cluster does to it. Only
	// other vendors' CRDs are there before the install; helm installs the
	// product's.
	ho := harness.Options{CRDDirectoryPaths: []string{filepath.Join(harness.RepoRoot(), "test", "crds", "thirdparty")},
		Scheme: scheme.New(), ControlPlane: true, Nodes: nodeSpecs}
	if err := sb.startIssuer(&ho); err != nil {
		return nil, err
	}
	z, err := harness.StartE(ctx, ho, "quorum", primary, dr)
	if err != nil {
		sb.stopIssuer()
		return nil, err
	}
	sb.zone = z
	for name, c := range z.Clusters {
		if err := os.WriteFile(sb.kubeconfig(name), c.Kubeconfig, 0o600); err != nil {
			return sb, err
		}
	}
	if err := sb.startVersionProxies(); err != nil {
		return sb, fmt.Errorf("preparing the install: %w", err)
	}
	sb.links = map[string]*env.LatencyProxy{}
	for _, name := range []string{primary, dr} {
		if sb.links[name], err = env.NewLatencyProxy(sb.proxies[name].Address()); err != nil {
			return sb, fmt.Errorf("starting the link from quorum-manager to %s: %w", name, err)
		}
	}
	if err := os.MkdirAll(sb.state, 0o755); err != nil {
		return sb, err
	}
	sb.fabric = &drbdsim.Fabric{StateDir: sb.state}
	if sb.devices, err = os.MkdirTemp("/dev/shm", "siterecovery-sandbox-"); err != nil {
		return sb, fmt.Errorf("creating the volume folder under /dev/shm: %w", err)
	}
	// 1 GiB volumes sync in about two seconds, slow enough to watch.
	if err := sb.fabric.SetSyncRate(512 << 10); err != nil {
		return sb, err
	}
	// The guests' protocol A writes reach the peer at 1 MiB/s: a planned
	// failover waits for them, an unplanned one may lose those in flight.
	if err := sb.fabric.SetDrainRate(1 << 10); err != nil {
		return sb, err
	}
	sb.guests = sb.newGuests()
	zones := []drNamespaceSpec{demoZone()}
	if o.volsync {
		sb.vs = newVolsyncSims()
		zones = append(zones, volsyncZone())
	}
	if o.offloaded {
		sb.of = &offloadedSims{link: &storagearray.Sync{Interval: ofCycle}}
		zones = append(zones, offloadedZone())
	}
	say("installing the charts (docs/install.md steps 2-4)")
	if err := sb.installCharts(); err != nil {
		return sb, err
	}
	// The simulators watch the product's kinds too, which the charts serve now.
	simCtx, cancel := context.WithCancel(context.Background())
	sb.cancel = cancel
	if err := sb.startSimulators(simCtx); err != nil {
		return sb, err
	}
	for _, z := range zones {
		if err := sb.seedWorkload(ctx, z); err != nil {
			return sb, err
		}
	}
	if err := sb.metricsAddresses(); err != nil {
		return sb, err
	}
	sb.host = &installed.Host{Dir: sb.logDir(), Bin: func() (string, error) { return o.binDir, nil }, TokenTTL: tokenTTL}
	say("connecting the zones with scripts/bootstrap-zone.sh (step 5); starting the charts' pods with their own tokens")
	if err := sb.startInstalled(ctx, zones); err != nil {
		return sb, err
	}
	if err := sb.seedVMs(ctx); err != nil {
		return sb, err
	}
	err = sb.waitWebhooks(ctx)
	return sb, err
}

func (sb *sandbox) kubeconfig(cluster string) string {
	return filepath.Join(sb.o.workDir, cluster+".kubeconfig")
}

func (sb *sandbox) kubeletDir(n node) string {
	return filepath.Join(sb.o.workDir, "nodes", n.name, "kubelet")
}

// startSimulators runs, in this process, what stands in for KubeVirt and for the
// storage provisioner and kubelet on each workload cluster
// (simulatorConfig's identity).
func (sb *sandbox) startSimulators(ctx context.Context) error {
	for _, cluster := range []string{primary, dr} {
		cfg, err := sb.simulatorConfig(ctx, cluster)
		if err != nil {
			return fmt.Errorf("the simulators' identity on %s: %w", cluster, err)
		}
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:     scheme.New(),
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		if err != nil {
			return err
		}
		// VMIs run in launcher pods the scheduler places and kwok runs.
		if err := kubevirtsim.SetupWithManager(mgr, kubevirtsim.Options{StartDelay: time.Second, StopDelay: time.Second, LauncherPods: true}); err != nil {
			return err
		}
		kubelets := map[string]string{}
		for _, n := range nodes[cluster] {
			kubelets[n.name] = sb.kubeletDir(n)
		}
		// Claims restored from snapshots are the snapshot simulators' to
		// bind, after their data.
		if err := storagesim.SetupWithManager(mgr, storagesim.Options{KubeletDirs: kubelets, SkipRestores: true, DeviceDir: sb.devices}); err != nil {
			return err
		}
		// Snapshots: the real snapshot-controller, and the CSI driver's part
		// for the storage simulator's volumes, whose class a test failover
		// of the DRBD zone picks by the disks' driver.
		if err := sb.zone.Clusters[cluster].StartSnapshotController(ctx); err != nil {
			return fmt.Errorf("starting the snapshot-controller of %s: %w", cluster, err)
		}
		if err := snapshotsim.SetupWithManager(mgr, snapshotsim.Options{ReadyDelay: 200 * time.Millisecond, Driver: storagesim.Driver}); err != nil {
			return err
		}
		// KubeVirt's freeze subresource (virt-api), which application
		// consistency calls, freezing the simulated guests.
		_, stop, err := virtapi.StartE(ctx, sb.zone.Clusters[cluster], sb.guests.guests)
		if err != nil {
			return fmt.Errorf("starting the virt-api simulator of %s: %w", cluster, err)
		}
		sb.stops = append(sb.stops, stop)
		if sb.vs != nil {
			if err := sb.setupVolSyncSims(mgr, cluster); err != nil {
				return err
			}
		}
		if sb.of != nil {
			if err := sb.setupOffloadedSims(mgr); err != nil {
				return err
			}
		}
		go func() { _ = mgr.Start(ctx) }()
	}
	return nil
}

// logDir holds the product's processes' logs.
func (sb *sandbox) logDir() string { return filepath.Join(sb.o.workDir, "logs") }

// siteProcesses are the product's processes that run on a workload
// cluster's site: its pg-controller and its nodes' agents.
func (sb *sandbox) siteProcesses(cluster string) []*process.Process {
	names := map[string]bool{"pg-controller-" + cluster: true}
	for _, n := range nodes[cluster] {
		names["drbd-node-agent-"+n.name] = true
	}
	var out []*process.Process
	for _, p := range sb.procs {
		if names[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

func (sb *sandbox) shutdown() {
	for i := len(sb.procs) - 1; i >= 0; i-- {
		sb.procs[i].Stop()
	}
	if sb.cancel != nil {
		sb.cancel()
	}
	for _, stop := range sb.stops {
		stop()
	}
	if sb.zone != nil {
		if err := sb.zone.Stop(); err != nil {
			say("stopping the clusters: %v", err)
		}
	}
	if sb.devices != "" {
		_ = os.RemoveAll(sb.devices)
	}
	for _, l := range sb.links {
		l.Close()
	}
	for _, p := range sb.proxies {
		p.Close()
	}
	sb.stopIssuer()
}
