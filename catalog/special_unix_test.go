//go:build unix

package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/internal/testwait"
	"github.com/kvcfg/kvcfg/model"
)

// TestOpenRefusesSpecialFiles: --model /dev/zero, a FIFO, and a model
// directory whose hf_quant_config.json is a FIFO are refused at once with
// what the path is (before: /dev/zero was read until memory ran out, the
// FIFOs blocked in open).
func TestOpenRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	modelDir := filepath.Join(dir, "ckpt")
	if err := os.Mkdir(modelDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := catalog.Config("Qwen/Qwen3-8B")
	if err := os.WriteFile(filepath.Join(modelDir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(modelDir, catalog.QuantConfigFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, says string
		want      error
	}{
		{"/dev/zero", "/dev/zero is a character device", model.ErrNotFile},
		{fifo, "fifo.json is a named pipe (FIFO)", model.ErrNotFile},
		{modelDir, catalog.QuantConfigFile + " is a named pipe (FIFO)", nil},
	} {
		err := testwait.Within(t, 2*time.Second, "Open("+tc.ref+")", func() error { _, err := catalog.Open(tc.ref); return err })
		if err == nil || !strings.Contains(err.Error(), tc.says) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Open(%s) = %v; want an error saying %q", tc.ref, err, tc.says)
		}
	}
}

// TestCachedSnapshotRefFIFO: a refs/main that is a named pipe in the HF
// cache is not read (its open used to wait for a writer): the id is not
// cached, said at once.
func TestCachedSnapshotRefFIFO(t *testing.T) {
	cfg, _ := catalog.Config("Qwen/Qwen3-8B")
	root := fakeCache(t, "acme/piped", strings.Repeat("a", 40), cfg, false)
	refs := filepath.Join(root, "models--acme--piped", "refs")
	if err := os.MkdirAll(refs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(refs, "v1"), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	t.Setenv("HF_HUB_CACHE", root)
	err := testwait.Within(t, 2*time.Second, "CachedSnapshot", func() error { _, err := catalog.CachedSnapshot("acme/piped@v1"); return err })
	if !errors.Is(err, catalog.ErrNotCached) {
		t.Errorf("CachedSnapshot with a FIFO ref = %v, want ErrNotCached", err)
	}
}
