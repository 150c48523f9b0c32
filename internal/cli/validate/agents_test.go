package validate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAgentVerdict(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fresh := heartbeat{found: true, renewed: now.Add(-10 * time.Second), expiry: now.Add(20 * time.Second)}
	stale := heartbeat{found: true, renewed: now.Add(-2 * time.Minute), expiry: now.Add(-90 * time.Second)}
	skewed := heartbeat{found: true, renewed: now.Add(-33 * time.Second), expiry: now.Add(-3 * time.Second)}

	t.Run("every holder fresh", func(t *testing.T) {
		s, msg, _ := agentVerdict([]string{"w1"}, []string{"w1", "w2", "cp"}, map[string]heartbeat{"w1": fresh, "w2": fresh, "cp": {}}, now)
		assert.Equal(t, OK, s)
		assert.Contains(t, msg, "2 of 3 nodes")
	})
	t.Run("a heartbeat just past its expiry is within the grace", func(t *testing.T) {
		s, _, _ := agentVerdict([]string{"w1"}, []string{"w1"}, map[string]heartbeat{"w1": skewed}, now)
		assert.Equal(t, OK, s)
	})
	t.Run("a holder without a fresh heartbeat is named", func(t *testing.T) {
		s, msg, fix := agentVerdict([]string{"w1", "w2", "w3"}, []string{"w1", "w2", "w3"},
			map[string]heartbeat{"w1": fresh, "w2": stale, "w3": {}}, now)
		assert.Equal(t, Problem, s)
		assert.Contains(t, msg, "w2 (last renewed 2026-01-02T03:02:05Z)")
		assert.Contains(t, msg, "w3 (no heartbeat)")
		assert.NotContains(t, msg, "w1")
		assert.Contains(t, fix, "drbd-node-agent")
	})
	t.Run("no agent anywhere", func(t *testing.T) {
		s, msg, fix := agentVerdict(nil, []string{"w1", "w2"}, map[string]heartbeat{"w1": stale}, now)
		assert.Equal(t, Problem, s)
		assert.Contains(t, msg, "no node of 2")
		assert.Contains(t, fix, "workload-control-plane chart")
	})
	t.Run("no replicas yet and agents running", func(t *testing.T) {
		s, _, _ := agentVerdict(nil, []string{"w1"}, map[string]heartbeat{"w1": fresh}, now)
		assert.Equal(t, OK, s)
	})
}
