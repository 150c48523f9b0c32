package failover

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func terminal(p srv1alpha1.FailoverPhase) bool { return phases.IsTerminal(p) }

// progressOnly reports whether two statuses differ in what a wait reports
// alone: the message, which a waiting Ready condition repeats, and with it
// Reconciling or Stalled.
func progressOnly(before, after *srv1alpha1.FailoverRequestStatus) bool {
	b := before.DeepCopy()
	b.Message = after.Message
	for _, t := range []string{srv1alpha1.ConditionReady, srv1alpha1.ConditionReconciling, srv1alpha1.ConditionStalled} {
		cb := meta.FindStatusCondition(b.Conditions, t)
		ca := meta.FindStatusCondition(after.Conditions, t)
		if cb != nil && ca != nil && cb.Status == ca.Status && cb.Reason == ca.Reason {
			cb.Message = ca.Message
		}
	}
	return equality.Semantic.DeepEqual(*b, *after)
}
