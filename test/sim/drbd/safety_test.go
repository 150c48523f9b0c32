package drbdsim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWatchPrimaries: two Primaries cut off from each other are allowed (a
// fenced source); the moment the link returns with both Primary is recorded.
func TestWatchPrimaries(t *testing.T) {
	inMemory = true
	defer func() { inMemory = false }()
	c := newCluster(t, "C")
	rec := c.fabric.WatchPrimaries(t)
	ctx := context.Background()
	c.bringUp("site-a", "site-b")
	require.NoError(t, c.fabric.MarkUpToDate(res, "site-a"))
	require.NoError(t, c.adm4("site-a").Primary(ctx, res, false))
	require.Error(t, c.adm4("site-b").Primary(ctx, res, true), "DRBD refuses a second Primary while connected")

	require.NoError(t, c.fabric.Disconnect(res))
	require.NoError(t, c.adm4("site-b").Primary(ctx, res, true))
	require.Empty(t, rec.Violations(), "two Primaries that cannot reach each other are not a split brain yet")

	require.NoError(t, c.fabric.Connect(res))
	v := rec.Violations()
	require.Len(t, v, 1)
	require.Contains(t, v[0], res+": site-a and site-b Primary while connected")
	require.Positive(t, rec.Changes())
}
