package protection

import (
	"k8s.io/apimachinery/pkg/api/meta"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// zoneTLS is the replication TLS the zone asks of new replicas, nil when it
// asks for none: a DRBDResource then carries no tls field at all, as before
// the option existed.
func zoneTLS(z *srv1alpha1.ProtectionZone) *srv1alpha1.DRBDReplicationTLS {
	if z == nil || z.Spec.DRBD == nil || !z.Spec.DRBD.TLS.Required() {
		return nil
	}
	return z.Spec.DRBD.TLS.DeepCopy()
}

// tlsHold is the agent's message on the first replica held because its node
// cannot do the TLS the zone requires, "" when none is: the request shows the
// operator what to install instead of an initial sync that never starts.
func tlsHold(replicas ...*srv1alpha1.DRBDResource) string {
	for _, r := range replicas {
		c := meta.FindStatusCondition(r.Status.Conditions, srv1alpha1.ConditionConfigured)
		if c != nil && c.Status != "True" && c.Reason == srv1alpha1.ReasonReplicationTLSUnsupported {
			return c.Message
		}
	}
	return ""
}
