package flow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// compute is what kstatus (and so kubectl wait, Argo CD, Flux) makes of obj.
func compute(t *testing.T, obj runtime.Object) status.Status {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	res, err := status.Compute(&unstructured.Unstructured{Object: u})
	require.NoError(t, err)
	return res.Status
}

func zoneWithReady(gen, observed int64, st metav1.ConditionStatus, reason string, failed bool) *srv1alpha1.ProtectionZone {
	z := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Name: "z", Generation: gen}}
	z.Status.ObservedGeneration = observed
	SetReady(&z.Status.Conditions, gen, st, reason, "msg", failed)
	return z
}

func TestSetReadyIsReadByKStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status metav1.ConditionStatus
		reason string
		failed bool
		want   status.Status
	}{
		{"ready", metav1.ConditionTrue, srv1alpha1.ReasonReconciled, false, status.CurrentStatus},
		{"on its way", metav1.ConditionFalse, srv1alpha1.ReasonProgressing, false, status.InProgressStatus},
		{"not reported yet", metav1.ConditionUnknown, srv1alpha1.ReasonProgressing, false, status.InProgressStatus},
		{"a cluster that does not answer", metav1.ConditionFalse, srv1alpha1.ReasonClusterUnreachable, false, status.InProgressStatus},
		{"a spec the operator must fix", metav1.ConditionFalse, srv1alpha1.ReasonInvalidSpec, false, status.FailedStatus},
		{"a hold for the operator's confirmation", metav1.ConditionFalse, srv1alpha1.ReasonTargetDiverged, false, status.FailedStatus},
		{"failed for good", metav1.ConditionFalse, srv1alpha1.ReasonDrainTimeout, true, status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, compute(t, zoneWithReady(2, 2, tc.status, tc.reason, tc.failed)))
		})
	}
	t.Run("a generation not observed yet", func(t *testing.T) {
		require.Equal(t, status.InProgressStatus, compute(t, zoneWithReady(3, 2, metav1.ConditionTrue, srv1alpha1.ReasonReconciled, false)))
	})
}

func TestDeriveKStatusFollowsReady(t *testing.T) {
	z := zoneWithReady(1, 1, metav1.ConditionFalse, srv1alpha1.ReasonSecretNotFound, false)
	conds := &z.Status.Conditions
	stalled := findCondition(*conds, srv1alpha1.ConditionStalled)
	require.NotNil(t, stalled)
	require.Equal(t, srv1alpha1.ReasonSecretNotFound, stalled.Reason, "Stalled carries Ready's reason")
	require.Equal(t, "msg", stalled.Message, "and its message")
	require.Nil(t, findCondition(*conds, srv1alpha1.ConditionReconciling))

	SetReady(conds, 1, metav1.ConditionFalse, srv1alpha1.ReasonAPIServerDown, "down", false)
	require.Nil(t, findCondition(*conds, srv1alpha1.ConditionStalled), "fixed Secret: no longer Stalled")
	require.Equal(t, srv1alpha1.ReasonAPIServerDown, findCondition(*conds, srv1alpha1.ConditionReconciling).Reason)

	SetReady(conds, 1, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable, "up", false)
	require.Nil(t, findCondition(*conds, srv1alpha1.ConditionStalled))
	require.Nil(t, findCondition(*conds, srv1alpha1.ConditionReconciling), "Ready: neither, as kstatus expects")
	require.Equal(t, status.CurrentStatus, compute(t, z))
}

func TestReadyFrom(t *testing.T) {
	var conds []metav1.Condition
	ReadyFrom(&conds, 4, srv1alpha1.ConditionValidated, nil)
	ready := findCondition(conds, srv1alpha1.ConditionReady)
	require.Equal(t, metav1.ConditionUnknown, ready.Status, "no Validated yet: Ready is Unknown")

	conds = append(conds, metav1.Condition{Type: srv1alpha1.ConditionValidated, Status: metav1.ConditionFalse, Reason: "ZoneNotFound", Message: "no zone"})
	ReadyFrom(&conds, 4, srv1alpha1.ConditionValidated, Stalled(srv1alpha1.ReasonZoneNotFound, "no zone"))
	require.Equal(t, "no zone", findCondition(conds, srv1alpha1.ConditionReady).Message)
	require.NotNil(t, findCondition(conds, srv1alpha1.ConditionStalled), "a Stalled error stalls the object")

	ReadyFrom(&conds, 4, srv1alpha1.ConditionValidated, Waiting(srv1alpha1.ReasonClusterUnreachable, time.Second, "down"))
	require.Nil(t, findCondition(conds, srv1alpha1.ConditionStalled))
	require.NotNil(t, findCondition(conds, srv1alpha1.ConditionReconciling), "a wait is Reconciling")
}

// TestTrailKStatus: a request reads InProgress while it runs or waits, Failed
// once it failed, Current once it succeeded, never InProgress after it ended.
func TestTrailKStatus(t *testing.T) {
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Name: "f", Generation: 1}}
	fr.Status.ObservedGeneration = 1
	tr := failoverTrail(fr, time.Unix(1000, 0))
	tr.Enter(srv1alpha1.FailoverPending, "waiting for the lock")
	require.Equal(t, status.InProgressStatus, compute(t, fr))
	tr.Wait(srv1alpha1.ReasonLockHeld, "locked")
	require.Equal(t, status.InProgressStatus, compute(t, fr))
	tr.Wait(srv1alpha1.ReasonSourcePrimaryConnected, "fencing required")
	require.Equal(t, status.FailedStatus, compute(t, fr), "a hold for the operator is Stalled")
	tr.Enter(srv1alpha1.FailoverWaitingForDRBD, "fenced; promoting")
	require.Equal(t, status.InProgressStatus, compute(t, fr), "the operator acted: in progress again")

	failed := fr.DeepCopy()
	ftr := failoverTrail(failed, time.Unix(1001, 0))
	ftr.Fail(srv1alpha1.ReasonBootTimeout, "VMs did not boot")
	require.Equal(t, status.FailedStatus, compute(t, failed))

	tr.Succeed(srv1alpha1.ReasonFailoverCompleted, "done")
	require.Equal(t, status.CurrentStatus, compute(t, fr))
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
