//go:build unix

package weights_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/internal/inputfile"
	"github.com/kvcfg/kvcfg/internal/testwait"
	"github.com/kvcfg/kvcfg/weights"
)

// TestReadDirRefusesFIFO: a named pipe called *.safetensors in a model
// directory is refused at once (its open used to wait for a writer), and
// an index that is a FIFO is ignored like a missing one, not read.
func TestReadDirRefusesFIFO(t *testing.T) {
	for _, name := range []string{"model-00002-of-00002.safetensors", "model.safetensors.index.json"} {
		dir := t.TempDir()
		writeCheckpoint(t, dir, map[string][]safetensors.TensorData{
			"model-00001-of-00002.safetensors": {tensor("model.embed_tokens.weight", "BF16", 2, 64, 16)},
		})
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
		err := testwait.Within(t, 2*time.Second, name+" as a FIFO: ReadDir", func() error { _, _, err := weights.ReadDir(dir); return err })
		if want := filepath.Ext(name) == ".safetensors"; errors.Is(err, inputfile.ErrNotRegular) != want {
			t.Errorf("%s as a FIFO: ReadDir error %v (want ErrNotRegular: %v)", name, err, want)
		}
	}
}
