package importcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// isInternal reports whether an import path has an internal element: code
// outside the module cannot import it, so it cannot name its types.
func isInternal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}

// apiWalker collects the places where a package's exported API reaches a
// type from an internal package.
type apiWalker struct {
	pkg  *types.Package
	seen map[types.Type]bool
	bad  []string
}

// internalUses lists, as "Ident.Field: pkg/internal/x.T", every exported
// identifier of pkg whose type, fields, methods or signature use a type
// from an internal package (pkg's own unexported types are looked through).
func internalUses(pkg *types.Package) []string {
	w := &apiWalker{pkg: pkg, seen: map[types.Type]bool{}}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.TypeName:
			if a, ok := obj.Type().(*types.Alias); ok {
				w.typ(name, a)
				continue
			}
			w.named(name, obj.Type())
		default:
			w.typ(name, obj.Type())
		}
	}
	slices.Sort(w.bad)
	return slices.Compact(w.bad)
}

// named walks a named type declared in pkg: its structure and methods.
func (w *apiWalker) named(where string, t types.Type) {
	if w.seen[t] {
		return
	}
	w.seen[t] = true
	n, ok := t.(*types.Named)
	if !ok {
		w.typ(where, t)
		return
	}
	if tp := n.TypeParams(); tp != nil {
		for i := range tp.Len() {
			w.typ(where, tp.At(i).Constraint())
		}
	}
	w.typ(where, n.Underlying())
	for i := range n.NumMethods() {
		if m := n.Method(i); m.Exported() {
			w.typ(where+"."+m.Name(), m.Type())
		}
	}
}

func (w *apiWalker) typ(where string, t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		if o := t.Obj(); o.Pkg() != nil && isInternal(o.Pkg().Path()) {
			w.bad = append(w.bad, where+": "+o.Pkg().Path()+"."+o.Name())
			return
		}
		w.typ(where, types.Unalias(t))
	case *types.Named:
		o := t.Obj()
		if o.Pkg() != nil && isInternal(o.Pkg().Path()) {
			w.bad = append(w.bad, where+": "+o.Pkg().Path()+"."+o.Name())
			return
		}
		if args := t.TypeArgs(); args != nil {
			for i := range args.Len() {
				w.typ(where, args.At(i))
			}
		}
		// Another package's type is that package's concern; an unexported
		// type of this one is reached only through here.
		if o.Pkg() == w.pkg && !o.Exported() {
			w.named(where, t)
		}
	case *types.Pointer:
		w.typ(where, t.Elem())
	case *types.Slice:
		w.typ(where, t.Elem())
	case *types.Array:
		w.typ(where, t.Elem())
	case *types.Chan:
		w.typ(where, t.Elem())
	case *types.Map:
		w.typ(where, t.Key())
		w.typ(where, t.Elem())
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				w.typ(where, tup.At(i).Type())
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() || f.Embedded() {
				w.typ(where+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := range t.NumExplicitMethods() {
			if m := t.ExplicitMethod(i); m.Exported() {
				w.typ(where+"."+m.Name(), m.Type())
			}
		}
		for i := range t.NumEmbeddeds() {
			w.typ(where, t.EmbeddedType(i))
		}
	case *types.Union:
		for i := range t.Len() {
			w.typ(where, t.Term(i).Type())
		}
	case *types.TypeParam:
		w.typ(where, t.Constraint())
	}
}

// TestNoInternalTypesInAPI loads every library package's export data (go
// list -export) and checks that its exported API names no type from an
// internal package: a user outside the module could not write it down.
func TestNoInternalTypesInAPI(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	var libs []string
	for _, p := range sources(t) {
		if matchAny([]string{library}, p.ImportPath) && !isInternal(p.ImportPath) {
			libs = append(libs, p.ImportPath)
		}
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-export", "-deps", "-json=ImportPath,Export,Name"}, libs...)...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -export: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	exports := map[string]string{}
	names := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export, Name string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath], names[p.ImportPath] = p.Export, p.Name
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	checked := 0
	for _, path := range libs {
		if names[path] == "main" {
			continue
		}
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		checked++
		for _, u := range internalUses(pkg) {
			t.Errorf("%s.%s", path, u)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d library packages", checked)
	}
}

// The walker finds an internal type wherever the exported API can reach it.
func TestInternalUses(t *testing.T) {
	fset := token.NewFileSet()
	check := func(path, src string, imp types.Importer) *types.Package {
		t.Helper()
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, []*ast.File{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pkg
	}
	secret := check("example.com/m/internal/secret", "package secret\ntype T int\ntype U struct{}\ntype G[X any] struct{ V X }\n", nil)
	lib := check("example.com/m/lib", `package lib
import "example.com/m/internal/secret"
type R struct{ F secret.T; g secret.T }
func (R) Method() secret.T { return 0 }
func (*R) Ptr(int) (string, *secret.U) { return "", nil }
func G() *secret.U { return nil }
type hidden struct{ X secret.T; y secret.T }
func H() hidden { return hidden{} }
type ok struct{ f secret.T }
func K(x int) ok { return ok{} }
type M map[string][]secret.T
type I interface{ Do(secret.T) }
var V secret.U
type A = secret.T
type Gen[X interface{ ~string | secret.T }] struct{}
type Inst struct{ L []List[secret.T] }
type List[X any] struct{}
type Emb struct{ hiddenEmb }
type hiddenEmb struct{ Z secret.T }
func Fine(a, b int) (int, error) { return a + b, nil }
var unexported secret.T
`, importerFunc(func(path string) (*types.Package, error) {
		if path == secret.Path() {
			return secret, nil
		}
		return nil, fmt.Errorf("unknown %s", path)
	}))
	want := []string{
		"A: example.com/m/internal/secret.T",
		"Emb.hiddenEmb.Z: example.com/m/internal/secret.T",
		"G: example.com/m/internal/secret.U",
		"Gen: example.com/m/internal/secret.T",
		"H.X: example.com/m/internal/secret.T",
		"I.Do: example.com/m/internal/secret.T",
		"Inst.L: example.com/m/internal/secret.T",
		"M: example.com/m/internal/secret.T",
		"R.F: example.com/m/internal/secret.T",
		"R.Method: example.com/m/internal/secret.T",
		"R.Ptr: example.com/m/internal/secret.U",
		"V: example.com/m/internal/secret.U",
	}
	if got := internalUses(lib); !slices.Equal(got, want) {
		t.Errorf("internalUses:\n got %q\nwant %q", got, want)
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
