package importcheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kvcfg/kvcfg"

// own turns module-relative patterns into import-path patterns.
func own(patterns ...string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = module + "/" + p
	}
	return out
}

// library stands for every package of the module except the applications.
const library = "library"

// apps are the packages allowed to be an application: the command line
// (internal/cli, on cobra), the programs, the HTTP server and its metrics
// and web page.
var apps = own("internal/cli", "cmd/...", "server/...")

// httpLibraries are library packages whose job is HTTP: they may import
// net/http. hub is the Hugging Face Hub client, hub/hubtest its fake Hub
// for tests.
var httpLibraries = own("hub/...")

// A rule forbids the packages From matches to import what Deny matches,
// unless Allow matches it too. Patterns are import paths; "X/..." matches X
// and every package below it. Only a package's own imports count, not its
// tests'. Besides these, no engine imports another (engine/A/... never
// imports engine/B/...). docs/ARCHITECTURE.md states the same table: keep
// them together.
type rule struct {
	From, Except, Deny, Allow []string
	Why                       string
}

var rules = []rule{
	{From: own("units"), Deny: own("..."),
		Why: "units is the bottom layer: it imports no kvcfg package"},
	{From: own("dtype"), Deny: own("..."), Allow: own("units"),
		Why: "dtype imports only units"},
	{From: own("model"), Deny: own("..."), Allow: own("dtype", "units", "internal/inputfile"),
		Why: "model imports only dtype, units and internal/inputfile"},
	{From: own("pool/..."), Deny: own("engine/...", "plan/...", "fit/...", "explain/..."),
		Why: "pool is engine-neutral: an engine's glue to it lives beside the engine (engine/sglang/pools: pools.New)"},
	{From: own("engine/..."), Deny: own("plan/...", "fit/...", "explain/..."),
		Why: "engines sit below plan: plan resolves the model and the GPU and calls them through its adapters"},
	{From: []string{library}, Deny: apps,
		Why: "library packages do not import the applications"},
	{From: []string{library}, Deny: []string{"github.com/spf13/cobra/...", "github.com/spf13/pflag/...", "github.com/prometheus/...", "github.com/VictoriaMetrics/..."},
		Why: "library packages do not parse flags or export metrics"},
	{From: []string{library}, Except: httpLibraries, Deny: []string{"net/http/..."},
		Why: "library packages do not serve or fetch over HTTP (an HTTP client package is listed in httpLibraries)"},
}

// match reports whether path matches pattern.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if p == library && match(module+"/...", path) && !matchAny(apps, path) || match(p, path) {
			return true
		}
	}
	return false
}

// engineOf is NAME for a package under engine/NAME, else "".
func engineOf(path string) string {
	r, ok := strings.CutPrefix(path, module+"/engine/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(r, "/")
	return name
}

// pkg is one package as go list reports it.
type pkg struct {
	ImportPath string
	Imports    []string
}

// violations lists every import of pkgs that the rules forbid.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			for _, r := range rules {
				if matchAny(r.From, p.ImportPath) && !matchAny(r.Except, p.ImportPath) &&
					matchAny(r.Deny, imp) && !matchAny(r.Allow, imp) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", p.ImportPath, imp, r.Why))
				}
			}
			if a, b := engineOf(p.ImportPath), engineOf(imp); a != "" && b != "" && a != b {
				out = append(out, fmt.Sprintf("%s imports %s: no engine imports another; shared code goes below both (model, dtype, pool)", p.ImportPath, imp))
			}
		}
	}
	return out
}

// moduleRoot is the directory holding the module's go.mod, found by
// walking up from the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+module+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the test's directory", module)
		}
		dir = parent
	}
}

// sources reads the imports of every package of the module from its
// non-test .go files, whatever their build constraints (except
// //go:build ignore), so that an import behind a tag counts too. Reading
// the files here also makes go test's cache notice when one changes.
func sources(t *testing.T) []pkg {
	t.Helper()
	root := moduleRoot(t)
	byDir := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir // a nested module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if ignored(f) {
			return nil
		}
		dir := filepath.Dir(path)
		if byDir[dir] == nil {
			byDir[dir] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			byDir[dir][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	for dir, imps := range byDir {
		r, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		p := pkg{ImportPath: module}
		if r != "." {
			p.ImportPath += "/" + filepath.ToSlash(r)
		}
		for imp := range imps {
			p.Imports = append(p.Imports, imp)
		}
		slices.Sort(p.Imports)
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages under %s", len(pkgs), root)
	}
	return pkgs
}

// ignored reports whether f is built only with the ignore tag (a
// generator or scratch file, never part of a package).
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			x, err := constraint.Parse(c.Text)
			if err != nil {
				return false
			}
			return mentions(x, "ignore")
		}
	}
	return false
}

func mentions(x constraint.Expr, tag string) bool {
	switch x := x.(type) {
	case *constraint.TagExpr:
		return x.Tag == tag
	case *constraint.NotExpr:
		return mentions(x.X, tag)
	case *constraint.AndExpr:
		return mentions(x.X, tag) || mentions(x.Y, tag)
	case *constraint.OrExpr:
		return mentions(x.X, tag) || mentions(x.Y, tag)
	}
	return false
}

func TestImportRules(t *testing.T) {
	pkgs := sources(t)
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
	// The walk sees the packages the rules are about.
	for _, want := range own("units", "dtype", "model", "pool", "engine/sglang", "engine/vllm", "plan", "internal/cli") {
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.ImportPath == want }) {
			t.Errorf("package %s not found", want)
		}
	}
}

