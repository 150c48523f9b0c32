package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/oidcissuer"
	"github.com/siterecovery/siterecovery/test/process"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
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
	// -prometheus (metricsArgs).
	metrics map[string]string
}

func newSandbox(ctx context.Context, o options) (*sandbox, error) {
	sb := &sandbox{o: o, state: filepath.Join(o.workDir, "drbd-state")}
	// Each cluster is a whole control plane: kube-controller-manager,
	// kube-scheduler and kwok's nodes, with a kubeadm cluster's admission
	// plugins, so the product meets what a real cluster does to it.
	ho := harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New(), ControlPlane: true, Nodes: nodeSpecs}
	if err := sb.startIssuer(&ho); err != nil {
		return nil, err
	}
	z, err := harness.StartE(ctx, ho, "quorum", primary, dr)
	if err != nil {
		sb.stopIssuer()
		if sb.devices != "" {
			_ = os.RemoveAll(sb.devices)
		}
		return nil, err
	}
	sb.zone = z
	sb.links = map[string]*env.LatencyProxy{}
	for _, name := range []string{primary, dr} {
		u, err := url.Parse(z.Clusters[name].Config.Host)
		if err != nil {
			return sb, err
		}
		if sb.links[name], err = env.NewLatencyProxy(u.Host); err != nil {
			return sb, fmt.Errorf("starting the link from quorum-manager to %s: %w", name, err)
		}
	}
	for name, c := range z.Clusters {
		if err := os.WriteFile(sb.kubeconfig(name), c.Kubeconfig, 0o600); err != nil {
			return sb, err
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
	if err := sb.seed(ctx); err != nil {
		return sb, err
	}
	var vsWebhookArgs []string
	if o.volsync {
		sb.vs = newVolsyncSims()
		if err := sb.seedVolSync(ctx); err != nil {
			return sb, err
		}
		if vsWebhookArgs, err = sb.installWebhooks(ctx, "quorum-control-plane", vsNamespace); err != nil {
			return sb, fmt.Errorf("registering the admission webhooks of %s: %w", vsNamespace, err)
		}
	}
	if o.offloaded {
		if err := sb.startOffloadedZone(ctx); err != nil {
			return sb, err
		}
	}
	simCtx, cancel := context.WithCancel(context.Background())
	sb.cancel = cancel
	if err := sb.startSimulators(simCtx); err != nil {
		return sb, err
	}
	webhookArgs, err := sb.installWebhooks(ctx, "quorum-control-plane", drNamespace)
	if err != nil {
		return sb, fmt.Errorf("registering the admission webhooks: %w", err)
	}
	zoneWebhookArgs, err := sb.installWebhooks(ctx, "protectionzone", zoneWebhookNamespace)
	if err != nil {
		return sb, fmt.Errorf("registering the ProtectionZone webhook: %w", err)
	}
	if err := sb.installConfirmationPolicy(ctx); err != nil {
		return sb, fmt.Errorf("creating the confirmation policy: %w", err)
	}
	if err := sb.startProcesses(webhookArgs, zoneWebhookArgs, vsWebhookArgs); err != nil {
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
// storage provisioner and kubelet on each workload cluster.
func (sb *sandbox) startSimulators(ctx context.Context) error {
	for _, cluster := range []string{primary, dr} {
		mgr, err := ctrl.NewManager(sb.zone.Clusters[cluster].Config, ctrl.Options{
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

// startProcesses runs the product's binaries against the three clusters.
func (sb *sandbox) startProcesses(webhookArgs, zoneWebhookArgs, vsWebhookArgs []string) error {
	b := func(name string) string { return filepath.Join(sb.o.binDir, name) }
	common := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-log-level=info"}
	// Each DR namespace's quorum-manager: its metrics as -prometheus wants them.
	quorumArgs := map[string][]string{}
	namespaces := []string{drNamespace}
	if sb.vs != nil {
		namespaces = append(namespaces, vsNamespace)
	}
	if sb.of != nil {
		namespaces = append(namespaces, ofNamespace)
	}
	for _, ns := range namespaces {
		m, err := sb.metricsArgs(ns)
		if err != nil {
			return err
		}
		quorumArgs[ns] = append(slices.Clone(common), m...)
	}
	sb.procs = append(sb.procs,
		&process.Process{Name: "quorum-manager", Bin: b("quorum-manager"), Kubeconfig: sb.kubeconfig("quorum"),
			Args: append(append([]string{"--namespace=" + drNamespace, "--cluster-probe-interval=2s", protectionArg(drNamespace)}, webhookArgs...), quorumArgs[drNamespace]...)},
		&process.Process{Name: "zone-webhook", Bin: b("quorum-manager"), Kubeconfig: sb.kubeconfig("quorum"),
			Args: append(append([]string{"--zone-webhook", "--namespace=" + zoneWebhookNamespace, "--leader-elect=false"}, zoneWebhookArgs...), common...)})
	if sb.vs != nil {
		sb.procs = append(sb.procs, sb.volsyncProcess(vsWebhookArgs, quorumArgs[vsNamespace]))
	}
	if sb.of != nil {
		sb.procs = append(sb.procs, sb.drNamespaceProcess("quorum-manager-offloaded", ofNamespace, sb.of.webhookArgs, quorumArgs[ofNamespace]))
	}
	for _, cluster := range []string{primary, dr} {
		sb.procs = append(sb.procs,
			&process.Process{Name: "pg-controller-" + cluster, Bin: b("pg-controller"), Kubeconfig: sb.kubeconfig(cluster), Args: common})
		for _, n := range nodes[cluster] {
			sb.procs = append(sb.procs,
				&process.Process{Name: "drbd-node-agent-" + n.name, Bin: b("drbd-node-agent"), Kubeconfig: sb.kubeconfig(cluster),
					Env: []string{"DRBDSIM_NODE=" + n.name, "__DRBD_NODE__=" + n.name, "DRBDSIM_STATE_DIR=" + sb.state},
					Args: append([]string{
						"--node-name=" + n.name, "--replication-address=" + n.address,
						"--resource-dir=" + filepath.Join(sb.o.workDir, "nodes", n.name, "drbd.d"),
						"--kubelet-dir=" + sb.kubeletDir(n),
						// Every sandbox node's address lies in it.
						"--replication-networks=10.0.0.0/16",
						"--drbdadm=" + b("sim/drbdadm"), "--drbdsetup=" + b("sim/drbdsetup"),
					}, common...)})
		}
	}
	for _, p := range sb.procs {
		if err := p.Start(sb.logDir()); err != nil {
			return fmt.Errorf("starting %s: %w (did `make build sim-binaries` run?)", p.Name, err)
		}
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
	sb.stopIssuer()
}

// quorumKubeconfig is the kubeconfig quorum-manager reaches a workload
// cluster with: through its link (links), which a partition cuts.
func (sb *sandbox) quorumKubeconfig(cluster string) ([]byte, error) {
	kc := sb.zone.Clusters[cluster].Kubeconfig
	if l := sb.links[cluster]; l != nil {
		return l.ViaKubeconfig(kc)
	}
	return kc, nil
}
