package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub/hubtest"
)

// loneKvcfg builds kvcfg into an empty directory and returns its path and
// an environment with nothing else to run: PATH is another empty directory,
// the Hub is hub's (HF_ENDPOINT set by the caller) and the caches are
// fresh.
func loneKvcfg(t *testing.T) (string, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds kvcfg")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	kvcfg := filepath.Join(dir, "kvcfg")
	if runtime.GOOS == "windows" {
		kvcfg += ".exe"
	}
	if out, err := exec.Command(goCmd, "build", "-o", kvcfg, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("the build directory holds %v (%v), want kvcfg alone", entries, err)
	}
	env := append(os.Environ(), "PATH="+t.TempDir(), "HF_HOME="+t.TempDir(), "HF_HUB_CACHE=", "HUGGINGFACE_HUB_CACHE=",
		"HF_TOKEN=", "HUGGING_FACE_HUB_TOKEN=", "HF_TOKEN_PATH=", "HF_HUB_OFFLINE=0", "KVCFG_CACHE_DIR="+t.TempDir())
	return kvcfg, env
}

// runKvcfg runs kvcfg with args and returns its output and exit status.
func runKvcfg(t *testing.T, kvcfg string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(kvcfg, args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// The kvcfg binary alone, nothing beside it and nothing on PATH, runs every
// command: a plan and the help, a Hub id read from a (fake) Hub, and serve
// until SIGINT.
func TestLoneBinary(t *testing.T) {
	kvcfg, env := loneKvcfg(t)
	cfg, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	repo, err := hubtest.Checkpoint("acme/Qwen3-8B-copy", commit, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "HF_ENDPOINT="+hubtest.New(t, repo).URL())

	if out, errOut, code := runKvcfg(t, kvcfg, env, "plan"); code != 0 || !strings.Contains(out, "meta-llama/Llama-3.1-8B-Instruct") {
		t.Errorf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := runKvcfg(t, kvcfg, env, "--help"); code != 0 || !strings.Contains(out, "\n  serve ") || !strings.Contains(out, "\n  completion ") {
		t.Errorf("--help: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := runKvcfg(t, kvcfg, env, "plan", "--model", "acme/Qwen3-8B-copy", "-o", "json")
	var rep struct {
		Model    string `json:"model"`
		Revision string `json:"model_revision"`
		Source   string `json:"weights_source"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Model != "acme/Qwen3-8B-copy" || rep.Revision != commit ||
		rep.Source != "hub_safetensors:acme/Qwen3-8B-copy@"+commit {
		t.Errorf("plan of a Hub id: exit %d %+v\n%s\n%s", code, rep, out, errOut)
	}
	serveUntilSignal(t, kvcfg, env)
}

var servingURL = regexp.MustCompile(`url=(http://\S+/)`)

// serveUntilSignal runs kvcfg serve on a free loopback port, checks
// /healthz, sends SIGINT (a kill where there is none) and checks that it
// exits, with status 0 after SIGINT.
func serveUntilSignal(t *testing.T, kvcfg string, env []string) {
	t.Helper()
	cmd := exec.Command(kvcfg, "serve", "--addr", "127.0.0.1:0", "--hub")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	logs := make(chan string, 1)
	urls := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		logs <- all.String()
		done <- cmd.Wait()
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("serve printed no URL in 30s:\n%s", <-logs)
	}
	res, err := http.Get(url + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("GET /healthz: %d %s", res.StatusCode, body)
	}
	if runtime.GOOS == "windows" {
		_ = cmd.Process.Kill() // no SIGINT to send
		<-done
		return
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-logs:
		if err := <-done; err != nil {
			t.Errorf("serve after SIGINT: %v\n%s", err, out)
		}
		if !strings.Contains(out, "shutting down") {
			t.Errorf("serve's logs say no shutdown:\n%s", out)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve still running 30s after SIGINT")
	}
}
