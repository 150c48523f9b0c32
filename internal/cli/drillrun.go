package cli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drillNow is the clock a drill's name is read from; tests pin it.
var drillNow = time.Now

// drillFlags describe the drill of a group that has no spec.drill.template.
type drillFlags struct {
	to         string
	guestAgent bool
	probePort  int32
	limit      time.Duration
}

// set reports the flags that were given: a group with a template runs it.
func (f *drillFlags) set(cmd *cobra.Command) []string {
	var out []string
	for _, n := range []string{"to", "guest-agent", "probe-port", "drill-timeout"} {
		if cmd.Flags().Changed(n) {
			out = append(out, "--"+n)
		}
	}
	return out
}

func newDrillCommand(o *Options) *cobra.Command {
	var wait bool
	var timeout time.Duration
	df := &drillFlags{}
	wf := newWriteFlags()
	cmd := &cobra.Command{
		Use:   "drill GROUP",
		Short: "Run a drill of a group now, outside its schedule (creates a TestFailover the drill controller counts)",
		Long: `drill starts a drill of the group now: a TestFailover named, labelled
and owned like the group's scheduled drills, so its result shows in the group's
status.drill (last drill, last result, lastSuccessfulTime), in the compliance
report, and counts toward spec.drill.keep. Its name is
<group>-drill-manual-<yyyymmddhhmmss> (UTC), which no scheduled drill can have.

A group with spec.drill runs its template (target cluster, checks, timeout).
A group without one is drilled with the flags: --to (default: the zone's
cluster the group does not run on), --guest-agent, --probe-port and
--drill-timeout.

The drill is refused while a TestFailover or a FailoverRequest of the group is
in progress. With --wait it streams the phases and prints each check's result;
the finished drill is kept (retention deletes it with the group's old drills).`,
		Example: `  kubectl siterecovery drill production-pg --wait -n dr-production
  kubectl siterecovery drill web-pg --to dr-cluster --probe-port 443 --wait
  kubectl siterecovery drill production-pg --dry-run=server -o yaml`,
		Args:              exactArgs(1),
		ValidArgsFunction: o.completeGroupArg,
		PreRunE:           func(*cobra.Command, []string) error { return wf.check(wait) },
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.drill(cmd.Context(), args[0], df, df.set(cmd), wait, timeout, wf)
		},
	}
	wf.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("to", o.completeClusters)
	cmd.Flags().StringVar(&df.to, "to", "", "for a group without spec.drill: the DR cluster whose replicas are tested; defaults to the zone's cluster the group is not active on")
	cmd.Flags().BoolVar(&df.guestAgent, "guest-agent", false, "for a group without spec.drill: require each test VM's guest agent to connect")
	cmd.Flags().Int32Var(&df.probePort, "probe-port", 0, "for a group without spec.drill: a TCP port each test VM must accept connections on")
	cmd.Flags().DurationVar(&df.limit, "drill-timeout", 0, "for a group without spec.drill: bound the drill (default 1h); on expiry it fails and cleans up")
	cmd.Flags().BoolVar(&wait, "wait", false, "stream the phases until the drill ends and print the check results")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, stop waiting after this long (the drill goes on)")
	return cmd
}

func (o *Options) drill(ctx context.Context, group string, df *drillFlags, given []string, wait bool, timeout time.Duration, wf *writeFlags) error {
	c, ns, pg, err := o.onGroup(ctx, group)
	if err != nil {
		return err
	}
	tmpl, err := o.drillTemplate(ctx, c, pg, df, given)
	if err != nil {
		return err
	}
	if why, err := drillBlocker(ctx, c, pg, tmpl.TargetCluster); err != nil || why != "" {
		if why != "" {
			return fmt.Errorf("not starting a drill of %s: %s", group, why)
		}
		return err
	}
	tf := manualDrill(pg, tmpl, drillNow())
	tf.Annotations = o.auditAnnotations(ctx, "")
	if wf.send() {
		if err := c.Create(ctx, tf, wf.createOptions()...); err != nil {
			return err
		}
	}
	if wf.dryRun == dryRunNone {
		fmt.Fprintf(o.ErrOut, "started drill %s/%s of %s on %s\n", ns, tf.Name, group, tf.Spec.TargetCluster)
	}
	if !wait {
		return wf.done(o, tf, "created")
	}
	if err := o.followTestFailover(ctx, c, tf, "drill (TestFailover)", timeout, wf); err != nil {
		return err
	}
	if tf.Status.Phase == srv1alpha1.TestFailoverFailed {
		return exitf(ExitRequestFailed, "drill %s/%s failed: %s", ns, tf.Name, lastMessage(tf.Status.PhaseHistory))
	}
	fmt.Fprintf(o.ErrOut, "drill %s/%s passed\n", ns, tf.Name)
	return nil
}

