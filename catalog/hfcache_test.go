package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
)

// fakeCache builds models--org--name with refs/main and a snapshot.
func fakeCache(t *testing.T, id, commit string, data []byte, writeRef bool) string {
	t.Helper()
	root := t.TempDir()
	repo := filepath.Join(root, "models--"+strings.ReplaceAll(id, "/", "--"))
	snap := filepath.Join(repo, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if writeRef {
		if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestHFCache(t *testing.T) {
	data, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, withRef := range []bool{true, false} {
		root := fakeCache(t, "acme/My-Model", commit, data, withRef)
		t.Setenv("HF_HUB_CACHE", root)
		for _, ref := range []string{"acme/My-Model", "acme/My-Model@" + commit} {
			s, err := catalog.Resolve(ref)
			if err != nil {
				t.Fatalf("Resolve(%q) (refs %v): %v", ref, withRef, err)
			}
			if s.Name != "acme/My-Model" || s.NumLayers != 36 {
				t.Errorf("Resolve(%q): name %q, %d layers", ref, s.Name, s.NumLayers)
			}
		}
		if _, err := catalog.CachedSnapshot("acme/My-Model@v2"); !errors.Is(err, catalog.ErrNotCached) {
			t.Errorf("missing revision: %v", err)
		}
	}
	for _, bad := range []string{"acme", "../x/y", "acme/x@../../etc", "acme/other"} {
		if _, err := catalog.CachedSnapshot(bad); !errors.Is(err, catalog.ErrNotCached) {
			t.Errorf("CachedSnapshot(%q) = %v, want ErrNotCached", bad, err)
		}
	}
	if _, err := catalog.Resolve("acme/other"); !errors.Is(err, catalog.ErrUnknownModel) {
		t.Errorf("Resolve(not cached) = %v, want ErrUnknownModel", err)
	}
}

func TestHFCacheDir(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", "/h")
	if got := catalog.HFCacheDir(); got != filepath.Join("/h", "hub") {
		t.Errorf("HF_HOME: %s", got)
	}
	t.Setenv("HF_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if got := catalog.HFCacheDir(); got != filepath.Join("/x", "huggingface", "hub") {
		t.Errorf("XDG_CACHE_HOME: %s", got)
	}
	t.Setenv("HF_HUB_CACHE", "/c")
	if got := catalog.HFCacheDir(); got != "/c" {
		t.Errorf("HF_HUB_CACHE: %s", got)
	}
}
