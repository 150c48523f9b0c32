package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestRestoredImage: the message names the restored sync's time and how old
// it was, or says that no complete sync was recorded.
func TestRestoredImage(t *testing.T) {
	z := &srv1alpha1.ProtectionZone{Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendVolSync}}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "app"}}
	d.Status.LastGroupSyncTime = &metav1.Time{Time: now.Add(-90 * time.Second)}
	msg := restoredImage(z, "app", d, now)
	require.Contains(t, msg, "VolSync backend")
	require.Contains(t, msg, "restored from its last complete sync at 2026-12-01T09:58:30Z (1m30s before the failover completed)")
	require.Contains(t, msg, "writes after 2026-12-01T09:58:30Z are lost")

	d.Status.LastGroupSyncTime = nil
	require.Contains(t, restoredImage(z, "app", d, now), "recorded no complete sync of group app")
}
