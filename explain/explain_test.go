package explain_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/explain"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

func TestExplain(t *testing.T) {
	type want struct {
		Engine, Kind, Knob, Value string
		Numbers                   map[string]float64
	}
	tests := []struct {
		name, text string
		want       want
	}{
		{
			// Suggested 0.912; the advice adds 0.03 of KV room: 0.942.
			"sglang no KV memory",
			"ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.835. Raise --mem-fraction-static above 0.912 (minimum viable = 1 - available/pre = 0.9113). If using speculative decoding, draft weights are now counted.",
			want{"sglang", "no_kv_memory", "--mem-fraction-static", "0.942",
				map[string]float64{"mem_fraction_static": 0.835, "suggested": 0.912, "minimum_viable": 0.9113}},
		},
		{
			// Weights take 96 % of the free memory: no fraction helps.
			"sglang no KV memory, weights too large",
			"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.9. Raise --mem-fraction-static above 0.961 (minimum viable = 1 - available/pre = 0.9601).",
			want{"sglang", "no_kv_memory", "--tp-size", "",
				map[string]float64{"mem_fraction_static": 0.9, "suggested": 0.961, "minimum_viable": 0.9601}},
		},
		{
			// 0.835 + 0.05.
			"sglang not enough memory",
			"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.835",
			want{"sglang", "not_enough_memory", "--mem-fraction-static", "0.885", map[string]float64{"mem_fraction_static": 0.835}},
		},
		{
			"sglang not enough memory without value",
			"Not enough memory. Please try to increase --mem-fraction-static.",
			want{"sglang", "not_enough_memory", "--mem-fraction-static", "", nil},
		},
		{
			// Floor 63 + 1 = 64: the pool must exceed it, 65/60 = 1.0833× the
			// pool; with the default ratio 0.8: 0.8·65/60 = 0.8667 → 0.867.
			"sglang SWA pool too small",
			"ValueError: SWA pool (60 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (63) + page_size (1). Increase --swa-full-tokens-ratio or the total KV budget.",
			want{"sglang", "swa_pool_too_small", "--swa-full-tokens-ratio", "0.867",
				map[string]float64{"swa_tokens": 60, "sliding_window_size": 63, "page_size": 1}},
		},
		{
			// 0.8 · 129/100 > 1: the ratio alone cannot do it.
			"sglang SWA pool too small beyond ratio 1",
			"SWA pool (100 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (127) + page_size (1).",
			want{"sglang", "swa_pool_too_small", "--swa-full-tokens-ratio", "",
				map[string]float64{"swa_tokens": 100, "sliding_window_size": 127, "page_size": 1}},
		},
		{
			"sglang SWA chunk cap",
			"RuntimeError: SWA pool cap (300000 tokens, 4.58 GiB) leaves no room for the full KV pool within the available 3.20 GiB. Reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static.",
			want{"sglang", "swa_chunk_cap", "--max-running-requests", "",
				map[string]float64{"swa_tokens": 300000, "swa_gib": 4.58, "available_gib": 3.2}},
		},
		{
			// ⌊0.50·1024/73.69⌋ − 1 = 6 − 1 = 5 slots; half to state: 2.
			"sglang mamba state",
			"RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=0 (total_rest_memory=0.50 GB, mamba_cache_per_req=73.69 MB). Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, or (4) use GPUs with more memory.",
			want{"sglang", "mamba_state_too_small", "--max-mamba-cache-size", "2",
				map[string]float64{"max_mamba_cache_size": 0, "total_rest_gib": 0.5, "mamba_cache_per_req_mib": 73.69}},
		},
		{
			// ⌊0.05·1024/73.69⌋ − 1 = −1: not one slot.
			"sglang mamba state, not one slot",
			"Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=-2 (total_rest_memory=0.05 GB, mamba_cache_per_req=73.69 MB).",
			want{"sglang", "mamba_state_too_small", "--mem-fraction-static", "",
				map[string]float64{"max_mamba_cache_size": -2, "total_rest_gib": 0.05, "mamba_cache_per_req_mib": 73.69}},
		},
		{
			"sglang mamba no requests",
			"RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests.",
			want{"sglang", "mamba_no_requests", "--max-mamba-cache-size", "", nil},
		},
		{
			// Twice the requests at 3 slots each: 2·240·3 = 1440.
			"sglang mamba cap warning",
			"WARNING max_running_requests is capped to 240 by the mamba state cache (max_mamba_cache_size=721, 3 state slots per request). To raise it: increase --mamba-full-memory-ratio",
			want{"sglang", "mamba_capped", "--max-mamba-cache-size", "1440",
				map[string]float64{"max_running_requests": 240, "max_mamba_cache_size": 721, "slots_per_request": 3}},
		},
		{
			"sglang context length",
			"ValueError: User-specified context_length (200000) is greater than the derived context_length (131072). This may lead to incorrect model outputs",
			want{"sglang", "context_length_too_long", "--context-length", "131072", map[string]float64{"context_length": 200000, "derived": 131072}},
		},
		{
			"sglang deprecated fp4",
			"ValueError: --kv-cache-dtype=fp4_e2m1 is deprecated. Use --kv-cache-dtype=fp4_mx_block16.",
			want{"sglang", "kv_dtype_deprecated", "--kv-cache-dtype", "fp4_mx_block16", nil},
		},
		{
			"sglang unsupported dtype",
			"ValueError: Unsupported kv_cache_dtype: fp6.",
			want{"sglang", "kv_dtype_unsupported", "--kv-cache-dtype", "auto", nil},
		},
		{
			"sglang concurrency report, Mamba bound",
			"WARNING max_running_requests reduced from the requested 74 to 26 (per dp worker), bound by mamba_state_pool (max_mamba_cache_size=131 per shard / 5 slots per request); other limits: max_running_requests=74, kv_capacity=400. To raise it: try one of: --max-mamba-cache-size 370 (memory permitting), a larger --mamba-full-memory-ratio, or --mamba-ssm-dtype bfloat16.",
			want{"sglang", "concurrency_reduced", "--max-mamba-cache-size", "370",
				map[string]float64{"requested": 74, "max_running_requests": 26, "max_mamba_cache_size": 131, "slots_per_request": 5}},
		},
		{
			"sglang concurrency report, KV bound",
			"max_running_requests reduced from the requested 800 to 500 (per dp worker), bound by kv_capacity (max_total_num_tokens=1000 / 2); other limits: max_running_requests=800. To raise it: raise --mem-fraction-static or lower the context length.",
			want{"sglang", "concurrency_reduced", "--mem-fraction-static", "", map[string]float64{"requested": 800, "max_running_requests": 500}},
		},
		{
			"sglang reduced requests",
			"max_running_requests was reduced from the requested 4096 to 1024 (per dp worker) due to the available KV cache capacity.",
			want{"sglang", "max_running_reduced", "--max-running-requests", "1024", map[string]float64{"requested": 4096, "max_running_requests": 1024}},
		},
		{
			"vllm max seq len with estimate",
			"(EngineCore_DP0 pid=18799) ERROR 10-08 20:33:48 [core.py:708] ValueError: To serve at least one request with the models's max seq len (40960), (5.62 GiB KV cache is needed, which is larger than the available KV cache memory (4.50 GiB). Based on the available memory, the estimated maximum model length is 32768. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			want{"vllm", "max_seq_len_too_long", "--max-model-len", "32768",
				map[string]float64{"max_model_len": 40960, "needed_gib": 5.62, "available_gib": 4.5, "estimated_max_model_len": 32768}},
		},
		{
			// No estimate: 16384 · 2.50 / 4.00 = 10240.
			"vllm max seq len wrapped, no estimate",
			"ValueError: To serve at least one request with the model's max seq len (16,384),\n(4.00 GiB KV cache is needed, which is larger than the available KV cache memory\n(2.50 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`",
			want{"vllm", "max_seq_len_too_long", "--max-model-len", "10240",
				map[string]float64{"max_model_len": 16384, "needed_gib": 4, "available_gib": 2.5}},
		},
		{
			// ⌊12.18/23.56 · 100⌋ / 100 = ⌊51.70⌋ / 100 = 0.51.
			"vllm free memory",
			"ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than desired GPU memory utilization (0.92, 21.67 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
			want{"vllm", "free_memory_below_utilization", "--gpu-memory-utilization", "0.51",
				map[string]float64{"free_gib": 12.18, "total_gib": 23.56, "gpu_memory_utilization": 0.92, "requested_gib": 21.67}},
		},
		{
			// ⌊61.05/119.7 · 100⌋ / 100 = ⌊51.00⌋ / 100 = 0.51.
			"vllm free memory, no device name",
			"Free memory on device (61.05/119.7 GiB) on startup is less than desired GPU memory utilization (0.52, 62.24 GiB)",
			want{"vllm", "free_memory_below_utilization", "--gpu-memory-utilization", "0.51",
				map[string]float64{"free_gib": 61.05, "total_gib": 119.7, "gpu_memory_utilization": 0.52, "requested_gib": 62.24}},
		},
		{
			"CUDA out of memory",
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.",
			want{"any", "cuda_out_of_memory", "--mem-fraction-static", "", map[string]float64{"tried": 2}},
		},
		{
			"vllm no cache blocks",
			"ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
			want{"vllm", "no_cache_blocks", "--gpu-memory-utilization", "", nil},
		},
		{
			"vllm kv smaller than max seq len",
			"ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (21104). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			want{"vllm", "kv_smaller_than_max_seq_len", "--max-model-len", "21104", map[string]float64{"max_model_len": 32768, "kv_tokens": 21104}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := explain.Explain(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			got := want{e.Engine, e.Kind, e.Knob, e.Value, e.Numbers}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("explanation (-want +got):\n%s", d)
			}
			if e.Meaning == "" || e.Advice == "" || e.Match == "" {
				t.Errorf("empty meaning, advice or match: %+v", e)
			}
		})
	}
}

