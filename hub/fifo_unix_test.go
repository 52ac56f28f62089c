//go:build unix

package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/internal/testwait"
)

// A named pipe planted in the HF cache (as refs/main, or as a snapshot's
// config.json) is not read: it would block the read for ever. Offline, the
// model is then simply not in the cache.
func TestCachedFIFONotRead(t *testing.T) {
	for _, planted := range []string{"refs", "config"} {
		t.Run(planted, func(t *testing.T) {
			_, _, o := client(t, "http://127.0.0.1:1")
			repoDir := filepath.Join(o.CacheDir, "models--acme--fifo")
			for _, d := range []string{"refs", filepath.Join("snapshots", commit)} {
				if err := os.MkdirAll(filepath.Join(repoDir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ref := filepath.Join(repoDir, "refs", "main")
			cfg := filepath.Join(repoDir, "snapshots", commit, "config.json")
			fifo := ref
			if planted == "config" {
				fifo = cfg
				if err := os.WriteFile(ref, []byte(commit), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			o.Offline = true
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := testwait.Within(t, 5*time.Second, "Resolve of a named pipe in the HF cache", func() error {
				_, err := hub.New(o).Resolve(ctx, "acme/fifo", "")
				return err
			})
			if !errors.Is(err, hub.ErrOffline) {
				t.Errorf("Resolve: %v, want ErrOffline (not in the cache)", err)
			}
		})
	}
}
