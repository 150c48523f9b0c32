// Command sandbox runs a whole siterecovery zone on one machine: quorum, primary
// and DR clusters (whole control planes), with the product installed as
// docs/install.md says: helm installs of the three charts,
// scripts/bootstrap-zone.sh connecting each zone, and the charts' pods
// (quorum-manager and its zone webhook, pg-controller on both workload
// clusters, a drbd-node-agent per node) run as processes of the project's own
// binaries, each with its container's args and a token of its own
// ServiceAccount (test/installed). The KubeVirt, storage, snapshot-driver and
// DRBD simulators, standing in for what no laptop runs, keep admin rights. It protects three demo VMs and waits for
// Ctrl-C; with -demo it then runs planned failover, failback and an unplanned
// failover with the primary's API server stopped, printing a timeline, and
// last the worked example of docs/recovery-plans.md (example.go).
//
// Run it with `make sandbox` or `make demo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin", "bin", "folder with quorum-manager, pg-controller, drbd-node-agent and sim/drbdadm, sim/drbdsetup")
	flag.StringVar(&o.workDir, "dir", ".sandbox", "folder for kubeconfigs, logs and simulated node state (recreated)")
	flag.BoolVar(&o.demo, "demo", false, "run protect, planned failover, failback and unplanned failover, then exit")
	flag.IntVar(&o.vms, "vms", 3, "number of demo VMs")
	flag.BoolVar(&o.volsync, "volsync", false, "also run a VolSync zone in a second DR namespace (dr-volsync) with one group in diff mode; with -demo, its cycles, relocate and unplanned failover run first")
	flag.BoolVar(&o.oidc, "oidc", false, "run a test OIDC issuer that the API servers trust, and offer sign-in with it in the console (user alice, password alice-password)")
	flag.BoolVar(&o.offloaded, "offloaded", false, "also run an Offloaded zone in a third DR namespace (dr-offloaded) with one group on the storage-array simulator; with -demo, its link down and back, relocate and failover run first")
	flag.StringVar(&o.consoleAddr, "console", "127.0.0.1:9443", "address of the web console; empty runs none")
	flag.StringVar(&o.prometheus, "prometheus", "", "a prometheus binary (make sandbox PROMETHEUS=1 builds one): quorum-manager serves secure metrics, and this Prometheus scrapes them with a token and evaluates the quorum chart's alert rules")
	flag.StringVar(&o.prometheusAddr, "prometheus-addr", "127.0.0.1:9090", "address of the -prometheus Prometheus's UI and API")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(discard{})))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

type options struct {
	binDir, workDir string
	consoleAddr     string
	// prometheus is the prometheus binary of -prometheus (empty: none).
	prometheus, prometheusAddr string
	demo, volsync              bool
	oidc                       bool
	offloaded                  bool
	vms                        int
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func run(ctx context.Context, o options) error {
	abs, err := filepath.Abs(o.workDir)
	if err != nil {
		return err
	}
	o.workDir = abs
	if o.binDir, err = filepath.Abs(o.binDir); err != nil {
		return err
	}
	_ = os.RemoveAll(o.workDir)
	if err := os.MkdirAll(filepath.Join(o.workDir, "logs"), 0o755); err != nil {
		return err
	}
	start := time.Now()
	say("starting quorum, primary and DR API servers")
	sb, err := newSandbox(ctx, o)
	if sb != nil {
		defer sb.shutdown()
	}
	if err != nil {
		return err
	}
	say("zone %q ready in %s; protecting %d VMs", zoneName, time.Since(start).Round(100*time.Millisecond), o.vms)
	if err := sb.protectAll(ctx); err != nil {
		return err
	}
	if o.volsync {
		if err := sb.protectVolSync(ctx); err != nil {
			return err
		}
	}
	if o.offloaded {
		if err := sb.protectOffloaded(ctx); err != nil {
			return err
		}
	}
	if err := sb.startControl(ctx); err != nil {
		return err
	}
	sb.printHelp()
	if o.prometheus != "" {
		if err := sb.startPrometheus(ctx); err != nil {
			return fmt.Errorf("starting Prometheus: %w", err)
		}
	}
	if o.consoleAddr != "" {
		token, err := sb.startConsole(ctx)
		if err != nil {
			return err
		}
		sb.printConsole(token)
	}
	if o.demo {
		if o.volsync {
			if err := sb.demoVolSync(ctx); err != nil {
				return err
			}
		}
		if o.offloaded {
			if err := sb.demoOffloaded(ctx); err != nil {
				return err
			}
		}
		return sb.demo(ctx)
	}
	say("running; press Ctrl-C to stop everything")
	<-ctx.Done()
	say("stopping")
	return nil
}

func say(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
