package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// failoverFlags are the flags of failover and failback.
type failoverFlags struct {
	to        string
	unplanned bool
	force     bool
	confirm   string
	discard   string
	wait      bool
	timeout   time.Duration
	reason    string
	write     *writeFlags
}

func newFailoverFlags() *failoverFlags { return &failoverFlags{write: newWriteFlags()} }

func (f *failoverFlags) addWait(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wait, "wait", false, "stream the phases until the request ends, then print its timeline")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "with --wait, stop waiting after this long (the request goes on); 0 waits until it ends")
}

func newFailoverCommand(o *Options) *cobra.Command {
	f := newFailoverFlags()
	cmd := &cobra.Command{
		Use:   "failover GROUP --to CLUSTER",
		Short: "Move a group to another cluster of its zone (creates a FailoverRequest)",
		Long: `failover creates a FailoverRequest that moves the group to --to.

A planned failover (the default) stops the VMs on the source first and loses no
data. --unplanned proceeds without the source (it may be down) and may lose the
writes not yet replicated; --force also removes DRBD quorum taints from target
nodes that another group uses. Both need --confirm with the group's name and
the siterecovery-disaster-operator role.

--discard-diverged with the group's name confirms, for a failback to a cluster
fenced off during an unplanned failover, that the writes made there while it
was cut off are discarded; it needs the siterecovery-disaster-operator role.
Without it such a failback holds with TargetRejoined=False and says so.

With --wait the phases are printed as they happen with their elapsed time and
what the request waits for, and the timeline at the end, with the group's boot
stages on the target when it has a boot plan (phase, time, VMs waiting).
Ctrl-C stops waiting, never the failover.

--dry-run=server sends the request with dryRun=All: the API server's
admission (the confirmation and role policies, quorum-manager's webhook) runs
and its refusal is shown, and nothing is stored.`,
		Example: `  kubectl siterecovery failover production-pg --to dr-cluster --wait -n dr-production
  kubectl siterecovery failover production-pg --to dr-cluster --unplanned --confirm production-pg --wait
  kubectl siterecovery failover production-pg --to dr-cluster --unplanned --confirm production-pg --dry-run=server`,
		Args:              exactArgs(1),
		ValidArgsFunction: o.completeGroupArg,
		PreRunE:           func(*cobra.Command, []string) error { return f.write.check(f.wait) },
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.to == "" {
				return usagef("--to CLUSTER is required")
			}
			return o.failover(cmd.Context(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.to, "to", "", "the zone cluster to move the group to")
	cmd.Flags().BoolVar(&f.unplanned, "unplanned", false, "proceed without the source cluster; writes not yet replicated may be lost")
	cmd.Flags().BoolVar(&f.force, "force", false, "remove DRBD quorum taints from target nodes even while another group runs there")
	cmd.Flags().StringVar(&f.confirm, "confirm", "", "the group's name, required with --unplanned or --force")
	f.addDiscard(cmd)
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, recorded on the request (annotation "+ReasonAnnotation+")")
	f.addWait(cmd)
	f.write.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("to", o.completeClusters)
	return cmd
}

func (f *failoverFlags) addDiscard(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.discard, "discard-diverged", "", "the group's name: discard the writes a fenced-off target made while cut off (annotation "+srv1alpha1.DiscardDivergedAnnotation+")")
}

func newFailbackCommand(o *Options) *cobra.Command {
	f := newFailoverFlags()
	cmd := &cobra.Command{
		Use:   "failback GROUP",
		Short: "Move a group back to its zone's Primary-role cluster (a planned failover)",
		Example: `  kubectl siterecovery failback production-pg --wait -n dr-production
  kubectl siterecovery failback production-pg --dry-run=server`,
		Args:              exactArgs(1),
		ValidArgsFunction: o.completeGroupArg,
		PreRunE:           func(*cobra.Command, []string) error { return f.write.check(f.wait) },
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, pg, err := o.onGroup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			z, err := zoneOf(cmd.Context(), c, pg)
			if err != nil {
				return err
			}
			for _, zc := range z.Spec.Clusters {
				if zc.Role == srv1alpha1.ClusterRolePrimary {
					f.to = zc.Name
				}
			}
			if f.to == "" {
				return fmt.Errorf("zone %s has no Primary-role cluster", z.Name)
			}
			return o.failover(cmd.Context(), args[0], f)
		},
	}
	f.addDiscard(cmd)
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, recorded on the request (annotation "+ReasonAnnotation+")")
	f.addWait(cmd)
	f.write.addFlags(cmd)
	return cmd
}

// Annotations the CLI writes on the requests it creates, for the audit trail.
const (
	// ReasonAnnotation holds the operator's --reason.
	ReasonAnnotation = "siterecovery.trilio.io/reason"
	// RequestedByAnnotation holds who ran the command, as the API server
	// authenticated them (SelfSubjectReview), else the local user name.
	RequestedByAnnotation = "siterecovery.trilio.io/requested-by"
)

func (o *Options) failover(ctx context.Context, group string, f *failoverFlags) error {
	if (f.unplanned || f.force) && f.confirm != group {
		return usagef("an unplanned or forced failover may lose data: confirm with --confirm %s (needs the siterecovery-disaster-operator role)", group)
	}
	if f.discard != "" && f.discard != group {
		return usagef("discarding the writes a fenced-off cluster made while cut off cannot be undone: confirm with --discard-diverged %s (needs the siterecovery-disaster-operator role)", group)
	}
	c, ns, pg, err := o.onGroup(ctx, group)
	if err != nil {
		return err
	}
	typ := srv1alpha1.FailoverPlanned
	if f.unplanned {
		typ = srv1alpha1.FailoverUnplanned
	}
	fr := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: group + "-to-" + f.to + "-",
			Annotations: o.auditAnnotations(ctx, f.reason)},
		Spec: srv1alpha1.FailoverRequestSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: pg.Name, Namespace: ns},
			TargetCluster:      f.to, FailoverType: typ, Force: f.force,
		},
	}
	if f.unplanned || f.force {
		fr.Annotations[srv1alpha1.ConfirmAnnotation] = group
	}
	if f.discard != "" {
		fr.Annotations[srv1alpha1.DiscardDivergedAnnotation] = group
	}
	if f.write.send() {
		if err := c.Create(ctx, fr, f.write.createOptions()...); err != nil {
			return err
		}
	}
	if f.write.dryRun == dryRunNone {
		fmt.Fprintf(o.ErrOut, "created FailoverRequest %s/%s: %s failover of %s from %s to %s\n",
			ns, fr.Name, typ, group, pg.Spec.ActiveCluster, f.to)
	}
	if !f.wait {
		return f.write.done(o, fr, "created")
	}
	return o.waitFailover(ctx, c, ns, fr.Name, f.timeout, f.write.print)
}
