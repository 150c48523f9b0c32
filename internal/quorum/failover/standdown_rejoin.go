package failover

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// Once a returned fenced-off cluster has stood down, its writes made while it
// was cut off are discarded and it is resynced from the active cluster, so
// that the group is protected again without anyone having to act. Those
// writes diverged from the data the group has run on since the failover: DRBD
// would refuse to connect the two copies (a split brain), and no resync can
// merge them. The active cluster's data is never overwritten: only the
// returned cluster's replicas discard theirs.
//
//  1. The divergence is reported once, before anything is discarded, from
//     figures the returned cluster's agents read for it: a Warning event and the group's Diverged condition say how much each VM
//     wrote while cut off, and siterecovery_group_diverged_bytes raises the
//     SiteRecoveryDivergedSiteReturned alert.
//  2. HoldDivergedAnnotation on the group stops here, keeping the writes for
//     the operator to save first.
//  3. The returned cluster's replicas discard their data (spec.discardData,
//     once per fencing: FencedOffByAnnotation).
//  4. The active cluster's replicas let it back in (spec.fencedPeers).
//  5. Once every returned replica is UpToDate, the record is dropped and
//     Diverged turns False.
//
// A record written before FencedOffByAnnotation existed, or by hand without
// it, is never discarded by itself: the way back is the failback with
// DiscardDivergedAnnotation, as the StoodDown condition says.

// rejoinPass is where one rejoin pass left the returned cluster.
type rejoinPass struct {
	// waits says what the rejoin waits for ("" once it is done, or while
	// the operator holds the diverged writes: the annotation's removal wakes
	// the group).
	waits string
}

// rejoinReturned runs the rejoin of a stood-down cluster.
func (r *StandDown) rejoinReturned(ctx context.Context, g *srv1alpha1.ProtectionGroup, rc *remote.Remote) (rejoinPass, error) {
	fenced := g.Annotations[srv1alpha1.FencedOffAnnotation]
	token := g.Annotations[srv1alpha1.FencedOffByAnnotation]
	res, err := drbdResources(ctx, rc, g.Name)
	if err != nil {
		return rejoinPass{}, err
	}
	// 1. Report what diverged, once per fencing.
	// A False condition is an earlier fencing's outcome.
	if c := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionDiverged); c == nil || c.Status != metav1.ConditionTrue {
		// DRBD's events do not report what a replica wrote while cut off:
		// its agent reads the current figures first.
		reading := "rejoin-" + token
		if err := askReading(ctx, rc, res, reading); err != nil {
			return rejoinPass{}, err
		}
		read := readingOf(res, reading)
		if silent := read.silent; len(silent) > 0 {
			msg := fmt.Sprintf("%s returned: its drbd-node-agents are reading what DRBD there holds out of sync, for the report, before anything is discarded; not yet answered: %s", fenced, flow.Listed(silent))
			if err := r.setDiverged(ctx, g, metav1.ConditionUnknown, srv1alpha1.ReasonMeasuringDivergence, msg); err != nil {
				return rejoinPass{}, err
			}
			return rejoinPass{waits: msg}, nil
		}
		if read.at.IsZero() {
			read.at = time.Now()
		}
		div := divergence(res, fenced, read.at)
		reason := srv1alpha1.ReasonDiscardingDiverged
		if g.Annotations[srv1alpha1.HoldDivergedAnnotation] == "true" {
			reason = srv1alpha1.ReasonDivergedHeld
		}
		if err := r.setDivergence(ctx, g, div, reason, divergedMessage(g, div)); err != nil {
			return rejoinPass{}, err
		}
		r.Recorder.Event(g, "Warning", srv1alpha1.ConditionDiverged, divergedMessage(g, div))
	}
	// The alert's gauge, also after a restart of quorum-manager mid-rejoin.
	if div := g.Status.Divergence; div != nil {
		divergedMetrics.set(g.Name, fenced, div.Bytes)
	}
	// 2. The operator's hold, set or lifted after the report.
	held := g.Annotations[srv1alpha1.HoldDivergedAnnotation] == "true"
	if c := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionDiverged); held != (c.Reason == srv1alpha1.ReasonDivergedHeld) {
		reason := srv1alpha1.ReasonDiscardingDiverged
		if held {
			reason = srv1alpha1.ReasonDivergedHeld
		}
		if err := r.setDiverged(ctx, g, metav1.ConditionTrue, reason, divergedMessage(g, g.Status.Divergence)); err != nil {
			return rejoinPass{}, err
		}
	}
	if held {
		return rejoinPass{}, nil
	}
	// 3. Discard the returned cluster's writes.
	discarding, err := discardOnce(ctx, rc, res, token)
	if err != nil {
		return rejoinPass{}, err
	}
	if len(discarding) > 0 {
		return rejoinPass{waits: fmt.Sprintf("discarding the writes %s made while it was cut off: waiting for DRBD there to discard its data: %s", fenced, flow.Listed(discarding))}, nil
	}
	// 4. Let it back in on the active cluster.
	act, err := remote.Answering(r.Remote, remote.Key{Namespace: g.Namespace, Zone: g.Spec.ZoneRef.Name, Cluster: g.Spec.ActiveCluster})
	if err != nil {
		return rejoinPass{waits: fmt.Sprintf("%s discarded its diverged data; waiting for %s, where the group runs, to answer, to reconnect them: %s", fenced, g.Spec.ActiveCluster, err.Error())}, nil
	}
	actRes, err := drbdResources(ctx, act, g.Name)
	if err != nil {
		return rejoinPass{}, err
	}
	nodes := replicaNodes(res)
	if err := flow.ForEach(parallelWrites, len(actRes), func(i int) error {
		return unfence(ctx, act, &actRes[i], nodes)
	}); err != nil {
		return rejoinPass{}, err
	}
	// 5. Wait for the resync, then drop the record.
	if stale := staleReplicas(res); len(stale) > 0 {
		return rejoinPass{waits: fmt.Sprintf("%s discarded its diverged data and is resyncing from %s, where group %s keeps running; not yet UpToDate: %s",
			fenced, g.Spec.ActiveCluster, g.Name, flow.Listed(stale))}, nil
	}
	if err := flow.ForEach(parallelWrites, len(res), func(i int) error {
		return clearDiscard(ctx, rc, &res[i])
	}); err != nil {
		return rejoinPass{}, err
	}
	msg := fmt.Sprintf("%s rejoined: its writes made while it was cut off were discarded and it was resynced from %s, where group %s runs", fenced, g.Spec.ActiveCluster, g.Name)
	if report := divergedReport(g, g.Status.Divergence); report != "" {
		msg += " (" + report + ")"
	}
	if err := r.setDiverged(ctx, g, metav1.ConditionFalse, srv1alpha1.ReasonDivergedDiscarded, msg); err != nil {
		return rejoinPass{}, err
	}
	if err := patchFencedOffRecord(ctx, r.Client, g, nil, nil); err != nil {
		return rejoinPass{}, fmt.Errorf("clearing the fenced-off record of %s on ProtectionGroup %s: %w", fenced, g.Name, err)
	}
	r.Recorder.Event(g, "Normal", srv1alpha1.ReasonDivergedDiscarded, msg)
	divergedMetrics.set(g.Name, fenced, 0)
	return rejoinPass{}, nil
}

