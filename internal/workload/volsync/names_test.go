package volsync_test

import (
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// Each interval cron can honour maps to a schedule whose runs are exactly
// that far apart, over a span that crosses hours, days, a month and a
// year's end; any other is refused with the intervals that are honoured,
// not rounded (90m ran hourly, 59m at :00 and :59).
func TestSchedule(t *testing.T) {
	for in, want := range map[string]string{"1m": "*/1 * * * *", "5m": "*/5 * * * *", "30m": "*/30 * * * *", "60m": "0 */1 * * *",
		"120m": "0 */2 * * *", "1h": "0 */1 * * *", "8h": "0 */8 * * *", "12h": "0 */12 * * *", "24h": "0 0 * * *", "1d": "0 0 * * *", "7d": "0 0 * * 0"} {
		got, err := volsync.Schedule(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		every, err := volsync.ParseInterval(in)
		require.NoError(t, err)
		at := time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC)
		for range 400 {
			next, err := volsync.NextRun(got, at)
			require.NoError(t, err)
			require.Equal(t, every, next.Sub(at), "%s (%s) after %s", in, got, at)
			at = next
		}
	}
	for _, bad := range []string{"59m", "45m", "7m", "90m", "5h", "25h", "2d", "30d"} {
		_, err := volsync.Schedule(bad)
		require.ErrorContains(t, err, "schedulingInterval "+bad+" cannot be honoured by VolSync's cron schedule, which repeats evenly only every 1, 2, 3", bad)
	}
	for _, bad := range []string{"0m", "5s", "m", ""} {
		_, err := volsync.Schedule(bad)
		require.ErrorContains(t, err, "is not <number><m|h|d>", bad)
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

// A group a VRG owns uses the VRG's key, which the quorum tier copies to
// both clusters; a group of its own uses its own.
func TestKeySecretName(t *testing.T) {
	own := &metav1.ObjectMeta{Name: "cg"}
	require.Equal(t, "cg-vs-secret", volsync.KeySecretName(own))
	require.Equal(t, volsync.PSKSecretName("cg"), volsync.KeySecretName(own))
	owned := &metav1.ObjectMeta{Name: "cg", Labels: map[string]string{volsync.VRGLabel: "app"}}
	require.Equal(t, "app-vs-secret", volsync.KeySecretName(owned))
	require.Equal(t, "cg-disk-0", volsync.RestoredPVCName("disk-0"), "the restored PVC of disk-0")
}

// Each unit of a schedulingInterval maps to its duration; a count that is
// not positive or a unit other than m, h and d is refused with the form.
func TestParseInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{"1m": time.Minute, "30m": 30 * time.Minute, "6h": 6 * time.Hour, "2d": 48 * time.Hour} {
		got, err := volsync.ParseInterval(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"-1m", "0h", "5w", "5", "h5", "5mm"} {
		_, err := volsync.ParseInterval(bad)
		require.ErrorContains(t, err, "is not <number><m|h|d>", bad)
	}
	_, err := volsync.NextRun("not a schedule", time.Now())
	require.Error(t, err)
}
