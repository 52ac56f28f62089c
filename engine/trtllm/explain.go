package trtllm

import "regexp"

// Severity says whether a log line stops the launch (or the request).
type Severity string

// The severities.
const (
	// Warning lines are printed and the launch goes on.
	Warning Severity = "warning"
	// Fatal lines are errors: the launch or the request fails.
	Fatal Severity = "error"
)

// Pattern is one TensorRT-LLM error or warning that explain should
// recognise: a regular expression over a log line, what it means, and the
// knob (LLM API / YAML key as trtllm-serve users spell it) that changes it.
type Pattern struct {
	// Name is a short stable identifier.
	Name string `json:"name"`
	// Regexp matches the line; its groups capture the numbers it prints.
	Regexp *regexp.Regexp `json:"-"`
	// Expr is Regexp's source.
	Expr string `json:"regexp"`
	// Severity is Warning or Fatal.
	Severity Severity `json:"severity"`
	// Meaning explains the line.
	Meaning string `json:"meaning"`
	// Knob is the setting to change ("" when none helps).
	Knob string `json:"knob,omitempty"`
	// Flag is the trtllm-serve command-line flag for Knob, when it has one
	// (the others go in --extra_llm_api_options YAML).
	Flag string `json:"flag,omitempty"`
}

func pattern(name, expr string, sev Severity, meaning, knob, flag string) Pattern {
	return Pattern{Name: name, Regexp: regexp.MustCompile(expr), Expr: expr, Severity: sev, Meaning: meaning, Knob: knob, Flag: flag}
}

// Patterns returns the TensorRT-LLM messages about KV cache sizing and
// admission that explain should recognise, most specific first.
func Patterns() []Pattern {
	return []Pattern{
		pattern("both_fraction_and_max_tokens",
			`Both free_?[gG]pu_?[mM]emory_?[fF]raction .*and max_?[tT]okens .*are set \(to ([0-9.]+) and ([0-9.]+)`,
			Warning,
			"Harmless on the PyTorch backend: its own memory estimate sets max_tokens, and the final pool takes the smaller of that estimate and free_gpu_memory_fraction × free memory ÷ bytes per token. The second number is the token count the estimate allowed. Engine builds print it only when max_tokens was set by hand.",
			"max_tokens", ""),
		pattern("window_exceeds_upper_bound",
			`Attention window size (\d+) exceeds upper bound (\d+) for available blocks`,
			Warning,
			"The KV pool cannot hold one sequence of the attention window, so TensorRT-LLM lowers the window (and max_seq_len) to what the pool holds instead of failing; longer requests are rejected later.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("adjusted_window",
			`Adjusted (?:max_attention_window_vec to \[[0-9, ]+\]|window size (\d+) to (\d+) in blocks_per_window)`,
			Warning,
			"Follows \"Attention window size … exceeds upper bound\": the per-layer windows (and the pool's window key) were lowered to what the KV pool holds.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("adjusted_max_seq_len",
			`Adjusted max_seq_len to (\d+)`,
			Warning,
			"max_seq_len was lowered to the number of tokens the KV pool holds; a prompt plus output longer than this is rejected. Give the cache more memory (a higher fraction, an fp8 cache, more GPUs) or accept the shorter limit.",
			"max_seq_len", "--max_seq_len"),
		pattern("engine_window_reduced",
			`maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache\. they are reduced to (\d+)`,
			Warning,
			"Engine build: the KV pool cannot hold one max_seq_len sequence, so the executor lowers maxAttentionWindow and max_seq_len to what it holds.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("impossible_to_fit",
			`Impossib(?:l)?e to fit in any sequence in kvCache`,
			Fatal,
			"The KV pool has no room for even one sequence (zero blocks after the estimate): the weights, activations and CUDA graphs leave nothing for the cache.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("engine_pool_too_small",
			`maxTokensInPagedKvCache \((\d+)\) must be large enough to process at least 1 sequence to completion`,
			Fatal,
			"Engine build: the KV pool is smaller than one sequence of max_seq_len × beam width.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("fraction_not_below_one",
			`Invalid freeMemFraction, freeMemFraction \(?([0-9.]+)\)? must be smaller than 1\.0`,
			Fatal,
			"free_gpu_memory_fraction must be below 1.0; it is the share of the memory left after weights, activations and CUDA graphs that goes to the KV cache.",
			"free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"),
		pattern("prompt_over_max_num_tokens",
			`prompt length \(?([0-9.]+)\)?,? (?:query length \(\d+\) )?should not exceed max_num_tokens \(?(\d+)\)?`,
			Fatal,
			"Without chunked prefill the whole prompt must fit in one forward step of max_num_tokens tokens (8192 by default), whatever the KV cache size.",
			"max_num_tokens", "--max_num_tokens"),
		pattern("prompt_over_max_seq_len",
			"`default_max_tokens` \\((-?\\d+)\\) must be greater than 0",
			Fatal,
			"The prompt fills max_seq_len (possibly lowered to what the KV pool holds), so no output token is left.",
			"max_seq_len", "--max_seq_len"),
		pattern("engine_prompt_over_max_seq_len",
			`The sum of prompt length \(([0-9.]+)\) and query length \((\d+)\) max_tokens \((\d+)\) should not exceed max_seq_len \((\d+)\)`,
			Fatal,
			"Engine build: prompt plus requested output is longer than the engine's max_seq_len.",
			"max_seq_len", "--max_seq_len"),
		pattern("invalid_kv_cache_dtype",
			`Overriding KV cache quantization with an invalid type`,
			Fatal,
			"kv_cache_config.dtype accepts only auto, fp8 and nvfp4 on the PyTorch backend (auto follows the checkpoint's kv_cache_quant_algo, else the model dtype).",
			"kv_cache_dtype", ""),
		pattern("kv_cache_override_mismatch",
			`Attempting to override KV cache quantization "(\w+)"`,
			Fatal,
			"Older PyTorch backends refuse a kv_cache_dtype that differs from the checkpoint's pre-quantized KV cache; newer ones warn and override.",
			"kv_cache_dtype", ""),
		pattern("kv_cache_override_warning",
			`Overriding checkpoint KV cache quantization "(\w+)"`,
			Warning,
			"The explicit kv_cache_dtype replaces the checkpoint's KV quantization; the cache is sized with the requested type.",
			"kv_cache_dtype", ""),
		pattern("pp_larger_than_layers",
			`pp size cannot be larger than num_hidden_layers`,
			Fatal,
			"Each pipeline stage needs at least one layer.",
			"pp_size", "--pp_size"),
		pattern("nvfp4_divisibility",
			`NVFP4 cache size must be divisible by quant vector size`,
			Fatal,
			"An NVFP4 KV cache stores one scale per 16 values; the values per token on this rank are not a multiple of 16.",
			"kv_cache_dtype", ""),
	}
}