func TestExplainUnrecognized(t *testing.T) {
	for _, s := range []string{"hello world", "CUDA error: an illegal memory access was encountered"} {
		if _, err := explain.Explain(s); !errors.Is(err, explain.ErrUnrecognized) {
			t.Errorf("%q: want ErrUnrecognized, got %v", s, err)
		}
	}
}

// A whole log: the first known message wins.
func TestExplainFirstMessage(t *testing.T) {
	log := "INFO load weights\nWARNING max_total_tokens=900000 is larger than the profiled value 414412. Use the profiled value instead.\nRuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
	e, err := explain.Explain(log)
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != "max_total_tokens_too_large" || e.Value != "414412" {
		t.Errorf("got %s %s", e.Kind, e.Value)
	}
}

// Every message kvcfg's own planner raises is recognised.
func TestExplainPlannerErrors(t *testing.T) {
	reqs := []plan.Request{
		{Model: "meta-llama/Llama-3.1-8B-Instruct", WeightsMemory: units.Size(70 << 30)},
		{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "L4"},
		{Model: "meta-llama/Llama-3.1-8B-Instruct", Engine: "vllm", MaxModelLen: 131072, GPU: "L4"},
		{Model: "meta-llama/Llama-3.1-8B-Instruct", ContextLength: 1 << 20},
	}
	for _, r := range reqs {
		rep, err := plan.Run(context.Background(), r)
		if err == nil {
			t.Errorf("%+v: want an error", r)
			continue
		}
		text := err.Error()
		if rep != nil && rep.Error != "" {
			text = rep.Error
		}
		if _, err := explain.Explain(text); err != nil {
			t.Errorf("planner error not explained: %q: %v", text, err)
		}
	}
}

