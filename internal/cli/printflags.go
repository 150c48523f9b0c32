package cli

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/siterecovery/siterecovery/internal/scheme"
)

// Output formats of -o that cli-runtime's printers do not cover: the default
// table, and wide, which adds the table's priority columns (as kubectl get).
// "table" is kept for scripts written before -o followed kubectl.
const (
	outputTable = "table"
	outputWide  = "wide"
)

// printFlags are a command's -o and the flags that go with it: cli-runtime's
// print flags (json, yaml, name, jsonpath, go-template, ...) plus the table
// and wide forms, and --no-headers.
type printFlags struct {
	print     *genericclioptions.PrintFlags
	noHeaders bool
	// tables is false for a command that prints no table (a write prints
	// what it did by default, as kubectl create does).
	tables bool
	// report is true for a command that prints a report, not API objects:
	// it has no -o name.
	report bool
}

// forReport marks the flags of a command that prints a report.
func (f *printFlags) forReport() *printFlags {
	f.report = true
	return f
}

func newPrintFlags(tables bool) *printFlags {
	return &printFlags{print: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.New()), tables: tables}
}

func (f *printFlags) addFlags(cmd *cobra.Command) {
	f.print.JSONYamlPrintFlags.AddFlags(cmd)
	f.print.TemplatePrinterFlags.AddFlags(cmd)
	formats := f.print.AllowedFormats()
	if f.report {
		formats = slices.DeleteFunc(formats, func(s string) bool { return s == "name" })
	}
	if f.tables {
		formats = append([]string{outputWide}, formats...)
		cmd.Flags().BoolVar(&f.noHeaders, "no-headers", false, "when printing a table, leave out the headers")
	}
	def := "the default is a table"
	if !f.tables {
		def = `the default says what was done, as "kind.group/name created"`
	}
	cmd.Flags().StringVarP(f.print.OutputFormat, "output", "o", "", "output format, one of: "+strings.Join(formats, ", ")+"; "+def)
	f.print.OutputFlagSpecified = func() bool { return cmd.Flag("output").Changed }
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
}

func (f *printFlags) format() string { return strings.ToLower(*f.print.OutputFormat) }

// human is true for the default output: a table, or a write's message.
func (f *printFlags) human() bool {
	switch f.format() {
	case "", outputTable:
		return true
	case outputWide:
		return f.tables
	}
	return false
}

func (f *printFlags) wide() bool { return f.format() == outputWide }

// check refuses an unknown format before the command does anything.
func (f *printFlags) check() error {
	if f.human() {
		if f.format() == outputTable {
			// -o table is the default spelled out; the name printer must
			// not see it.
			*f.print.OutputFormat = ""
		}
		return nil
	}
	if _, err := f.print.ToPrinter(); err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			allowed := f.print.AllowedFormats()
			if f.tables {
				allowed = append(allowed, outputWide)
			}
			return usagef("unknown output format %q: use one of %s", f.format(), strings.Join(allowed, ", "))
		}
		return usagef("%v", err)
	}
	return nil
}

// checkReport is check for a command that prints a report: it has no API
// object to name, so -o name is refused.
func (f *printFlags) checkReport() error {
	if f.report && f.format() == "name" {
		return usagef("-o name prints API objects' names; this command prints a report: use -o json, yaml, jsonpath=... or go-template=...")
	}
	return f.check()
}

// printObj prints obj in the -o format (not the table).
func (f *printFlags) printObj(obj runtime.Object, w io.Writer) error {
	p, err := f.print.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(obj, w)
}

// withOperation returns the print flags with the name printer's verb set
// ("created", "created (server dry run)"), as kubectl's -o name prints it.
func (f *printFlags) withOperation(op string) *printFlags {
	out := *f
	p := *f.print
	p.NamePrintFlags = genericclioptions.NewNamePrintFlags(op)
	out.print = &p
	return &out
}

func (f *printFlags) tableOptions() printers.PrintOptions {
	return printers.PrintOptions{Wide: f.wide(), NoHeaders: f.noHeaders}
}
