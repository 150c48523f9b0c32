package nodeagent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An agent without replication networks does not start: an empty list would
// let any DRBDResource name any peer address.
func TestCompleteRequiresReplicationNetworks(t *testing.T) {
	c := hostnameConfig(t, "node-a", "node-a")
	c.ReplicationNetworks = nil
	assert.ErrorContains(t, c.Complete(), "--replication-networks is required")
}
