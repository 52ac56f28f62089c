package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/server"
	"github.com/kvcfg/kvcfg/simulate"
)

// serveLoopback runs srv with its own net/http timeouts (Serve, unlike
// httptest, applies them) on a loopback port until the test ends.
func serveLoopback(t *testing.T, cfg server.Config) string {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// post sends body to url+path with a client deadline and returns the
// status and body; a transport error (the connection closed unanswered,
// the client's deadline) is status 0 with the error as body.
func post(url, path, body string, timeout time.Duration) (int, http.Header, string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err.Error()
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err.Error()
	}
	return res.StatusCode, res.Header, string(b)
}

const simBody = `{"plan": {}, "workload": {"requests": 10, "prompt": {"mean": 100}, "output": {"mean": 10}, "seed": 1}}`

// TestHeavyConcurrency: beyond Config.HeavyConcurrency simulations and
// fits, a request gets 503 with Retry-After and a JSON error at once;
// those admitted finish; every client is answered.
func TestHeavyConcurrency(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	block := func(ctx context.Context) error {
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ts := newTestServer(t, server.Config{HeavyConcurrency: 2,
		Simulate: func(ctx context.Context, _ simulate.Config, _ simulate.Source) (*simulate.Summary, error) {
			return &simulate.Summary{}, block(ctx)
		},
		Fit: func(ctx context.Context, _ fit.Options) (*fit.Result, error) { return &fit.Result{}, block(ctx) },
	})
	type answer struct {
		status int
		retry  string
		body   string
	}
	answers := make(chan answer, 10)
	send := func(path, body string) {
		st, h, b := post(ts.URL, path, body, 20*time.Second)
		answers <- answer{st, h.Get("Retry-After"), b}
	}
	go send("/api/v1/simulate", simBody)
	go send("/api/v1/fit", `{"base": {}, "concurrency": 4, "context_length": 8192}`)
	<-started // both slots taken
	<-started
	for range 8 {
		go send("/api/v1/simulate", simBody)
	}
	for range 8 {
		a := <-answers
		if a.status != http.StatusServiceUnavailable || a.retry == "" || !strings.Contains(a.body, `"error":"server busy`) {
			t.Errorf("over the limit: %d Retry-After %q %s", a.status, a.retry, a.body)
		}
	}
	close(release)
	for range 2 {
		if a := <-answers; a.status != http.StatusOK {
			t.Errorf("admitted: %d %s", a.status, a.body)
		}
	}
	// The slots are free again.
	if st, _, b := post(ts.URL, "/api/v1/simulate", simBody, 20*time.Second); st != http.StatusOK {
		t.Errorf("after the burst: %d %s", st, b)
	}
}

// TestRequestDeadline: work that runs past Config.RequestTimeout, even
// work that ignores its context, is answered 504 with a JSON error before
// the write timeout closes the connection; its slot stays taken until it
// ends.
func TestRequestDeadline(t *testing.T) {
	finish := make(chan struct{})
	t.Cleanup(func() { close(finish) })
	url := serveLoopback(t, server.Config{WriteTimeout: 2 * time.Second, RequestTimeout: 300 * time.Millisecond, HeavyConcurrency: 1,
		Simulate: func(ctx context.Context, _ simulate.Config, _ simulate.Source) (*simulate.Summary, error) {
			<-finish // deaf to ctx
			return &simulate.Summary{}, nil
		}})
	st, _, body := post(url, "/api/v1/simulate", simBody, 10*time.Second)
	if st != http.StatusGatewayTimeout || !strings.Contains(body, `"error":"request timed out`) {
		t.Fatalf("past the deadline: %d %s", st, body)
	}
	if st, _, body := post(url, "/api/v1/simulate", simBody, 10*time.Second); st != http.StatusServiceUnavailable {
		t.Errorf("while the deaf work runs: %d %s (want 503)", st, body)
	}
}

// TestDeadlineStopsSimulation: the request deadline reaches the
// simulator's and fit's loops: after the 504 the slot frees within
// seconds, not after the whole workload.
func TestDeadlineStopsSimulation(t *testing.T) {
	url := serveLoopback(t, server.Config{RequestTimeout: 300 * time.Millisecond, HeavyConcurrency: 1})
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/simulate", `{"plan": {}, "workload": {"requests": 200000, "prompt": {"mean": 2000}, "output": {"mean": 500}, "seed": 1}}`},
		{"/api/v1/fit", `{"base": {}, "workload": {"requests": 200000, "prompt": {"mean": 2000}, "output": {"mean": 500}, "seed": 1}}`},
	} {
		start := time.Now()
		// The previous case's last request has answered, but its handler
		// may not have returned its slot yet: busy (503) is retried.
		st, _, body := post(url, tc.path, tc.body, 20*time.Second)
		for st == http.StatusServiceUnavailable && time.Since(start) < 5*time.Second {
			time.Sleep(20 * time.Millisecond)
			st, _, body = post(url, tc.path, tc.body, 20*time.Second)
		}
		if st != http.StatusGatewayTimeout {
			t.Fatalf("%s: %d %.300s (want 504)", tc.path, st, body)
		}
		start = time.Now()
		for {
			st, _, body := post(url, "/api/v1/simulate", simBody, 20*time.Second)
			if st == http.StatusOK {
				break
			}
			if st != http.StatusServiceUnavailable || time.Since(start) > 15*time.Second {
				t.Fatalf("%s: the slot is still taken after %v: %d %.300s", tc.path, time.Since(start), st, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestStepBudget: a simulation past Config.MaxSimSteps stops with 422.
func TestStepBudget(t *testing.T) {
	ts := newTestServer(t, server.Config{MaxSimSteps: 2048})
	r := do(t, ts, "POST", "/api/v1/simulate", `{"plan": {}, "workload": {"requests": 5000, "rate": 5, "prompt": {"mean": 200}, "output": {"mean": 200}, "seed": 1}}`)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "--max-sim-steps") {
		t.Errorf("over the step budget: %d %.400s", r.status, r.body)
	}
	if r := do(t, ts, "POST", "/api/v1/simulate", simBody); r.status != http.StatusOK {
		t.Errorf("within the budget: %d %.400s", r.status, r.body)
	}
	ts = newTestServer(t, server.Config{MaxSimRequests: 100})
	if r := do(t, ts, "POST", "/api/v1/simulate", `{"plan": {}, "workload": {"requests": 101, "prompt": {"mean": 200}, "output": {"mean": 200}, "seed": 1}}`); r.status != 400 ||
		!strings.Contains(r.body, "limit of 100") {
		t.Errorf("over max_sim_requests: %d %.400s", r.status, r.body)
	}
}

// TestPanicInHeavyWork: a panic in the goroutine running a simulation is
// recovered, logged and answered with a JSON 500; the server stays up.
func TestPanicInHeavyWork(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	ts := newTestServer(t, server.Config{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)),
		Simulate: func(context.Context, simulate.Config, simulate.Source) (*simulate.Summary, error) {
			var m map[string]int
			m["boom"]++ // assignment to entry in nil map
			return nil, nil
		}})
	for range 3 {
		r := do(t, ts, "POST", "/api/v1/simulate", simBody)
		if r.status != 500 || r.body != "{\"error\":\"internal error\"}\n" {
			t.Errorf("panicking simulation: %d %q", r.status, r.body)
		}
	}
	if r := do(t, ts, "GET", "/healthz", ""); r.status != 200 {
		t.Errorf("after the panics: %d", r.status)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "nil map") {
		t.Errorf("the panic is not logged: %s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestLongInputEchoed: a model name of almost a megabyte is a 400 that
// repeats a few hundred bytes of it (the suggestion search is bounded by
// the catalog, not the name), in the body and in the log; other long
// values likewise.
func TestLongInputEchoed(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	ts := newTestServer(t, server.Config{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	long := strings.Repeat("x", 1<<20-64)
	for _, tc := range []struct{ body, field string }{
		{`{"model": "` + long + `"}`, "model"},
		{`{"gpu": "` + long + `"}`, "gpu"},
		{`{"` + long + `": 1}`, ""},
		{`{"kv_cache_dtype": "` + long + `"}`, ""},
	} {
		start := time.Now()
		r := do(t, ts, "POST", "/api/v1/plan", tc.body)
		if el := time.Since(start); el > 5*time.Second { // 11 s of edit distance before the bound
			t.Errorf("%.30s: %v", tc.body, el)
		}
		// 2.5 KiB: the clipped echo twice plus, for an unknown key, the
		// list of accepted keys (about 1.6 KiB and growing with the flags).
		if r.status != 400 || len(r.body) > 2560 || strings.Count(r.body, "x") > 700 || !strings.Contains(r.body, "…") {
			t.Errorf("%.30s: %d, %d bytes: %.300s", tc.body, r.status, len(r.body), r.body)
		}
		if tc.field != "" && !strings.Contains(r.body, `"field":"`+tc.field+`"`) {
			t.Errorf("%.30s: field: %.300s", tc.body, r.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := logs.Len(); n > 8<<10 {
		t.Errorf("the log holds %d bytes for 4 requests", n)
	}
}

// TestFieldNames: error fields are the request's snake_case keys, not
// Go's paths through embedded structs ("Request.tp_size").
func TestFieldNames(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	for _, tc := range []struct{ path, body, field string }{
		{"/api/v1/compare", `{"tp_size": "x"}`, "tp_size"},
		{"/api/v1/compare", `{"engines": ["sglang"], "pp_size": true}`, "pp_size"},
		{"/api/v1/plan", `{"tp_size": "x"}`, "tp_size"},
		{"/api/v1/fit", `{"base": {"tp_size": "x"}}`, "base.tp_size"},
		{"/api/v1/simulate", `{"plan": {"dp_size": "x"}}`, "plan.dp_size"},
		{"/api/v1/plan", `{"gpu": "H100", "GPU": "A100-80GB"}`, "gpu"},
	} {
		r := do(t, ts, "POST", tc.path, tc.body)
		var e server.ErrorBody
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || r.status != 400 || e.Field != tc.field {
			t.Errorf("%s %s: %d field %q (want 400, %q): %s", tc.path, tc.body, r.status, e.Field, tc.field, r.body)
		}
	}
}

// TestBodyReadErrors: a body cut short is 400, one slower than the read
// timeout 408; neither repeats the server's socket address.
func TestBodyReadErrors(t *testing.T) {
	url := serveLoopback(t, server.Config{ReadTimeout: 500 * time.Millisecond})
	addr := strings.TrimPrefix(url, "http://")
	for _, tc := range []struct {
		name   string
		status int
		want   string
	}{
		{"truncated", http.StatusBadRequest, "request body truncated"},
		{"slow", http.StatusRequestTimeout, "request body too slow"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST /api/v1/plan HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\": ", addr)
		if tc.name == "truncated" {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = conn.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(b), tc.want) || strings.Contains(string(b), "127.0.0.1") {
			t.Errorf("%s body: %d %s", tc.name, res.StatusCode, b)
		}
	}
}

// TestManyHeavyRequests: a burst of real simulations and fits, small and
// of the maximum size, with plans among them: every client gets an answer
// (200, 503 or 504) before the write timeout, none hangs, and plans are
// served meanwhile.
func TestManyHeavyRequests(t *testing.T) {
	url := serveLoopback(t, server.Config{WriteTimeout: 3 * time.Second, RequestTimeout: time.Second})
	big := `{"requests": 200000, "prompt": {"mean": 2000}, "output": {"mean": 500}, "seed": 1}`
	reqs := []struct{ path, body string }{
		{"/api/v1/plan", `{}`},
		{"/api/v1/simulate", `{"plan": {}, "workload": ` + big + `}`},
		{"/api/v1/fit", `{"base": {}, "workload": ` + big + `}`},
		{"/api/v1/simulate", simBody},
	}
	type answer struct {
		i, status int
		body      string
	}
	answers := make(chan answer)
	n := 16
	for i := range n {
		go func() {
			r := reqs[i%len(reqs)]
			st, _, body := post(url, r.path, r.body, 10*time.Second)
			answers <- answer{i, st, body}
		}()
	}
	counts := map[int]int{}
	for range n {
		a := <-answers
		counts[a.status]++
		r := reqs[a.i%len(reqs)]
		switch {
		case r.path == "/api/v1/plan" && a.status != http.StatusOK,
			a.status != http.StatusOK && a.status != http.StatusServiceUnavailable && a.status != http.StatusGatewayTimeout,
			a.status != http.StatusOK && !strings.HasPrefix(a.body, `{"error":`):
			t.Errorf("%s: %d %.300s", r.path, a.status, a.body)
		}
	}
	t.Logf("statuses: %v", counts)
}