// Every rule fires on an import it forbids and stays quiet on the allowed
// ones next to it.
func TestRulesFire(t *testing.T) {
	k := func(p string) string { return module + "/" + p }
	tests := []struct {
		from, imp string
		bad       bool
	}{
		{k("units"), "strconv", false},
		{k("units"), k("dtype"), true},
		{k("dtype"), k("units"), false},
		{k("dtype"), k("model"), true},
		{k("model"), k("dtype"), false},
		{k("model"), k("catalog"), true},
		{k("model"), k("format/safetensors"), true},
		{k("pool"), k("quant"), false},
		{k("pool"), k("engine/sglang"), true},
		{k("pool"), k("plan"), true},
		{k("engine/sglang"), k("pool"), false},
		{k("engine/sglang/pools"), k("pool"), false},
		{k("engine/sglang/pools"), k("engine/sglang"), false},
		{k("engine/sglang"), k("engine/sglang/sizing"), false},
		{k("engine/sglang"), k("plan"), true},
		{k("engine/vllm"), k("fit"), true},
		{k("engine/sglang"), k("engine/vllm"), true},
		{k("engine/vllm"), k("engine/sglang/sizing"), true},
		{k("engine/trtllm"), k("engine/sglang"), true},
		{k("plan"), k("engine/sglang"), false},
		{k("plan"), k("engine/vllm"), false},
		{k("plan"), k("internal/cli"), true},
		{k("plan"), k("server"), true},
		{k("explain"), k("server/web"), true},
		{k("plan"), "github.com/spf13/cobra", true},
		{k("units"), "github.com/spf13/pflag", true},
		{k("fit"), "net/http", true},
		{k("catalog"), "net/http/httputil", true},
		{k("catalog"), "net/url", false},
		{k("quant"), "github.com/prometheus/client_golang/prometheus", true},
		{k("internal/cli"), "github.com/spf13/cobra", false},
		{k("internal/cli"), "github.com/spf13/pflag", false},
		{k("internal/cli"), k("server"), false},
		{k("internal/cli"), k("hub"), false},
		{k("internal/cli"), "net", false},
		{k("internal/cli"), "net/url", false},
		{k("cmd/kvcfg"), k("internal/cli"), false},
		{k("hub"), "github.com/spf13/cobra", true},
		{k("hub"), k("internal/cli"), true},
		{k("server"), "net/http", false},
		{k("server"), "github.com/prometheus/client_golang/prometheus", false},
		{k("server"), "github.com/prometheus/client_golang/prometheus/promhttp", false},
		{k("pool"), "github.com/VictoriaMetrics/metrics", true},
		{k("server"), k("plan"), false},
	}
	for _, tt := range tests {
		got := violations([]pkg{{ImportPath: tt.from, Imports: []string{tt.imp}}})
		if bad := len(got) > 0; bad != tt.bad {
			t.Errorf("%s → %s: violations %q, want bad=%v", tt.from, tt.imp, got, tt.bad)
		}
	}
}

// docCell is how docs/ARCHITECTURE.md writes an import pattern: module
// packages relative to the module, in backticks; "any kvcfg package" for
// the whole module.
func docCell(pattern string) string {
	switch {
	case pattern == library:
		return library
	case pattern == module+"/...":
		return "any kvcfg package"
	}
	if r, ok := strings.CutPrefix(pattern, module+"/"); ok {
		return "`" + r + "`"
	}
	return "`" + pattern + "`"
}

// TestRulesDocumented keeps the rule table of docs/ARCHITECTURE.md in step
// with rules: each rule has a row whose first cell names its packages and
// whose second names everything it denies and allows.
func TestRulesDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Import rules\n")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no \"## Import rules\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	type row struct{ from, deny string }
	var rows []row
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) >= 4 && !strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			rows = append(rows, row{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
		}
	}
	documented := func(from []string, mentions ...string) bool {
		cells := make([]string, len(from))
		for i, f := range from {
			cells[i] = docCell(f)
		}
		want := strings.Join(cells, ", ")
		for _, r := range rows {
			if r.from != want {
				continue
			}
			all := true
			for _, m := range mentions {
				all = all && strings.Contains(r.deny, docCell(m))
			}
			if all {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		if !documented(r.From, append(slices.Clone(r.Deny), r.Allow...)...) {
			t.Errorf("docs/ARCHITECTURE.md has no import-rule row for %v → %v (allowing %v)", r.From, r.Deny, r.Allow)
		}
	}
	if !documented(own("engine/A/..."), own("engine/B/...")...) {
		t.Error("docs/ARCHITECTURE.md has no row saying no engine imports another (engine/A/... → engine/B/...)")
	}
}

// kvcfgLinks are packages the one kvcfg binary must link: its command
// line (cobra), the HTTP server of kvcfg serve with its metrics
// (client_golang) and the Hugging Face Hub client. Extend it with what
// another front end needs linked.
var kvcfgLinks = []string{
	"github.com/spf13/cobra",
	"github.com/prometheus/client_golang/prometheus",
	module + "/server",
	module + "/hub",
}

// TestKvcfgLinksEverything checks, on the whole dependency graph of
// cmd/kvcfg (go list -deps), that the one binary links every command:
// serve and Hub ids included, with no second program to find.
func TestKvcfgLinksEverything(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", module+"/cmd/kvcfg")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	for _, want := range append([]string{module + "/plan"}, kvcfgLinks...) {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps ./cmd/kvcfg lists no %s", want)
		}
	}
}
