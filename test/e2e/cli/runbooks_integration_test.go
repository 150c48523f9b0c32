package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// runbookPath is a PATH with kubectl (built from the module proxy by
// hack/kubectl.sh) and kubectl-siterecovery (this test binary, which
// runs the CLI under that name, see TestMain).
func runbookPath(t *testing.T) string {
	out, err := exec.Command(filepath.Join(harness.RepoRoot(), "hack", "kubectl.sh")).Output()
	require.NoError(t, err, "building kubectl")
	kubectl := strings.TrimSpace(string(out))
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(kubectl, filepath.Join(dir, "kubectl")))
	require.NoError(t, os.Symlink(self, filepath.Join(dir, "kubectl-siterecovery")))
	return dir + ":/usr/bin:/bin"
}

// script runs a runbook of scripts/ against the zone, as an operator would.
func (z *zone) script(t *testing.T, path, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(harness.RepoRoot(), "scripts", path), args...)
	cmd.Env = []string{"PATH=" + z.path, "KUBECONFIG=" + z.kubeconfig, "NAMESPACE=" + env.Namespace, "HOME=" + t.TempDir(), "USER=operator"}
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	// A child the script started may hold the output open after a timeout.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	code := 0
	if err != nil {
		ee := &exec.ExitError{}
		require.ErrorAs(t, err, &ee, "%s: %s", path, errOut.String())
		code = ee.ExitCode()
	}
	t.Logf("%s %v -> %d\n%s%s", path, args, code, out.String(), errOut.String())
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// runbooks runs every script of scripts/ against the zone, each as a step
// that starts and ends with the group running on the primary.
func (z *zone) runbooks(t *testing.T) {
	z.path = runbookPath(t)
	z.runSteps(t, []step{
		{"collect-diagnostics.sh", func(t *testing.T) {
			dir := t.TempDir()
			r := z.script(t, "collect-diagnostics.sh", "", "-d", dir, "-s", "1h")
			require.Equal(t, 0, r.code)
			files := readBundle(t, strings.TrimSpace(r.stdout))
			assert.Contains(t, files, "README.txt")
			z.assertRedacted(t, files)
		}},

		// stuck-request.sh reads the requests the other two made.
		{"planned-failover.sh, failback.sh and stuck-request.sh", func(t *testing.T) {
			before := z.names(t, &srv1alpha1.FailoverRequestList{})
			r := z.script(t, "planned-failover.sh", "", group, env.DR)
			require.Equal(t, 0, r.code)
			assert.Contains(t, r.stdout, "0 problems")
			assert.Contains(t, r.stdout, "Timeline of FailoverRequest")
			z.waitRunning(env.DR)
			z.waitIdle()
			r = z.script(t, "failback.sh", "", group)
			require.Equal(t, 0, r.code)
			z.waitRunning(env.Primary)

			r = z.script(t, "stuck-request.sh", "")
			require.Equal(t, 0, r.code)
			assert.Contains(t, r.stdout, "production-pg-to-dr-cluster-")
			var toDR string
			for _, name := range z.created(t, &srv1alpha1.FailoverRequestList{}, before) {
				if strings.HasPrefix(name, group+"-to-"+env.DR+"-") {
					toDR = name
				}
			}
			require.NotEmpty(t, toDR, "planned-failover.sh's request")
			r = z.script(t, "stuck-request.sh", "", toDR)
			require.Equal(t, 0, r.code)
			assert.Contains(t, r.stdout, "Safe ways out")
			assert.Contains(t, r.stderr, "of group "+group)
		}},

		{"dr-drill.sh", func(t *testing.T) {
			before := z.names(t, &srv1alpha1.TestFailoverList{})
			r := z.script(t, "dr-drill.sh", "", group)
			require.Equal(t, 0, r.code)
			assert.Contains(t, r.stdout, "Checks of TestFailover")
			assert.Contains(t, r.stdout, "(Succeeded)")
			assert.Contains(t, r.stderr, "drill passed")
			assert.Empty(t, z.created(t, &srv1alpha1.TestFailoverList{}, before), "the finished TestFailover is deleted")
		}},

		{"quorum-cluster-lost.md", z.quorumClusterLost},

		{"disaster-failover.sh", z.disasterFailover},
	})
}