// Llama-3.1-8B on one H100 (pre 78.5 GiB) with 70 GiB of weights and
// mem_fraction_static 0.835: post 8.5 GiB < slack 12.95 GiB. One request
// of 8192 tokens needs 8192 · 131,072 B = 1 GiB, so the smallest fraction
// m with 8.5 − 78.5·(1 − m) ≥ 1 is m ≥ 0.90446 → 0.905, which leaves
// 1.0425 GiB = 8,540 tokens.
func TestAdviseMemFraction(t *testing.T) {
	req := plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", WeightsMemory: units.Size(70 << 30),
		MemFractionStatic: 0.835, ContextLength: 8192}
	rep, err := plan.Run(context.Background(), req)
	if err == nil {
		t.Fatal("want the plan to fail")
	}
	e, err := explain.Explain(rep.Error)
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != "no_kv_memory" {
		t.Fatalf("kind %s", e.Kind)
	}
	a, err := explain.Advise(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{a.Reproduced, a.Flag, a.Value, a.Report.MaxTotalNumTokens}
	want := []any{true, "--mem-fraction-static", "0.905", int64(8540)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("advice (-want +got):\n%s", d)
	}
}

// vLLM's own estimate of the longest model length and the plan-based
// search agree.
func TestAdviseVLLMMaxModelLen(t *testing.T) {
	req := plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", Engine: "vllm", GPU: "L4", MaxModelLen: 131072}
	rep, err := plan.Run(context.Background(), req)
	if !errors.Is(err, plan.ErrInfeasible) {
		t.Fatalf("want an infeasible plan, got %v", err)
	}
	e, err := explain.Explain(rep.Error)
	if err != nil {
		t.Fatal(err)
	}
	a, err := explain.Advise(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if e.Knob != "--max-model-len" || a.Flag != "--max-model-len" || !a.Reproduced {
		t.Fatalf("explanation %s %s, advice %+v", e.Kind, e.Knob, a)
	}
	if a.Value != e.Value {
		t.Errorf("plan search says --max-model-len %s, vLLM's estimate %s", a.Value, e.Value)
	}
}

func TestKnown(t *testing.T) {
	k := explain.Known()
	if len(k) < 15 {
		t.Errorf("only %d kinds", len(k))
	}
	for _, s := range k {
		if !strings.HasPrefix(s, "sglang/") && !strings.HasPrefix(s, "vllm/") && !strings.HasPrefix(s, "trtllm/") && !strings.HasPrefix(s, "any/") {
			t.Errorf("kind %q", s)
		}
	}
}

func FuzzExplain(f *testing.F) {
	f.Add("Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.835")
	f.Add("Free memory on device cuda:0 (1,2/3 GiB) on startup is less than desired GPU memory utilization (0.9, 2 GiB)")
	f.Add("SWA pool (0 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (0) + page_size (0)")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := explain.Explain(s)
		if err == nil && (e.Kind == "" || e.Knob == "") {
			t.Fatalf("explanation without kind or knob: %+v", e)
		}
	})
}

