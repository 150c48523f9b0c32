package failover_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/failover"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestAgentDownOnTargetIsNamed: the target node's drbd-node-agent is down. A
// planned failover stops the source, then holds before the promotion with a
// message naming the node whose agent is silent; once the agent runs again
// the request completes.
func TestAgentDownOnTargetIsNamed(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	agent := z.workload[3] // the DR cluster's agent (newZone's order)
	// The agent has reported its replica before it goes silent.
	env.Eventually(t, timeout, "the DR replica reports Secondary", func() error {
		if role := z.drbd(env.DR, z.vms[0]).Status.Role; role != "Secondary" {
			return fmt.Errorf("role %q", role)
		}
		return nil
	})
	agent.Stop(t)

	name := z.failover("agent-down", env.DR, srv1alpha1.FailoverPlanned)
	var fr *srv1alpha1.FailoverRequest
	env.Eventually(t, timeout, name+" naming the silent agent", func() error {
		fr = z.request(name)
		if readyReason(fr) != failover.ReasonAgentSilent {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	require.Equal(t, srv1alpha1.FailoverWaitingForDRBD, fr.Status.Phase)
	for _, want := range []string{"drbd-node-agent of node " + env.Nodes[env.DR].Name + " on " + env.DR, "last heartbeat 20", "check the agent's pod on that node"} {
		require.Contains(t, fr.Status.Message, want)
	}
	require.False(t, strings.Contains(fr.Status.Message, env.Nodes[env.Primary].Name), "the source's agent runs: only the silent one is named")
	require.Equal(t, "Secondary", z.drbd(env.DR, z.vms[0]).Status.Role)
	c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady)
	require.Equal(t, failover.ReasonAgentSilent, c.Reason)

	z.workload[3] = z.StartAgent(t, env.DR)
	fr = z.waitPhase(name, srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr))
	z.assertActive(env.DR)
	z.assertLockReleased()
}
