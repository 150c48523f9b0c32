package validate

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// quorumManagerRole is config/rbac/quorum-manager/role.yaml, which
// controller-gen writes from the +kubebuilder:rbac markers of quorum-manager's
// packages; hack/copy-rbac.sh (make generate) copies it here, so that
// validate checks exactly what the controllers were built to use.
//
//go:embed quorum-manager-role.yaml
var quorumManagerRole []byte

// The placeholder namespaces of quorum-manager's workload-cluster markers: its
// rights on a workload cluster, cluster-wide there or in the DR namespace.
const (
	workloadClusterScope     = "workload-cluster"
	workloadDRNamespaceScope = "workload-dr-namespace"
)

// need is one permission quorum-manager uses on a workload cluster.
type need struct {
	group, resource string
	// inDRNamespace needs are checked in the DR namespace; the others
	// cluster-wide (every namespace, for a namespaced resource).
	inDRNamespace bool
	verbs         []string
}

// workloadNeeds are the rules of the generated workload Roles, one need per
// group and resource, in a stable order.
var workloadNeeds = mustNeeds(quorumManagerRole)

func mustNeeds(role []byte) []need {
	n, err := parseNeeds(role)
	if err != nil {
		panic(fmt.Sprintf("the embedded quorum-manager role: %v", err))
	}
	return n
}

func parseNeeds(role []byte) ([]need, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(role), 4096)
	var out []need
	for {
		var r rbacv1.Role
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		scope := r.Namespace
		if r.Kind != "Role" || (scope != workloadClusterScope && scope != workloadDRNamespaceScope) {
			continue
		}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					verbs := append([]string(nil), rule.Verbs...)
					sort.Strings(verbs)
					out = append(out, need{group: g, resource: res, inDRNamespace: scope == workloadDRNamespaceScope, verbs: verbs})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no Role in namespace " + workloadClusterScope + " or " + workloadDRNamespaceScope)
	}
	return out, nil
}

// quorumResources are the kinds the CLI reads on the quorum cluster, and
// workloadResources those pg-controller and the agent serve on workload
// clusters, in the version this CLI was built with.
var (
	quorumResources   = []string{"protectionzones", "protectiongroups", "failoverrequests", "protectionrequests", "replicationgroupstatuses", "rpoevents", "testfailovers"}
	workloadResources = []string{"protectiongroups", "drbdresources"}
)
