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
	return newRootCommand(&Options{Flags: genericclioptions.NewConfigFlags(true), IOStreams: streams})
}

func newRootCommand(o *Options) *cobra.Command {
	streams := o.IOStreams
	root := &cobra.Command{
		Use:   "kubectl-siterecovery",
		Short: "Operate siterecovery disaster recovery from the quorum cluster",
		Long: `kubectl siterecovery shows, checks and drives the DR of KubeVirt VMs.

The kubeconfig flags select the quorum cluster and its DR namespace (-n). The
workload clusters are reached only through the zone's kubeconfig Secrets, as
quorum-manager reaches them; a user who may not read those Secrets sees what the
quorum cluster records instead, and is told so.

The commands follow kubectl's conventions: -n picks the DR namespace (else
the kubeconfig context's), -A lists every DR namespace, -o json|yaml|name|
wide|jsonpath=...|go-template=... picks the output, --dry-run=client|server
tries a write without making it, and "completion bash|zsh|fish" prints a
completion script that also completes groups, clusters and requests from the
quorum cluster.

` + exitCodesHelp,
		Example: `  kubectl siterecovery status -n dr-production
  kubectl siterecovery status -A -o wide
  kubectl siterecovery validate -n dr-production
  kubectl siterecovery failover production-pg --to dr-cluster --wait -n dr-production
  kubectl siterecovery version`,
		// kubectl shows a plugin as "kubectl siterecovery".
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl siterecovery"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.Flags.AddFlags(root.PersistentFlags())
	_ = root.RegisterFlagCompletionFunc("namespace", o.completeNamespaces)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	root.AddCommand(
		newStatusCommand(o),
		newFailoverCommand(o),
		newFailbackCommand(o),
		newTestFailoverCommand(o),
		newDrillCommand(o),
		newProtectCommand(o),
		newUnprotectCommand(o),
		newValidateCommand(o),
		newReportCommand(o),
		newGatherCommand(o),
		newVersionCommand(o),
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
