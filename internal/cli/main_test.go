package cli

import (
	"os"
	"testing"
)

// TestMain keeps every test of the package off the network: Hub ids
// resolve from the caches only (HF_HUB_OFFLINE), and kvcfg's header cache
// is a fresh directory. Tests of the Hub path set HF_ENDPOINT to a fake
// Hub and HF_HUB_OFFLINE=0 themselves.
func TestMain(m *testing.M) {
	if os.Getenv(fakeNetEnv) != "" {
		fakeNet()
	}
	dir, err := os.MkdirTemp("", "kvcfg-cli-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("HF_HUB_OFFLINE", "1")
	os.Setenv("KVCFG_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
