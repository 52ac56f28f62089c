//go:build unix

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/format/npy"
)

// startKvcfg starts the test binary as kvcfg with args and stdin, and
// returns once SIGINT and SIGTERM cancel its command (signalsReady), with
// a function that waits for it to end (at most d) and returns Wait's
// error, or false when it is still running.
func startKvcfg(t *testing.T, args []string, stdin *os.File) (*exec.Cmd, func(d time.Duration) (error, bool), *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(exe, args...)
	// GORACE: under -race a process that exits with threads running
	// sleeps a second first to let them report; not what is measured.
	cmd.Env = append(os.Environ(), asKvcfgEnv+"=1", signalsReadyEnv+"="+ready, "GORACE=atexit_sleep_ms=0")
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	wait := func(d time.Duration) (error, bool) {
		select {
		case <-exited:
			return waitErr, true
		case <-time.After(d):
			return nil, false
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return cmd, wait, &stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("kvcfg %s did not start in 20 s; stderr: %s", strings.Join(args, " "), stderr.String())
		}
	}
}

// TestSignals: each long-running command stops within a second of SIGINT
// or SIGTERM with "stopped: interrupted (SIGINT)" / "terminated (SIGTERM)"
// and the shell's status for the signal (130, 143), wherever it is: in a
// read of standard input that never returns (a pipe no one writes), in the
// simulator's loop, in the codecs'. Before the fix the first two waited
// for the read forever and the others ran to the end.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	npyFile := bigNPY(t, 1<<24)
	cases := []struct {
		name  string
		args  []string
		stdin bool // a pipe that is never written nor closed
		after time.Duration
	}{
		{"simulate --trace - (blocked read)", []string{"simulate", "--gpu", "H100", "--trace", "-"}, true, 200 * time.Millisecond},
		{"simulate --compare --trace - (blocked read)", []string{"simulate", "--gpu", "H100", "--engine", "sglang,vllm", "--compare", "--trace", "-"}, true, 200 * time.Millisecond},
		{"fit --trace - (blocked read)", []string{"fit", "--gpu", "H100", "--trace", "-"}, true, 200 * time.Millisecond},
		{"simulate 3M requests at once", []string{"simulate", "--gpu", "H100", "--requests", "3000000", "--prompt-len", "100", "--output-len", "10"}, false, 300 * time.Millisecond},
		{"quant-error 16M elements", []string{"quant-error", "--input", npyFile}, false, 300 * time.Millisecond},
		// serve shuts down gracefully: status 0, nothing to report.
		{"serve", []string{"serve", "--addr", "127.0.0.1:0"}, false, 200 * time.Millisecond},
	}
	for _, tc := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(tc.name+"/"+sig.String(), func(t *testing.T) {
				var stdin *os.File
				if tc.stdin {
					r, w, err := os.Pipe()
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
					defer r.Close()
					stdin = r
				}
				cmd, wait, stderr := startKvcfg(t, tc.args, stdin)
				time.Sleep(tc.after)
				sent := time.Now()
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				err, ok := wait(5 * time.Second)
				if !ok {
					t.Fatalf("still running 5 s after %v", sig)
				}
				took := time.Since(sent)
				t.Logf("exit after %v", took.Round(time.Millisecond))
				var ee *exec.ExitError
				code := 0
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
				words := map[syscall.Signal]string{syscall.SIGINT: "stopped: interrupted (SIGINT)", syscall.SIGTERM: "stopped: terminated (SIGTERM)"}[sig]
				want := 128 + int(sig)
				if tc.args[0] == "serve" {
					want, words = 0, ""
				}
				if took > time.Second || code != want || !strings.Contains(stderr.String(), words) {
					t.Errorf("exit %d after %v, stderr %q; want exit %d within 1 s saying %q", code, took.Round(time.Millisecond), stderr.String(), want, words)
				}
			})
		}
	}
}

// bigNPY writes a .npy float32 array of n elements (a ramp) and returns
// its path.
func bigNPY(t *testing.T, n int) string {
	t.Helper()
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%4093)/97 - 21
	}
	var b bytes.Buffer
	if err := npy.Write(&b, []int64{int64(n)}, data); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kv.npy")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