// disasterFailover: disaster-failover.sh refuses without the group's name,
// then fails the group over with the primary site down. The site returns,
// rejoins as the DR side, and a failback puts the group back on it.
func (z *zone) disasterFailover(t *testing.T) {
	ctx := context.Background()
	before := z.requests(ctx)
	r := z.script(t, "disaster-failover.sh", "production\n", group, env.DR)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "DATA-LOSS WINDOW")
	assert.Contains(t, r.stderr, "did not match; nothing was changed")
	assert.Equal(t, before, z.requests(ctx), "no request without the confirmation")

	// The primary site fails: its API server and its replication links.
	for _, vm := range vms {
		require.NoError(t, z.DRBD(t).Disconnect(srv1alpha1.DRBDResourceName(vm)))
	}
	require.NoError(t, z.Clusters[env.Primary].StopAPIServer())
	t.Cleanup(func() { require.NoError(t, z.Clusters[env.Primary].StartAPIServer()) })
	r = z.script(t, "disaster-failover.sh", group+"\nprimary site flooded\n", group, env.DR)
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Completed")
	frs := &srv1alpha1.FailoverRequestList{}
	require.NoError(t, z.Client(env.Quorum).List(ctx, frs, client.InNamespace(env.Namespace)))
	var last *srv1alpha1.FailoverRequest
	for i := range frs.Items {
		if frs.Items[i].Spec.FailoverType == srv1alpha1.FailoverUnplanned {
			last = &frs.Items[i]
		}
	}
	require.NotNil(t, last)
	assert.Equal(t, group, last.Annotations[srv1alpha1.ConfirmAnnotation])
	assert.Contains(t, last.Annotations["siterecovery.trilio.io/reason"], "disaster-failover.sh by operator@")
	assert.Contains(t, last.Annotations["siterecovery.trilio.io/reason"], "primary site flooded")

	// The site returns: quorum-manager stops the group there and demotes its
	// replicas, which resync from the DR cluster; then it is failed back.
	require.NoError(t, z.Clusters[env.Primary].StartAPIServer())
	for _, vm := range vms {
		require.NoError(t, z.DRBD(t).Connect(srv1alpha1.DRBDResourceName(vm)))
	}
	for _, vm := range vms {
		z.WaitDRBD(env.Primary, vm, func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == string(srv1alpha1.RoleSecondary) && len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState == "Connected" &&
				len(r.Status.Volumes) == 1 && r.Status.Volumes[0].DiskState == "UpToDate"
		})
	}
	z.waitIdle()
	// As the runbook says: failback once validate finds the group clean.
	// The agents' taints and the replication monitor catch up with the
	// rejoin on their own, after DRBD did.
	env.Eventually(t, timeout, "validate group clean after the rejoin", func() error {
		if v := z.cli(z.ctx, "validate", "group", group); v.code != 0 {
			return fmt.Errorf("exit %d:\n%s%s", v.code, v.stdout, v.stderr)
		}
		return nil
	})
	r = z.script(t, "failback.sh", "", group)
	require.Equal(t, 0, r.code, "failback after the primary rejoined")
	z.waitRunning(env.Primary)
}

func (z *zone) requests(ctx context.Context) int {
	frs := &srv1alpha1.FailoverRequestList{}
	require.NoError(z.t, z.Client(env.Quorum).List(ctx, frs, client.InNamespace(env.Namespace)))
	return len(frs.Items)
}

// waitIdle waits until no FailoverRequest of the zone is unfinished.
func (z *zone) waitIdle() {
	env.Eventually(z.t, timeout, "no unfinished FailoverRequest", func() error {
		frs := &srv1alpha1.FailoverRequestList{}
		if err := z.Client(env.Quorum).List(z.ctx, frs, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, fr := range frs.Items {
			if fr.Status.Phase != srv1alpha1.FailoverCompleted && fr.Status.Phase != srv1alpha1.FailoverFailed {
				return os.ErrExist
			}
		}
		return nil
	})
}