// The memory readings of a pasted log are read and planned with, so the
// advice reproduces the run instead of modelling its memory.
func TestExplainUsesLogReadings(t *testing.T) {
	log := `[2025-07-01 10:00:00 TP0] Load weight begin. avail mem=78.50 GB
[2025-07-01 10:00:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=12.25 GB, mem usage=66.25 GB.
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.835`
	e, err := explain.Explain(log)
	if err != nil {
		t.Fatal(err)
	}
	want := &explain.Readings{PreLoadFreeMemory: units.Size(78.5 * (1 << 30)), PostLoadFreeMemory: units.Size(12.25 * (1 << 30)), Engine: explain.SGLang} // exact in binary
	if diff := cmp.Diff(want, e.Readings); diff != "" {
		t.Fatalf("readings (-want +got):\n%s", diff)
	}
	a, err := explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", TPSize: 2, ContextLength: 32768})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.Measured, ",") != "pre_load_free_memory,post_load_free_memory" {
		t.Errorf("measured = %q", a.Measured)
	}
	if a.Report == nil || a.Report.Breakdown.PreLoadFreeBytes != int64(want.PreLoadFreeMemory) || a.Report.WeightsSource == "config_estimate" {
		t.Errorf("plan did not use the readings: %+v", a.Report)
	}
	// A flag given explicitly wins over the log.
	a, err = explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", TPSize: 2,
		PreLoadFreeMemory: 79 << 30, PostLoadFreeMemory: 13 << 30})
	if err != nil || len(a.Measured) != 0 {
		t.Errorf("explicit readings overridden: measured %q, err %v", a.Measured, err)
	}
	// vLLM's budget line.
	v := ReadMeasurementsOf(t, "INFO [gpu_worker.py:276] Available KV cache memory: 58.24 GiB\nValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.00 GiB).")
	gib := 58.24
	if v.KVCacheMemory != units.Size(gib*(1<<30)) || v.Engine != explain.VLLM {
		t.Errorf("vllm readings = %+v", v)
	}
}

func ReadMeasurementsOf(t *testing.T, s string) explain.Readings {
	t.Helper()
	return explain.ReadMeasurements(s)
}

func TestExplainEmptyInput(t *testing.T) {
	for _, in := range []string{"", "  \n\t"} {
		if _, err := explain.Explain(in); !errors.Is(err, explain.ErrNoInput) {
			t.Errorf("Explain(%q) = %v, want ErrNoInput", in, err)
		}
	}
}
