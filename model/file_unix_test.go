//go:build unix

package model_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/internal/testwait"
	"github.com/kvcfg/kvcfg/model"
)

// loadWithin runs model.Load and fails the test when it does not return
// in 2 s (an open of a FIFO waits for a writer; /dev/zero never ends).
func loadWithin(t *testing.T, p string) error {
	t.Helper()
	return testwait.Within(t, 2*time.Second, "Load("+p+")", func() error { _, err := model.Load(p); return err })
}

// TestLoadRefusesSpecialFiles: a FIFO, /dev/zero (directly or as a
// config.json symlink in a model directory) and a FIFO config.json are
// refused at once with ErrNotFile and what the path is; before, the FIFO
// blocked in open and /dev/zero was read until memory ran out.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	zeroDir := filepath.Join(dir, "zero")
	if err := os.Mkdir(zeroDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(zeroDir, "config.json")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "a named pipe (FIFO)"},
		{dir, "a named pipe (FIFO)"}, // the directory's config.json
		{"/dev/zero", "a character device"},
		{zeroDir, "a character device"},
	} {
		err := loadWithin(t, tc.path)
		if !errors.Is(err, model.ErrNotFile) || !strings.Contains(err.Error(), tc.kind) {
			t.Errorf("Load(%s) = %v; want ErrNotFile saying %q", tc.path, err, tc.kind)
		}
	}
}

// TestLoadSizeCap: a config.json over 16 MiB is refused with ErrRange and
// an error that names the cap.
func TestLoadSizeCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(model.MaxConfigBytes + 1); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	err = loadWithin(t, p)
	if !errors.Is(err, model.ErrRange) || !strings.Contains(err.Error(), "a config.json is read up to 16 MiB") {
		t.Errorf("Load(17 MiB) = %v; want ErrRange naming the 16 MiB cap", err)
	}
}
