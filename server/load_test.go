package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/server"
)

// loadBodies is the request mix of the load test: mostly valid plans across
// engines' code paths (MHA, MLA, SWA, Mamba, TP, FP8/FP4 KV), plus invalid
// and infeasible ones, which must stay 422 under load.
var loadBodies = []string{
	`{}`,
	`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3"}`,
	`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "B200", "kv_cache_dtype": "nvfp4"}`,
	`{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H200", "tp_size": 4, "context_length": 32768}`,
	`{"model": "deepseek-ai/DeepSeek-V3", "gpu": "H200", "tp_size": 8}`,
	`{"model": "openai/gpt-oss-120b", "gpu": "H100", "tp_size": 2}`,
	`{"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "gpu": "H200", "tp_size": 2}`,
	`{"model": "Qwen/Qwen3-8B", "gpu": "L40S", "gpu_memory": "46GiB", "mem_fraction_static": 0.85}`,
	`{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "L4"}`,       // infeasible: 422
	`{"model": "meta-llama/Llama-3.1-8B-Instruct", "tp_size": "eight"}`, // wrong type: 400
	`{"model": "no-such/model"}`,                                          // unknown model: 400
	`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu_memory": "lots"}`, // bad size: 400
}

// TestLoad sends many plan requests over loopback from concurrent workers
// and checks that none fails with a 5xx or a transport error and that every
// response equals the one the same body gets alone. Latency percentiles are
// logged (go test -v), never asserted: timings depend on the machine.
//
// Defaults: 20,000 requests, 64 workers, stopping early at a 3-minute cap;
// -short sends 2,000 and -race 4,000. KVCFG_LOAD_REQUESTS and
// KVCFG_LOAD_WORKERS override.
func TestLoad(t *testing.T) {
	total, workers := 20000, 64
	if testing.Short() {
		total = 2000
	} else if raceEnabled {
		total = 4000
	}
	if v, err := strconv.Atoi(os.Getenv("KVCFG_LOAD_REQUESTS")); err == nil && v > 0 {
		total = v
	}
	if v, err := strconv.Atoi(os.Getenv("KVCFG_LOAD_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	const timeCap = 3 * time.Minute

	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	transport := &http.Transport{MaxIdleConns: workers, MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	// The answer each body gets on its own.
	type answer struct {
		status int
		body   string
	}
	post := func(ctx context.Context, body string) (answer, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/v1/plan", strings.NewReader(body))
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return answer{res.StatusCode, string(b)}, err
	}
	want := make([]answer, len(loadBodies))
	for i, b := range loadBodies {
		a, err := post(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		if a.status != 200 && a.status != 400 && a.status != 422 {
			t.Fatalf("body %s: status %d: %s", b, a.status, a.body)
		}
		want[i] = a
	}

	ctx, cancel := context.WithTimeout(t.Context(), timeCap)
	defer cancel()
	var (
		next       atomic.Int64
		latencies  = make([]time.Duration, total)
		statuses   sync.Map // int -> *atomic.Int64
		mismatches atomic.Int64
		transport5 atomic.Int64
		firstErr   atomic.Value
	)
	count := func(code int) {
		c, _ := statuses.LoadOrStore(code, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				k := i % len(loadBodies)
				t0 := time.Now()
				a, err := post(ctx, loadBodies[k])
				latencies[i] = time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return // the time cap, not the server
					}
					transport5.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				count(a.status)
				if a != want[k] {
					mismatches.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("body %s: got %d %.200s, want %d %.200s", loadBodies[k], a.status, a.body, want[k].status, want[k].body))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	done := min(int(next.Load()), total)
	lat := slices.Clone(latencies[:done])
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	var codes []string
	fivexx := int64(0)
	statuses.Range(func(k, v any) bool {
		n := v.(*atomic.Int64).Load()
		codes = append(codes, fmt.Sprintf("%d=%d", k.(int), n))
		if k.(int) >= 500 {
			fivexx += n
		}
		return true
	})
	slices.Sort(codes)
	summary := fmt.Sprintf("load: %d requests, %d workers, %.2fs, %.0f req/s; p50 %v, p90 %v, p99 %v, max %v; status %s; 5xx %d; transport errors %d; mismatches %d",
		done, workers, elapsed.Seconds(), float64(done)/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond),
		strings.Join(codes, " "), fivexx, transport5.Load(), mismatches.Load())
	t.Log(summary)

	if fivexx > 0 {
		t.Errorf("%d responses were 5xx", fivexx)
	}
	if n := transport5.Load(); n > 0 {
		t.Errorf("%d requests failed in transport; first: %v", n, firstErr.Load())
	}
	if n := mismatches.Load(); n > 0 {
		t.Errorf("%d responses differ from the same request sent alone; first: %v", n, firstErr.Load())
	}
	if done < total {
		t.Logf("stopped at the %v cap after %d of %d requests", timeCap, done, total)
	}

	// The metrics counted every plan request (the warm-up ones too).
	res, err := client.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(res.Body)
	var counted int64
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "kvcfg_http_requests_total{") && strings.Contains(line, `route="POST /api/v1/plan"`) {
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			counted += int64(n)
		}
	}
	if wantCount := int64(done + len(loadBodies)); counted != wantCount && done == total {
		t.Errorf("kvcfg_http_requests_total for plans = %d, want %d", counted, wantCount)
	}
}

// BenchmarkPlanHandler measures one plan request through the whole handler
// (decode, plan, encode, middleware) without the network.
func BenchmarkPlanHandler(b *testing.B) {
	srv, err := server.New(server.Config{})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	body := []byte(loadBodies[1])
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("POST", "/api/v1/plan", bytes.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
	b.StopTimer()
	// The server's own allocations: the same request through the harness
	// to a handler that writes an answer of the same size and headers,
	// subtracted.
	answer := httptest.NewRecorder()
	h.ServeHTTP(answer, httptest.NewRequest("POST", "/api/v1/plan", bytes.NewReader(body)))
	hdr, out := answer.Header(), answer.Body.Bytes()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
	})
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(200, func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/v1/plan", bytes.NewReader(body)))
		})
	}
	b.ReportMetric(allocs(h)-allocs(echo), "server-allocs/op")
}