// drillTemplate is what the drill runs: the group's spec.drill.template, or
// the flags for a group without one.
func (o *Options) drillTemplate(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup, df *drillFlags, given []string) (srv1alpha1.DrillTemplate, error) {
	if pg.Spec.Drill != nil {
		if len(given) > 0 {
			return srv1alpha1.DrillTemplate{}, usagef("ProtectionGroup %s has spec.drill, and its drills run spec.drill.template; drop %s, or change the template",
				pg.Name, strings.Join(given, ", "))
		}
		return pg.Spec.Drill.Template, nil
	}
	t := srv1alpha1.DrillTemplate{TargetCluster: df.to, Checks: srv1alpha1.VerificationChecks{GuestAgent: df.guestAgent}}
	if df.probePort < 0 || df.probePort > 65535 {
		return t, usagef("--probe-port %d: give a TCP port, 1 to 65535", df.probePort)
	}
	if df.probePort > 0 {
		t.Checks.Probe = &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeTCP, Port: df.probePort}
	}
	if df.limit < 0 || df.limit > 24*time.Hour {
		return t, usagef("--drill-timeout %s: give at most 24h", df.limit)
	}
	if df.limit > 0 {
		t.TimeoutSeconds = int32(max(df.limit/time.Second, 1))
	}
	if t.TargetCluster == "" {
		z, err := zoneOf(ctx, c, pg)
		if err != nil {
			return t, err
		}
		for _, zc := range z.Spec.Clusters {
			if zc.Name != pg.Spec.ActiveCluster {
				t.TargetCluster = zc.Name
				break
			}
		}
	}
	return t, nil
}

// drillBlocker says why a drill must not start now, as the drill controller
// skips a scheduled one: never two tests of a group at once, never a test
// during a failover, never on the cluster the group runs on.
func drillBlocker(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup, target string) (string, error) {
	if target == pg.Spec.ActiveCluster {
		return fmt.Sprintf("the group runs on %s; a drill boots the DR copies, so name a DR cluster (--to, or spec.drill.template.targetCluster)", target), nil
	}
	tests := &srv1alpha1.TestFailoverList{}
	if err := c.List(ctx, tests, client.InNamespace(pg.Namespace)); err != nil {
		return "", fmt.Errorf("listing test failovers: %w", err)
	}
	for _, tf := range tests.Items {
		if tf.Spec.ProtectionGroupRef.Name == pg.Name && !testFailoverDone(tf.Status.Phase) {
			return fmt.Sprintf("TestFailover %s of the group is in progress (phase %s); wait for it to end", tf.Name, phaseOr(string(tf.Status.Phase))), nil
		}
	}
	requests := &srv1alpha1.FailoverRequestList{}
	if err := c.List(ctx, requests, client.InNamespace(pg.Namespace)); err != nil {
		return "", fmt.Errorf("listing failover requests: %w", err)
	}
	for _, fr := range requests.Items {
		if fr.Spec.ProtectionGroupRef.Name == pg.Name && !failoverDone(fr.Status.Phase) {
			return fmt.Sprintf("FailoverRequest %s of the group is in progress (phase %s); wait for it to end", fr.Name, phaseOr(string(fr.Status.Phase))), nil
		}
	}
	return "", nil
}

// manualDrill is the TestFailover of a drill started now: labelled with the
// group's name and controlled by the group, as the drill controller's own, so
// the controller records its result and retention counts it. The owner
// reference does not block the group's deletion: that would need update on
// protectiongroups/finalizers, which an operator does not hold.
func manualDrill(pg *srv1alpha1.ProtectionGroup, t srv1alpha1.DrillTemplate, now time.Time) *srv1alpha1.TestFailover {
	stamp := now.UTC().Format(manualStamp)
	return &srv1alpha1.TestFailover{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pg.Namespace,
			Name:      manualDrillName(pg.Name, stamp),
			Labels:    map[string]string{srv1alpha1.DrillLabel: pg.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: srv1alpha1.GroupVersion.String(), Kind: "ProtectionGroup", Name: pg.Name, UID: pg.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: srv1alpha1.TestFailoverSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: pg.Name},
			TargetCluster:      t.TargetCluster,
			IsolatedNamespace:  manualIsolatedNamespace(pg.Name, stamp),
			TimeoutSeconds:     cmp.Or(t.TimeoutSeconds, 3600),
			Checks:             t.Checks,
		},
	}
}

// manualStamp is the grain of a manual drill's name: seconds, so that two
// drills started a minute apart never share one.
const manualStamp = "20060102150405"

// manualDrillName is "<group>-drill-manual-<stamp>", a DNS label. A
// scheduled drill's name ends in "-drill-" and twelve digits; this one ends
// in "-manual-" and fourteen, so the two never collide.
func manualDrillName(group, stamp string) string {
	suffix := "-drill-manual-" + stamp
	return shortenName(group, 63-len(suffix)) + suffix
}

// manualIsolatedNamespace is "sr-drill-<group>-manual-<stamp>", a DNS label.
func manualIsolatedNamespace(group, stamp string) string {
	suffix := "-manual-" + stamp
	return "sr-drill-" + shortenName(strings.ReplaceAll(group, ".", "-"), 63-len("sr-drill-")-len(suffix)) + suffix
}

// shortenName keeps s when it fits in n characters, else a prefix and a hash
// of the whole, so two long group names never shorten to the same name.
func shortenName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	return strings.TrimRight(s[:n-len(h)-1], "-.") + "-" + h
}
