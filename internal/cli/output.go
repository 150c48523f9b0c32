package cli

import (
	"encoding/json"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
)

// ReportGroupVersion is the apiVersion of what the CLI prints that is not an
// API object (the status, validate and version reports): cli-runtime's
// printers, and scripts, need an apiVersion and kind on every object. No API
// server serves it.
var ReportGroupVersion = schema.GroupVersion{Group: "cli.siterecovery.trilio.io", Version: "v1alpha1"}

// reportMeta is the TypeMeta of a report of kind.
func reportMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: ReportGroupVersion.String(), Kind: kind}
}

// deepCopyJSON copies a report through its JSON form: reports are printed
// once, and their fields are all JSON.
func deepCopyJSON[T any](in *T) *T {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// table is a table for the default and wide output, printed by cli-runtime's
// table printer: columns added with wideColumns show only with -o wide, and
// --no-headers leaves the header out.
type table struct {
	w    io.Writer
	t    metav1.Table
	opts printers.PrintOptions
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	for _, h := range header {
		t.t.ColumnDefinitions = append(t.t.ColumnDefinitions, metav1.TableColumnDefinition{Name: h, Type: "string"})
	}
	return t
}

// wideColumns adds columns that -o wide shows after the others.
func (t *table) wideColumns(header ...string) *table {
	for _, h := range header {
		t.t.ColumnDefinitions = append(t.t.ColumnDefinitions, metav1.TableColumnDefinition{Name: h, Type: "string", Priority: 1})
	}
	return t
}

// with sets the printer's options (wide, no headers).
func (t *table) with(opts printers.PrintOptions) *table {
	t.opts = opts
	return t
}

// row adds a row; an empty cell shows as "-".
func (t *table) row(cells ...string) {
	r := metav1.TableRow{Cells: make([]any, len(cells))}
	for i, c := range cells {
		if c == "" {
			c = "-"
		}
		r.Cells[i] = c
	}
	t.t.Rows = append(t.t.Rows, r)
}

// flush prints the table; a table without rows prints nothing, as kubectl.
func (t *table) flush() error {
	return printers.NewTablePrinter(t.opts).PrintObj(&t.t, t.w)
}

var _ runtime.Object = (*StatusReport)(nil)
