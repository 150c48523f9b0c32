package admission

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// Identities are who may change what these webhooks guard: siterecovery's own
// service accounts (pg-controller, the drbd-node-agent) and Kubernetes' own
// controllers (garbage collector, namespace and volume controllers, in
// kube-system) without limit, and the quorum-manager identity of each DR
// namespace only for that DR namespace's objects. Several DR namespaces share
// a workload cluster; one DR namespace's token must not move another's
// replicas or start its standby VMs.
type Identities struct {
	Users  []string
	Groups []string
	// DRNamespaces are the DR namespaces whose quorum-manager identity
	// (system:serviceaccount:<dr namespace>:<QuorumServiceAccount>) acts on
	// this cluster, each scoped to its own objects.
	DRNamespaces []string
	// QuorumServiceAccount is the ServiceAccount of quorum-manager in each DR
	// namespace; DefaultQuorumServiceAccount if empty.
	QuorumServiceAccount string
	// ApplicationNamespaces are, for each DR namespace, the application
	// namespaces whose VMs it protects: its quorum-manager starts or deletes
	// a standby, or gives a VM a replicated disk, only there, as the chart's
	// guard lets it take a VM into its care only there. nil checks nothing
	// (tests of other rules); pg-controller always sets it.
	ApplicationNamespaces map[string][]string
}

// DefaultGroups are Kubernetes' own controllers and the nodes.
var DefaultGroups = []string{"system:serviceaccounts:kube-system", "system:nodes"}

// DefaultQuorumServiceAccount is the ServiceAccount the workload chart creates
// in each DR namespace for quorum-manager.
const DefaultQuorumServiceAccount = "quorum-manager"

// caller is who asks, as the webhooks judge it: trusted for every object, a
// DR namespace's quorum-manager (drNamespace set), or neither.
type caller struct {
	name        string
	trusted     bool
	drNamespace string
	// apps are the application namespaces of drNamespace; checked only when
	// scoped.
	apps   []string
	scoped bool
}

func (ids Identities) caller(u authenticationv1.UserInfo) caller {
	c := caller{name: u.Username}
	if slices.Contains(ids.Users, u.Username) {
		c.trusted = true
		return c
	}
	for _, g := range u.Groups {
		if slices.Contains(ids.Groups, g) {
			c.trusted = true
			return c
		}
	}
	for _, ns := range ids.DRNamespaces {
		if u.Username == ids.quorumUser(ns) {
			c.drNamespace = ns
			c.apps, c.scoped = ids.ApplicationNamespaces[ns], ids.ApplicationNamespaces != nil
		}
	}
	return c
}

// owns reports whether c may change an object of DR namespace owner.
func (c caller) owns(owner string) bool {
	return c.trusted || (c.drNamespace != "" && owner == c.drNamespace)
}

// protects reports whether c may act on the VMs of application namespace
// ns: a trusted identity anywhere, a DR namespace's quorum-manager in the
// namespaces its DR namespace protects.
func (c caller) protects(ns string) bool {
	return c.trusted || (c.drNamespace != "" && (!c.scoped || slices.Contains(c.apps, ns)))
}

// outsideApplications is the refusal of a DR namespace's quorum-manager
// acting on a VM of namespace ns, which its DR namespace does not protect.
func (c caller) outsideApplications(what, ns string) string {
	list := "empty"
	if len(c.apps) > 0 {
		list = strings.Join(c.apps, ", ")
	}
	return fmt.Sprintf("%s: namespace %s is not among the application namespaces DR namespace %s protects on this cluster "+
		"(quorumAccess.applicationNamespaces.%s of the workload-control-plane chart, pg-controller --admission-application-namespaces: %s); "+
		"the quorum-manager of DR namespace %s (user %q) may not. List the namespace there to protect its VMs",
		what, ns, c.drNamespace, c.drNamespace, list, c.drNamespace, c.name)
}

func (ids Identities) quorumUser(drNamespace string) string {
	sa := ids.QuorumServiceAccount
	if sa == "" {
		sa = DefaultQuorumServiceAccount
	}
	return "system:serviceaccount:" + drNamespace + ":" + sa
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
	if len(ids.DRNamespaces) > 0 {
		parts = append(parts, "the quorum-manager of the object's own DR namespace")
	}
	if len(parts) == 0 {
		return "nobody is configured"
	}
	return fmt.Sprintf("only %s may (pg-controller --admission-allowed-users/--admission-allowed-groups/--admission-dr-namespaces)", strings.Join(parts, " and "))
}

// otherNamespace is the refusal of a DR namespace's quorum-manager acting on
// an object of another DR namespace (owner, "" when the object names none).
func (c caller) otherNamespace(what, owner string) string {
	if owner == "" {
		return fmt.Sprintf("%s belongs to no DR namespace; the quorum-manager of DR namespace %s (user %q) may change only its own DR namespace's objects",
			what, c.drNamespace, c.name)
	}
	return fmt.Sprintf("%s belongs to DR namespace %s; the quorum-manager of DR namespace %s (user %q) may change only its own DR namespace's objects",
		what, owner, c.drNamespace, c.name)
}