// FuzzPlanHandler feeds arbitrary bodies to POST /api/v1/plan and
// /api/v1/compare: the answer is never a 5xx, a 200 is a JSON report, and anything else is a JSON error
// with a message.
func FuzzPlanHandler(f *testing.F) {
	for _, b := range loadBodies {
		f.Add([]byte(b))
	}
	for _, tc := range goldenCases {
		f.Add([]byte(tc.body))
	}
	for _, s := range []string{
		``, ` `, `null`, `[]`, `"x"`, `42`, `{`, `}`, `{"model":`, `{"model": null}`, `{"tp_size": -1}`,
		`{"tp_size": 1e400}`, `{"tp_size": 1.5}`, `{"gpu_memory": "-5GiB"}`, `{"gpu_memory": "1e30TiB"}`,
		`{"gpu_memory": -1}`, `{"context_length": 2147483647}`, `{"page_size": 1048576}`, `{"mem_fraction_static": 0.0001}`,
		`{"config": {}}`, `{"config": {"num_hidden_layers": -3}}`, `{"config": "not an object"}`, `{"config": [1, 2]}`,
		`{"model": "meta-llama/Llama-3.1-8B-Instruct"} trailing`, `{"model": "../../etc/passwd"}`, `{"model": "/dev/zero"}`,
		"{\"model\": \"\xff\xfe\"}", `{"engine": "vllm"}`, `{"engine": "tgi"}`, `{"kv_cache_dtype": "fp2"}`,
		`{"tp_size": 1024, "pp_size": 1024, "dp_size": 1024}`, `{"max_total_tokens": 9223372036854775807}`,
		`{"speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 1000000}`,
		`{"model": "deepseek-ai/DeepSeek-V3", "kv_cache_dtype": "nvfp4", "gpu": "MI300X", "enable_dp_attention": true, "dp_size": 8, "tp_size": 8}`,
		`{"engines": ["sglang", "vllm"], "kv_cache_dtypes": ["auto", "fp8_e4m3", "nvfp4"], "tp_sizes": [1, 2, 4]}`,
		`{"engines": []}`, `{"tp_sizes": [0]}`, `{"kv_cache_dtypes": ["", ","]}`, `{"engine": "sglang,vllm,sglang"}`,
		`{"tp_sizes": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33]}`,
	} {
		f.Add([]byte(s))
	}
	srv, err := server.New(server.Config{})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/api/v1/plan", "/api/v1/compare"} {
			req := httptest.NewRequest("POST", path, bytes.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body)
			}
			if rec.Code == 200 {
				if !json.Valid(rec.Body.Bytes()) {
					t.Fatalf("POST %s %q: 200 with invalid JSON", path, body)
				}
				continue
			}
			var eb server.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == "" {
				t.Fatalf("POST %s %q: status %d without a JSON error: %s", path, body, rec.Code, rec.Body)
			}
		}
	})
}
