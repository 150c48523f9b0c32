package validate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drPolicy checks, for a group of an Offloaded or VolSync zone, what its
// failover depends on and only the quorum cluster shows: the group's
// DRPlacementControl, the DRPolicy it names with its peer classes (the storage
// classes that replicate between the two clusters), and how long ago the last
// sync of its data completed, against the policy's interval.
func (z *zoneCheck) drPolicy(ctx context.Context, g *srv1alpha1.ProtectionGroup, now time.Time) {
	t := g.Namespace + "/" + g.Name
	drpcs := &drv1alpha1.DRPlacementControlList{}
	if err := z.in.Quorum.List(ctx, drpcs, client.InNamespace(g.Namespace)); err != nil {
		z.r.add("peer-classes", t, Warning, "cannot list DRPlacementControls: "+err.Error(), "")
		return
	}
	var drpc *drv1alpha1.DRPlacementControl
	for i := range drpcs.Items {
		if drpcs.Items[i].Spec.ProtectionGroupRef.Name == g.Name {
			drpc = &drpcs.Items[i]
		}
	}
	if drpc == nil {
		z.r.add("peer-classes", t, Problem, "no DRPlacementControl names this group: its data is not replicated",
			"create a DRPlacementControl with protectionGroupRef "+g.Name+" and the zone's DRPolicy")
		return
	}
	pol := &drv1alpha1.DRPolicy{}
	if err := z.in.Quorum.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: drpc.Spec.DRPolicyRef.Name}, pol); err != nil {
		z.r.add("peer-classes", t, Problem, fmt.Sprintf("DRPolicy %s of DRPlacementControl %s: %v", drpc.Spec.DRPolicyRef.Name, drpc.Name, err), "")
		return
	}
	if c := meta.FindStatusCondition(pol.Status.Conditions, srv1alpha1.ConditionValidated); c != nil && c.Status != "True" {
		z.r.add("peer-classes", t, Problem, fmt.Sprintf("DRPolicy %s is not valid: %s", pol.Name, c.Message), "")
		return
	}
	if len(pol.Status.PeerClasses) == 0 {
		z.r.add("peer-classes", t, Problem,
			fmt.Sprintf("DRPolicy %s has no peer class: no StorageClass replicates between %s", pol.Name, strings.Join(pol.Spec.DRClusters, " and ")),
			"give both clusters a StorageClass of the same name with a replication (or snapshot) class that the policy's selectors match")
		return
	}
	var names []string
	for _, pc := range pol.Status.PeerClasses {
		names = append(names, pc.StorageClassName)
	}
	z.r.ok("peer-classes", t, fmt.Sprintf("DRPolicy %s replicates storage classes %s", pol.Name, strings.Join(names, ", ")))
	lastSync(z.r, t, pol, drpc, now)
}

// lastSync scores the age of the group's last completed sync: more than two
// intervals means a failover now loses more than the policy promises.
func lastSync(r *Report, t string, pol *drv1alpha1.DRPolicy, drpc *drv1alpha1.DRPlacementControl, now time.Time) {
	interval, err := schedulingInterval(pol.Spec.SchedulingInterval)
	switch {
	case err != nil:
		r.add("last-sync", t, Warning, fmt.Sprintf("DRPolicy %s: %v", pol.Name, err), "")
	case interval == 0:
		r.ok("last-sync", t, fmt.Sprintf("DRPolicy %s: the storage replicates continuously (interval 0m)", pol.Name))
	case drpc.Status.LastGroupSyncTime == nil:
		r.add("last-sync", t, Warning, fmt.Sprintf("no sync has completed yet (interval %s)", pol.Spec.SchedulingInterval),
			"read the DRPlacementControl's conditions: kubectl describe drpc "+drpc.Name+" -n "+drpc.Namespace)
	default:
		age := now.Sub(drpc.Status.LastGroupSyncTime.Time).Round(time.Second)
		if age > 2*interval {
			r.add("last-sync", t, Problem, fmt.Sprintf("the last sync completed %s ago, more than twice the interval %s", age, pol.Spec.SchedulingInterval),
				"read the DRPlacementControl's conditions: kubectl describe drpc "+drpc.Name+" -n "+drpc.Namespace)
			return
		}
		r.ok("last-sync", t, fmt.Sprintf("the last sync completed %s ago (interval %s)", age, pol.Spec.SchedulingInterval))
	}
}

// schedulingInterval parses a DRPolicy interval: <number><m|h|d>.
func schedulingInterval(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("interval %q is not <number><m|h|d>", s)
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("interval %q is not <number><m|h|d>", s)
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, fmt.Errorf("interval %q is not <number><m|h|d>", s)
	}
	return time.Duration(n) * unit, nil
}
