package sglang_test

import (
	"math"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

// TestPrefillGraphReserveRule: the newest SGLang reserves memory for the
// prefill CUDA graph only while its compatibility checks leave it on
// (cuda_graph_hook.py, cuda_graph_config.py default_prefill_backend,
// memory_hook.py reserve_for_graph_mb), and captures up to
// --max-total-tokens. The numbers are issue 31's: a real MI355X run and
// four read from source; "was" is what the profile gave before the rule,
// and what 0.5.13 (the 0.5.10 profile) still gives where it differs.
func TestPrefillGraphReserveRule(t *testing.T) {
	const h200 = 143771
	tests := []struct {
		name, model, version string
		gpuMiB               int64
		sm, tp, pp           int
		platform             string
		ctx                  int
		maxTotal             int64
		want, was            float64
	}{
		{"MI355X non-CUDA", "Qwen/Qwen3-30B-A3B", "latest", 294896, 0, 1, 1, "hip", 8192, 0, 0.911, 0.909},
		{"RTX 4090 PP 2", "meta-llama/Llama-3.1-8B-Instruct", "latest", 24564, 89, 1, 2, "cuda", 0, 0, 0.715, 0.698},
		{"Kimi-Linear KDA", "moonshotai/Kimi-Linear-48B-A3B-Instruct", "latest", h200, 90, 1, 1, "cuda", 0, 0, 0.907, 0.896},
		{"Devstral-Small-2 multimodal", "mistralai/Devstral-Small-2-24B-Instruct", "latest", 81559, 90, 1, 1, "cuda", 0, 0, 0.79325, 0.7885},
		{"Llama-3.2-1B max-total-tokens 2048", "meta-llama/Llama-3.2-1B-Instruct", "latest", 24564, 89, 1, 1, "cuda", 0, 2048, 0.706, 0.704},
		{"Llama-3.1-8B H100 keeps the graph", "meta-llama/Llama-3.1-8B-Instruct", "latest", 81559, 90, 1, 1, "cuda", 0, 0, 0.830, 0.830},
		// The 0.5.10 profile keeps its numbers: 58 capture sizes reserved.
		{"0.5.13 H100 PP 2 unchanged", "meta-llama/Llama-3.1-8B-Instruct", "0.5.13", 81559, 90, 1, 2, "cuda", 0, 0, 0.828, 0.828},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := catalog.Load(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			in := sglang.Input{Spec: spec, Version: tt.version, Parallel: sglang.Parallel{TP: tt.tp, PP: tt.pp, DP: 1},
				Args:     sglang.ServerArgs{ContextLength: tt.ctx, MaxTotalTokens: tt.maxTotal},
				Hardware: sglang.Hardware{MemoryMiB: tt.gpuMiB, SM: tt.sm, Platform: tt.platform}, PostLoadFreeBytes: 1 << 30}
			c, err := sglang.New(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Derived().MemFractionStatic; math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("mem_fraction_static %v, want %v (before the rule: %v)", got, tt.want, tt.was)
			}
			// The flag switches the graph off in every profile.
			in.Args.DisablePiecewiseCudaGraph = true
			if c, err = sglang.New(in); err != nil {
				t.Fatal(err)
			}
			if got := c.Derived().MemFractionStatic; got < tt.want-1e-9 {
				t.Errorf("--disable-piecewise-cuda-graph: mem_fraction_static %v below %v", got, tt.want)
			}
		})
	}
}
