package vllm

import (
	"fmt"
	"math"

	"github.com/kvcfg/kvcfg/engine"
)

// Patterns returns the vLLM messages about KV cache sizing and admission
// that explain recognises, most specific first (docs/vllm.md#memory-budget).
// Each pattern's advice names the knob as a kvcfg request key.
func Patterns() []engine.Pattern {
	return []engine.Pattern{
		engine.NewPattern(engineName, "max_seq_len_too_long", engine.Fatal, `To serve at least one request with the models?'?s'? max seq len \(`+engine.Number+`\),?\s*\(?`+engine.Number+` GiB KV cache is needed, which is larger than the available KV cache memory \(`+engine.Number+` GiB\)\.?(?:\s*Based on the available memory, the estimated maximum model length is `+engine.Number+`)?`,
			[]string{"max_model_len", "needed_gib", "available_gib", "estimated_max_model_len"}, adviseMaxSeqLenTooLong).WithLaunch(map[string]string{"max_model_len": "max_model_len", "available_gib": "kv_cache_memory"}),
		engine.NewPattern(engineName, "free_memory_below_utilization", engine.Fatal, `Free memory on device(?: [^\s(]+)? \(`+engine.Number+`(?:-`+engine.Number+`)?/`+engine.Number+` GiB\) on startup is less than desired GPU memory utilization \(`+engine.Number+`, `+engine.Number+` GiB\)`,
			[]string{"free_gib", "free_gib_max", "total_gib", "gpu_memory_utilization", "requested_gib"}, adviseFreeMemoryBelowUtilization).WithLaunch(map[string]string{"gpu_memory_utilization": "gpu_memory_utilization", "total_gib": "gpu_memory"}),
		engine.NewPattern(engineName, "no_cache_blocks", engine.Fatal, "No available memory for the cache blocks",
			nil, adviseNoCacheBlocks),
		engine.NewPattern(engineName, "kv_smaller_than_max_seq_len", engine.Fatal, `The model'?s max seq len \(`+engine.Number+`\) is larger than the maximum number of tokens that can be stored in KV cache \(`+engine.Number+`\)`,
			[]string{"max_model_len", "kv_tokens"}, adviseKVSmallerThanMaxSeqLen).WithLaunch(map[string]string{"max_model_len": "max_model_len", "kv_tokens": engine.KVCacheTokens}),
		engine.NewPattern(engineName, "max_model_len_too_long", engine.Fatal, `User-specified max_model_len \(`+engine.Number+`\) is greater than the derived max_model_len \(`+engine.Number,
			[]string{"max_model_len", "derived"}, adviseMaxModelLenTooLong).WithLaunch(map[string]string{"max_model_len": "max_model_len"}),
		engine.NewPattern(engineName, "auto_fit_failed", engine.Fatal, `Cannot auto-fit max_model_len`,
			nil, adviseAutoFitFailed),
	}
}

// adviseMaxSeqLenTooLong reads vLLM's max_seq_len_too_long message.
// See docs/vllm.md#memory-budget.
func adviseMaxSeqLenTooLong(n map[string]float64, s []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("vLLM refuses to start unless one request of max_model_len (%.0f tokens) fits in the KV cache: it needs %.2f GiB, the budget left under --gpu-memory-utilization after weights, activations and graphs is %.2f GiB.", n["max_model_len"], n["needed_gib"], n["available_gib"])
	a.Knob = "max_model_len"
	if s[3] != "" {
		a.Value = fmt.Sprintf("%.0f", n["estimated_max_model_len"])
	} else if n["needed_gib"] > 0 {
		a.Value = fmt.Sprintf("%.0f", math.Floor(n["max_model_len"]*n["available_gib"]/n["needed_gib"]))
	}
	a.Text = fmt.Sprintf("Set --max-model-len %s or less, or give the KV cache %.2f GiB more per GPU: raise --gpu-memory-utilization by %.2f GiB ÷ the GPU's total memory (or shard over more GPUs, or use --kv-cache-dtype fp8).", a.Value, n["needed_gib"]-n["available_gib"], n["needed_gib"]-n["available_gib"])
	a.Alternatives = []string{"--gpu-memory-utilization", "--kv-cache-dtype fp8", "--tensor-parallel-size", "--max-model-len -1 (auto-fit)"}
	return a
}

// adviseFreeMemoryBelowUtilization reads vLLM's free_memory_below_utilization message.
func adviseFreeMemoryBelowUtilization(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	free, total := n["free_gib"], n["total_gib"]
	a.Meaning = fmt.Sprintf("--gpu-memory-utilization is a share of the GPU's total memory: %.2f × %.2f GiB = %.2f GiB, but only %.2f GiB was free at startup (another process, or a previous engine still releasing memory).", n["gpu_memory_utilization"], total, n["requested_gib"], free)
	a.Knob = "gpu_memory_utilization"
	if total > 0 {
		a.Value = fmt.Sprintf("%.2f", math.Floor(free/total*100)/100)
	}
	a.Text = fmt.Sprintf("Lower --gpu-memory-utilization to %s or less (the KV cache shrinks by the same share), or free the GPU: stop the other process and retry.", a.Value)
	a.Alternatives = []string{"stop other GPU processes (nvidia-smi)", "--kv-cache-memory-bytes"}
	return a
}

// adviseNoCacheBlocks reads vLLM's no_cache_blocks message.
func adviseNoCacheBlocks(_ map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "Weights, activation peak, non-torch memory and CUDA graphs already use all of total × gpu_memory_utilization: the KV budget is zero or negative."
	a.Knob = "gpu_memory_utilization"
	a.Text = "Raise --gpu-memory-utilization, shard over more GPUs (--tensor-parallel-size), lower --max-num-batched-tokens (smaller activation peak) or use a quantized checkpoint."
	a.Alternatives = []string{"--tensor-parallel-size", "--max-num-batched-tokens", "--enforce-eager (no CUDA graphs)"}
	return a
}

// adviseKVSmallerThanMaxSeqLen reads vLLM's kv_smaller_than_max_seq_len message.
func adviseKVSmallerThanMaxSeqLen(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("The KV cache holds %.0f tokens, fewer than one request of max_model_len %.0f.", n["kv_tokens"], n["max_model_len"])
	a.Knob = "max_model_len"
	a.Value = fmt.Sprintf("%.0f", n["kv_tokens"])
	a.Text = fmt.Sprintf("Set --max-model-len %s or less, or raise --gpu-memory-utilization.", a.Value)
	a.Alternatives = []string{"--gpu-memory-utilization", "--kv-cache-dtype fp8"}
	return a
}

// adviseMaxModelLenTooLong reads vLLM's max_model_len_too_long message.
func adviseMaxModelLenTooLong(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("The model's config allows %.0f tokens; %.0f is longer.", n["derived"], n["max_model_len"])
	a.Knob = "max_model_len"
	a.Value = fmt.Sprintf("%.0f", n["derived"])
	a.Text = fmt.Sprintf("Use --max-model-len %s or less, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 if the model really extrapolates.", a.Value)
	a.Alternatives = []string{"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"}
	return a
}

// adviseAutoFitFailed reads vLLM's auto_fit_failed message.
func adviseAutoFitFailed(_ map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "With --max-model-len -1 vLLM searches the longest context that fits; not even one token's KV fits in the budget."
	a.Knob = "gpu_memory_utilization"
	a.Text = "Raise --gpu-memory-utilization or shard over more GPUs (--tensor-parallel-size)."
	a.Alternatives = []string{"--tensor-parallel-size"}
	return a
}
