package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewRootCommand returns `kubectl siterecovery` with every subcommand.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{Flags: genericclioptions.NewConfigFlags(true), IOStreams: streams}
	root := &cobra.Command{
		Use:   "kubectl-siterecovery",
		Short: "Operate siterecovery disaster recovery from the quorum cluster",
		Long: `kubectl siterecovery shows, checks and drives the DR of KubeVirt VMs.

The kubeconfig flags select the quorum cluster and its DR namespace (-n). The
workload clusters are reached only through the zone's kubeconfig Secrets, as
quorum-manager reaches them; a user who may not read those Secrets sees what the
quorum cluster records instead, and is told so.

` + exitCodesHelp,
		Example: `  kubectl siterecovery status -n dr-production
  kubectl siterecovery validate -n dr-production
  kubectl siterecovery failover production-pg --to dr-cluster --wait -n dr-production`,
		// kubectl shows a plugin as "kubectl siterecovery".
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl siterecovery"},
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return checkOutput(o.Output)
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.Flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&o.Output, "output", "o", outputTable, "output format: table, json or yaml")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	root.AddCommand(
		newStatusCommand(o),
		newFailoverCommand(o),
		newFailbackCommand(o),
		newTestFailoverCommand(o),
		newProtectCommand(o),
		newUnprotectCommand(o),
		newValidateCommand(o),
		newGatherCommand(o),
	)
	return root
}

// Run executes the command line args and returns the process exit code,
// printing the error, if any, to stderr.
func Run(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	root := NewRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(streams.ErrOut, "error:", err)
	}
	return Code(err)
}

// exactArgs is cobra.ExactArgs with the usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usagef("%v", err)
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(n)(cmd, args); err != nil {
			return usagef("%v", err)
		}
		return nil
	}
}
