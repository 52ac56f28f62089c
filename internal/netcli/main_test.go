package netcli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/internal/cli"
)

// TestMain links the network front ends in, as cmd/kvcfg-net does, and
// keeps every test off the real network: Hub ids resolve from the caches
// only (HF_HUB_OFFLINE), and kvcfg's header cache is a fresh directory.
// Tests of the Hub path set HF_ENDPOINT to a fake Hub and HF_HUB_OFFLINE=0
// themselves.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kvcfg-netcli-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("HF_HUB_OFFLINE", "1")
	os.Setenv("KVCFG_CACHE_DIR", dir)
	cli.SetNetwork(Network())
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs a kvcfg-net command line.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}
