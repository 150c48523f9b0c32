package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// maxSocketPath is the longest unix socket path Linux accepts (sun_path, less
// its terminating NUL).
const maxSocketPath = 107

// DebugSocket is the unix socket on which the cluster's kube-apiserver serves
// its pprof endpoints, or "" when the cluster's directory is too deep for one.
// It lies in the zone's directory, which only the test's user can enter. To see where a benchmark spends the
// API server's CPU:
//
//	curl --unix-socket <Dir>/debug.sock 'http://x/debug/pprof/profile?seconds=10'
func (c *Cluster) DebugSocket() string {
	p := filepath.Join(c.Dir, "debug.sock")
	if len(p) > maxSocketPath {
		return ""
	}
	return p
}

func (c *Cluster) serveDebugSocket(args *envtest.Arguments) {
	if p := c.DebugSocket(); p != "" {
		args.Set("profiling", "true").Set("debug-socket-path", p)
	} else {
		args.Set("profiling", "false")
	}
}

// CollectGarbage makes the cluster's kube-apiserver collect garbage now, as
// Go's testing package does in its own process before each benchmark: a
// benchmark calls it before a measured window so that a collection the server
// owes (GOGC off, GOMEMLIMIT; see serverMemoryLimit) falls outside the window
// rather than inside it.
func (c *Cluster) CollectGarbage(ctx context.Context) error {
	// The heap profile endpoint runs runtime.GC before it writes the profile.
	if err := c.debugGet(ctx, "/debug/pprof/heap?gc=1", io.Discard); err != nil {
		return fmt.Errorf("cluster %s: collecting garbage: %w", c.Name, err)
	}
	return nil
}

// CPUProfile writes a CPU profile of the cluster's kube-apiserver over the
// next seconds (whole seconds: the endpoint's unit) to w, for `go tool pprof
// <kube-apiserver binary> <file>`.
func (c *Cluster) CPUProfile(ctx context.Context, seconds int, w io.Writer) error {
	if err := c.debugGet(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), w); err != nil {
		return fmt.Errorf("cluster %s: CPU profile: %w", c.Name, err)
	}
	return nil
}

// debugGet copies what the debug socket serves at path to w.
func (c *Cluster) debugGet(ctx context.Context, path string, w io.Writer) error {
	sock := c.DebugSocket()
	if sock == "" {
		return fmt.Errorf("no debug socket (directory %s is too deep)", c.Dir)
	}
	hc := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://apiserver"+path, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// CollectGarbage runs CollectGarbage on every cluster of the zone whose API
// server runs, and runtime.GC in the test process.
func (z *Zone) CollectGarbage(ctx context.Context) error {
	for _, c := range z.Clusters {
		c.mu.Lock()
		down := c.apiDown || c.stopped
		c.mu.Unlock()
		if down {
			continue
		}
		if err := c.CollectGarbage(ctx); err != nil {
			return err
		}
	}
	runtime.GC()
	return nil
}

// Settle prepares a zone for a measured window: it waits (up to 10 s) until
// the zone's processes are quiet (WaitQuiet), then has them collect their
// garbage. It reports whether they became quiet.
func (z *Zone) Settle(ctx context.Context) (bool, error) {
	quiet := WaitQuiet(ctx, 10*time.Second)
	return quiet, z.CollectGarbage(ctx)
}
