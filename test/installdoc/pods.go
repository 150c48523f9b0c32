package installdoc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/installed"
	"github.com/siterecovery/siterecovery/test/process"
)

// The binaries of the charts' pods.
var binaries = []string{"./cmd/quorum-manager", "./cmd/pg-controller", "./cmd/drbd-node-agent"}

// host runs the pods of the installed charts (installed.Host) on the zone's
// clusters, with the binaries this test builds.
type host struct {
	*installed.Host
	e *env.Env
}

// newHost starts building the binaries, which the first pod waits for, so
// that the build overlaps the clusters' start and the helm installs.
func newHost(t *testing.T) *host {
	t.Helper()
	binDir := t.TempDir()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = process.Build(context.Background(), harness.RepoRoot(), binDir, binaries...)
	}()
	t.Cleanup(func() { <-done })
	return &host{Host: &installed.Host{Bin: func() (string, error) {
		<-done
		if err != nil {
			return "", &buildError{err: err, out: out}
		}
		return binDir, nil
	}}}
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }
func (e *buildError) Unwrap() error { return e.err }

// use runs the pods on the zone's clusters, their kubeconfigs and logs in
// the zone's folder, which the harness keeps when the test fails.
func (h *host) use(t *testing.T, e *env.Env) {
	t.Helper()
	h.e, h.Dir = e, filepath.Join(e.Zone.Dir, "pods")
	require.NoError(t, os.MkdirAll(h.Dir, 0o755))
}

// pod is one pod of a chart (installed.Pod) on a cluster of the zone.
type pod struct {
	cluster string
	installed.Pod
}

// start runs the pod's binary until the test ends and waits until its
// health probe answers.
func (h *host) start(t *testing.T, p pod) {
	t.Helper()
	p.Cluster = h.e.Clusters[p.cluster]
	// Cleanups run last first: the process stops, then its log's tail is
	// printed if the test failed.
	env.TailOnFailure(t, filepath.Join(h.Dir, p.Name+".log"))
	proc, err := h.Start(t.Context(), p.Pod)
	if proc != nil {
		t.Cleanup(proc.Stop)
	}
	require.NoError(t, err)
}

// requireRunning checks that no pod ended and that no log holds a token:
// the pods' own, or quorum-manager's on the workload clusters (stored).
func (h *host) requireRunning(t *testing.T, stored []string) {
	t.Helper()
	for _, p := range h.Processes() {
		state, exited := p.Exited()
		assert.False(t, exited, "%s ended: %s", p.Name, state)
		log, err := os.ReadFile(p.LogPath())
		require.NoError(t, err)
		for _, token := range append(append([]string{}, h.Tokens()...), stored...) {
			assert.NotContains(t, string(log), token[:20], "%s logged a token", p.Name)
		}
	}
}

// serveWebhooks points the webhooks a release installed on a cluster at
// this machine and returns the flags of the pod that serves them.
func serveWebhooks(t *testing.T, e *env.Env, cluster, release, namespace string) map[string]string {
	t.Helper()
	w, err := installed.ServeWebhooks(t.Context(), e.Client(cluster), release, namespace, t.TempDir())
	require.NoError(t, err, "%s", cluster)
	return w.Flags()
}
