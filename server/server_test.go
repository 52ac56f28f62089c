package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/server"
)

// newTestServer starts cfg's handler on a loopback httptest server.
func newTestServer(t *testing.T, cfg server.Config) *httptest.Server {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

type response struct {
	status int
	header http.Header
	body   string
}

// do sends one request and reads the whole response.
func do(t *testing.T, ts *httptest.Server, method, path, body string, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, s)
	}
	return v
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	_, err := server.New(server.Config{MaxBodyBytes: -1, ReadTimeout: -1})
	if err == nil {
		t.Fatal("New accepted a negative body limit and timeout")
	}
	for _, want := range []string{"max_body_bytes", "read_timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestCatalogEndpoints(t *testing.T) {
	ts := newTestServer(t, server.Config{})

	t.Run("healthz", func(t *testing.T) {
		r := do(t, ts, "GET", "/healthz", "")
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		if diff := cmp.Diff(map[string]string{"status": "ok"}, decodeJSON[map[string]string](t, r.body)); diff != "" {
			t.Errorf("body mismatch (-want +got):\n%s", diff)
		}
		if r := do(t, ts, "HEAD", "/healthz", ""); r.status != 200 {
			t.Errorf("HEAD /healthz status %d", r.status)
		}
	})

	t.Run("models", func(t *testing.T) {
		r := do(t, ts, "GET", "/api/v1/models", "")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		got := decodeJSON[server.ModelList](t, r.body)
		var names []string
		for _, m := range got.Models {
			names = append(names, m.Name)
			if m.Error != "" {
				t.Errorf("catalog model %s failed to load: %s", m.Name, m.Error)
			}
		}
		if diff := cmp.Diff(catalog.Names(), names); diff != "" {
			t.Errorf("model names mismatch (-want +got):\n%s", diff)
		}
		if got.Default != catalog.Default {
			t.Errorf("default = %q, want %q", got.Default, catalog.Default)
		}
	})

	t.Run("model", func(t *testing.T) {
		r := do(t, ts, "GET", "/api/v1/models/"+catalog.Default, "")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		want, err := catalog.Load(catalog.Default)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Name      string `json:"name"`
			NumLayers int    `json:"num_layers"`
		}
		got = decodeJSON[struct {
			Name      string `json:"name"`
			NumLayers int    `json:"num_layers"`
		}](t, r.body)
		if got.Name != want.Name || got.NumLayers != want.NumLayers {
			t.Errorf("got %+v, want name %q and %d layers", got, want.Name, want.NumLayers)
		}
	})

	t.Run("gpus", func(t *testing.T) {
		r := do(t, ts, "GET", "/api/v1/gpus", "")
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		got := decodeJSON[struct {
			GPUs []gpu.GPU `json:"gpus"`
		}](t, r.body)
		if diff := cmp.Diff(gpu.All(), got.GPUs); diff != "" {
			t.Errorf("gpus mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("dtypes", func(t *testing.T) {
		r := do(t, ts, "GET", "/api/v1/dtypes", "")
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		got := decodeJSON[server.DTypes](t, r.body)
		if diff := cmp.Diff(sglang.AcceptedKVDTypes(sglang.Profile{}), got.KVCacheDTypes); diff != "" {
			t.Errorf("kv_cache_dtypes mismatch (-want +got):\n%s", diff)
		}
		wantEngines := map[string][]string{"sglang": sglang.AcceptedKVDTypes(sglang.Profile{}), "vllm": vllm.AcceptedKVDTypes(vllm.Latest), "trtllm": {"auto", "fp8", "nvfp4"}}
		if diff := cmp.Diff(wantEngines, got.Engines); diff != "" {
			t.Errorf("engines mismatch (-want +got):\n%s", diff)
		}
		var names []string
		for _, f := range got.Formats {
			names = append(names, f.Name)
			if f.BytesPerElement <= 0 {
				t.Errorf("format %s: bytes_per_element %v", f.Name, f.BytesPerElement)
			}
		}
		if diff := cmp.Diff(dtype.FormatNames(), names); diff != "" {
			t.Errorf("format names mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestPage(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	tests := []struct {
		path        string
		contentType string
		contains    []string
	}{
		{"/", "text/html", []string{`<canvas id="budget-chart"`, `<canvas id="dtype-chart"`, `vendor/chart.umd.min.js`}},
		{"/app.js", "text/javascript", []string{"api/v1/plan"}},
		{"/style.css", "text/css", []string{".chart-box"}},
		{"/vendor/chart.umd.min.js", "text/javascript", []string{"Chart.js v4.6.1"}},
		{"/vendor/LICENSE.md", "text/markdown", []string{"The MIT License"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := do(t, ts, "GET", tt.path, "")
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
				t.Errorf("Content-Type %q, want %s", ct, tt.contentType)
			}
			if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			for _, want := range tt.contains {
				if !strings.Contains(r.body, want) {
					t.Errorf("body lacks %q", want)
				}
			}
		})
	}
	if r := do(t, ts, "GET", "/nope.js", ""); r.status != 404 {
		t.Errorf("GET /nope.js status %d, want 404", r.status)
	}
}

// stub is a planner that fails or succeeds as the request's model says.
func stub(ctx context.Context, req plan.Request) (*plan.Report, error) {
	switch req.Model {
	case "field-error":
		return nil, &plan.FieldError{Field: "tp_size", Err: errors.New("must divide the number of KV heads")}
	case "infeasible":
		return nil, fmt.Errorf("%w: weights take 140.00 GiB, more than 79.65 GiB of memory", plan.ErrInfeasible)
	case "boom":
		return nil, errors.New("disk on fire")
	case "panic":
		panic("planner bug")
	}
	return &plan.Report{}, nil
}

// stubModels lets the stub's magic model names through the server's
// catalog guard: the guard runs before the planner, so these tests use the
// planner directly through a catalog model and override by tp_size below.
func TestPlanErrors(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	rec := prometheus.NewRegistry() // the caller's registry: only the kvcfg_* metrics
	ts := newTestServer(t, server.Config{
		Metrics: rec,
		Plan: func(ctx context.Context, req plan.Request) (*plan.Report, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			// The stub reads its behaviour from the engine field, which the
			// server passes through untouched.
			return stub(ctx, plan.Request{Model: req.Engine})
		},
		Compare: func(ctx context.Context, req plan.CompareRequest) (*plan.Comparison, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			if _, err := stub(ctx, plan.Request{Model: req.Engine}); err != nil {
				return &plan.Comparison{Model: "partial"}, err
			}
			return &plan.Comparison{}, nil
		},
	})
	model := catalog.Default
	body := func(engine string) string {
		return fmt.Sprintf(`{"model": %q, "engine": %q}`, model, engine)
	}
	huge := `{"model": "` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		hdr     []string
		status  int
		want    server.ErrorBody // Error compared by prefix
		allow   string
		planned bool // whether the planner must have been called
	}{
		{name: "ok", method: "POST", path: "/api/v1/plan", body: body("ok"), status: 200, planned: true},
		{name: "empty body", method: "POST", path: "/api/v1/plan", body: "", status: 400,
			want: server.ErrorBody{Error: "empty request body"}},
		{name: "not an object", method: "POST", path: "/api/v1/plan", body: `["model"]`, status: 400,
			want: server.ErrorBody{Error: "request body must be a JSON object"}},
		{name: "syntax error", method: "POST", path: "/api/v1/plan", body: `{"model": }`, status: 400,
			want: server.ErrorBody{Error: "invalid JSON at byte"}},
		{name: "truncated", method: "POST", path: "/api/v1/plan", body: `{"model": "x"`, status: 400,
			want: server.ErrorBody{Error: "invalid JSON"}},
		{name: "trailing data", method: "POST", path: "/api/v1/plan", body: `{"model": "x"} {}`, status: 400,
			want: server.ErrorBody{Error: "unexpected data after the JSON object"}},
		{name: "unknown field", method: "POST", path: "/api/v1/plan", body: `{"modle": "x"}`, status: 400,
			want: server.ErrorBody{Error: `unknown field "modle" (accepted: `, Field: "modle"}},
		{name: "wrong type", method: "POST", path: "/api/v1/plan", body: `{"tp_size": "two"}`, status: 400,
			want: server.ErrorBody{Error: "tp_size: expected an integer", Field: "tp_size"}},
		{name: "bad size string", method: "POST", path: "/api/v1/plan", body: `{"gpu_memory": "80 parsecs"}`, status: 400,
			want: server.ErrorBody{Error: "gpu_memory: units: invalid size", Field: "gpu_memory"}},
		{name: "unknown model", method: "POST", path: "/api/v1/plan", body: `{"model": "no-such/model"}`, status: 400,
			want: server.ErrorBody{Error: "catalog: unknown model", Field: "model"}},
		{name: "model path refused", method: "POST", path: "/api/v1/plan", body: `{"model": "/etc/hostname"}`, status: 400,
			want: server.ErrorBody{Error: "catalog: unknown model", Field: "model"}},
		{name: "planner field error", method: "POST", path: "/api/v1/plan", body: body("field-error"), status: 400, planned: true,
			want: server.ErrorBody{Error: "must divide the number of KV heads", Field: "tp_size"}},
		{name: "infeasible", method: "POST", path: "/api/v1/plan", body: body("infeasible"), status: 422, planned: true,
			want: server.ErrorBody{Error: "plan: infeasible: weights take 140.00 GiB"}},
		{name: "unknown error", method: "POST", path: "/api/v1/plan", body: body("boom"), status: 500, planned: true,
			want: server.ErrorBody{Error: "internal error: disk on fire"}},
		{name: "panic", method: "POST", path: "/api/v1/plan", body: body("panic"), status: 500, planned: true,
			want: server.ErrorBody{Error: "internal error"}},
		{name: "body too large", method: "POST", path: "/api/v1/plan", body: huge, status: 413,
			want: server.ErrorBody{Error: "request body larger than 1048576 bytes"}},
		{name: "cross origin", method: "POST", path: "/api/v1/plan", body: body("ok"), hdr: []string{"Sec-Fetch-Site", "cross-site"}, status: 403,
			want: server.ErrorBody{Error: "cross-origin request refused"}},
		{name: "compare ok", method: "POST", path: "/api/v1/compare", body: body("ok"), status: 200, planned: true},
		{name: "compare list key", method: "POST", path: "/api/v1/compare", body: `{"engines": ["sglang"], "kv_cache_dtypes": ["auto"], "tp_sizes": [1], "engine": "ok"}`, status: 200, planned: true},
		{name: "compare unknown field", method: "POST", path: "/api/v1/compare", body: `{"engine": "ok", "enignes": []}`, status: 400,
			want: server.ErrorBody{Error: `unknown field "enignes"`, Field: "enignes"}},
		{name: "compare wrong type", method: "POST", path: "/api/v1/compare", body: `{"tp_sizes": "1,2"}`, status: 400,
			want: server.ErrorBody{Error: "tp_sizes: expected an array of integers", Field: "tp_sizes"}},
		{name: "compare model path refused", method: "POST", path: "/api/v1/compare", body: `{"model": "./config.json"}`, status: 400,
			want: server.ErrorBody{Error: "catalog: unknown model", Field: "model"}},
		{name: "compare infeasible", method: "POST", path: "/api/v1/compare", body: body("infeasible"), status: 422, planned: true,
			want: server.ErrorBody{Error: "plan: infeasible"}},
		{name: "GET compare", method: "GET", path: "/api/v1/compare", status: 405, allow: "POST",
			want: server.ErrorBody{Error: "method GET not allowed on /api/v1/compare"}},
		{name: "GET plan", method: "GET", path: "/api/v1/plan", status: 405, allow: "POST",
			want: server.ErrorBody{Error: "method GET not allowed on /api/v1/plan"}},
		{name: "DELETE models", method: "DELETE", path: "/api/v1/models", status: 405, allow: "GET, HEAD",
			want: server.ErrorBody{Error: "method DELETE not allowed on /api/v1/models"}},
		{name: "unknown endpoint", method: "GET", path: "/api/v1/nope", status: 404,
			want: server.ErrorBody{Error: "no such endpoint: /api/v1/nope"}},
		{name: "unknown model page", method: "GET", path: "/api/v1/models/no-such-model", status: 404,
			want: server.ErrorBody{Error: "catalog: unknown model", Field: "model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			before := calls
			mu.Unlock()
			r := do(t, ts, tt.method, tt.path, tt.body, tt.hdr...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			mu.Lock()
			planned := calls > before
			mu.Unlock()
			if planned != tt.planned {
				t.Errorf("planner called = %v, want %v", planned, tt.planned)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if tt.allow != "" && r.header.Get("Allow") != tt.allow {
				t.Errorf("Allow %q, want %q", r.header.Get("Allow"), tt.allow)
			}
			if tt.status == 200 {
				return
			}
			got := decodeJSON[server.ErrorBody](t, r.body)
			if !strings.Contains(got.Error, tt.want.Error) {
				t.Errorf("error %q does not contain %q", got.Error, tt.want.Error)
			}
			if got.Field != tt.want.Field {
				t.Errorf("field %q, want %q", got.Field, tt.want.Field)
			}
		})
	}

	// The errors are counted by kind.
	r := do(t, ts, "GET", "/metrics", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: status %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{
		`kvcfg_http_errors_total{kind="malformed_body",route="POST /api/v1/plan"} 5`,
		`kvcfg_http_errors_total{kind="invalid_input",route="POST /api/v1/plan"} 6`,
		`kvcfg_http_errors_total{kind="infeasible",route="POST /api/v1/plan"} 1`,
		`kvcfg_http_errors_total{kind="internal",route="POST /api/v1/plan"} 1`,
		`kvcfg_http_errors_total{kind="panic",route="POST /api/v1/plan"} 1`,
		`kvcfg_http_errors_total{kind="body_too_large",route="POST /api/v1/plan"} 1`,
		`kvcfg_http_errors_total{kind="forbidden",route="POST /api/v1/plan"} 1`,
		`kvcfg_http_errors_total{kind="method_not_allowed",route="unmatched"} 1`,
		`kvcfg_http_errors_total{kind="not_found",route="GET /"} 1`,
		`kvcfg_http_errors_total{kind="not_found",route="GET /api/v1/models/{name...}"} 1`,
		`kvcfg_http_requests_total{code="200",method="POST",route="POST /api/v1/plan"} 1`,
		`kvcfg_plans_total{endpoint="plan",outcome="ok"} 1`,
		`kvcfg_plans_total{endpoint="plan",outcome="infeasible"} 1`,
		`kvcfg_plans_total{endpoint="compare",outcome="ok"} 2`,
		`kvcfg_plans_total{endpoint="compare",outcome="infeasible"} 1`,
		`kvcfg_http_errors_total{kind="invalid_input",route="POST /api/v1/compare"} 3`,
		`kvcfg_http_errors_total{kind="method_not_allowed",route="GET /"} 2`,
		`kvcfg_http_request_duration_seconds_count{method="POST",route="POST /api/v1/plan"} `,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestServeGracefulShutdown cancels the serving context while a request is
// in flight: the request completes and Serve returns nil.
func TestServeGracefulShutdown(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	srv, err := server.New(server.Config{
		Plan: func(ctx context.Context, req plan.Request) (*plan.Report, error) {
			close(entered)
			<-release
			return &plan.Report{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	got := make(chan int, 1)
	go func() {
		res, err := http.Post("http://"+ln.Addr().String()+"/api/v1/plan", "application/json",
			strings.NewReader(`{"model": "`+catalog.Default+`"}`))
		if err != nil {
			got <- -1
			return
		}
		res.Body.Close()
		got <- res.StatusCode
	}()
	<-entered
	cancel()
	close(release)
	if code := <-got; code != 200 {
		t.Errorf("in-flight request got status %d, want 200", code)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve returned %v, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Errorf("listener still accepts after shutdown")
	}
}

func TestListenAndServeBadAddr(t *testing.T) {
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.ListenAndServe(t.Context(), "127.0.0.1:notaport", nil); err == nil {
		t.Fatal("ListenAndServe accepted a bad address")
	}
}

// TestModelPinnedToCatalog checks what the planner receives: a catalog
// model under its canonical id with its config.json inline, so planning
// never reads the server's disk; inline configs pass through untouched.
func TestModelPinnedToCatalog(t *testing.T) {
	var got plan.Request
	ts := newTestServer(t, server.Config{
		Plan: func(ctx context.Context, req plan.Request) (*plan.Report, error) {
			got = req
			return &plan.Report{}, nil
		},
	})
	raw, err := catalog.Config(catalog.Default)
	if err != nil {
		t.Fatal(err)
	}
	_, bare, _ := strings.Cut(catalog.Default, "/")
	tests := []struct {
		name       string
		body       string
		wantModel  string
		wantConfig string
	}{
		{"canonical", `{"model": "` + catalog.Default + `"}`, catalog.Default, string(raw)},
		{"other case", `{"model": "` + strings.ToUpper(catalog.Default) + `"}`, catalog.Default, string(raw)},
		{"bare name", `{"model": "` + bare + `"}`, catalog.Default, string(raw)},
		{"default", `{}`, catalog.Default, string(raw)},
		{"inline config", `{"model": "my-model", "config": {"num_hidden_layers": 2}}`, "my-model", `{"num_hidden_layers": 2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = plan.Request{}
			if r := do(t, ts, "POST", "/api/v1/plan", tt.body); r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			cfg := got.Config
			if got.Resolved != nil { // a catalog entry, resolved once
				cfg = got.Resolved.Config
			}
			if got.Model != tt.wantModel || string(cfg) != tt.wantConfig {
				t.Errorf("planner got model %q and %d config bytes, want %q and %d", got.Model, len(cfg), tt.wantModel, len(tt.wantConfig))
			}
		})
	}
	dir := t.TempDir()
	for _, model := range []string{dir, dir + "/config.json", "./" + catalog.Default} {
		if r := do(t, ts, "POST", "/api/v1/plan", `{"model": "`+model+`"}`); r.status != 400 {
			t.Errorf("model %q: status %d, want 400", model, r.status)
		}
	}
}
