package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/siterecovery/siterecovery/internal/cli/validate"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func newValidateCommand(o *Options) *cobra.Command {
	pf := newPrintFlags(true).forReport()
	cmd := &cobra.Command{
		Use:   "validate [zone|group NAME]",
		Short: "Check what would break DR before it is needed; score each check ok, warning or problem",
		Long: `validate checks, for every zone of the DR namespace or for one zone or group:
the kubeconfig Secrets parse and are safe; each cluster answers, and the
Secret's identity has every right quorum-manager uses there (one
SelfSubjectAccessReview per verb and resource); the CRDs serve this CLI's
version; a ready drbd-node-agent runs on every node holding a replica; DRBD
connections are up and in sync; no node has the lost-quorum taint; standby VMs
match pg-sync's intent; each group's boot plan names VMs of the group and its
selectors match some; a drill's schedule parses and its target is a cluster
the group does not run on, and its last drill passed; a VolumeSnapshotClass
exists for test failover; the
clusters' clocks agree (API server Date headers); the RPO objective is met.

Each problem and warning says what to do. It exits 3 when a problem is found.
A user who may not read the kubeconfig Secrets gets a warning per cluster and
the quorum cluster's view of it.

-o wide shows each fix in a FIX column; -o json|yaml|jsonpath=... print the
report (apiVersion ` + ReportGroupVersion.String() + `, kind ValidateReport).`,
		Example: `  kubectl siterecovery validate -n dr-production
  kubectl siterecovery validate group production-pg -o json
  kubectl siterecovery validate -o jsonpath='{.problems}'`,
		ValidArgsFunction: o.completeValidate,
		PreRunE:           func(*cobra.Command, []string) error { return pf.checkReport() },
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if len(args) != 2 || (args[0] != "zone" && args[0] != "group") {
				return usagef("use validate, validate zone NAME or validate group NAME")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var scope validate.Scope
			if len(args) == 2 {
				if args[0] == "zone" {
					scope.Zone = args[1]
				} else {
					scope.Group = args[1]
				}
			}
			r, err := o.validate(cmd.Context(), scope)
			if err != nil {
				return err
			}
			r.TypeMeta = reportMeta("ValidateReport")
			if pf.human() {
				err = r.Print(o.Out, pf.tableOptions())
			} else {
				err = pf.printObj(r, o.Out)
			}
			if err != nil {
				return err
			}
			if r.Problems > 0 {
				return exitf(ExitProblems, "validate found %d problems", r.Problems)
			}
			return nil
		},
	}
	pf.addFlags(cmd)
	return cmd
}

func (o *Options) validate(ctx context.Context, scope validate.Scope) (*validate.Report, error) {
	c, err := o.Quorum()
	if err != nil {
		return nil, err
	}
	cfg, err := o.Flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	return validate.Run(ctx, validate.Input{Quorum: c, QuorumConfig: cfg, Scheme: scheme.New(), Namespace: ns, Scope: scope})
}
