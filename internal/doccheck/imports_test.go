package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/kvcfg/kvcfg"

// pkgRef is a package path in a code span ("`cmd/kvcfg-loadgen`").
var pkgRef = regexp.MustCompile("`([a-z][a-z0-9_/-]*)`")

// packageRow is one row of docs/ARCHITECTURE.md's package table: the
// packages its first cell names and the kvcfg packages its "imports" cell
// lists.
type packageRow struct {
	line     int
	packages []string
	imports  []string
}

// packageTable reads the package table (the rows under "## Packages"
// whose first cell starts with a code span). The imports cell is an exact,
// comma-separated list of package paths relative to the module ("—" for
// none); cells may escape '|' as "\|".
func packageTable(t *testing.T, doc string) []packageRow {
	t.Helper()
	var rows []packageRow
	in := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if len(cells) != 5 {
			t.Errorf("docs/ARCHITECTURE.md:%d: a package row has %d cells, want 3", i+1, len(cells)-2)
			continue
		}
		row := packageRow{line: i + 1}
		for _, m := range pkgRef.FindAllStringSubmatch(cells[1], -1) {
			row.packages = append(row.packages, strings.TrimSuffix(m[1], "/"))
		}
		if imp := strings.TrimSpace(cells[3]); imp != "—" {
			for _, p := range strings.Split(imp, ",") {
				row.imports = append(row.imports, strings.Trim(strings.TrimSpace(p), "`"))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// kvcfgImports maps each package of the module (its path relative to the
// module) to the module's packages its non-test files import, from go
// list.
func kvcfgImports(t *testing.T) map[string][]string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, serr := os.Stat(goCmd); serr != nil {
			t.Skip("no go command to list the packages with")
		}
	}
	cmd := exec.Command(goCmd, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		p, ok := relPath(fields[0])
		if !ok {
			continue
		}
		imports := []string{}
		for _, imp := range fields[1:] {
			if q, ok := relPath(imp); ok {
				imports = append(imports, q)
			}
		}
		pkgs[p] = imports
	}
	return pkgs
}

// relPath is a module package's path relative to the module.
func relPath(importPath string) (string, bool) {
	return strings.CutPrefix(importPath, modulePath+"/")
}

// The "imports" column of docs/ARCHITECTURE.md's package table lists
// exactly the kvcfg packages each package's non-test files import, and
// every package of the module either has a row or is named on the page.
func TestArchitectureImports(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs/ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	real := kvcfgImports(t)
	rows := packageTable(t, doc)
	if len(rows) < 20 {
		t.Fatalf("only %d rows in the package table; the parser is broken", len(rows))
	}
	hasRow := map[string]bool{}
	for _, row := range rows {
		want := slices.Sorted(slices.Values(row.imports))
		for _, p := range row.packages {
			got, ok := real[p]
			if !ok {
				continue // not a Go package (a script); TestArchitecturePackagesExist checks the path
			}
			hasRow[p] = true
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("docs/ARCHITECTURE.md:%d: %s imports %s; the row says %s",
					row.line, p, orDash(strings.Join(got, ", ")), orDash(strings.Join(want, ", ")))
			}
		}
	}
	for p := range real {
		if !hasRow[p] && !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/ARCHITECTURE.md has no row for package %s (nor names it)", p)
		}
	}
}

// orDash is s, or "—" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func TestPackageTableParse(t *testing.T) {
	doc := "# x\n\n## Packages\n\n| package | job | imports |\n|---|---|---|\n" +
		"| `units` | sizes | — |\n" +
		"| `cmd/kvcfg-loadgen` | load | server |\n" +
		"| `format/safetensors`, `format/npy` | readers: `a \\| b` | dtype, `model` |\n" +
		"\n## Other\n\n| `plan` | not the table | x |\n"
	rows := packageTable(t, doc)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	if !slices.Equal(rows[0].packages, []string{"units"}) || rows[0].imports != nil {
		t.Errorf("row 0 = %+v", rows[0])
	}
	if !slices.Equal(rows[1].packages, []string{"cmd/kvcfg-loadgen"}) || !slices.Equal(rows[1].imports, []string{"server"}) {
		t.Errorf("row 1 = %+v", rows[1])
	}
	if !slices.Equal(rows[2].packages, []string{"format/safetensors", "format/npy"}) ||
		!slices.Equal(rows[2].imports, []string{"dtype", "model"}) {
		t.Errorf("row 2 = %+v", rows[2])
	}
}
