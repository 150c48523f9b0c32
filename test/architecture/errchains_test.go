package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestErrorsKeepTheirCause: product code never formats an error as text into
// another error (flow.Waiting, flow.Stalled or fmt.Errorf with err.Error()
// as an argument, or err under a verb other than %w): the cause then wraps
// with %w, so errors.Is and errors.As
// still find a NotFound, a Conflict or a flow error behind it. Messages for
// people (conditions, events, logs, HTTP answers) may format it as text.
func TestErrorsKeepTheirCause(t *testing.T) {
	// The index of each wrapper's format argument.
	wrappers := map[string]int{"flow.Waiting": 2, "flow.Stalled": 1, "fmt.Errorf": 0}
	fset := token.NewFileSet()
	var found []string
	for _, root := range []string{"../../internal", "../../apis", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				at, ok := wrappers[callee(call)]
				if !ok {
					return true
				}
				for _, arg := range call.Args {
					if isErrorText(arg) {
						found = append(found, fset.Position(call.Pos()).String())
					}
				}
				if arg := errorNotWrapped(call, at); arg != "" {
					found = append(found, fset.Position(call.Pos()).String()+": "+arg+" not under %w")
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Fatalf("wrap the cause with %%w instead of formatting err.Error() as text:\n%s", strings.Join(found, "\n"))
	}
}

func callee(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return pkg.Name + "." + sel.Sel.Name
}

// errorNotWrapped names an error argument (err, or any <name>Err) that a
// literal format puts under a verb other than %w, or "".
func errorNotWrapped(call *ast.CallExpr, at int) string {
	if len(call.Args) <= at {
		return ""
	}
	lit, ok := call.Args[at].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	format, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	args := call.Args[at+1:]
	for i, verb := range verbs(format) {
		if i >= len(args) {
			break
		}
		if id, ok := args[i].(*ast.Ident); ok && verb != 'w' && (id.Name == "err" || strings.HasSuffix(id.Name, "Err")) {
			return id.Name
		}
	}
	return ""
}

// verbs lists a format's verbs in order (%% is none).
func verbs(format string) []rune {
	var out []rune
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.ContainsRune("+-# 0123456789.*[]", rune(format[i])) {
			i++
		}
		if i < len(format) && format[i] != '%' {
			out = append(out, rune(format[i]))
		}
	}
	return out
}

// isErrorText matches err.Error() (or any <name>Err.Error(), e.g. statusErr).
func isErrorText(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Error" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && (id.Name == "err" || strings.HasSuffix(id.Name, "Err"))
}
