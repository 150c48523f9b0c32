package drbdsim_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// streamed follows site-a's events2 with the product's Streamer and Tracker
// and keeps the time of every peer-device line reporting a resync's progress.
type streamed struct {
	tr       *drbd.Tracker
	mu       sync.Mutex
	progress []time.Time
}

func (c *cluster) stream(t *testing.T, node string) *streamed {
	s := &streamed{tr: drbd.NewTracker()}
	ctx, cancel := context.WithCancel(context.Background())
	st := &drbd.Streamer{Exec: nodeExec{node: node, stateDir: c.stateDir}, DrbdsetupPath: c.setup,
		Handle: func(ev drbd.Event) {
			s.tr.Apply(ev)
			if ev.Kind == drbd.KindChange && ev.Has(drbd.FieldDone) {
				s.mu.Lock()
				s.progress = append(s.progress, time.Now())
				s.mu.Unlock()
			}
		}}
	done := make(chan struct{})
	go func() { _ = st.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *streamed) waitFor(t *testing.T, what string, cond func(drbd.ResourceStatus) bool) drbd.ResourceStatus {
	var last drbd.ResourceStatus
	require.Eventually(t, func() bool {
		r, ok := s.tr.Get(res)
		last = r
		return ok && cond(r)
	}, 15*time.Second, 10*time.Millisecond, what)
	return last
}

// TestStatisticsOnlyWithAStateChangeOrResyncProgress: events2 reports the
// out-of-sync figure with a state change and, during a resync, at most every
// 3 s. A Primary writing while its peer is away emits nothing: the stream
// keeps the figure of the disconnect, and only `status --json` tells the
// current one.
func TestStatisticsOnlyWithAStateChangeOrResyncProgress(t *testing.T) {
	c := newClusterWithQuorum(t, "C", "off")
	c.primaryInSync()
	s := c.stream(t, "site-a")
	s.waitFor(t, "connected and in sync", func(r drbd.ResourceStatus) bool {
		pd := peerPD(r)
		return pd.ReplicationState == "Established" && pd.PeerDiskState == "UpToDate"
	})

	require.NoError(t, c.fabric.Disconnect(res))
	s.waitFor(t, "the disconnect", func(r drbd.ResourceStatus) bool { return peerPD(r).ReplicationState == "Off" })
	require.NoError(t, c.fabric.Write(res, "site-a", 40))
	// A state change of the resource itself, after the writes: once the
	// stream shows it, it has passed the writes too.
	ctx := context.Background()
	require.NoError(t, c.adm4("site-a").Secondary(ctx, res))
	r := s.waitFor(t, "the demotion", func(r drbd.ResourceStatus) bool { return r.Role == "Secondary" })
	assert.Zero(t, peerPD(r).OutOfSyncBytes, "writes while the peer is away are not broadcast")
	assert.Equal(t, uint64(40<<10), peerPD(c.status("site-a")).OutOfSyncBytes, "status --json reads the current figure")

	// The resync: its start carries the figure, its progress comes every
	// 3 s, and its end (a state change) the zero.
	require.NoError(t, c.fabric.SetSyncRate(6))
	require.NoError(t, c.fabric.Connect(res))
	r = s.waitFor(t, "the resync's start", func(r drbd.ResourceStatus) bool { return peerPD(r).ReplicationState == "SyncSource" })
	assert.Greater(t, peerPD(r).OutOfSyncBytes, uint64(30<<10), "the start of the resync reports what it has to send")
	r = s.waitFor(t, "the resync's end", func(r drbd.ResourceStatus) bool { return peerPD(r).ReplicationState == "Established" })
	assert.Zero(t, peerPD(r).OutOfSyncBytes, "the end of the resync reports nothing out of sync (events2 omits out-of-sync:0)")
	s.mu.Lock()
	defer s.mu.Unlock()
	require.GreaterOrEqual(t, len(s.progress), 2, "a resync of about 7 s reports its progress")
	for i := 1; i < len(s.progress); i++ {
		gap := s.progress[i].Sub(s.progress[i-1])
		assert.GreaterOrEqual(t, gap, 2900*time.Millisecond, "progress report %d came %s after the one before", i, gap)
	}
}
