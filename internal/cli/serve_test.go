package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/server"
)

// urlWriter collects log output and hands over the first serving URL.
type urlWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	urls chan string
	sent bool
}

var urlRE = regexp.MustCompile(`url=(http://\S+/)`)

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := urlRE.FindSubmatch(w.buf.Bytes()); m != nil && !w.sent {
		w.sent = true
		w.urls <- string(m[1])
	}
	return len(p), nil
}

func (w *urlWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestServe starts `kvcfg serve` on a free loopback port, queries it, and
// stops it the way SIGINT does (main cancels the context): exit status 0.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs := &urlWriter{urls: make(chan string, 1)}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "-v"}, strings.NewReader(""), io.Discard, logs)
	}()
	var url string
	select {
	case url = <-logs.urls:
	case code := <-done:
		t.Fatalf("serve exited with %d before serving:\n%s", code, logs)
	}

	for _, path := range []string{"healthz", "", "api/v1/models"} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("GET /%s: status %d", path, res.StatusCode)
		}
	}
	res, err := http.Post(url+"api/v1/plan", "application/json", strings.NewReader(`{"gpu": "H100"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"max_total_num_tokens"`) {
		t.Errorf("POST /api/v1/plan: status %d: %.300s", res.StatusCode, body)
	}

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited with %d after shutdown, want 0:\n%s", code, logs)
	}
	for _, want := range []string{"kvcfg serving", "shutting down", "path=/healthz"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

func TestServeFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--log-format", "xml"}, 2, "--log-format"},
		{[]string{"serve", "--max-body-bytes", "0"}, 2, "--max-body-bytes must be positive"},
		{[]string{"serve", "--shutdown-timeout", "-1s"}, 2, "shutdown_timeout"},
		{[]string{"serve", "--addr", "127.0.0.1:notaport"}, 1, "server:"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			code := Main(t.Context(), tt.args, strings.NewReader(""), io.Discard, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestServeLimits: the Hub deadline of `serve --hub` is below the write
// timeout and its client keeps models within a budget; limits out of
// range are input errors that name the flag.
func TestServeLimits(t *testing.T) {
	f := newServeCmd().Flags()
	for flag, want := range map[string]string{"hub-timeout": hub.DefaultServeTimeout.String(), "request-timeout": server.DefaultRequestTimeout.String(),
		"heavy-concurrency": "2", "max-sim-requests": "200000", "max-sim-steps": "5000000"} {
		if got := f.Lookup(flag).DefValue; got != want {
			t.Errorf("--%s defaults to %s, want %s", flag, got, want)
		}
	}
	if hub.DefaultServeTimeout >= server.DefaultRequestTimeout || server.DefaultRequestTimeout >= server.DefaultWriteTimeout {
		t.Errorf("timeouts out of order: hub %v, request %v, write %v", hub.DefaultServeTimeout, server.DefaultRequestTimeout, server.DefaultWriteTimeout)
	}
	c, ok := serveHub(serveOptions{hub: true, hubTimeout: hub.DefaultServeTimeout}).(*hub.Client)
	if !ok {
		t.Fatal("serve --hub does not read the Hub with a *hub.Client")
	}
	if o := c.Options(); o.MemoryBudget != hub.DefaultMemoryBudget || o.Timeout != hub.DefaultServeTimeout {
		t.Errorf("serve's Hub client: memory budget %d, timeout %v", o.MemoryBudget, o.Timeout)
	}
	for _, args := range [][]string{
		{"--request-timeout", "30s"}, {"--request-timeout", "0s"}, {"--heavy-concurrency", "0"},
		{"--max-sim-requests", "-1"}, {"--max-sim-steps", "0"}, {"--hub-timeout", "0s"},
	} {
		var stderr bytes.Buffer
		code := Main(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("serve %v: exit %d: %s", args, code, stderr.String())
		}
	}
}
