package nodeagent

import (
	"context"
	"fmt"
	"sync"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
)

// tlsRetry is how soon a replica held for missing TLS support asks the node's
// DRBD again: installing a newer module or drbd-utils wakes no reconcile.
const tlsRetry = time.Minute

// tlsProbe remembers a node's answer that it supports TLS: modules and tools
// are not downgraded under a running agent. A missing feature is asked again
// at each retry, so an upgrade is noticed without restarting the agent.
type tlsProbe struct {
	mu sync.Mutex
	ok bool
}

// replicationTLS is the TLS to render for obj, nil when its spec asks for
// none. With TLS required it first asks the node's DRBD whether it can do
// TLS: an older drbdadm refuses the file, and an older module would be asked
// to connect without it. It never lets the replica connect in plain text
// instead: it holds it with Configured=False ReplicationTLSUnsupported,
// naming the node, what was found and what to install.
func (r *Reconciler) replicationTLS(ctx context.Context, obj *srv1alpha1.DRBDResource) (*drbd.TLS, error) {
	spec := obj.Spec.TLS
	if !spec.Required() {
		return nil, nil
	}
	tls := &drbd.TLS{Keyring: spec.Keyring, PrivKey: spec.PrivateKey, Certificate: spec.Certificate}
	r.tls.mu.Lock()
	defer r.tls.mu.Unlock()
	if r.tls.ok {
		return tls, nil
	}
	support, err := r.Adm.TLSSupport(ctx)
	if err != nil {
		return nil, waitOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonReplicationTLSUnsupported, tlsRetry, err,
			fmt.Sprintf("node %s: replication TLS is required, and the node's DRBD could not be asked whether it supports it (%s); the replica is not connected",
				r.Config.NodeName, drbdMessage(err)))
	}
	if !support.OK() {
		return nil, waitOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonReplicationTLSUnsupported, tlsRetry, nil,
			fmt.Sprintf("node %s: the zone requires TLS on the replication link, and this node's DRBD cannot do it: %s. The replica is not connected, never in plain text. Install DRBD kernel module >= %s and drbd-utils >= %s (in the drbd-node-agent image), and run tlshd (ktls-utils) on the node with its certificate and key",
				r.Config.NodeName, support.Missing(), drbd.MinTLSKernel, drbd.MinTLSUtils))
	}
	r.tls.ok = true
	return tls, nil
}
