package volsync_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

func TestSchedule(t *testing.T) {
	for in, want := range map[string]string{"5m": "*/5 * * * *", "2h": "0 */2 * * *", "1d": "0 0 */1 * *"} {
		got, err := volsync.Schedule(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"0m", "5s", "m", ""} {
		_, err := volsync.Schedule(bad)
		require.Error(t, err, bad)
	}
	next, err := volsync.NextRun("*/5 * * * *", time.Date(2026, 1, 1, 10, 3, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC), next)
}
