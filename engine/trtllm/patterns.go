package trtllm

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// pattern is one TensorRT-LLM error or warning that explain should
// recognise: what it means, the knob (LLM API / YAML key as trtllm-serve
// users spell it) that changes it, and that knob's trtllm-serve flag when
// it has one (the others go in --extra_llm_api_options YAML). Its groups
// capture the numbers the line prints, named value1, value2, ...
func pattern(name, expr string, sev engine.Severity, meaning, knob, flag string) engine.Pattern {
	re := regexp.MustCompile(expr)
	groups := make([]string, re.NumSubexp())
	for i := range groups {
		groups[i] = fmt.Sprintf("value%d", i+1)
	}
	a := advice(sev, meaning, knob, flag)
	return engine.Pattern{Engine: engineName, Name: name, Regexp: re, Expr: expr, Groups: groups, Severity: sev,
		Advise: func(map[string]float64, []string) engine.Advice { return a }}
}

// advice is a pattern's advice: its meaning, the knob as its flag or its
// YAML path (kv_cache_config.<key> for the KV cache's own keys), and how
// to plan with it.
func advice(sev engine.Severity, meaning, knob, flag string) engine.Advice {
	a := engine.Advice{Meaning: meaning, Knob: knob, Flag: flag, Text: meaning}
	if flag == "" && knob != "" {
		a.Flag = "kv_cache_config." + knob
		if !strings.HasPrefix(knob, "kv_cache") && knob != "free_gpu_memory_fraction" && knob != "max_tokens" {
			a.Flag = knob
		}
	}
	if sev == engine.Warning {
		a.Text = "A warning: the launch goes on. " + meaning
	}
	if knob != "" {
		a.Text += fmt.Sprintf(" Knob: %s (kvcfg plan --engine trtllm --%s).", knob, strings.ReplaceAll(knob, "_", "-"))
	}
	return a
}

// Patterns returns the TensorRT-LLM messages about KV cache sizing and
// admission that explain should recognise, most specific first.
func Patterns() []engine.Pattern {
	return append(poolPatterns(), requestPatterns()...)
}

// poolPatterns are the messages about the KV pool's size.
func poolPatterns() []engine.Pattern {
	return []engine.Pattern{

		pattern("both_fraction_and_max_tokens",
			`Both free_?[gG]pu_?[mM]emory_?[fF]raction .*and max_?[tT]okens .*are set \(to ([0-9.]+) and ([0-9.]+)`,
			engine.Warning,
			"Harmless on the PyTorch backend: its own memory estimate sets max_tokens, and the final pool takes the smaller of that estimate and free_gpu_memory_fraction × free memory ÷ bytes per token. The second number is the token count the estimate allowed. Engine builds print it only when max_tokens was set by hand.",
			"max_tokens", "").WithLaunch(map[string]string{"value1": "free_gpu_memory_fraction"}),
		pattern("window_exceeds_upper_bound",
			`Attention window size (\d+) exceeds upper bound (\d+) for available blocks`,
			engine.Warning,
			"The KV pool cannot hold one sequence of the attention window, so TensorRT-LLM lowers the window (and max_seq_len) to what the pool holds instead of failing; longer requests are rejected later.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("adjusted_window",
			`Adjusted (?:max_attention_window_vec to \[[0-9, ]+\]|window size (\d+) to (\d+) in blocks_per_window)`,
			engine.Warning,
			"Follows \"Attention window size … exceeds upper bound\": the per-layer windows (and the pool's window key) were lowered to what the KV pool holds.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("adjusted_max_seq_len",
			`Adjusted max_seq_len to (\d+)`,
			engine.Warning,
			"max_seq_len was lowered to the number of tokens the KV pool holds; a prompt plus output longer than this is rejected. Give the cache more memory (a higher fraction, an fp8 cache, more GPUs) or accept the shorter limit.",
			"max_seq_len", "--max_seq_len"),
		pattern("engine_window_reduced",
			`maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache\. they are reduced to (\d+)`,
			engine.Warning,
			"Engine build: the KV pool cannot hold one max_seq_len sequence, so the executor lowers maxAttentionWindow and max_seq_len to what it holds.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("impossible_to_fit",
			`Impossib(?:l)?e to fit in any sequence in kvCache`,
			engine.Fatal,
			"The KV pool has no room for even one sequence (zero blocks after the estimate): the weights, activations and CUDA graphs leave nothing for the cache.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("engine_pool_too_small",
			`maxTokensInPagedKvCache \((\d+)\) must be large enough to process at least 1 sequence to completion`,
			engine.Fatal,
			"Engine build: the KV pool is smaller than one sequence of max_seq_len × beam width.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("fraction_not_below_one",
			`Invalid freeMemFraction, freeMemFraction \(?([0-9.]+)\)? must be smaller than 1\.0`,
			engine.Fatal,
			"free_gpu_memory_fraction must be below 1.0; it is the share of the memory left after weights, activations and CUDA graphs that goes to the KV cache.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction").WithLaunch(map[string]string{"value1": "free_gpu_memory_fraction"}),
	}
}

