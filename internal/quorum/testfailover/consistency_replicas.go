package testfailover

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// unfreezable says why freezing the source guests would not make the test's
// snapshots application-consistent, or "" when it would. A test's snapshots
// are cut on the DR copies, so a frozen source helps only where the DR copy
// holds what the source holds at the moment of the cut:
//   - a DRBD replica of protocol C: a write completes only once the peer has
//     it on its disk (DRBD's drbd.conf, net section, protocol C), so the
//     writes the guests made before the freeze are on the DR replica;
//   - not protocol A: a write completes once it is in the local TCP send
//     buffer, and the ones made just before the freeze may still be on their
//     way to the DR replica when its snapshot is cut;
//   - not a VolSync destination: it holds the last replicated cycle, not the
//     source's present; that cycle's own point (cut frozen in Application
//     mode) is the group's status.consistency.lastPoint from VolSyncCycle.
//
// Such a test's point is recorded as Crash with this reason, never as
// Application.
func (r *Reconciler) unfreezable(ctx context.Context, s *scope, rc *remote.Remote, disks []disk) string {
	protocols := map[string]srv1alpha1.ReplicationProtocol{}
	for _, d := range disks {
		if d.source.Labels[srv1alpha1.ObjectRoleLabel] != backingRoleValue {
			continue
		}
		key := d.namespace + "/" + d.vm
		if _, ok := protocols[key]; ok {
			continue
		}
		res := &srv1alpha1.DRBDResource{}
		if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: srv1alpha1.DRBDResourceName(d.vm)}, res); err != nil {
			return fmt.Sprintf("the DR replica of VM %s could not be read on %s to learn its DRBD protocol: %v", key, s.tf.Spec.TargetCluster, err)
		}
		protocols[key] = res.Spec.Protocol
	}
	return whyUnfreezable(disks, protocols)
}

// whyUnfreezable is unfreezable's decision, from each disk and the DRBD
// protocol of each VM's DR replica (by namespace/VM).
func whyUnfreezable(disks []disk, protocols map[string]srv1alpha1.ReplicationProtocol) string {
	asynchronous, volsync := map[string]bool{}, map[string]bool{}
	for _, d := range disks {
		key := d.namespace + "/" + d.vm
		switch {
		case d.source.Labels[srv1alpha1.ObjectRoleLabel] != backingRoleValue:
			volsync[key] = true
		case protocols[key] != srv1alpha1.ProtocolC:
			asynchronous[key] = true
		}
	}
	var why []string
	if len(asynchronous) > 0 {
		why = append(why, fmt.Sprintf("%s replicate with DRBD protocol A, whose writes complete before the DR replica has them: "+
			"some made before the freeze may not be on the DR replica when its snapshot is cut; protect the group with "+
			"spec.replication.protocol C for application-consistent test points", listed(asynchronous)))
	}
	if len(volsync) > 0 {
		why = append(why, fmt.Sprintf("the DR copies of %s are VolSync destinations, which hold the last replicated cycle, "+
			"not what the source holds now; that cycle's own point is the group's status.consistency.lastPoint from VolSyncCycle", listed(volsync)))
	}
	if len(why) == 0 {
		return ""
	}
	return "the source guests were not frozen: " + strings.Join(why, "; ")
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
