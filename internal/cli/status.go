package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
	"github.com/siterecovery/siterecovery/internal/report"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func newStatusCommand(o *Options) *cobra.Command {
	pf := newPrintFlags(true)
	var all bool
	cmd := &cobra.Command{
		Use:   "status [GROUP]",
		Short: "Show zones, clusters and groups: where each runs, replication, lag, open requests",
		Long: `status shows, for the DR namespace (-n, else the kubeconfig context's) or
with -A every DR namespace you may list: each zone's clusters with
reachability; each group's active cluster, its VMs on every cluster, the
replication state per VM volume, the lag against the RPO objective, open
RPOEvents, unfinished requests with their phase (a failover following the
group's boot plan: one line per stage with its phase, time and the VMs it
waits for), the failover lock holder, and for a group with spec.drill its
schedule (UTC), the next drill, the last one with its result, the last one
that passed, and why a drill was skipped.

-o wide adds columns (zone readiness and backend, reachability message, each
group's zone and VM count); -o json|yaml|jsonpath=...|go-template=... print
the report (apiVersion ` + ReportGroupVersion.String() + `, kind StatusReport);
-o name prints the groups.`,
		Example: `  kubectl siterecovery status -n dr-production
  kubectl siterecovery status -A
  kubectl siterecovery status production-pg -n dr-production -o yaml
  kubectl siterecovery status production-pg -o jsonpath='{.namespaces[0].groups[0].activeCluster}'`,
		Args:              maxArgs(1),
		ValidArgsFunction: o.completeGroupArg,
		PreRunE:           func(*cobra.Command, []string) error { return pf.check() },
		RunE: func(cmd *cobra.Command, args []string) error {
			group := ""
			if len(args) == 1 {
				group = args[0]
			}
			r, err := o.status(cmd.Context(), group, all)
			if err != nil {
				return err
			}
			switch {
			case pf.human():
				return r.table(o.Out, pf.tableOptions(), all)
			case pf.format() == "name":
				return r.printNames(o.Out, pf)
			}
			return pf.printObj(r, o.Out)
		},
	}
	addAllNamespaces(cmd, &all)
	pf.addFlags(cmd)
	return cmd
}

// addAllNamespaces adds kubectl's -A to a list verb.
func addAllNamespaces(cmd *cobra.Command, all *bool) {
	cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, "list every DR namespace you may read, not only the current one (-n, or the kubeconfig context's)")
}

// status collects the report; group, when set, limits it to that group.
func (o *Options) status(ctx context.Context, group string, all bool) (*StatusReport, error) {
	c, nss, err := o.inNamespaces(ctx, all)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{TypeMeta: reportMeta("StatusReport")}
	found := false
	for _, ns := range nss {
		n, err := namespaceStatus(ctx, c, ns, group)
		if err != nil {
			return nil, err
		}
		found = found || len(n.Groups) > 0
		if group != "" && all && len(n.Groups) == 0 {
			continue
		}
		r.Namespaces = append(r.Namespaces, *n)
	}
	if group != "" && !found {
		return nil, fmt.Errorf("no ProtectionGroup %q in DR namespace %s (use -n to pick the DR namespace, or -A)", group, strings.Join(nss, ", "))
	}
	return r, nil
}

