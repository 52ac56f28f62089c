package cli

import (
	"context"
	"os"
	"testing"
)

// asKvcfgEnv makes the test binary run as kvcfg itself (TestMain): the
// completion scripts' shell functions call it back.
const asKvcfgEnv = "KVCFG_CLI_TEST_AS_KVCFG"

// signalsReadyEnv names a file the test binary running as kvcfg creates
// once signals cancel the command's context (TestSignals).
const signalsReadyEnv = "KVCFG_CLI_TEST_SIGNALS_READY"

// TestMain keeps every test of the package off the network: Hub ids
// resolve from the caches only (HF_HUB_OFFLINE), and kvcfg's header cache
// is a fresh directory. Tests of the Hub path set HF_ENDPOINT to a fake
// Hub and HF_HUB_OFFLINE=0 themselves.
func TestMain(m *testing.M) {
	if os.Getenv(asKvcfgEnv) != "" {
		if ready := os.Getenv(signalsReadyEnv); ready != "" {
			signalsReady = func() { _ = os.WriteFile(ready, nil, 0o644) }
		}
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
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
