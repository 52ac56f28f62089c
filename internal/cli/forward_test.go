package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeNetEnv makes the test binary a stand-in for kvcfg-net (TestMain):
// it prints its arguments, whether kvcfg marked it as forwarded, and its
// standard input, and exits 7.
const fakeNetEnv = "KVCFG_CLI_FAKE_NET"

func fakeNet() {
	in, _ := io.ReadAll(os.Stdin)
	fmt.Printf("fake kvcfg-net %q forwarded=%s stdin=%q\n", os.Args[1:], os.Getenv(forwardedEnv), in)
	fmt.Fprintln(os.Stderr, "fake kvcfg-net stderr")
	os.Exit(7)
}

// useFakeNet points KVCFG_NET at the test binary acting as kvcfg-net.
func useFakeNet(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv("KVCFG_NET", exe)
	t.Setenv(fakeNetEnv, "1")
	t.Setenv(forwardedEnv, "")
}

// Without the network linked in, serve and a Hub id run as kvcfg-net with
// the same arguments and its exit status; what kvcfg had read from
// standard input reaches kvcfg-net first, and what kvcfg had buffered for
// standard output is dropped.
func TestForwardToNetworkFrontEnd(t *testing.T) {
	useFakeNet(t)
	for _, tt := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"serve", "--addr", "127.0.0.1:0", "--help"}, ""},
		{[]string{"plan", "--model", "acme/not-in-catalog", "-o", "json"}, ""},
		{[]string{"inspect", "acme/not-in-catalog"}, ""},
		{[]string{"compare", "--model", "acme/not-in-catalog"}, "left on stdin"},
		// A sweep whose second model needs the Hub: the first row is
		// buffered, then dropped.
		{[]string{"plan", "--model", "meta-llama/Llama-3.1-8B-Instruct,acme/not-in-catalog", "-o", "csv"}, ""},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errb)
		want := fmt.Sprintf("fake kvcfg-net %q forwarded=1 stdin=%q\n", tt.args, tt.stdin)
		if code != 7 || out.String() != want || errb.String() != "fake kvcfg-net stderr\n" {
			t.Errorf("%v: exit %d\nstdout %q\nwant   %q\nstderr %q", tt.args, code, out.String(), want, errb.String())
		}
	}
	// quant reads its values from standard input before anything else:
	// they are given to kvcfg-net again. (It needs no network; a reader
	// that asks for it after reading stands in.)
	var out, errb bytes.Buffer
	in := &recordingReader{r: strings.NewReader("1 2 3\n")}
	if _, err := io.ReadAll(in); err != nil {
		t.Fatal(err)
	}
	code := forward("test", []string{"quant"}, in, &out, &errb)
	if want := fmt.Sprintf("fake kvcfg-net %q forwarded=1 stdin=%q\n", []string{"quant"}, "1 2 3\n"); code != 7 || out.String() != want {
		t.Errorf("replayed stdin: exit %d %q, want %q", code, out.String(), want)
	}
}

// The commands that need no network never start kvcfg-net.
func TestNoForwardOffline(t *testing.T) {
	useFakeNet(t)
	for _, args := range [][]string{{"plan"}, {"plan", "--model", "Qwen/Qwen3-8B"}, {"version"}, {"models"}, {"plan", "--model", "no-such-name"}} {
		out, errOut, code := run(t, args...)
		if strings.Contains(out+errOut, "fake kvcfg-net") {
			t.Errorf("%v forwarded: exit %d %s %s", args, code, out, errOut)
		}
	}
}

// Without kvcfg-net, the error says what needed it and how to install it;
// a kvcfg-net that does not have the network either stops instead of
// starting itself again.
func TestForwardMissingFrontEnd(t *testing.T) {
	t.Setenv("KVCFG_NET", "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv(forwardedEnv, "")
	_, errOut, code := run(t, "serve")
	if code != 1 || !strings.Contains(errOut, "kvcfg: serve needs kvcfg-net") || !strings.Contains(errOut, "go install github.com/kvcfg/kvcfg/cmd/...@latest") {
		t.Errorf("exit %d %q", code, errOut)
	}
	_, errOut, code = run(t, "plan", "--model", "acme/not-in-catalog", "--gpu", "H100 SXM")
	if code != 1 || !strings.Contains(errOut, "reading acme/not-in-catalog from the Hugging Face Hub needs kvcfg-net") ||
		!strings.HasSuffix(errOut, "go run ./cmd/kvcfg-net plan --model acme/not-in-catalog --gpu 'H100 SXM'\n") {
		t.Errorf("exit %d %q", code, errOut)
	}
	t.Setenv(forwardedEnv, "1")
	t.Setenv("KVCFG_NET", filepath.Join(t.TempDir(), "kvcfg-net"))
	_, errOut, code = run(t, "serve")
	if code != 1 || !strings.Contains(errOut, "does not have it") {
		t.Errorf("forwarded twice: exit %d %q", code, errOut)
	}
}
