package trtllm_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// Every pattern recognises a real TensorRT-LLM line, and nothing else
// matches an unrelated one.
func TestPatterns(t *testing.T) {
	lines := map[string]string{
		"both_fraction_and_max_tokens":   "[12/20/2025-04:21:51] [TRT-LLM] [W] Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and 86711, respectively). The smaller value will be used.",
		"window_exceeds_upper_bound":     "[TRT-LLM] [W] Attention window size 131072 exceeds upper bound 86720 for available blocks. Reducing to 86720.",
		"adjusted_window":                "[TRT-LLM] [W] Adjusted window size 131072 to 86720 in blocks_per_window",
		"adjusted_max_seq_len":           "[TRT-LLM] [W] Adjusted max_seq_len to 86720",
		"engine_window_reduced":          "[TensorRT-LLM][WARNING] maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache. they are reduced to 5185",
		"impossible_to_fit":              "AssertionError: Impossible to fit in any sequence in kvCache",
		"engine_pool_too_small":          "[TensorRT-LLM][ERROR] Assertion failed: maxTokensInPagedKvCache (0) must be large enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (1) * tokensPerBlock (64) * maxBlocksPerSeq (32))",
		"fraction_not_below_one":         "AssertionError: Invalid freeMemFraction, freeMemFraction 1.0 must be smaller than 1.0",
		"prompt_over_max_num_tokens":     "RequestError: The sum of prompt length (9000.0), query length (0) should not exceed max_num_tokens (8192)",
		"prompt_over_max_seq_len":        "ValueError: `default_max_tokens` (-96) must be greater than 0, `default_max_tokens` (-96) = max_seq_len (7904) - `splited_prompt_len` (8000) - `query_token_len` (0)",
		"engine_prompt_over_max_seq_len": "ValueError: The sum of prompt length (5000.0) and query length (0) max_tokens (100) should not exceed max_seq_len (4096)",
		"invalid_kv_cache_dtype":         `ValueError: Overriding KV cache quantization with an invalid type "llm_args.KvCacheConfig.dtype="int8" Accepted types are "('fp8', 'nvfp4', 'auto')".`,
		"kv_cache_override_mismatch":     `RuntimeError: Attempting to override KV cache quantization "FP8" with PyTorchConfig.kv_cache_dtype="nvfp4".`,
		"kv_cache_override_warning":      `[TRT-LLM] [W] Overriding checkpoint KV cache quantization "FP8" with llm_args.KvCacheConfig.dtype="nvfp4".`,
		"pp_larger_than_layers":          "AssertionError: pp size cannot be larger than num_hidden_layers",
		"nvfp4_divisibility":             "AssertionError: NVFP4 cache size must be divisible by quant vector size",
	}
	seen := map[string]bool{}
	for _, p := range trtllm.Patterns() {
		if seen[p.Name] {
			t.Errorf("duplicate pattern %s", p.Name)
		}
		seen[p.Name] = true
		line, ok := lines[p.Name]
		if !ok {
			t.Errorf("pattern %s has no test line", p.Name)
			continue
		}
		if !p.Regexp.MatchString(line) {
			t.Errorf("%s does not match %q", p.Name, line)
		}
		if p.Expr != p.Regexp.String() || p.Engine != "trtllm" || len(p.Groups) != p.Regexp.NumSubexp() || p.Advise == nil ||
			p.Advise(nil, make([]string, len(p.Groups))).Meaning == "" || (p.Severity != engine.Warning && p.Severity != engine.Fatal) {
			t.Errorf("%s: incomplete pattern %+v", p.Name, p)
		}
		if p.Regexp.MatchString("[TensorRT-LLM][INFO] Number of tokens per block: 32.") {
			t.Errorf("%s matches an unrelated line", p.Name)
		}
	}
	for name := range lines {
		if !seen[name] {
			t.Errorf("test line for unknown pattern %s", name)
		}
	}
	// The engine build's C++ wording of the first warning is recognised too.
	cxx := "[TensorRT-LLM][WARNING] Both freeGpuMemoryFraction (aka kv_cache_free_gpu_mem_fraction) and maxTokens (aka max_tokens_in_paged_kv_cache) are set (to 0.900000 and 4096, respectively). The smaller value will be used."
	if !trtllm.Patterns()[0].Regexp.MatchString(cxx) {
		t.Errorf("C++ wording not matched")
	}
}

// The warnings and refusals Plan produces are all recognised.
func TestPatternsCoverPlanOutput(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	res, err := trtllm.Plan(s, trtllm.Input{Version: "1.1", KVCacheMemory: 5 * gib, PromptLen: 9000})
	if err == nil {
		t.Fatal("expected the max_num_tokens refusal")
	}
	for _, line := range append(res.Warnings, res.Error) {
		ok := false
		for _, p := range trtllm.Patterns() {
			if p.Regexp.MatchString(line) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("no pattern for %q", line)
		}
	}
}