// requestPatterns are the messages about requests, dtypes and layouts.
func requestPatterns() []engine.Pattern {
	return []engine.Pattern{
		pattern("prompt_over_max_num_tokens",
			`prompt length \(?([0-9.]+)\)?,? (?:query length \(\d+\) )?should not exceed max_num_tokens \(?(\d+)\)?`,
			engine.Fatal,
			"Without chunked prefill the whole prompt must fit in one forward step of max_num_tokens tokens (8192 by default), whatever the KV cache size.",
			"max_num_tokens", "--max_num_tokens").WithLaunch(map[string]string{"value2": "max_num_tokens"}),
		pattern("prompt_over_max_seq_len",
			"`default_max_tokens` \\((-?\\d+)\\) must be greater than 0",
			engine.Fatal,
			"The prompt fills max_seq_len (possibly lowered to what the KV pool holds), so no output token is left.",
			"max_seq_len", "--max_seq_len"),
		pattern("engine_prompt_over_max_seq_len",
			`The sum of prompt length \(([0-9.]+)\) and query length \((\d+)\) max_tokens \((\d+)\) should not exceed max_seq_len \((\d+)\)`,
			engine.Fatal,
			"Engine build: prompt plus requested output is longer than the engine's max_seq_len.",
			"max_seq_len", "--max_seq_len").WithLaunch(map[string]string{"value4": "max_seq_len"}),
		pattern("invalid_kv_cache_dtype",
			`Overriding KV cache quantization with an invalid type`,
			engine.Fatal,
			"kv_cache_config.dtype accepts only auto, fp8 and nvfp4 on the PyTorch backend (auto follows the checkpoint's kv_cache_quant_algo, else the model dtype).",
			"kv_cache_dtype", ""),
		pattern("kv_cache_override_mismatch",
			`Attempting to override KV cache quantization "(\w+)"`,
			engine.Fatal,
			"Older PyTorch backends refuse a kv_cache_dtype that differs from the checkpoint's pre-quantized KV cache; newer ones warn and override.",
			"kv_cache_dtype", ""),
		pattern("kv_cache_override_warning",
			`Overriding checkpoint KV cache quantization "(\w+)"`,
			engine.Warning,
			"The explicit kv_cache_dtype replaces the checkpoint's KV quantization; the cache is sized with the requested type.",
			"kv_cache_dtype", ""),
		pattern("pp_larger_than_layers",
			`pp size cannot be larger than num_hidden_layers`,
			engine.Fatal,
			"Each pipeline stage needs at least one layer.",
			"pp_size", "--pp_size"),
		pattern("nvfp4_divisibility",
			`NVFP4 cache size must be divisible by quant vector size`,
			engine.Fatal,
			"An NVFP4 KV cache stores one scale per 16 values; the values per token on this rank are not a multiple of 16.",
			"kv_cache_dtype", ""),
	}
}
