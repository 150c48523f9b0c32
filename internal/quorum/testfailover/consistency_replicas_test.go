package testfailover

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A frozen source makes a test point Application only where every DR copy
// holds what the source completed: DRBD protocol C replicas. Protocol A
// replicas and VolSync destinations are named, and the point stays Crash.
func TestWhyUnfreezable(t *testing.T) {
	onDRBD := func(vm string) disk {
		return disk{vm: vm, namespace: "apps", volume: "root", source: &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: vm + "-disk", Labels: map[string]string{srv1alpha1.ObjectRoleLabel: backingRoleValue}}}}
	}
	onVolSync := func(vm string) disk {
		return disk{vm: vm, namespace: "apps", volume: "root", source: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: vm + "-disk"}}}
	}
	c, a := srv1alpha1.ProtocolC, srv1alpha1.ProtocolA

	require.Empty(t, whyUnfreezable([]disk{onDRBD("db"), onDRBD("web")}, map[string]srv1alpha1.ReplicationProtocol{"apps/db": c, "apps/web": c}))

	why := whyUnfreezable([]disk{onDRBD("db"), onDRBD("web"), onDRBD("web")}, map[string]srv1alpha1.ReplicationProtocol{"apps/db": c, "apps/web": a})
	require.Contains(t, why, "VMs apps/web replicate with DRBD protocol A")
	require.Contains(t, why, "spec.replication.protocol C")
	require.NotContains(t, why, "apps/db")

	why = whyUnfreezable([]disk{onVolSync("db")}, nil)
	require.Contains(t, why, "VMs apps/db are VolSync destinations")
	require.Contains(t, why, "lastPoint from VolSyncCycle")

	// A replica whose protocol is unset (an older release's) is not taken
	// for synchronous.
	require.Contains(t, whyUnfreezable([]disk{onDRBD("db")}, map[string]srv1alpha1.ReplicationProtocol{"apps/db": ""}), "protocol A")
}
