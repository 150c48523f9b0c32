package remote_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// A connection outlives its API server: Answering must refuse it once the
// prober has found the cluster unreachable, though Get still hands it out.
func TestAnsweringRefusesAnUnreachableConnection(t *testing.T) {
	key := remote.Key{Namespace: "dr", Zone: "zone", Cluster: "primary"}
	cc := fake.New(scheme.New())

	_, err := remote.Answering(cc, key)
	require.ErrorIs(t, err, remote.ErrNotConnected, "never added")

	cc.Add(key)
	rc, err := remote.Answering(cc, key)
	require.NoError(t, err)
	require.Equal(t, key, rc.Key)

	cc.SetSynced(key, false)
	_, err = remote.Answering(cc, key)
	require.ErrorIs(t, err, remote.ErrNotConnected, "cache not synced")
	cc.SetSynced(key, true)

	cc.SetState(key, remote.Unreachable)
	_, err = cc.Get(key)
	require.NoError(t, err, "Get still returns the connection")
	_, err = remote.Answering(cc, key)
	require.ErrorIs(t, err, remote.ErrUnreachable)
	require.Contains(t, err.Error(), "primary")
	require.Contains(t, err.Error(), "connection refused", "the prober's cause is kept")

	cc.SetState(key, remote.Reachable)
	_, err = remote.Answering(cc, key)
	require.NoError(t, err)
}
