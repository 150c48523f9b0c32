package boot

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewRESTMapper is the RESTMapper of every siterecovery manager:
// controller-runtime's lazy discovery mapper, with the mappings it found
// remembered.
//
// A cache scoped to namespaces asks the mapper whether a kind is namespaced on
// every Get and List. The discovery mapper answers by searching every API
// group it knows. While the 50 peers of a global group recorded their
// consensus (BenchmarkConsensusLatency), that search was 9 % of the
// controllers' CPU and 21 % of what they allocated.
func NewRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &rememberingMapper{RESTMapper: m}, nil
}

// rememberingMapper remembers each mapping its RESTMapper found for one
// version of a kind. A remembered mapping is as fresh as the mapper's own: the
// discovery mapper never forgets an API group it loaded either, and the scope
// and resource of a kind's version do not change while its definition exists
// (a CRD's scope is immutable). Failures are not remembered, so that a kind
// whose CRD is installed later is found then.
type rememberingMapper struct {
	meta.RESTMapper
	mappings sync.Map // versionedKind → meta.RESTMapping
}

type versionedKind struct {
	kind    schema.GroupKind
	version string
}

// RESTMapping implements meta.RESTMapper. A lookup by one version, the only
// kind the clients and caches make, is remembered; others pass through.
func (m *rememberingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := versionedKind{kind: gk, version: versions[0]}
	if v, ok := m.mappings.Load(key); ok {
		mapping := v.(meta.RESTMapping) // a copy: callers may not share one
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mappings.Store(key, *mapping)
	return mapping, nil
}
