package server_test

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/server"
	"github.com/kvcfg/kvcfg/server/web"
)

// The API takes any engine's spelling of a KV dtype (issue 32, item 1):
// SGLang's fp8_e4m3 is TensorRT-LLM's fp8, in a comparison and a plan.
func TestAPIDTypeVocabulary(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	r := do(t, ts, "POST", "/api/v1/compare", `{"engines": ["sglang", "vllm", "trtllm"], "kv_cache_dtypes": ["fp8_e4m3"]}`)
	var c plan.Comparison
	if err := json.Unmarshal([]byte(r.body), &c); r.status != 200 || err != nil || len(c.Columns) != 3 {
		t.Fatalf("compare: %d %v %.400s", r.status, err, r.body)
	}
	for _, col := range c.Columns {
		if col.Error != "" || col.ResolvedKVCacheDType != "fp8_e4m3" {
			t.Errorf("%s column: error %q, storage %q", col.Engine, col.Error, col.ResolvedKVCacheDType)
		}
		if col.Engine == plan.EngineTRTLLM && !strings.Contains(strings.Join(col.Flags, " "), "kv_cache_config.dtype=fp8") {
			t.Errorf("trtllm flags %v lack its spelling", col.Flags)
		}
	}
	r = do(t, ts, "POST", "/api/v1/plan", `{"engine": "sglang", "kv_cache_dtype": "fp8"}`)
	var rep plan.Report
	if err := json.Unmarshal([]byte(r.body), &rep); r.status != 200 || err != nil || rep.KVCacheDType != "fp8_e4m3" || rep.ResolvedKVCacheDType != "fp8_e4m3" {
		t.Errorf("plan sglang fp8: %d %v kv %q %.300s", r.status, err, rep.KVCacheDType, r.body)
	}
}

// Unknown paths answer as the API does (issue 32): a JSON 404 for /api/...
// and for any other path, except an HTML page for a browser.
func TestUnknownPathsJSON(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	for _, p := range []string{"/api/v1/nope", "/nope", "/nope.js", "/static/../etc/passwd", "/vendor/nope.js"} {
		r := do(t, ts, "GET", p, "")
		var e struct {
			Error string `json:"error"`
		}
		if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(r.body), &e) != nil || e.Error == "" {
			t.Errorf("GET %s: %d %q %q, want a JSON 404", p, r.status, r.header.Get("Content-Type"), r.body)
		}
	}
	r := do(t, ts, "GET", "/nope", "", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, `href="/"`) {
		t.Errorf("browser GET /nope: %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	for _, p := range []string{"/", "/app.js", "/index.html"} {
		if r := do(t, ts, "GET", p, ""); r.status != 200 {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
}

// The form's blank memory-share fields say the default a blank plan uses
// (issue 32: the form said vLLM's 0.9 while a blank plan used 0.92).
func TestFormDefaultsFollowPlanner(t *testing.T) {
	b, err := fs.ReadFile(web.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, c := range []struct {
		engine, key string
		value       func(*plan.Report) float64
	}{
		{plan.EngineVLLM, "gpu_memory_utilization", func(r *plan.Report) float64 { return r.GPUMemoryUtilization }},
		{plan.EngineTRTLLM, "free_gpu_memory_fraction", func(r *plan.Report) float64 { return r.FreeGPUMemoryFraction }},
	} {
		rep, err := plan.Run(t.Context(), plan.Request{Engine: c.engine})
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`id="f-` + c.key + `"[^>]*placeholder="([^"]*)"`).FindStringSubmatch(page)
		if m == nil || m[1] != strconv.FormatFloat(c.value(rep), 'f', -1, 64) {
			t.Errorf("%s: the form's blank %s says %v, a blank plan uses %v", c.engine, c.key, m, c.value(rep))
		}
	}
	if strings.Contains(page, "blank = 0.9)") {
		t.Errorf("a label still names a fixed default")
	}
}
