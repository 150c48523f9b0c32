package flow

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// The conditions kstatus reads, set in one place for every kind.
//
// kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status, generic.go and status.go),
// which kubectl wait, Argo CD and Flux follow, computes an object's status in
// this order: a deletionTimestamp is Terminating; status.observedGeneration
// other than metadata.generation is InProgress; Reconciling=True is
// InProgress; Stalled=True is Failed; then Ready=True is Current and
// Ready=False or Unknown is InProgress. Reconciling and Stalled are
// "abnormal-true" conditions: absent means False.
//
// Every reconciler of the product therefore writes status.observedGeneration
// and, through DeriveKStatus, Reconciling and Stalled from its Ready
// condition:
//   - Ready=True: neither (Current);
//   - Ready=False or Unknown, and the object failed for good or holds for the
//     operator (srv1alpha1.NeedsOperator of Ready's reason): Stalled=True
//     (Failed);
//   - otherwise Reconciling=True (InProgress): the controller gets there on
//     its own.
// Both carry Ready's reason and message, so each tool shows the same words.

// DeriveKStatus sets Reconciling and Stalled from the Ready condition in conds,
// at generation gen; failed says the object failed for good (a request in its
// Failed phase), which is Stalled whatever the reason. Without a Ready
// condition it removes both: the controller has not reported yet, which
// kstatus reads from observedGeneration.
func DeriveKStatus(conds *[]metav1.Condition, gen int64, failed bool) {
	var ready metav1.Condition
	if c := meta.FindStatusCondition(*conds, srv1alpha1.ConditionReady); c != nil {
		ready = *c // a copy: the writes below may move the slice
	}
	stalled, reconciling := false, false
	if ready.Type != "" && ready.Status != metav1.ConditionTrue {
		stalled = failed || srv1alpha1.NeedsOperator(ready.Reason)
		reconciling = !stalled
	}
	setOrRemove(conds, srv1alpha1.ConditionReconciling, reconciling, ready, gen)
	setOrRemove(conds, srv1alpha1.ConditionStalled, stalled, ready, gen)
}

// SetReady sets Ready at generation gen, then Reconciling and Stalled as
// DeriveKStatus does.
func SetReady(conds *[]metav1.Condition, gen int64, status metav1.ConditionStatus, reason, message string, failed bool) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: srv1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
	})
	DeriveKStatus(conds, gen, failed)
}

// ReadyFrom sets Ready from the condition of type from, for a kind whose own
// conditions already say whether it reached its goal (a DRPolicy's Validated,
// a DRPlacementControl's Available, a VRG's DataReady, a ProtectionGroup's
// Synced), then Reconciling and Stalled as DeriveKStatus does. err is what
// stopped the reconcile, if anything: a Stalled Error makes the object
// Stalled. Without that condition, Ready is Unknown: not reported yet.
func ReadyFrom(conds *[]metav1.Condition, gen int64, from string, err error) {
	c := meta.FindStatusCondition(*conds, from)
	if c == nil {
		SetReady(conds, gen, metav1.ConditionUnknown, srv1alpha1.ReasonProgressing, from+" is not reported yet", false)
		return
	}
	e := As(err)
	SetReady(conds, gen, c.Status, c.Reason, c.Message, c.Status != metav1.ConditionTrue && e != nil && e.Terminal())
}

func setOrRemove(conds *[]metav1.Condition, typ string, on bool, ready metav1.Condition, gen int64) {
	if !on {
		meta.RemoveStatusCondition(conds, typ)
		return
	}
	// Ready's transition time, which came from the controller's clock: the
	// condition turned True when Ready turned False, as far as is known.
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: metav1.ConditionTrue, Reason: ready.Reason, Message: ready.Message, ObservedGeneration: gen,
		LastTransitionTime: ready.LastTransitionTime,
	})
}