// divergence is what the returned cluster's replicas res hold out of sync
// for the peers they could not reach: what each VM ("namespace/name", from
// its replica's name) wrote while cut off, as DRBD counts it.
func divergence(res []srv1alpha1.DRBDResource, fenced string, now time.Time) *srv1alpha1.GroupDivergence {
	out := &srv1alpha1.GroupDivergence{Cluster: fenced, ReportTime: metav1.NewTime(now)}
	for _, d := range res {
		vm := srv1alpha1.VMDivergence{Name: d.Namespace + "/" + strings.TrimPrefix(d.Name, srv1alpha1.DRBDResourceName(""))}
		for _, p := range d.Status.Peers {
			for _, v := range p.Volumes {
				vm.Bytes += v.OutOfSyncBytes
			}
		}
		out.Bytes += vm.Bytes
		out.VirtualMachines = append(out.VirtualMachines, vm)
	}
	sort.Slice(out.VirtualMachines, func(i, j int) bool { return out.VirtualMachines[i].Name < out.VirtualMachines[j].Name })
	return out
}

// divergedReport says how much diverged on which VMs ("" without a report).
func divergedReport(g *srv1alpha1.ProtectionGroup, div *srv1alpha1.GroupDivergence) string {
	if div == nil {
		return ""
	}
	parts := make([]string, 0, len(div.VirtualMachines))
	for _, vm := range div.VirtualMachines {
		parts = append(parts, fmt.Sprintf("%s %s", vm.Name, resource.NewQuantity(vm.Bytes, resource.BinarySI).String()))
	}
	return fmt.Sprintf("%s returned with writes made while it was cut off from %s, where group %s runs since the unplanned failover: %s out of sync (%s)",
		div.Cluster, g.Spec.ActiveCluster, g.Name, resource.NewQuantity(div.Bytes, resource.BinarySI).String(), strings.Join(parts, ", "))
}

// divergedMessage is the report and what becomes of the diverged writes.
func divergedMessage(g *srv1alpha1.ProtectionGroup, div *srv1alpha1.GroupDivergence) string {
	if div == nil {
		return divergedTail(g, g.Annotations[srv1alpha1.FencedOffAnnotation])[2:]
	}
	return divergedReport(g, div) + divergedTail(g, div.Cluster)
}

// divergedTail says, after the report, what becomes of the diverged writes.
// It starts with "; ", which the report never holds.
func divergedTail(g *srv1alpha1.ProtectionGroup, fenced string) string {
	if g.Annotations[srv1alpha1.HoldDivergedAnnotation] == "true" {
		return fmt.Sprintf("; %s=true keeps them: the group stays stopped there and its replicas Secondary, disconnected. Save what you need, then remove the annotation, with %s=%s in the same write, to discard them and resync %s from %s",
			srv1alpha1.HoldDivergedAnnotation, srv1alpha1.ConfirmAnnotation, g.Name, fenced, g.Spec.ActiveCluster)
	}
	return fmt.Sprintf("; they are discarded and %s resyncs from %s. To keep them next time, annotate the group %s=true before the cluster returns",
		fenced, g.Spec.ActiveCluster, srv1alpha1.HoldDivergedAnnotation)
}

// replicaNodes lists the replicas' nodes.
func replicaNodes(res []srv1alpha1.DRBDResource) []string {
	var out []string
	for _, d := range res {
		if d.Spec.NodeName != "" && !slices.Contains(out, d.Spec.NodeName) {
			out = append(out, d.Spec.NodeName)
		}
	}
	return out
}
