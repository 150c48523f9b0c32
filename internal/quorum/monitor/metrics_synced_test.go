package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestRecordSynced: a group replicated in cycles exports its interval and
// last complete sync, which the lag alerts compare with; a storage that
// replicates on its own exports neither, and a deleted group loses both.
func TestRecordSynced(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	last := time.Unix(1_800_000_000, 0)
	m.recordSynced("app", &Synced{Backend: srv1alpha1.BackendVolSync, Interval: 5 * time.Minute, LastSyncTime: &last})
	require.NoError(t, testutil.CollectAndCompare(m.syncInterval, strings.NewReader(`
# HELP siterecovery_replication_sync_interval_seconds The scheduling interval of a group replicated in cycles (VolSync, Offloaded), in seconds; absent when the storage replicates on its own.
# TYPE siterecovery_replication_sync_interval_seconds gauge
siterecovery_replication_sync_interval_seconds{backend="VolSync",protection_group="app"} 300
`)))
	require.Equal(t, float64(last.Unix()), testutil.ToFloat64(m.lastSync.WithLabelValues("app", "VolSync")))

	m.recordSynced("app", &Synced{Backend: srv1alpha1.BackendOffloaded})
	require.Zero(t, testutil.CollectAndCount(m.syncInterval))
	require.Zero(t, testutil.CollectAndCount(m.lastSync))

	m.recordSynced("app", &Synced{Backend: srv1alpha1.BackendVolSync, Interval: time.Minute, LastSyncTime: &last})
	m.forget("app")
	require.Zero(t, testutil.CollectAndCount(m.syncInterval))
	require.Zero(t, testutil.CollectAndCount(m.lastSync))
}
