package flow

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func failoverTrail(fr *srv1alpha1.FailoverRequest, now time.Time) *Trail[srv1alpha1.FailoverPhase] {
	st := &fr.Status
	return &Trail[srv1alpha1.FailoverPhase]{Phase: &st.Phase, History: &st.PhaseHistory, Conditions: &st.Conditions,
		Message: &st.Message, CompletionTime: &st.CompletionTime, Generation: fr.Generation, Now: now,
		Terminals: Terminals[srv1alpha1.FailoverPhase]{Succeeded: srv1alpha1.FailoverCompleted, Failed: srv1alpha1.FailoverFailed}}
}

func TestTrail(t *testing.T) {
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	t0 := time.Unix(1000, 0)
	tr := failoverTrail(fr, t0)

	tr.Enter(srv1alpha1.FailoverPending, "waiting for the lock of %s", "g")
	require.Equal(t, srv1alpha1.FailoverPending, fr.Status.Phase)
	require.Equal(t, "waiting for the lock of g", fr.Status.Message)
	ready := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady)
	require.Equal(t, metav1.ConditionFalse, ready.Status)
	require.Equal(t, srv1alpha1.ReasonProgressing, ready.Reason)
	require.Equal(t, int64(3), ready.ObservedGeneration)
	require.False(t, tr.Terminal())

	tr.Wait(srv1alpha1.ReasonLockHeld, "group g is locked by %s", "other")
	ready = meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady)
	require.Equal(t, srv1alpha1.ReasonLockHeld, ready.Reason, "a wait is Ready=False with its reason")
	require.Equal(t, "group g is locked by other", ready.Message, "and the human message")
	require.Equal(t, "group g is locked by other", fr.Status.Message)
	require.Len(t, fr.Status.PhaseHistory, 1, "a wait is not a transition")

	tr.Now = t0.Add(time.Minute)
	tr.Enter(srv1alpha1.FailoverStoppingOnSource, "stopping")
	require.Equal(t, t0, tr.EnteredAt(srv1alpha1.FailoverPending))
	require.Equal(t, t0.Add(time.Minute), tr.EnteredAt(srv1alpha1.FailoverStoppingOnSource))
	require.Equal(t, tr.Now, tr.EnteredAt(srv1alpha1.FailoverStartingOnTarget), "a phase never entered: now")

	tr.Fail(srv1alpha1.ReasonDrainTimeout, "VMs did not stop")
	require.True(t, tr.Terminal())
	require.NotNil(t, fr.Status.CompletionTime)
	ready = meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady)
	require.Equal(t, srv1alpha1.ReasonDrainTimeout, ready.Reason)
	require.Equal(t, []Event{
		{Type: "Normal", Reason: "Pending", Message: "waiting for the lock of g"},
		{Type: "Normal", Reason: "StoppingOnSource", Message: "stopping"},
		{Type: "Warning", Reason: "Failed", Message: "VMs did not stop"},
	}, tr.Events)
}

func TestTrailTruncates(t *testing.T) {
	fr := &srv1alpha1.FailoverRequest{}
	tr := failoverTrail(fr, time.Unix(0, 0))
	tr.MaxMessage = 8
	tr.Enter(srv1alpha1.FailoverPending, "0123456789")
	require.Equal(t, "01234...", fr.Status.PhaseHistory[0].Message)
	require.Equal(t, "0123456789", tr.Events[0].Message, "the event keeps the whole message")
}

func TestTrailReport(t *testing.T) {
	fr := &srv1alpha1.FailoverRequest{}
	tr := failoverTrail(fr, time.Unix(0, 0))
	tr.Enter(srv1alpha1.FailoverWaitingForDRBD, "moving DRBD")

	tr.Report(errors.New("connection refused"))
	require.Equal(t, "moving DRBD", fr.Status.Message, "a plain error is left to the retry")

	tr.Report(Waiting(srv1alpha1.ReasonProgressing, time.Second, "2 of 3 promoted"))
	require.Equal(t, srv1alpha1.FailoverWaitingForDRBD, fr.Status.Phase)
	require.Equal(t, "2 of 3 promoted", meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Message)

	tr.Report(Stalled("NoReplicas", "no DRBDResources"))
	require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase)
	require.Equal(t, "NoReplicas", meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
}
