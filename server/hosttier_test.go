package server_test

import (
	"net/http/httptest"
	"testing"

	"github.com/kvcfg/kvcfg/server"
)

// The API takes the host-tier and unified-pool inputs as Request keys and
// returns host_tier and unified_memory_pool.
func TestAPIHostTierAndUnifiedPool(t *testing.T) {
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	rep := apiPlan(t, ts, `{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "engine": "sglang", "page_size": 64, "enable_hierarchical_cache": true, "hicache_size": 100}`)
	h, ok := rep["host_tier"].(map[string]any)
	// 100e9 // 131,072 = 762,939 → 11,921 pages of 64 = 762,944 tokens.
	if !ok || h["tokens"] != float64(762944) || h["option"] != "--enable-hierarchical-cache" {
		t.Fatalf("host_tier %v", rep["host_tier"])
	}
	rep = apiPlan(t, ts, `{"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "gpu": "H200", "engine": "sglang", "tp_size": 4, "enable_unified_memory": true}`)
	u, ok := rep["unified_memory_pool"].(map[string]any)
	if !ok || u["path"] != "Mamba hybrid" {
		t.Fatalf("unified_memory_pool %v", rep["unified_memory_pool"])
	}
}
