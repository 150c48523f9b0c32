package testfailover

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A frozen source makes a test point Application only where every DR copy
// holds what the source completed: DRBD replicas (protocol A ones once
// drained, which the cut waits for). VolSync destinations are named, and the
// point stays Crash.
func TestWhyUnfreezable(t *testing.T) {
	onDRBD := func(vm string) disk {
		return disk{vm: vm, namespace: "apps", volume: "root", source: &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: vm + "-disk", Labels: map[string]string{srv1alpha1.ObjectRoleLabel: backingRoleValue}}}}
	}
	onVolSync := func(vm string) disk {
		return disk{vm: vm, namespace: "apps", volume: "root", source: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: vm + "-disk"}}}
	}

	require.Empty(t, whyUnfreezable([]disk{onDRBD("db"), onDRBD("web"), onDRBD("web")}), "DRBD replicas of either protocol may be frozen for")

	why := whyUnfreezable([]disk{onVolSync("db"), onDRBD("web")})
	require.Contains(t, why, "VMs apps/db are VolSync destinations")
	require.Contains(t, why, "lastPoint from VolSyncCycle")
	require.NotContains(t, why, "apps/web")
}
