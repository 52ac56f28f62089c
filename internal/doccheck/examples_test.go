package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// mainPackages are the packages the README's library section points to:
// each has a runnable example (a func Example... with an // Output:
// comment, which go test runs and pkg.go.dev shows).
var mainPackages = []string{"plan", "engine", "engine/sglang", "engine/vllm", "engine/trtllm", "fit", "simulate", "explain", "pool", "quant", "catalog"}

func TestMainPackagesHaveExamples(t *testing.T) {
	for _, pkg := range mainPackages {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range files {
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Recv != nil {
					continue
				}
				for _, cg := range af.Comments {
					if cg.Pos() > fn.Body.Lbrace && cg.End() < fn.Body.Rbrace && strings.HasPrefix(strings.TrimSpace(cg.Text()), "Output:") {
						n++
						break
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("package %s has no runnable example (func Example... with // Output:)", pkg)
		}
	}
}
