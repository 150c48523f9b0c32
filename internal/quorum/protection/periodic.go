package protection

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// periodicCheck is what a Protected request repairs at its periodic check
// (peerAuthDue: the claim re-check's schedule, or a rotation asked for),
// never on the steady reconciles in between: its peer-auth Secrets
// (maintainPeerAuth), and the labels of the primary's source PVCs, which a VM
// protected before the flow labelled them gets only here (labelSources adds
// what is missing and leaves a claim of another request alone). A failure is
// logged and tried again at the next check.
func (r *Reconciler) periodicCheck(ctx context.Context, req *srv1alpha1.ProtectionRequest) {
	s := newScope(req, r.now())
	if err := r.maintainPeerAuth(ctx, s); err != nil {
		log.FromContext(ctx).Info("DRBD peer secret not maintained", "error", err.Error())
	}
	if err := r.load(ctx, s); err != nil {
		return
	}
	if err := r.labelSources(ctx, s, s.sides()[0]); err != nil {
		log.FromContext(ctx).Info("source PVC labels not repaired", "error", err.Error())
	}
}
