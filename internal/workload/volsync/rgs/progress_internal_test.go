package rgs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// A young step reports one message however its PVCs progress, so that a
// normal cycle writes its status once per step; a step that holds longer than
// HoldAfter names the PVCs it waits on, and a failure is named at once.
func TestCycleStepReportsOneMessageUntilItHolds(t *testing.T) {
	r := &Reconciler{}
	g := &drv1alpha1.ReplicationGroupSource{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}}
	g.Status.CurrentVolumeGroupSnapshot = "g-abcde"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	members := map[string]string{}
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	for _, p := range []string{"disk-0", "disk-1"} {
		members[p] = "snap-" + p
		pvcs[p] = &corev1.PersistentVolumeClaim{}
	}
	ready := func(at time.Duration, err error) (metav1.Condition, time.Duration) {
		s := &scope{rgs: g, now: t0.Add(at), pvcs: pvcs, members: members}
		recheck := r.setReady(s, err)
		return *meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionReady), recheck
	}
	restoring := func(unbound string) error {
		return flow.Waiting(ReasonRestoreNotBound, poll, "restored PVCs not bound yet: %s", unbound)
	}

	c, recheck := ready(0, restoring("disk-0, disk-1"))
	require.Equal(t, ReasonRestoreNotBound, c.Reason)
	require.Equal(t, "cycle g-abcde: restoring 2 PVCs", c.Message)
	require.Equal(t, DefaultHoldAfter, recheck, "looks again when the summary is due to turn into the detail")
	c, recheck = ready(5*time.Second, restoring("disk-1"))
	require.Equal(t, "cycle g-abcde: restoring 2 PVCs", c.Message, "one PVC bound: the message stays")
	require.Equal(t, 10*time.Second, recheck)
	c, recheck = ready(DefaultHoldAfter, restoring("disk-1"))
	require.Equal(t, "cycle g-abcde: restored PVCs not bound yet: disk-1", c.Message)
	require.Zero(t, recheck)

	// The next step starts its own hold.
	syncing := flow.Waiting(srv1alpha1.ReasonSyncing, 0, "1 of 2 PVCs synced, waiting for disk-1")
	c, _ = ready(16*time.Second, syncing)
	require.Equal(t, srv1alpha1.ReasonSyncing, c.Reason)
	require.Equal(t, "cycle g-abcde: syncing 2 PVCs", c.Message)
	c, _ = ready(31*time.Second, syncing)
	require.Equal(t, "cycle g-abcde: 1 of 2 PVCs synced, waiting for disk-1", c.Message)

	// A failure is named at once.
	c, recheck = ready(32*time.Second, flow.Waiting(ReasonSourceFailing, poll, "ReplicationSource failing for PVC disk-1: connection reset"))
	require.Equal(t, ReasonSourceFailing, c.Reason)
	require.Contains(t, c.Message, "PVC disk-1: connection reset")
	require.Zero(t, recheck)
	// and a step after it starts a new hold rather than inheriting the old one.
	c, _ = ready(33*time.Second, syncing)
	require.Equal(t, "cycle g-abcde: syncing 2 PVCs", c.Message)

	// A new cycle in the same step is a new step.
	g.Status.CurrentVolumeGroupSnapshot = "g-fghij"
	c, _ = ready(60*time.Second, syncing)
	require.Equal(t, "cycle g-fghij: syncing 2 PVCs", c.Message)
}

func TestCycleStepsAreNotProblems(t *testing.T) {
	for _, reason := range []string{ReasonSnapshotNotReady, ReasonRestoreNotBound, srv1alpha1.ReasonSyncing} {
		require.True(t, IsCycleStep(reason), reason)
	}
	for _, reason := range []string{srv1alpha1.ReasonSnapshotFailed, ReasonSourceFailing, ReasonNoGroupSnapshotClass, ReasonMixedStorageClasses, "RestoreFailed"} {
		require.False(t, IsCycleStep(reason), reason)
	}
}
