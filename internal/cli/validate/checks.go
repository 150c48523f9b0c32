package validate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// replicaNodes are the nodes of cl that hold a DRBD replica of the zone's VMs.
func (z *zoneCheck) replicaNodes(ctx context.Context, cl *clusters.Cluster) []string {
	set := map[string]bool{}
	for _, g := range z.groups {
		for _, vm := range g.Spec.VirtualMachines {
			r := &srv1alpha1.DRBDResource{}
			if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: srv1alpha1.DRBDResourceName(vm.Name)}, r); err == nil {
				set[r.Spec.NodeName] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// snapshotClasses: a test failover snapshots the DR replicas.
func (z *zoneCheck) snapshotClasses(ctx context.Context, cl *clusters.Cluster) {
	t := z.target(cl.Name)
	list := &snapshotv1.VolumeSnapshotClassList{}
	err := cl.Client.List(ctx, list)
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		z.r.add("snapshot-class", t, Warning, "the VolumeSnapshotClass API is not installed; test failover cannot run",
			"install the CSI snapshot CRDs and controller, and a VolumeSnapshotClass for the replicas' driver")
	case err != nil:
		z.r.add("snapshot-class", t, Warning, "cannot list VolumeSnapshotClasses: "+err.Error(), "")
	case len(list.Items) == 0:
		z.r.add("snapshot-class", t, Warning, "no VolumeSnapshotClass; test failover cannot snapshot the replicas",
			"create a VolumeSnapshotClass for the CSI driver of the DR backing StorageClass")
	default:
		names := make([]string, 0, len(list.Items))
		for _, c := range list.Items {
			names = append(names, c.Name)
		}
		z.r.ok("snapshot-class", t, "VolumeSnapshotClass "+strings.Join(names, ", "))
	}
}

// drbd checks every replica's connection on the group's active cluster, where
// the CLI can read it, else the replication monitor's last view.
func (z *zoneCheck) drbd(ctx context.Context, g *srv1alpha1.ProtectionGroup) {
	var active *clusters.Cluster
	for _, cl := range z.conns {
		if cl.Name == g.Spec.ActiveCluster && cl.Usable() {
			active = cl
		}
	}
	for _, vm := range g.Spec.VirtualMachines {
		t := g.Name + "/" + vm.Namespace + "/" + vm.Name
		if active == nil {
			z.drbdFromMonitor(ctx, g, vm, t)
			continue
		}
		r := &srv1alpha1.DRBDResource{}
		if err := active.Client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: srv1alpha1.DRBDResourceName(vm.Name)}, r); err != nil {
			z.r.add("drbd-sync", t, Problem, fmt.Sprintf("DRBDResource on %s: %v", active.Name, err), "")
			continue
		}
		if msg := unsynced(r); msg != "" {
			z.r.add("drbd-sync", t, Problem, fmt.Sprintf("on %s: %s", active.Name, msg),
				"check the replication network (TCP "+fmt.Sprint(r.Spec.Port)+") and the agent on both nodes; status shows the lag")
			continue
		}
		z.r.ok("drbd-sync", t, fmt.Sprintf("connected and in sync with its peer (from %s)", active.Name))
	}
}

// unsynced says what is wrong with a replica's peers, or "" when connected
// and in sync on every volume.
func unsynced(r *srv1alpha1.DRBDResource) string {
	if len(r.Status.Peers) == 0 {
		return "no peer reported by the agent"
	}
	var bad []string
	for _, p := range r.Status.Peers {
		if p.ConnectionState != "Connected" {
			bad = append(bad, fmt.Sprintf("link to %s is %s", p.NodeName, or(p.ConnectionState, "unknown")))
			continue
		}
		for _, v := range p.Volumes {
			if v.PeerDiskState != "UpToDate" || v.OutOfSyncBytes > 0 {
				bad = append(bad, fmt.Sprintf("volume %d on %s is %s, %d bytes out of sync", v.Number, p.NodeName, or(v.PeerDiskState, "unknown"), v.OutOfSyncBytes))
			}
		}
	}
	return strings.Join(bad, "; ")
}

func (z *zoneCheck) drbdFromMonitor(ctx context.Context, g *srv1alpha1.ProtectionGroup, vm srv1alpha1.VirtualMachineReference, t string) {
	rgs := &srv1alpha1.ReplicationGroupStatus{}
	if err := z.in.Quorum.Get(ctx, client.ObjectKeyFromObject(g), rgs); err != nil {
		z.r.add("drbd-sync", t, Warning, "neither the active cluster nor the replication monitor's status can be read: "+err.Error(), "")
		return
	}
	for _, s := range rgs.Status.VirtualMachines {
		if s.Name != vm.Name || s.Namespace != vm.Namespace {
			continue
		}
		var bad []string
		for _, v := range s.Volumes {
			if v.ConnectionState != "Connected" || v.PeerDiskState != "UpToDate" || v.OutOfSyncBytes > 0 {
				bad = append(bad, fmt.Sprintf("volume %d %s/%s", v.Volume, or(v.ConnectionState, "unknown"), or(v.PeerDiskState, "unknown")))
			}
		}
		if len(bad) > 0 {
			z.r.add("drbd-sync", t, Problem, "replication monitor: "+strings.Join(bad, "; "), "check the replication network and the agents")
		} else {
			z.r.ok("drbd-sync", t, "connected and in sync (replication monitor's view)")
		}
		return
	}
	z.r.add("drbd-sync", t, Warning, "the replication monitor reports nothing for this VM yet", "")
}

