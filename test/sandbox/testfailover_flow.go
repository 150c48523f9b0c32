package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// testFailover runs `kubectl siterecovery test-failover demo-group --wait`,
// as README shows it, with the plugin binary against the quorum cluster, and
// prints its output: snapshots of the DR copies boot in an isolated
// namespace, are checked and cleaned up while replication goes on.
func (sb *sandbox) testFailover(ctx context.Context) error {
	return sb.testFailoverOf(ctx, groupName)
}

// testFailoverOf runs `kubectl siterecovery test-failover GROUP --wait`.
func (sb *sandbox) testFailoverOf(ctx context.Context, group string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	args := []string{"test-failover", group, "--wait", "-n", drNamespace, "--kubeconfig", sb.kubeconfig("quorum")}
	say("kubectl siterecovery %s", strings.Join(args[:len(args)-2], " "))
	cmd := exec.CommandContext(ctx, filepath.Join(sb.o.binDir, "kubectl-siterecovery"), args...)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		say("  %s", line)
	}
	if err != nil {
		return fmt.Errorf("test failover of %s: %w", group, err)
	}
	return nil
}
