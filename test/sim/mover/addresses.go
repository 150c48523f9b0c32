package mover

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceExportGVK is the Multi-Cluster Services API's ServiceExport.
var ServiceExportGVK = schema.GroupVersionKind{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Kind: "ServiceExport"}

// clusterSetSuffix ends the names the MCS API gives exported Services:
// <service>.<namespace>.svc.clusterset.local. The rule is the MCS API's
// (KEP-1645), not VolSync's: VolSync only creates the Service.
const clusterSetSuffix = ".svc.clusterset.local"

// ServiceName is the Service VolSync creates for a ReplicationDestination's
// rsync-tls mover: upstream backube/volsync
// internal/controller/mover/rsynctls/mover.go names it with the prefix
// volsync-rsync-tls-dst- through GetServiceName in
// internal/controller/utils/utils.go, which puts the CRC-32 of the owner's name
// in its place when the whole exceeds 63 characters.
func ServiceName(rd string) string {
	const prefix = "volsync-rsync-tls-dst-"
	if len(prefix)+len(rd) <= 63 {
		return prefix + rd
	}
	return fmt.Sprintf("%s%08x", prefix, crc32.ChecksumIEEE([]byte(rd)))
}

// ClusterSetAddress is the name a destination answers on in every cluster of
// the set, once a ServiceExport named like its Service exists beside it.
func ClusterSetAddress(namespace, rd string) string {
	return ServiceName(rd) + "." + namespace + clusterSetSuffix
}

// parseClusterSet splits a clusterset name into the Service and namespace.
func parseClusterSet(address string) (service, namespace string, ok bool) {
	rest, found := strings.CutSuffix(address, clusterSetSuffix)
	if !found {
		return "", "", false
	}
	service, namespace, ok = strings.Cut(rest, ".")
	return service, namespace, ok && service != "" && namespace != "" && !strings.Contains(namespace, ".")
}

// publishedAddress is the address a destination publishes: one simulated
// ClusterIP per destination object, new when it is recreated, as a Service
// VolSync creates for it gets. Upstream: publishSvcAddress in
// internal/controller/mover/rsynctls/mover.go writes GetServiceAddress
// (internal/controller/utils/utils.go: the ClusterIP, or the load
// balancer's address) into status.rsyncTLS.address.
func (m *Mover) publishedAddress(cluster string, key types.NamespacedName, uid types.UID) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := cluster + "/" + key.String()
	if a, ok := m.published[k]; ok && a.uid == uid {
		return a.address
	}
	m.nextIP++
	a := publication{uid: uid, address: fmt.Sprintf("10.96.%d.%d", m.nextIP/250, m.nextIP%250+1)}
	m.published[k] = a
	return a.address
}

// withdraw forgets the address a destination published; it returns "" when
// it published none.
func (m *Mover) withdraw(cluster string, key types.NamespacedName) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := cluster + "/" + key.String()
	a := m.published[k]
	delete(m.published, k)
	return a.address
}

// publication is the address a destination object published.
type publication struct {
	uid     types.UID
	address string
}

// resolve finds the destination a source's address reaches. A real mover
// connects to whatever spec.rsyncTLS.address names (upstream:
// internal/controller/mover/rsynctls/mover.go passes it to the source's
// mover as DESTINATION_ADDRESS, which mover-rsync-tls/client.sh connects to),
// so only two names reach a destination: the address it published, and a
// clusterset name while a ServiceExport of its Service exists on its
// cluster. Any other name, such as a clusterset name nothing exports, does
// not answer.
func (m *Mover) resolve(ctx context.Context, address string) (endpoint, bool, error) {
	if e, ok := m.resolvePublished(address); ok {
		return e, true, nil
	}
	service, namespace, ok := parseClusterSet(address)
	if !ok {
		return endpoint{}, false, nil
	}
	var best endpoint
	found := false
	for _, e := range m.allEndpoints() {
		if e.key.Namespace != namespace || ServiceName(e.key.Name) != service || (found && e.seq < best.seq) {
			continue
		}
		exported, err := serviceExported(ctx, e.reader, namespace, service)
		if err != nil {
			return endpoint{}, false, err
		}
		if exported {
			best, found = e, true
		}
	}
	return best, found, nil
}

// serviceExported reports whether a ServiceExport of the Service exists; a
// cluster without the MCS CRDs exports nothing.
func serviceExported(ctx context.Context, c client.Reader, namespace, service string) (bool, error) {
	se := &unstructured.Unstructured{}
	se.SetGroupVersionKind(ServiceExportGVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, se)
	switch {
	case err == nil:
		return se.GetDeletionTimestamp() == nil, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("reading ServiceExport %s/%s: %w", namespace, service, err)
}
