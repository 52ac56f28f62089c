package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/server"
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
