package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/test/drzone"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	group   = drzone.Group
	timeout = 90 * time.Second
	// protectVM is the unprotected VM of the primary the CLI protects.
	protectVM = "web-01"
)

var vms = []string{"vm-00", "vm-01"}

// zone is the operator-facing zone of test/drzone (a protected group of
// running VMs on the primary, replicated to the DR cluster, snapshots on both
// sides) and a kubeconfig file of the quorum cluster for the CLI.
type zone struct {
	*drzone.Zone
	t          *testing.T
	ctx        context.Context
	kubeconfig string
	// path is the PATH the runbooks run with.
	path string
}

func newZone(t *testing.T) *zone {
	z := &zone{Zone: drzone.New(t, drzone.Options{VMs: len(vms), Unprotected: []string{protectVM}}), t: t, ctx: context.Background()}
	z.kubeconfig = filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(z.kubeconfig, z.Clusters[env.Quorum].Kubeconfig, 0o600))
	return z
}

func (z *zone) create(cluster string, obj client.Object) { z.t.Helper(); z.Create(cluster, obj) }

func (z *zone) waitRunning(cluster string) { z.t.Helper(); z.WaitRunning(cluster) }

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the CLI in process against the quorum cluster's DR namespace.
func (z *zone) cli(ctx context.Context, args ...string) result {
	z.t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"--kubeconfig", z.kubeconfig, "-n", env.Namespace}, args...)
	code := cli.Run(ctx, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, all)
	r := result{code: code, stdout: out.String(), stderr: errOut.String()}
	z.t.Logf("kubectl siterecovery %v -> %d\n%s%s", args, code, r.stdout, r.stderr)
	return r
}
