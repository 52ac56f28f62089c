//go:build unix

package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/internal/testwait"
)

// within fails the test when fn does not return in 2 s (an open of a FIFO
// that waits for a writer, a read of /dev/zero that never ends).
func within(t *testing.T, fn func() error) error {
	t.Helper()
	return testwait.Within(t, 2*time.Second, "the call", fn)
}

// TestNotRegular: a FIFO, a character device and a directory are refused
// at once, with what they are; a regular file reads.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "a named pipe (FIFO)"},
		{"/dev/zero", "a character device"},
		{link, "a character device"},
		{dir, "a directory"},
	} {
		for name, read := range map[string]func() error{
			"Open":     func() error { _, _, err := Open(tc.path); return err },
			"ReadFile": func() error { _, err := ReadFile(tc.path, 1<<20, "a config.json"); return err },
			"ReadFS": func() error {
				_, err := ReadFS(os.DirFS(filepath.Dir(tc.path)), filepath.Base(tc.path), 1<<20, "a config.json")
				return err
			},
		} {
			err := within(t, read)
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("%s(%s) = %v; want ErrNotRegular saying %q", name, tc.path, err, tc.kind)
			}
		}
	}
	b, err := ReadFile(file, 1<<20, "a config.json")
	if err != nil || string(b) != `{"a":1}` {
		t.Errorf("ReadFile(regular) = %q, %v", b, err)
	}
}

// TestTooLarge: a file over the cap is refused from its size, the error
// naming the cap; one at the cap reads.
func TestTooLarge(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.json")
	if err := os.WriteFile(p, make([]byte, 2049), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, 2048, "a config.json")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "holds 2049 bytes; a config.json is read up to 2 KiB") {
		t.Errorf("ReadFile over the cap = %v", err)
	}
	if b, err := ReadFile(p, 2049, "a config.json"); err != nil || len(b) != 2049 {
		t.Errorf("ReadFile at the cap = %d bytes, %v", len(b), err)
	}
	if _, err := ReadFS(os.DirFS(dir), "big.json", 1024, "x"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFS over the cap = %v", err)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16 MiB", 1 << 30: "1 GiB", 2048: "2 KiB", 1000: "1000 bytes", 3<<20 + 1: "3145729 bytes"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
