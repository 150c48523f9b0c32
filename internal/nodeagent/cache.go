package nodeagent

import (
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// NodeNameField is the DRBDResource field the agent selects its replicas by;
// the CRD declares it selectable (spec.selectableFields), so the API server
// filters, and an agent neither receives nor holds the replicas of the
// cluster's other nodes.
const NodeNameField = "spec.nodeName"

// CacheByObject scopes an agent's cache to what it acts on: the DRBDResources
// of its own node. It reads PVCs, Secrets, Leases and its Node directly, and
// caches nothing else.
func CacheByObject(node string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&srv1alpha1.DRBDResource{}: {Field: fields.OneTermEqualSelector(NodeNameField, node)},
	}
}