func namespaceStatus(ctx context.Context, c client.Client, ns, only string) (*NamespaceStatus, error) {
	out := &NamespaceStatus{Namespace: ns}
	zones := &srv1alpha1.ProtectionZoneList{}
	if err := c.List(ctx, zones, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	conns := map[string][]*clusters.Cluster{}
	s := scheme.New()
	for i := range zones.Items {
		z := &zones.Items[i]
		conns[z.Name] = clusters.Connect(ctx, c, s, z)
		out.Zones = append(out.Zones, zoneStatus(ctx, z, conns[z.Name]))
	}
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := c.List(ctx, groups, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range groups.Items {
		pg := &groups.Items[i]
		if only != "" && pg.Name != only {
			continue
		}
		zone := ""
		if pg.Spec.ZoneRef != nil {
			zone = pg.Spec.ZoneRef.Name
		}
		g, err := groupStatus(ctx, c, pg, conns[zone])
		if err != nil {
			return nil, err
		}
		out.Groups = append(out.Groups, *g)
	}
	return out, nil
}

func zoneStatus(ctx context.Context, z *srv1alpha1.ProtectionZone, conns []*clusters.Cluster) ZoneStatus {
	zs := ZoneStatus{Name: z.Name, Backend: string(z.Spec.StorageBackend), Ready: conditionStatus(z.Status.Conditions, srv1alpha1.ConditionReady)}
	for _, cl := range conns {
		cs := ClusterStatus{Name: cl.Name, Role: string(cl.Role), Reachable: string(metav1.ConditionUnknown)}
		for _, st := range z.Status.Clusters {
			if st.Name != cl.Name {
				continue
			}
			cs.Version = st.ServerVersion
			if cond := meta.FindStatusCondition(st.Conditions, srv1alpha1.ConditionReachable); cond != nil {
				cs.Reachable, cs.Message = string(cond.Status), cond.Message
			}
		}
		cs.Access, cs.AccessNote = access(ctx, cl)
		zs.Clusters = append(zs.Clusters, cs)
	}
	return zs
}

// access says how the CLI reaches cl: directly, or not and why.
func access(ctx context.Context, cl *clusters.Cluster) (string, string) {
	if !cl.Usable() {
		return "quorum view", cl.Err.Error()
	}
	if _, err := clusters.ProbeServer(ctx, cl.Config); err != nil {
		return "quorum view", err.Error()
	}
	return "direct", ""
}

func groupStatus(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup, conns []*clusters.Cluster) (*GroupStatus, error) {
	g := &GroupStatus{Name: pg.Name, ActiveCluster: pg.Spec.ActiveCluster, CurrentState: string(pg.Status.CurrentState),
		RPOSeconds: pg.Spec.Replication.RPOObjectiveSeconds}
	if pg.Spec.ZoneRef != nil {
		g.Zone = pg.Spec.ZoneRef.Name
	}
	if g.CurrentState == "" {
		// The quorum copy may not aggregate a state; the active copy's is the group's.
		for _, cs := range pg.Status.Clusters {
			if cs.Cluster == pg.Spec.ActiveCluster {
				g.CurrentState = string(cs.CurrentState)
			}
		}
	}
	if err := replication(ctx, c, pg, g); err != nil {
		return nil, err
	}
	if err := openRequests(ctx, c, pg, g); err != nil {
		return nil, err
	}
	holder, err := lockHolder(ctx, c, pg)
	if err != nil {
		return nil, err
	}
	g.LockHolder = holder
	g.VMs = vmStates(ctx, pg, conns)
	g.Drill = report.DrillScheduleOf(pg)
	return g, nil
}

func replication(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup, g *GroupStatus) error {
	rgs := &srv1alpha1.ReplicationGroupStatus{}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(pg), rgs); {
	case apierrors.IsNotFound(err):
		g.Health = string(srv1alpha1.HealthUnknown)
	case err != nil:
		return err
	default:
		st := rgs.Status
		g.Health, g.FailoverReady, g.MaxLagSeconds = string(st.Health), st.FailoverReady, st.MaxLagSeconds
		if rgs.Spec.RPOObjectiveSeconds > 0 {
			g.RPOSeconds = rgs.Spec.RPOObjectiveSeconds
		}
		for _, vm := range st.VirtualMachines {
			for _, v := range vm.Volumes {
				g.Replication = append(g.Replication, VolumeState{VM: vm.Namespace + "/" + vm.Name, Volume: v.Volume,
					ConnectionState: v.ConnectionState, DiskState: v.DiskState, PeerDiskState: v.PeerDiskState,
					ReplicationState: v.ReplicationState, PercentInSync: v.PercentInSync, LagSeconds: v.LagSeconds})
			}
		}
	}
	g.RPOMet = g.RPOSeconds == 0 || g.MaxLagSeconds <= int64(g.RPOSeconds)
	events := &srv1alpha1.RPOEventList{}
	if err := c.List(ctx, events, client.InNamespace(pg.Namespace)); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.Spec.ProtectionGroupRef.Name == pg.Name && e.Status.State != srv1alpha1.RPOEventResolved {
			g.OpenRPOEvents = append(g.OpenRPOEvents, e.Name)
		}
	}
	return nil
}

