package mover

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// While a destination moves between clusters both publish its address; the
// one that stays answers once the other goes, whichever published last.
func TestAddressFollowsTheRemainingDestination(t *testing.T) {
	m := New(nil)
	const a = "10.96.0.1"
	m.register(a, endpoint{cluster: "primary"})
	m.register(a, endpoint{cluster: "dr"}) // the old destination reconciled once more
	e, ok := m.resolvePublished(a)
	require.True(t, ok)
	require.Equal(t, "dr", e.cluster)
	m.unregister(a, "dr") // and then went
	e, ok = m.resolvePublished(a)
	require.True(t, ok, "the new destination still answers")
	require.Equal(t, "primary", e.cluster)
	m.unregister(a, "primary")
	_, ok = m.resolvePublished(a)
	require.False(t, ok)
}
