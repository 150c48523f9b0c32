package cli

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Values of --dry-run, as kubectl's.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
	// dryRunBare is what a bare --dry-run sets: kubectl refuses it too.
	dryRunBare = "unchanged"
)

// writeFlags are the flags of a verb that writes: --dry-run and -o. The
// default output says what was done ("failoverrequest.siterecovery.trilio.io/x
// created"), as kubectl create does.
type writeFlags struct {
	dryRun string
	print  *printFlags
}

func newWriteFlags() *writeFlags {
	return &writeFlags{dryRun: dryRunNone, print: newPrintFlags(false)}
}

func (f *writeFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dryRun, "dry-run", dryRunNone, `"none", "client" or "server". client: print what would be sent, send nothing. server: send it with dryRun=All, so the API server's admission (webhooks, CEL policies) and validation run and their refusal is shown, and nothing is stored`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunBare
	_ = cmd.RegisterFlagCompletionFunc("dry-run", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{dryRunNone, dryRunClient, dryRunServer}, cobra.ShellCompDirectiveNoFileComp
	})
	f.print.addFlags(cmd)
}

// check refuses a bad --dry-run or -o, and --wait with a dry run (nothing is
// created to wait for).
func (f *writeFlags) check(wait bool) error {
	switch f.dryRun {
	case dryRunNone, dryRunClient, dryRunServer:
	case dryRunBare:
		return usagef(`--dry-run needs a value: --dry-run=client or --dry-run=server`)
	default:
		return usagef(`invalid --dry-run %q: use "none", "client" or "server"`, f.dryRun)
	}
	if wait && f.dryRun != dryRunNone {
		return usagef("--wait cannot be used with --dry-run: nothing is created to wait for")
	}
	return f.print.check()
}

// send is false for a client dry run: the command prints what it would send.
func (f *writeFlags) send() bool { return f.dryRun != dryRunClient }

// createOptions, patchOptions and deleteOptions carry dryRun=All for a server dry run.
func (f *writeFlags) createOptions() []client.CreateOption {
	if f.dryRun == dryRunServer {
		return []client.CreateOption{client.DryRunAll}
	}
	return nil
}

func (f *writeFlags) patchOptions() []client.PatchOption {
	if f.dryRun == dryRunServer {
		return []client.PatchOption{client.DryRunAll}
	}
	return nil
}

func (f *writeFlags) deleteOptions() []client.DeleteOption {
	if f.dryRun == dryRunServer {
		return []client.DeleteOption{client.DryRunAll}
	}
	return nil
}

// done prints what a write did with obj: "kind.group/name created" (with the
// dry run named, as kubectl prints it) by default, else obj in the -o format.
// A client dry run of an object named by the API server (generateName) shows
// that prefix followed by "<generated>".
func (f *writeFlags) done(o *Options, obj client.Object, verb string) error {
	switch f.dryRun {
	case dryRunClient:
		verb += " (dry run)"
	case dryRunServer:
		verb += " (server dry run)"
	}
	pf := f.print.withOperation(verb)
	if pf.format() == "" || pf.format() == "name" {
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			obj = obj.DeepCopyObject().(client.Object)
			obj.SetName(obj.GetGenerateName() + "<generated>")
		}
	}
	return pf.printObj(obj, o.Out)
}
