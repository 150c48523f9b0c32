package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/siterecovery/siterecovery/test/process"
)

// SnapshotControllerVersion is the external-snapshotter release
// hack/snapshot-controller.sh builds (tools/snapshot-controller pins it).
const SnapshotControllerVersion = "v8.7.0"

// SnapshotControllerDir returns the folder hack/snapshot-controller.sh
// builds the snapshot-controller into: $SITERECOVERY_SNAPSHOT_CONTROLLER if
// set, else ${SITERECOVERY_CACHE:-$XDG_CACHE_HOME/siterecovery}/snapshot-controller-<v>.
func SnapshotControllerDir() (string, error) {
	dir := os.Getenv("SITERECOVERY_SNAPSHOT_CONTROLLER")
	if dir == "" {
		dir = filepath.Join(cacheRoot(), "snapshot-controller-"+SnapshotControllerVersion)
	}
	if err := hasBinaries(dir, "snapshot-controller"); err != nil {
		return "", fmt.Errorf("no snapshot-controller: %w; run `make snapshot-controller` (hack/snapshot-controller.sh)", err)
	}
	return dir, nil
}

// StartSnapshotController runs the real snapshot-controller of
// kubernetes-csi/external-snapshotter against the cluster, as every cluster
// that takes CSI snapshots runs it: it binds VolumeSnapshots to the contents
// it creates (or to pre-provisioned ones), carries the readiness a CSI
// driver's sidecar reports on a content back to its VolumeSnapshot, manages
// their finalizers and deletions, and does the same for group snapshots. A
// driver's part (test/sim/snapshot) runs beside it. It stops with the
// cluster; its output is <Dir>/snapshot-controller.log. It returns once the
// controller lists the snapshot kinds, so that what a test creates next is
// seen.
func (c *Cluster) StartSnapshotController(ctx context.Context) error {
	dir, err := SnapshotControllerDir()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.Dir, "snapshot-controller.kubeconfig")
	if err := os.WriteFile(kubeconfig, c.Kubeconfig, 0o600); err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	p := &process.Process{Name: "snapshot-controller", Bin: filepath.Join(dir, "snapshot-controller"), Kubeconfig: kubeconfig, Args: []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-election=false",
		// Group snapshots are GA and on by default in v8; said here because
		// the product takes them (ReplicationGroupSource).
		"--feature-gates=CSIVolumeGroupSnapshot=true",
		// The defaults (5 QPS) would make a test measure the controller's
		// throttling, not the product.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		// A snapshot of a claim that is not bound yet is retried with a
		// backoff from 1 s to 5 min by default; a test's claims bind within
		// seconds, and a 5 min wait would outlast its deadline.
		"--retry-interval-start=100ms",
		"--retry-interval-max=2s",
		// What it decided and why (syncSnapshot, syncContent), for a failed
		// test's reader.
		"-v=4",
	}}
	if err := c.addProcess(p); err != nil {
		return err
	}
	return c.waitSnapshotController(ctx, p)
}

// addProcess starts p as part of the cluster's control plane, which stops it
// with the cluster.
func (c *Cluster) addProcess(p *process.Process) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("cluster %q: zone is stopped", c.Name)
	}
	if err := p.Start(c.Dir); err != nil {
		return fmt.Errorf("cluster %q: starting %s: %w", c.Name, p.Name, err)
	}
	if c.plane == nil {
		c.plane = &controlPlane{}
	}
	c.plane.procs = append(c.plane.procs, p)
	return nil
}

// waitSnapshotController waits until the controller is past its start: on a
// cluster without the snapshot CRDs it exits, which is reported with its log.
func (c *Cluster) waitSnapshotController(ctx context.Context, p *process.Process) error {
	ctx, cancel := context.WithTimeout(ctx, processStartTimeout)
	defer cancel()
	for {
		if state, done := p.Exited(); done {
			return fmt.Errorf("cluster %q: snapshot-controller exited (%s); its output: %s\n%s", c.Name, state, p.LogPath(), tail(p.LogPath(), 15))
		}
		if started(p.LogPath()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %q: snapshot-controller did not start (its output: %s): %w", c.Name, p.LogPath(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// started reports whether the controller is past its check that the snapshot
// CRDs are served and is starting its informers, which it logs.
func started(log string) bool {
	b, err := os.ReadFile(log)
	return err == nil && strings.Contains(string(b), "Starting snapshot controller")
}
