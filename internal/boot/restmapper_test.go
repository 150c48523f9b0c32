package boot

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the lookups that reach the mapper it wraps.
type countingMapper struct {
	meta.RESTMapper
	lookups int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.lookups++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestRememberingMapper(t *testing.T) {
	gv := schema.GroupVersion{Group: "dr.siterecovery.trilio.io", Version: "v1alpha1"}
	discovered := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	discovered.Add(gv.WithKind("DRPlacementControl"), meta.RESTScopeNamespace)
	counting := &countingMapper{RESTMapper: discovered}
	m := &rememberingMapper{RESTMapper: counting}
	drpc := schema.GroupKind{Group: gv.Group, Kind: "DRPlacementControl"}

	for range 3 {
		got, err := m.RESTMapping(drpc, gv.Version)
		require.NoError(t, err)
		require.Equal(t, meta.RESTScopeNameNamespace, got.Scope.Name())
		require.Equal(t, "drplacementcontrols", got.Resource.Resource)
		got.Resource.Resource = "changed by a caller" // must not reach the next caller
	}
	require.Equal(t, 1, counting.lookups, "a found mapping is looked up once")

	later := schema.GroupKind{Group: gv.Group, Kind: "InstalledLater"}
	_, err := m.RESTMapping(later, gv.Version)
	require.True(t, meta.IsNoMatchError(err), "%v", err)
	discovered.Add(gv.WithKind("InstalledLater"), meta.RESTScopeRoot)
	got, err := m.RESTMapping(later, gv.Version)
	require.NoError(t, err, "a failure is not remembered: a kind whose CRD is installed later is found then")
	require.Equal(t, meta.RESTScopeNameRoot, got.Scope.Name())

	before := counting.lookups
	_, err = m.RESTMapping(drpc)
	require.NoError(t, err)
	require.Equal(t, before+1, counting.lookups, "a lookup by no version, or several, passes through")
}
