package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/model"
)

func TestNames(t *testing.T) {
	names := catalog.Names()
	if len(names) != 39 {
		t.Errorf("len(Names()) = %d, want 39", len(names))
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
	if !slices.Contains(names, catalog.Default) {
		t.Errorf("Default %q not in the catalog", catalog.Default)
	}
	for _, n := range names {
		if strings.Count(n, "/") != 1 {
			t.Errorf("name %q is not org/name", n)
		}
	}
}

// TestAllLoad parses every embedded config; known families carry no warnings.
func TestAllLoad(t *testing.T) {
	for _, n := range catalog.Names() {
		s, err := catalog.Load(n)
		if err != nil {
			t.Errorf("Load(%q): %v", n, err)
			continue
		}
		if s.Name != n {
			t.Errorf("Load(%q).Name = %q", n, s.Name)
		}
		if n != "AntonV/mamba2-130m-hf" && len(s.Warnings) > 0 {
			t.Errorf("Load(%q) warnings: %v", n, s.Warnings)
		}
	}
}

func TestCaseInsensitive(t *testing.T) {
	for _, ref := range []string{"META-LLAMA/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct", "  meta-llama/llama-3.1-8B-instruct ", "Llama-3.1-8B-Instruct"} {
		s, err := catalog.Load(ref)
		if err != nil {
			t.Errorf("Load(%q): %v", ref, err)
			continue
		}
		if s.Name != catalog.Default {
			t.Errorf("Load(%q).Name = %q, want %q", ref, s.Name, catalog.Default)
		}
		if _, err := catalog.Config(ref); err != nil {
			t.Errorf("Config(%q): %v", ref, err)
		}
	}
}

func TestUnknown(t *testing.T) {
	_, err := catalog.Load("meta-llama/Llama-3.1-8B-Instruc")
	if !errors.Is(err, catalog.ErrUnknownModel) {
		t.Fatalf("err = %v, want ErrUnknownModel", err)
	}
	for _, want := range []string{"meta-llama/Llama-3.1-8B-Instruct", "kvcfg models"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := catalog.Resolve("no-such-org/no-such-model-at-all"); !errors.Is(err, catalog.ErrUnknownModel) {
		t.Errorf("Resolve(unknown) = %v, want ErrUnknownModel", err)
	}
	if _, err := catalog.Resolve(""); !errors.Is(err, catalog.ErrUnknownModel) {
		t.Errorf("Resolve(\"\") = %v, want ErrUnknownModel", err)
	}
	if _, err := catalog.Config("nope"); !errors.Is(err, catalog.ErrUnknownModel) {
		t.Errorf("Config(nope) = %v, want ErrUnknownModel", err)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"qwen3-8b", []string{"Qwen/Qwen3-8B"}},
		{"deepseek-ai/DeepSeek-V3.1", []string{"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3.2"}},
		{"zzzzzzzzzzzzzzzzzzzzzz", nil},
	}
	for _, tt := range tests {
		got := catalog.Suggest(tt.in, 2)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Suggest(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestResolvePath(t *testing.T) {
	data, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, model.ConfigFile)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{dir, file} {
		s, err := catalog.Resolve(ref)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", ref, err)
		}
		if s.NumLayers != 36 || s.NumKVHeads != 8 {
			t.Errorf("Resolve(%q): %d layers, %d kv heads; want 36, 8", ref, s.NumLayers, s.NumKVHeads)
		}
	}
	if _, err := catalog.Resolve(filepath.Join(dir, "missing.json")); err == nil || errors.Is(err, catalog.ErrUnknownModel) {
		t.Errorf("Resolve(missing path) = %v, want a file error", err)
	}
	// A catalog name always resolves from the catalog.
	s, err := catalog.Resolve("qwen/qwen3-8b")
	if err != nil || s.Name != "Qwen/Qwen3-8B" {
		t.Errorf("Resolve(qwen/qwen3-8b) = %v, %v", s, err)
	}
}

// TestSuggestLongName: a name of a megabyte gets no suggestion and costs
// what a short one costs (11 s of edit distance before the bound); the
// error repeats a few hundred bytes of it.
func TestSuggestLongName(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	start := time.Now()
	if got := catalog.Suggest(long, 3); got != nil {
		t.Errorf("Suggest(1 MiB) = %v", got)
	}
	_, err := catalog.OpenEntry("org/" + long)
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("1 MiB name: %v", el)
	}
	if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "…") {
		t.Errorf("1 MiB name: %d-byte error", len(err.Error()))
	}
	// Typos of catalog names are still found.
	if got := catalog.Suggest("Qwen/Qwen3-8", 3); len(got) == 0 || got[0] != "Qwen/Qwen3-8B" {
		t.Errorf("Suggest(Qwen/Qwen3-8) = %v", got)
	}
}

func BenchmarkSuggest(b *testing.B) {
	for _, tc := range []struct {
		name, ref string
	}{{"typo", "meta-llama/Llama-3.1-8B-Instrct"}, {"128B", strings.Repeat("x", 128)}, {"1MiB", strings.Repeat("x", 1<<20)}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				catalog.Suggest(tc.ref, 3)
			}
		})
	}
}
