// Package fence reads the DRBD lost-quorum taint the node agent puts on a
// node whose replica lost quorum: pg-controller reports the tainted nodes of
// a group, and a failover checks them before it promotes beside another
// group's fence. Both tiers read it; only the agent and a forced failover
// change it.
package fence

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Tainted reports whether the node carries the lost-quorum taint.
func Tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == srv1alpha1.LostQuorumTaintKey })
}

// TaintedNodes lists, sorted, the replicas' nodes that carry the lost-quorum
// taint. A node that does not exist carries none.
func TaintedNodes(ctx context.Context, c client.Reader, replicas []srv1alpha1.DRBDResource, opts ...client.GetOption) ([]string, error) {
	var out []string
	for _, res := range replicas {
		n := res.Spec.NodeName
		if n == "" || slices.Contains(out, n) {
			continue
		}
		node := &corev1.Node{}
		switch err := c.Get(ctx, client.ObjectKey{Name: n}, node, opts...); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading node %s: %w", n, err)
		}
		if Tainted(node) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
