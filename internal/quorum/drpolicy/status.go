package drpolicy

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

type transition struct{ kind, reason, message string }

// setValidated sets the Validated condition; an unchanged status keeps its time.
func setValidated(p *drv1alpha1.DRPolicy, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
		Type: srv1alpha1.ConditionValidated, Status: status, Reason: reason, Message: message, ObservedGeneration: p.Generation,
	})
}

// validatedTransition is the event for a change of the Validated condition's
// status or reason; a changed message alone (another peer-class count) is not a
// transition.
func validatedTransition(before, after *drv1alpha1.DRPolicy) (transition, bool) {
	now := meta.FindStatusCondition(after.Status.Conditions, srv1alpha1.ConditionValidated)
	if now == nil {
		return transition{}, false
	}
	was := meta.FindStatusCondition(before.Status.Conditions, srv1alpha1.ConditionValidated)
	if was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return transition{}, false
	}
	kind := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	return transition{kind: kind, reason: now.Reason, message: now.Message}, true
}

func joinClusters(p *drv1alpha1.DRPolicy) string { return strings.Join(p.Spec.DRClusters, " and ") }