// standbys checks pg-sync's intent: on every cluster but the active one the
// group's VMs exist and do not run, and the workload copy is in sync.
func (z *zoneCheck) standbys(ctx context.Context, g *srv1alpha1.ProtectionGroup) {
	for _, cl := range z.conns {
		if cl.Name == g.Spec.ActiveCluster {
			continue
		}
		t := g.Name + "@" + cl.Name
		for _, st := range g.Status.Clusters {
			if st.Cluster == cl.Name && !st.InSync {
				z.r.add("standby", t, Warning, "pg-sync reports drift: "+or(st.Message, "not in sync"), "kubectl siterecovery status "+g.Name+" shows the group on each cluster")
			}
		}
		if !cl.Usable() {
			continue
		}
		var bad []string
		for _, ref := range g.Spec.VirtualMachines {
			vm := &kubevirtv1.VirtualMachine{}
			if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, vm); err != nil {
				bad = append(bad, fmt.Sprintf("%s/%s: %v", ref.Namespace, ref.Name, err))
				continue
			}
			if vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy != kubevirtv1.RunStrategyHalted {
				bad = append(bad, fmt.Sprintf("%s/%s has runStrategy %s", ref.Namespace, ref.Name, *vm.Spec.RunStrategy))
			}
		}
		if len(bad) > 0 {
			z.r.add("standby", t, Problem, "standby VMs differ from pg-sync's intent (present and Halted): "+strings.Join(bad, "; "),
				"a standby that runs while the group is active elsewhere writes to a replica; stop it through the ProtectionGroup, never by hand")
			continue
		}
		z.r.ok("standby", t, fmt.Sprintf("%d standby VMs present and Halted", len(g.Spec.VirtualMachines)))
	}
}

// rpo scores the replication monitor's lag against the objective.
func (z *zoneCheck) rpo(ctx context.Context, g *srv1alpha1.ProtectionGroup) {
	rgs := &srv1alpha1.ReplicationGroupStatus{}
	if err := z.in.Quorum.Get(ctx, client.ObjectKeyFromObject(g), rgs); err != nil {
		z.r.add("rpo", g.Name, Warning, "no replication status: "+err.Error(), "check that quorum-manager's replication monitor runs")
		return
	}
	objective := rgs.Spec.RPOObjectiveSeconds
	if objective == 0 {
		objective = g.Spec.Replication.RPOObjectiveSeconds
	}
	lag := rgs.Status.MaxLagSeconds
	switch {
	case rgs.Status.ActiveRPOEvent != "" || (objective > 0 && lag > int64(objective)):
		z.r.add("rpo", g.Name, Problem, fmt.Sprintf("lag %ds exceeds the objective %ds (RPOEvent %s)", lag, objective, or(rgs.Status.ActiveRPOEvent, "not yet raised")),
			"a failover now loses up to "+(time.Duration(lag)*time.Second).String()+" of writes; restore replication before planned work")
	default:
		z.r.ok("rpo", g.Name, fmt.Sprintf("lag %ds within the objective %ds", lag, objective))
	}
}

// clockSkew compares the API servers' Date headers. Each is known to within
// its request's round trip plus the header's one-second resolution.
func clockSkew(r *Report, probes []probe) {
	var lo, hi probe
	var spread time.Duration
	have := 0
	for _, p := range probes {
		if p.p.Date.IsZero() {
			continue
		}
		have++
		if have == 1 || offset(p) < offset(lo) {
			lo = p
		}
		if have == 1 || offset(p) > offset(hi) {
			hi = p
		}
	}
	if have < 2 {
		r.add("clock-skew", "zone", Warning, "fewer than two API servers answered with a Date header", "")
		return
	}
	spread = offset(hi) - offset(lo)
	slack := time.Second + hi.p.Latency + lo.p.Latency
	skew := spread - slack
	switch {
	case skew > 30*time.Second:
		r.add("clock-skew", hi.cluster+" vs "+lo.cluster, Problem, fmt.Sprintf("clocks differ by at least %s", skew.Round(time.Second)),
			"run NTP on every cluster: lock Leases, RPO lag and the audit timeline compare timestamps across clusters")
	case skew > 5*time.Second:
		r.add("clock-skew", hi.cluster+" vs "+lo.cluster, Warning, fmt.Sprintf("clocks differ by at least %s", skew.Round(time.Second)), "run NTP on every cluster")
	default:
		r.ok("clock-skew", "zone", fmt.Sprintf("%d API servers agree within %s", have, slack.Round(100*time.Millisecond)))
	}
}

// offset is how far a server's clock is ahead of the CLI's, at mid-request.
func offset(p probe) time.Duration {
	mid := p.p.Sent.Add(p.p.Received.Sub(p.p.Sent) / 2)
	return p.p.Date.Sub(mid)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
