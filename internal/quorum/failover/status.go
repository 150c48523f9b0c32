package failover

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ReasonClusterUnreachable (Ready=False, a wait): a workload cluster the
// current phase needs cannot be reached yet.
const ReasonClusterUnreachable = "ClusterUnreachable"

func terminal(p srv1alpha1.FailoverPhase) bool { return phases.IsTerminal(p) }

// progressOnly reports whether two statuses differ in what a wait reports
// alone: the message, which a waiting Ready condition repeats.
func progressOnly(before, after *srv1alpha1.FailoverRequestStatus) bool {
	b := before.DeepCopy()
	b.Message = after.Message
	rb := meta.FindStatusCondition(b.Conditions, srv1alpha1.ConditionReady)
	ra := meta.FindStatusCondition(after.Conditions, srv1alpha1.ConditionReady)
	if rb != nil && ra != nil && rb.Status == ra.Status && rb.Reason == ra.Reason {
		rb.Message = ra.Message
	}
	return equality.Semantic.DeepEqual(*b, *after)
}
