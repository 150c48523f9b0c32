package vrg

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
)

// A primary whose cycle cannot reach its peer keeps its PVCs usable: DataReady
// stays True (an unplanned failover with the link down must complete on it)
// and DataProtected names the failure; the next successful cycle clears it.
func TestVolSyncFailingCycleOnPrimaryIsAProtectionProblem(t *testing.T) {
	v := &drv1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", Generation: 1}}
	v.Spec.ReplicationState = drv1alpha1.Primary
	last := metav1.Now()
	source := &drv1alpha1.ReplicationGroupSource{ObjectMeta: metav1.ObjectMeta{Name: "g-cephfs", Namespace: "ns"}}
	source.Status.Conditions = []metav1.Condition{{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: rgs.ReasonSourceFailing,
		Message: "ReplicationSource failing for PVC disk: cannot connect to peer"}}
	s := &scope{vrg: v, before: v.DeepCopy(), pvcsProcessed: true, sources: []*drv1alpha1.ReplicationGroupSource{source}}

	setVolSyncStatus(s)
	ready := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataReady)
	protected := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
	require.Equal(t, metav1.ConditionTrue, ready.Status, ready.Message)
	require.Equal(t, metav1.ConditionFalse, protected.Status)
	require.Equal(t, drv1alpha1.ReasonError, protected.Reason)
	require.Contains(t, protected.Message, "PVC disk: cannot connect to peer")

	source.Status.LastSyncTime = &last
	source.Status.Conditions[0] = metav1.Condition{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: rgs.ReasonIdle}
	setVolSyncStatus(s)
	require.True(t, meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataReady))
	require.True(t, meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataProtected))
}

// Every cycle passes through the snapshot, the restores and the sync; a
// primary that completed a cycle stays DataProtected while the next one waits
// in those steps, and only a failure turns it False.
func TestVolSyncNormalCycleStepsKeepDataProtected(t *testing.T) {
	v := &drv1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", Generation: 1}}
	v.Spec.ReplicationState = drv1alpha1.Primary
	last := metav1.Now()
	source := &drv1alpha1.ReplicationGroupSource{ObjectMeta: metav1.ObjectMeta{Name: "g-cephfs", Namespace: "ns"}}
	source.Status.LastSyncTime = &last
	s := &scope{vrg: v, before: v.DeepCopy(), pvcsProcessed: true, sources: []*drv1alpha1.ReplicationGroupSource{source}}
	for _, step := range []struct{ reason, message string }{
		{rgs.ReasonSnapshotNotReady, "cycle g-1: taking a snapshot of 8 PVCs"},
		{rgs.ReasonRestoreNotBound, "cycle g-1: restored PVCs not bound yet: g-disk-1 (from snap-1)"},
		{srv1alpha1.ReasonSyncing, "cycle g-1: 1 of 2 PVCs synced, waiting for disk-1"},
	} {
		source.Status.Conditions = []metav1.Condition{{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: step.reason, Message: step.message}}
		setVolSyncStatus(s)
		protected := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
		require.Equal(t, metav1.ConditionTrue, protected.Status, "%s: %s", step.reason, protected.Message)
	}
	source.Status.Conditions = []metav1.Condition{{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: srv1alpha1.ReasonSnapshotFailed,
		Message: "VolumeGroupSnapshot g-1 failed: driver error"}}
	setVolSyncStatus(s)
	protected := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
	require.Equal(t, metav1.ConditionFalse, protected.Status)
	require.Contains(t, protected.Message, "driver error")
}
