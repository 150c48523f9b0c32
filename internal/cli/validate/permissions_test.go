package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded role is what controller-gen generated: validate checks the
// rights the controllers' markers declare, cluster-wide and in the DR
// namespace.
func TestWorkloadNeedsComeFromTheGeneratedRole(t *testing.T) {
	byName := map[string]need{}
	for _, n := range workloadNeeds {
		key := n.resource + "." + n.group
		if n.inDRNamespace {
			key += " in DR namespace"
		}
		byName[key] = n
	}
	require.Contains(t, byName, "drbdresources.siterecovery.trilio.io")
	assert.Contains(t, byName["drbdresources.siterecovery.trilio.io"].verbs, "create")
	require.Contains(t, byName, "protectiongroups.siterecovery.trilio.io in DR namespace")
	assert.Contains(t, byName["protectiongroups.siterecovery.trilio.io in DR namespace"].verbs, "patch")
	assert.NotContains(t, byName, "secrets.", "quorum-manager's quorum-cluster rights are not workload needs")

	_, err := parseNeeds([]byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\n"))
	assert.Error(t, err, "a role file without workload Roles is refused")
}
