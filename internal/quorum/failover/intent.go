package failover

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// The DRBD role of a group moves through its workload copies: each step of a
// failover writes the role it wants of the group's replicas on a cluster once,
// as spec.drbd of that cluster's ProtectionGroup, and the cluster's
// pg-controller sets it on every DRBDResource of the group. The agents then
// report each replica's role, which this controller reads from the remote cache.

// secondaryIntent demotes a group's replicas; the quorum of a secondary
// (QuorumForRole) fences them in the same step.
func secondaryIntent() srv1alpha1.GroupDRBDIntent {
	q := srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	return srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RoleSecondary, Quorum: &q}
}

// primaryIntent promotes a group's replicas with the primary's quorum (off).
func primaryIntent() srv1alpha1.GroupDRBDIntent {
	q := srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
	return srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RolePrimary, Quorum: &q}
}

// promotionIntent is the promotion a request asks of the target. A planned
// failover promotes only promotable replicas whose peer is Secondary, so the
// primary's quorum goes with the role. An unplanned one may force, where DRBD
// refuses or would refuse (pg-controller decides per replica), and keeps each
// replica's quorum until all are Primary (startingOnTarget drops it then): a
// forced promotion must be decided on the state DRBD had, not race with a
// quorum change.
func promotionIntent(s *scope) srv1alpha1.GroupDRBDIntent {
	if s.unplanned() {
		return srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RolePrimary, Force: true}
	}
	return primaryIntent()
}

// setIntent applies spec.drbd of the group's copy on a cluster, unless the
// copy asks it already: the cached copy first (a phase calls this on each of
// its reconciles), then the API server's, which the apply needs anyway. It
// applies under StepFieldOwner, with the desiredState the copy has (so that
// the manager keeps it), and fails rather than overwrites one changed since
// it was read.
func setIntent(ctx context.Context, rc *remote.Remote, namespace, group string, want srv1alpha1.GroupDRBDIntent) error {
	if cached, err := workloadGroup(ctx, rc, namespace, group); err == nil && asks(cached, want) {
		return nil
	}
	pg := &srv1alpha1.ProtectionGroup{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: group}, pg); err != nil {
		return fmt.Errorf("reading ProtectionGroup %s on %s to ask DRBD role %s: %w", group, rc.Key.Cluster, want.Role, err)
	}
	if asks(pg, want) {
		return nil
	}
	_, err := applyStep(ctx, rc, namespace, group, groupStep{state: pg.Spec.DesiredState, drbd: want}, pg.ResourceVersion)
	return err
}

// asks reports whether a workload copy asks want of its replicas.
func asks(pg *srv1alpha1.ProtectionGroup, want srv1alpha1.GroupDRBDIntent) bool {
	return pg.Spec.DRBD != nil && equality.Semantic.DeepEqual(*pg.Spec.DRBD, want)
}

// applied reports whether the copy's pg-controller has set want on every
// replica of the group: the copy asks it and its status says so for the
// copy's current generation.
func applied(pg *srv1alpha1.ProtectionGroup, want srv1alpha1.GroupDRBDIntent) bool {
	return asks(pg, want) && pg.Status.DRBD != nil && pg.Status.DRBD.AppliedGeneration == pg.Generation
}

// carries reports whether every replica carries want: the copy's
// pg-controller says so for its current generation, or the cached replicas'
// specs show it. A planned step counts a role as reached only once it is
// asked of every replica: a replica still asked to be Primary could become so
// again after it was seen Secondary.
func carries(pg *srv1alpha1.ProtectionGroup, res []srv1alpha1.DRBDResource, want srv1alpha1.GroupDRBDIntent) bool {
	if pg != nil && applied(pg, want) {
		return true
	}
	for i := range res {
		sp := &res[i].Spec
		if sp.Role != want.Role || want.Role == srv1alpha1.RoleSecondary && sp.ForcePromotion ||
			want.Quorum != nil && sp.Quorum != *want.Quorum {
			return false
		}
	}
	return true
}
