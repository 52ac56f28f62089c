//go:build unix

package safetensors_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/internal/testwait"
)

// TestOpenRefusesFIFO: Open refuses a named pipe at once (it used to wait
// in open for a writer) and a directory, saying what they are.
func TestOpenRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "kv.safetensors")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe (FIFO)", dir: "a directory", "/dev/zero": "a character device"} {
		err := testwait.Within(t, 2*time.Second, "Open("+path+")", func() error { _, err := safetensors.Open(path); return err })
		if err == nil || !strings.Contains(err.Error(), kind) {
			t.Errorf("Open(%s) = %v; want an error saying %s", path, err, kind)
		}
	}
}
