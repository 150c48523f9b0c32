package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func newTestFailoverCommand(o *Options) *cobra.Command {
	var to string
	var wait, keep bool
	var timeout time.Duration
	wf := newWriteFlags()
	cmd := &cobra.Command{
		Use:   "test-failover GROUP",
		Short: "Boot snapshots of a group's DR copies in an isolated namespace and check them (creates a TestFailover)",
		Long: `test-failover creates a TestFailover: snapshots of the group's replicas on
the DR cluster boot in an isolated namespace, are checked, and are cleaned up.
Production and replication are not touched.

With --wait it streams the phases, prints each check's result, and then deletes
the finished TestFailover unless --keep is given (its results stay in the
output). Without --wait the TestFailover is left for you to read and delete.`,
		Example: `  kubectl siterecovery test-failover production-pg --wait -n dr-production
  kubectl siterecovery test-failover production-pg --to dr-cluster --wait --keep
  kubectl siterecovery test-failover production-pg --dry-run=server -o yaml`,
		Args:              exactArgs(1),
		ValidArgsFunction: o.completeGroupArg,
		PreRunE:           func(*cobra.Command, []string) error { return wf.check(wait) },
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.testFailover(cmd.Context(), args[0], to, wait, keep, timeout, wf)
		},
	}
	wf.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("to", o.completeClusters)
	cmd.Flags().StringVar(&to, "to", "", "the DR cluster whose replicas are tested; defaults to the zone's cluster the group is not active on")
	cmd.Flags().BoolVar(&wait, "wait", false, "stream the phases until the test ends and print the check results")
	cmd.Flags().BoolVar(&keep, "keep", false, "with --wait, keep the finished TestFailover (its results) instead of deleting it")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, stop waiting after this long (the test goes on)")
	return cmd
}

func (o *Options) testFailover(ctx context.Context, group, to string, wait, keep bool, timeout time.Duration, wf *writeFlags) error {
	c, ns, pg, err := o.onGroup(ctx, group)
	if err != nil {
		return err
	}
	if to == "" {
		z, err := zoneOf(ctx, c, pg)
		if err != nil {
			return err
		}
		for _, zc := range z.Spec.Clusters {
			if zc.Name != pg.Spec.ActiveCluster {
				to = zc.Name
				break
			}
		}
	}
	tf := &srv1alpha1.TestFailover{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: group + "-test-", Annotations: o.auditAnnotations(ctx, "")},
		Spec: srv1alpha1.TestFailoverSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group, Namespace: ns},
			TargetCluster:      to,
		},
	}
	if wf.send() {
		if err := c.Create(ctx, tf, wf.createOptions()...); err != nil {
			return err
		}
	}
	if wf.dryRun == dryRunNone {
		fmt.Fprintf(o.ErrOut, "created TestFailover %s/%s of %s on %s\n", ns, tf.Name, group, to)
	}
	if !wait {
		return wf.done(o, tf, "created")
	}
	if err := o.followTestFailover(ctx, c, tf, "TestFailover", timeout, wf); err != nil {
		return err
	}
	if !keep {
		if err := c.Delete(ctx, tf); client.IgnoreNotFound(err) != nil {
			return err
		}
		fmt.Fprintf(o.ErrOut, "deleted TestFailover %s/%s (use --keep to keep it)\n", ns, tf.Name)
	}
	if tf.Status.Phase == srv1alpha1.TestFailoverFailed {
		return exitf(ExitRequestFailed, "TestFailover %s/%s failed: %s", ns, tf.Name, lastMessage(tf.Status.PhaseHistory))
	}
	return nil
}

func checkTable(w io.Writer, tf *srv1alpha1.TestFailover) error {
	fmt.Fprintf(w, "\nChecks of TestFailover %s (%s):\n", tf.Name, tf.Status.Phase)
	t := newTable(w, "VM", "CHECK", "PASSED", "MESSAGE")
	for _, r := range tf.Status.Results {
		t.row(r.VM, r.Check, strconv.FormatBool(r.Passed), r.Message)
	}
	if err := t.flush(); err != nil {
		return err
	}
	// A group with a boot plan: the stages the test VMs started in, as a
	// failover prints them (the implicit stage alone is no plan).
	if b := tf.Status.Boot; b != nil && (len(b.Stages) != 1 || b.Stages[0].Name != srv1alpha1.ImplicitStageName) {
		bootTable(w, bootStageStates(&srv1alpha1.FailoverRequestStatus{Boot: b}, time.Now()), b.Stopped)
	}
	return nil
}
