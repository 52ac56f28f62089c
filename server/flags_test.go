package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/server"
)

// GET /api/v1/flags serves the flag table with snake_case keys.
func TestFlagsEndpoint(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	r := do(t, ts, "GET", "/api/v1/flags", "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	for _, k := range []string{`"key": "tp_size"`, `"key_aliases"`, `"non_zero": true`, `"spelling"`, `"--tensor-parallel-size"`, `"kv_cache_config.dtype"`, `"engines"`, `"native": true`} {
		if !strings.Contains(r.body, k) {
			t.Errorf("body lacks %s", k)
		}
	}
	var got server.FlagTable
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Flags) != len(plan.Flags()) || len(got.Engines) != 3 {
		t.Errorf("%d flags, %d engines", len(got.Flags), len(got.Engines))
	}
}

// Zeros where 0 means nothing, another engine's keys and conflicting keys
// are 400 with the field, every problem at once.
func TestAPIRefusesZerosAndOtherEnginesKeys(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	for _, c := range []struct{ path, body, field, want string }{
		{"/api/v1/plan", `{"tp_size": 0}`, "tp_size", "0 is not a valid --tp-size"},
		{"/api/v1/plan", `{"gpu_memory": "0GiB", "mem_fraction_static": 0.0}`, "gpu_memory", "mem_fraction_static"},
		{"/api/v1/plan", `{"tp_size": 0, "gpu_memory_utilization": 0.8}`, "tp_size", "use --mem-fraction-static"},
		{"/api/v1/plan", `{"gpu_memory_utilization": 0.8}`, "gpu_memory_utilization", "use --mem-fraction-static"},
		{"/api/v1/plan", `{"engine": "vllm", "context_length": 8192, "max_model_len": 4096}`, "max_model_len", "conflicts with context_length"},
		{"/api/v1/plan", `{"gpu": "H100", "platform": "hip"}`, "platform", "does not run on"},
		{"/api/v1/compare", `{"tp_size": 0}`, "tp_size", "0 is not a valid"},
		{"/api/v1/fit", `{"base": {"mem_fraction_static": 0}, "concurrency": 1, "context_length": 8192, "gpus": ["H100"]}`, "mem_fraction_static", "0 is not a valid"},
		{"/api/v1/fit", `{"base": {"engine": "trtllm"}, "concurrency": 1, "context_length": 8192, "gpus": ["H100"], "kv_cache_dtypes": ["fp8_e5m2"]}`, "kv_cache_dtype", "accepted: auto, fp8, nvfp4"},
		{"/api/v1/explain", `{"message": "No available memory for the cache blocks.", "plan": {"engine": "vllm", "tp_size": 0}}`, "tp_size", "0 is not a valid"},
	} {
		r := do(t, ts, "POST", c.path, c.body)
		var e struct {
			Error string `json:"error"`
			Field string `json:"field"`
		}
		_ = json.Unmarshal([]byte(r.body), &e)
		if r.status != 400 || e.Field != c.field || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.body)
		}
	}
	for _, ok := range []string{`{"chunked_prefill_size": -1}`, `{"engine": "vllm", "gpu_memory_utilization": 0.8}`, `{"sglang_version": "0.4.9"}`} {
		if r := do(t, ts, "POST", "/api/v1/plan", ok); r.status != 200 {
			t.Errorf("%s: %d %s", ok, r.status, r.body)
		}
	}
	r := do(t, ts, "POST", "/api/v1/plan", `{"sglang_version": "0.4.9"}`)
	if !strings.Contains(r.body, `"sglang_profile": "SGLang 0.4.9 is sized with the 0.4.8 profile`) {
		t.Errorf("no sglang_profile: %s", r.body[:200])
	}
	// compare takes every plan key: DP attention, trtllm columns.
	r = do(t, ts, "POST", "/api/v1/compare", `{"engines": ["sglang", "vllm", "trtllm"], "tp_size": 2, "dp_size": 2, "enable_dp_attention": true, "gpu_memory_utilization": 0.9}`)
	if r.status != 200 || !strings.Contains(r.body, `"--enable-dp-attention"`) || !strings.Contains(r.body, `"enable_attention_dp=true"`) {
		t.Errorf("compare: %d %.400s", r.status, r.body)
	}
}
