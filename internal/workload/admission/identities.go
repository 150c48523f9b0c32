package admission

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// Identities are who may change what these webhooks guard: siterecovery's own
// service accounts (quorum-manager's identity on this cluster, pg-controller,
// the drbd-node-agent) and Kubernetes' own controllers (garbage collector,
// namespace and volume controllers, in kube-system).
type Identities struct {
	Users  []string
	Groups []string
}

// DefaultGroups are Kubernetes' own controllers and the nodes.
var DefaultGroups = []string{"system:serviceaccounts:kube-system", "system:nodes"}

func (ids Identities) allowed(u authenticationv1.UserInfo) bool {
	if slices.Contains(ids.Users, u.Username) {
		return true
	}
	for _, g := range u.Groups {
		if slices.Contains(ids.Groups, g) {
			return true
		}
	}
	return false
}

// who says who may, for refusals.
func (ids Identities) who() string {
	var parts []string
	if len(ids.Users) > 0 {
		parts = append(parts, "users "+strings.Join(ids.Users, ", "))
	}
	if len(ids.Groups) > 0 {
		parts = append(parts, "groups "+strings.Join(ids.Groups, ", "))
	}
	if len(parts) == 0 {
		return "nobody is configured"
	}
	return fmt.Sprintf("only %s may (pg-controller --admission-allowed-users/--admission-allowed-groups)", strings.Join(parts, " and "))
}
