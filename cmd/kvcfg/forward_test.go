package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub/hubtest"
)

// The installed pair end to end: kvcfg runs serve and a Hub id as the
// kvcfg-net next to it (here reading a fake Hub), with the same arguments
// and exit status; without kvcfg-net it says how to install it.
func TestForwardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	kvcfg, net := filepath.Join(dir, "kvcfg"), filepath.Join(dir, "kvcfg-net")
	for _, b := range [][2]string{{kvcfg, "."}, {net, "../kvcfg-net"}} {
		if out, err := exec.Command(goCmd, "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	cfg, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	repo, err := hubtest.Checkpoint("acme/Qwen3-8B-copy", commit, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := hubtest.New(t, repo)
	env := append(os.Environ(), "HF_ENDPOINT="+srv.URL(), "HF_HOME="+t.TempDir(), "HF_HUB_CACHE=", "HUGGINGFACE_HUB_CACHE=",
		"HF_TOKEN=", "HUGGING_FACE_HUB_TOKEN=", "HF_TOKEN_PATH=", "HF_HUB_OFFLINE=0", "KVCFG_CACHE_DIR="+t.TempDir(), "KVCFG_NET=", "KVCFG_FORWARDED=")
	run := func(env []string, args ...string) (string, string, int) {
		cmd := exec.Command(kvcfg, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, errOut, code := run(env, "plan", "--model", "acme/Qwen3-8B-copy", "-o", "json")
	var rep struct {
		Model    string `json:"model"`
		Revision string `json:"model_revision"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Model != "acme/Qwen3-8B-copy" || rep.Revision != commit {
		t.Errorf("plan of a Hub id: exit %d %+v\n%s\n%s", code, rep, out, errOut)
	}
	if out, errOut, code := run(env, "serve", "--help"); code != 0 || !strings.Contains(out, "--hub-concurrency") {
		t.Errorf("serve --help: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := run(env, "serve", "--max-body-bytes", "0"); code != 2 || !strings.Contains(errOut, "--max-body-bytes must be positive") {
		t.Errorf("serve's exit status: %d %s", code, errOut)
	}
	// Alone, kvcfg plans what needs no network and names what to install.
	if err := os.Remove(net); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+t.TempDir())
	if _, errOut, code := run(env, "plan"); code != 0 {
		t.Errorf("plan without kvcfg-net: exit %d %s", code, errOut)
	}
	if _, errOut, code := run(env, "serve"); code != 1 || !strings.Contains(errOut, "go install github.com/kvcfg/kvcfg/cmd/...@latest") {
		t.Errorf("serve without kvcfg-net: exit %d %s", code, errOut)
	}
}