func openRequests(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup, g *GroupStatus) error {
	frs := &srv1alpha1.FailoverRequestList{}
	if err := c.List(ctx, frs, client.InNamespace(pg.Namespace)); err != nil {
		return err
	}
	for _, fr := range frs.Items {
		if fr.Spec.ProtectionGroupRef.Name == pg.Name && !failoverDone(fr.Status.Phase) {
			g.Requests = append(g.Requests, RequestState{Kind: "FailoverRequest", Name: fr.Name, Phase: phaseOr(string(fr.Status.Phase)), Message: fr.Status.Message,
				BootStages: bootStageStates(&fr.Status, time.Now())})
		}
	}
	tfs := &srv1alpha1.TestFailoverList{}
	if err := c.List(ctx, tfs, client.InNamespace(pg.Namespace)); err != nil {
		return err
	}
	for _, tf := range tfs.Items {
		if tf.Spec.ProtectionGroupRef.Name == pg.Name && !testFailoverDone(tf.Status.Phase) {
			g.Requests = append(g.Requests, RequestState{Kind: "TestFailover", Name: tf.Name, Phase: phaseOr(string(tf.Status.Phase)), Message: lastMessage(tf.Status.PhaseHistory)})
		}
	}
	prs := &srv1alpha1.ProtectionRequestList{}
	if err := c.List(ctx, prs, client.InNamespace(pg.Namespace)); err != nil {
		return err
	}
	for _, pr := range prs.Items {
		if pr.Spec.ProtectionGroupRef.Name == pg.Name && pr.Status.Phase != srv1alpha1.ProtectionProtected && pr.Status.Phase != srv1alpha1.ProtectionFailed {
			g.Requests = append(g.Requests, RequestState{Kind: "ProtectionRequest", Name: pr.Name, Phase: phaseOr(string(pr.Status.Phase)), Message: lastMessage(pr.Status.PhaseHistory)})
		}
	}
	return nil
}

// lockHolder is the unexpired holder of the group's failover Lease.
func lockHolder(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup) (string, error) {
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: srv1alpha1.FailoverLockName(pg.Name)}, lease)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || lease.Spec.RenewTime == nil {
		return "", nil
	}
	ttl := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, srv1alpha1.FailoverLockTTLSeconds)) * time.Second
	if time.Since(lease.Spec.RenewTime.Time) > ttl {
		return "", nil
	}
	return holder, nil
}

// vmStates reads each VM's state from every cluster's copy of the group; for a
// cluster the CLI cannot read, it shows the group state the quorum recorded.
func vmStates(ctx context.Context, pg *srv1alpha1.ProtectionGroup, conns []*clusters.Cluster) []VMState {
	out := make([]VMState, 0, len(pg.Spec.VirtualMachines))
	for _, ref := range pg.Spec.VirtualMachines {
		out = append(out, VMState{Namespace: ref.Namespace, Name: ref.Name, Clusters: map[string]string{}})
	}
	for _, cl := range conns {
		copyState := map[string]string{}
		var readErr error
		if cl.Usable() {
			w := &srv1alpha1.ProtectionGroup{}
			readErr = cl.Client.Get(ctx, client.ObjectKeyFromObject(pg), w)
			for _, vm := range w.Status.VirtualMachines {
				copyState[vm.Namespace+"/"+vm.Name] = vm.PrintableStatus
			}
		} else {
			readErr = cl.Err
		}
		for i := range out {
			key := out[i].Namespace + "/" + out[i].Name
			switch s, ok := copyState[key]; {
			case readErr == nil && ok && s != "":
				out[i].Clusters[cl.Name] = s
			case readErr == nil:
				out[i].Clusters[cl.Name] = "Unknown"
			default:
				out[i].Clusters[cl.Name] = "(" + quorumView(pg, cl.Name) + ")"
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out
}

func quorumView(pg *srv1alpha1.ProtectionGroup, cluster string) string {
	for _, cs := range pg.Status.Clusters {
		if cs.Cluster == cluster && cs.CurrentState != "" {
			return "group " + string(cs.CurrentState)
		}
	}
	return "unknown"
}

func conditionStatus(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}

func failoverDone(p srv1alpha1.FailoverPhase) bool {
	return p == srv1alpha1.FailoverCompleted || p == srv1alpha1.FailoverFailed
}

func testFailoverDone(p srv1alpha1.TestFailoverPhase) bool {
	return p == srv1alpha1.TestFailoverSucceeded || p == srv1alpha1.TestFailoverFailed
}

func phaseOr(p string) string {
	if p == "" {
		return "New"
	}
	return p
}

func lastMessage(h []srv1alpha1.PhaseTransition) string {
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1].Message
}
