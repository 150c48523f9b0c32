package nodeagent

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Coalescer bounds the agent's status writes: per resource at most one write
// per interval, only when the status differs semantically from the last one
// written, and never dropping the last change (a trailing write). It is the
// pacer of the agent's flow.StatusWriter.
type Coalescer = flow.Coalescer[srv1alpha1.DRBDResourceStatus]

// NewCoalescer returns a Coalescer allowing one write per interval per key,
// comparing statuses as StatusEqual does.
func NewCoalescer(clk clock.PassiveClock, interval time.Duration) *Coalescer {
	return flow.NewCoalescer(clk, interval, normalise)
}

// StatusEqual compares two statuses semantically, ignoring lastUpdateTime and the
// conditions' lastTransitionTime (which a stale cached copy may disagree on).
func StatusEqual(a, b *srv1alpha1.DRBDResourceStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equality.Semantic.DeepEqual(normalise(a), normalise(b))
}

// normalise returns a deep copy without the fields StatusEqual ignores.
func normalise(st *srv1alpha1.DRBDResourceStatus) srv1alpha1.DRBDResourceStatus {
	out := *st.DeepCopy()
	out.LastUpdateTime = nil
	for i := range out.Conditions {
		out.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return out
}
