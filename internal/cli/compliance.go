package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/report"
)

// defaultWindow is the report's window without --window: a week, as
// quorum-manager's compliance metric defaults to.
const defaultWindow = "7d"

// reportNow is the report's clock; tests on a real API server pin it after
// the objects' server-set creation times.
var reportNow = time.Now

// ComplianceReport is what report prints: one compliance report per DR
// namespace (internal/report). Its field names are part of the CLI's
// interface.
type ComplianceReport struct {
	metav1.TypeMeta `json:",inline"`
	// Window is the --window the report covers, ending now.
	Window     string          `json:"window"`
	Namespaces []report.Report `json:"namespaces"`
}

// DeepCopyObject implements runtime.Object.
func (r *ComplianceReport) DeepCopyObject() runtime.Object { return deepCopyJSON(r) }

var _ runtime.Object = (*ComplianceReport)(nil)

func newReportCommand(o *Options) *cobra.Command {
	pf := newPrintFlags(true).forReport()
	var all bool
	window := defaultWindow
	cmd := &cobra.Command{
		Use:   "report [GROUP]",
		Short: "Show each group's RPO compliance, last drill and measured RTO over a window",
		Long: `report shows, for each group of the DR namespace (-n, else the kubeconfig
context's) or with -A of every DR namespace you may list, over the window that
ends now (--window, default 7d):

  - RPO met: the share of the window the replication lag was within the
    objective (the RPOEvents' breach episodes, an open one counting to now),
    and the worst episode (peak lag, start, duration); a group created inside
    the window is measured from its creation, and the table says so;
  - the last drill: the newest TestFailover, scheduled by the group's drill
    schedule or run by hand, with its phase and each check's verdict, and
    when a drill last passed every check;
  - the measured RTO of the last drill (its start to its last check passing)
    and of the last failover: a FailoverRequest's first phase to Completed,
    as --wait counts, or a DRPlacementControl's finished Failover or Relocate
    (its actionDuration), whichever finished last. If you may not list
    DRPlacementControls, theirs are left out and a note says so.

-o json|yaml|jsonpath=...|go-template=... print the report (apiVersion
` + ReportGroupVersion.String() + `, kind ComplianceReport).`,
		Example: `  kubectl siterecovery report -n dr-production
  kubectl siterecovery report --window 30d -A
  kubectl siterecovery report production-pg --window 24h -o yaml
  kubectl siterecovery report -o jsonpath='{.namespaces[0].groups[0].rpo.metRatio}'`,
		Args:              maxArgs(1),
		ValidArgsFunction: o.completeGroupArg,
		PreRunE:           func(*cobra.Command, []string) error { return pf.checkReport() },
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := parseWindow(window)
			if err != nil {
				return err
			}
			group := ""
			if len(args) == 1 {
				group = args[0]
			}
			r, err := o.compliance(cmd.Context(), group, all, w, reportNow())
			if err != nil {
				return err
			}
			r.Window = window
			if pf.human() {
				return r.table(o.Out, pf.tableOptions(), all)
			}
			return pf.printObj(r, o.Out)
		},
	}
	cmd.Flags().StringVar(&window, "window", window, "the span the report covers, ending now: a number of days (7d, 30d) or a duration (24h, 90m)")
	addAllNamespaces(cmd, &all)
	pf.addFlags(cmd)
	return cmd
}

// parseWindow reads 7d, 30d or a Go duration (24h).
func parseWindow(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, perr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, perr
	}
	if err != nil || d <= 0 {
		return 0, usagef("--window %q: give a positive number of days (7d, 30d) or a duration (24h, 90m)", s)
	}
	return d, nil
}

// compliance reads each DR namespace's objects and builds its report over
// [now-window, now).
func (o *Options) compliance(ctx context.Context, group string, all bool, window time.Duration, now time.Time) (*ComplianceReport, error) {
	c, nss, err := o.inNamespaces(ctx, all)
	if err != nil {
		return nil, err
	}
	out := &ComplianceReport{TypeMeta: reportMeta("ComplianceReport"), Namespaces: []report.Report{}}
	found := false
	for _, ns := range nss {
		in, err := readReportInput(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		in.From, in.To, in.Now = now.Add(-window), now, now
		r := report.Build(in)
		if group != "" {
			r.Groups = onlyGroup(r.Groups, group)
			if len(r.Groups) == 0 && all {
				continue
			}
		}
		found = found || len(r.Groups) > 0
		out.Namespaces = append(out.Namespaces, r)
	}
	if group != "" && !found {
		return nil, fmt.Errorf("no ProtectionGroup %q in DR namespace %s (use -n to pick the DR namespace, or -A)", group, strings.Join(nss, ", "))
	}
	return out, nil
}

// readReportInput lists what the report is built from in one DR namespace.
// DRPlacementControls are optional: a user who may not list them gets the
// rest, with a note; without their CRD there are none to leave out.
func readReportInput(ctx context.Context, c client.Client, ns string) (report.Input, error) {
	groups, events := &srv1alpha1.ProtectionGroupList{}, &srv1alpha1.RPOEventList{}
	tfs, frs := &srv1alpha1.TestFailoverList{}, &srv1alpha1.FailoverRequestList{}
	for _, l := range []client.ObjectList{groups, events, tfs, frs} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return report.Input{}, fmt.Errorf("reading the report's objects in %s: %w", ns, err)
		}
	}
	in := report.Input{Namespace: ns, Groups: groups.Items, Events: events.Items, TestFailovers: tfs.Items, Requests: frs.Items}
	drpcs := &drv1alpha1.DRPlacementControlList{}
	switch err := c.List(ctx, drpcs, client.InNamespace(ns)); {
	case apierrors.IsForbidden(err):
		in.Notes = append(in.Notes, report.DRPCsHiddenNote)
	case meta.IsNoMatchError(err):
	case err != nil:
		return report.Input{}, fmt.Errorf("reading the report's DRPlacementControls in %s: %w", ns, err)
	default:
		in.DRPCs = drpcs.Items
	}
	return in, nil
}

func onlyGroup(gs []report.Group, name string) []report.Group {
	out := []report.Group{}
	for _, g := range gs {
		if g.Name == name {
			out = append(out, g)
		}
	}
	return out
}
