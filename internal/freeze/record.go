package freeze

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// RecordLastPoint writes p as the group's status.consistency.lastPoint and
// returns the group as written. The merge patch carries that one field and
// no optimistic lock: the point was cut already, and a conflict with another
// writer of the group's status must not lose it, since the flow that cut it
// does not cut again.
func RecordLastPoint(ctx context.Context, c client.Client, group *srv1alpha1.ProtectionGroup, p *srv1alpha1.ConsistencyPoint) (*srv1alpha1.ProtectionGroup, error) {
	g := group.DeepCopy()
	if g.Status.Consistency == nil {
		g.Status.Consistency = &srv1alpha1.ConsistencyStatus{}
	}
	g.Status.Consistency.LastPoint = p.DeepCopy()
	if err := c.Status().Patch(ctx, g, client.MergeFrom(group)); err != nil {
		return nil, fmt.Errorf("recording the consistency point in ProtectionGroup %s: %w", group.Name, err)
	}
	return g, nil
}
