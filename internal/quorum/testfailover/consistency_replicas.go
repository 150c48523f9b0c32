package testfailover

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/freeze/drain"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// unfreezable says why freezing the source guests would not make the test's
// snapshots application-consistent, or "" when it would, with the source
// replicas whose DR peers a frozen cut must first see drained. A test's
// snapshots are cut on the DR copies, so a frozen source helps only where
// the DR copy holds what the source holds at the moment of the cut:
//   - a DRBD replica of protocol C: a write completes only once the peer has
//     it on its disk (DRBD's drbd.conf, net section, protocol C), so the
//     writes the guests made before the freeze are on the DR replica;
//   - a DRBD replica of protocol A once drained: a write completes once it is
//     in the local TCP send buffer, so the ones made just before the freeze
//     may still be on their way; the cut waits, frozen, until the source's
//     connection has none in flight (internal/freeze/drain);
//   - not a VolSync destination: it holds the last replicated cycle, not the
//     source's present; that cycle's own point (cut frozen in Application
//     mode) is the group's status.consistency.lastPoint from VolSyncCycle.
//
// Such a test's point is recorded as Crash with this reason, never as
// Application.
func (r *Reconciler) unfreezable(ctx context.Context, s *scope, rc *remote.Remote, disks []disk) (string, []drain.Replica) {
	var replicas []drain.Replica
	seen := map[string]bool{}
	for _, d := range disks {
		if d.source.Labels[srv1alpha1.ObjectRoleLabel] != backingRoleValue {
			continue
		}
		key := d.namespace + "/" + d.vm
		if seen[key] {
			continue
		}
		seen[key] = true
		res := &srv1alpha1.DRBDResource{}
		if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: srv1alpha1.DRBDResourceName(d.vm)}, res); err != nil {
			return fmt.Sprintf("the DR replica of VM %s could not be read on %s to learn its DRBD protocol: %v", key, s.tf.Spec.TargetCluster, err), nil
		}
		if res.Spec.Protocol != srv1alpha1.ProtocolC {
			// The source replica shares the DR replica's name and protocol.
			replicas = append(replicas, drain.Replica{Key: types.NamespacedName{Namespace: d.namespace, Name: res.Name},
				PeerNode: res.Spec.NodeName, Protocol: res.Spec.Protocol})
		}
	}
	return whyUnfreezable(disks), replicas
}

// whyUnfreezable is unfreezable's decision from the disks alone: their DR
// copies must be DRBD replicas.
func whyUnfreezable(disks []disk) string {
	volsync := map[string]bool{}
	for _, d := range disks {
		if d.source.Labels[srv1alpha1.ObjectRoleLabel] != backingRoleValue {
			volsync[d.namespace+"/"+d.vm] = true
		}
	}
	if len(volsync) == 0 {
		return ""
	}
	return fmt.Sprintf("the source guests were not frozen: the DR copies of %s are VolSync destinations, which hold the last replicated cycle, "+
		"not what the source holds now; that cycle's own point is the group's status.consistency.lastPoint from VolSyncCycle", listed(volsync))
}

// listed is "VMs a/b, c/d" in name order.
func listed(vms map[string]bool) string {
	names := make([]string, 0, len(vms))
	for n := range vms {
		names = append(names, n)
	}
	sort.Strings(names)
	return "VMs " + strings.Join(names, ", ")
}
