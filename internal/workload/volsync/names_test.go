package volsync_test

import (
	"fmt"
	"hash/crc32"
	"strings"
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

// The Service name follows VolSync's: the destination's name after the
// prefix, or its CRC-32 when the whole would exceed a DNS label.
func TestServiceName(t *testing.T) {
	require.Equal(t, "volsync-rsync-tls-dst-disk-0", volsync.ServiceName("disk-0"))
	require.Equal(t, "volsync-rsync-tls-dst-disk-0.ns.svc.clusterset.local", volsync.ClusterSetAddress("ns", "disk-0"))
	long := strings.Repeat("a", 42)
	got := volsync.ServiceName(long)
	require.Len(t, got, len("volsync-rsync-tls-dst-")+8)
	require.Equal(t, fmt.Sprintf("volsync-rsync-tls-dst-%08x", crc32.ChecksumIEEE([]byte(long))), got)
	require.Equal(t, "volsync-rsync-tls-dst-"+long[:41], volsync.ServiceName(long[:41]), "63 characters fit")
}
