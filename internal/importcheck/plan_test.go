package importcheck

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPlanLinksNoPools checks the whole dependency graph of plan (go list
// -deps, third-party modules and the standard library included): the
// planner sizes pools but never builds them, so neither the pools (pool),
// their codecs (quant) nor the block hashes (prefix) are linked into it or
// into the engine package it plans SGLang with. engine/sglang/pools holds
// the glue from a configurator result to package pool.
func TestPlanLinksNoPools(t *testing.T) {
	banned := own("pool", "quant", "prefix")
	for _, from := range own("plan", "engine/sglang", "engine/vllm", "engine/trtllm") {
		deps := listDeps(t, from)
		for _, bad := range banned {
			if slices.Contains(deps, bad) {
				t.Errorf("%s depends on %s (find the importer with go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s): building pools is engine/sglang/pools' job, which the planner does not import", from, bad, from)
			}
		}
	}
	// The glue itself does link them: the test looks at the right graph.
	if deps := listDeps(t, module+"/engine/sglang/pools"); !slices.Contains(deps, module+"/pool") || !slices.Contains(deps, module+"/quant") {
		t.Errorf("engine/sglang/pools does not depend on pool and quant: %v", deps)
	}
}

// listDeps is go list -deps of the package path: every package it links.
func listDeps(t *testing.T, path string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", path)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, path) {
		t.Fatalf("go list -deps %s does not list the package itself:\n%s", path, out)
	}
	return deps
}
