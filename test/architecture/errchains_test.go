package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsKeepTheirCause: product code never formats an error as text into
// another error (flow.Waiting, flow.Stalled or fmt.Errorf with err.Error()
// as an argument): the cause then wraps with %w, so errors.Is and errors.As
// still find a NotFound, a Conflict or a flow error behind it. Messages for
// people (conditions, events, logs, HTTP answers) may format it as text.
func TestErrorsKeepTheirCause(t *testing.T) {
	wrappers := map[string]bool{"flow.Waiting": true, "flow.Stalled": true, "fmt.Errorf": true}
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
				if !ok || !wrappers[callee(call)] {
					return true
				}
				for _, arg := range call.Args {
					if isErrorText(arg) {
						found = append(found, fset.Position(call.Pos()).String())
					}
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
