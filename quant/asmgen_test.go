package quant

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedAsmUpToDate regenerates the assembly and its Go declarations
// with internal/asmgen (avo) in a scratch directory and fails on any
// difference from the committed kernels_amd64.s and kernels_amd64.go. It
// needs the avo module (network or module cache), so it runs only with
// KVCFG_ASMGEN=1 (CI sets it).
func TestGeneratedAsmUpToDate(t *testing.T) {
	if os.Getenv("KVCFG_ASMGEN") != "1" {
		t.Skip("set KVCFG_ASMGEN=1 to regenerate the assembly (needs the avo module)")
	}
	// the same relative layout as quant/internal/asmgen, so that the
	// generated headers (which quote the command line) match
	root := t.TempDir()
	gen := filepath.Join(root, "internal", "asmgen")
	if err := os.MkdirAll(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	srcs, err := filepath.Glob(filepath.Join("internal", "asmgen", "*.go"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("asmgen sources: %v", err)
	}
	for _, f := range append([]string{"go.mod", "go.sum"}, srcs...) {
		f = filepath.Base(f)
		b, err := os.ReadFile(filepath.Join("internal", "asmgen", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gen, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".", "-out", "../../kernels_amd64.s", "-stubs", "../../kernels_amd64.go", "-pkg", "quant")
	cmd.Dir = gen
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("asmgen: %v\n%s", err, out)
	}
	for _, f := range []string{"kernels_amd64.s", "kernels_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what internal/asmgen generates: run go generate ./quant/", f)
		}
	}
}
