package trtllm_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// One case per family over real config.json files: both costs by hand, and a
// full plan on every profile must hold its invariants.
func TestFamilies(t *testing.T) {
	tests := []struct {
		name   string
		config string
		in     trtllm.Input
		est    int64 // estimate B/token, first stage (latest)
		cell   int64 // allocation B/token per GPU
		err    error
	}{
		// 2 · 32 · 8 · 128 · 2 B.
		{"Llama GQA bf16", "meta-llama__Llama-3.1-8B-Instruct", trtllm.Input{}, 131072, 131072, nil},
		// 128 · 8 // 4 = 256 per layer either way: 2 · 80 · 256 · 2.
		{"Llama-70B TP4", "meta-llama__Llama-3.1-70B-Instruct", trtllm.Input{TPSize: 4}, 81920, 81920, nil},
		// estimate 128 · 8 // 16 = 64, allocation 1 whole head of 128: 2 · 80 · {64, 128}.
		{"Llama-70B fp8 TP16", "meta-llama__Llama-3.1-70B-Instruct", trtllm.Input{TPSize: 16, KVCacheDType: "fp8"}, 10240, 20480, nil},
		// 2 · 36 · 8 · 128 · 2 B.
		{"Qwen3 bf16", "Qwen__Qwen3-8B", trtllm.Input{}, 147456, 147456, nil},
		{"Qwen3 nvfp4", "Qwen__Qwen3-8B", trtllm.Input{KVCacheDType: "nvfp4"}, 41472, 41472, nil},
		// 2 · 32 · (128 · 8 // 2) · 2 B.
		{"Mistral TP2", "mistralai__Mistral-7B-Instruct-v0.3", trtllm.Input{TPSize: 2}, 65536, 65536, nil},
		// 10 KV heads on 4 ranks: estimate 128 · 10 // 4 = 320, allocation ceil(10/4) = 3 heads.
		{"phi-4 TP4 uneven heads", "microsoft__phi-4", trtllm.Input{TPSize: 4}, 2 * 40 * 320 * 2, 2 * 40 * 3 * 128 * 2, nil},
		// MQA, 71 query heads: the attention module asserts num_heads %
		// tp_size == 0, so TP 2 is refused (TP 1 and 71 split them).
		{"falcon 71 heads TP2", "tiiuae__falcon-7b", trtllm.Input{TPSize: 2}, 0, 0, trtllm.ErrRefused},
		// MQA: one KV head of 64, TP 1: 2 · 32 · 64 · 2.
		{"falcon MQA", "tiiuae__falcon-7b", trtllm.Input{TPSize: 1}, 2 * 32 * 64 * 2, 2 * 32 * 64 * 2, nil},
		// Sliding layers are full attention to the default manager: 2 · 42 · 8 · 256 · 2.
		{"Gemma-2 sliding as full", "google__gemma-2-9b-it", trtllm.Input{}, 344064, 344064, nil},
		{"gpt-oss MXFP4 weights, bf16 cache", "openai__gpt-oss-120b", trtllm.Input{}, 73728, 73728, nil},
		// MLA: (512 + 64) · 61 · 2, whatever the TP.
		{"DeepSeek-V3 MLA TP8", "deepseek-ai__DeepSeek-V3", trtllm.Input{TPSize: 8}, 70272, 70272, nil},
		{"Kimi-K2 MLA fp8 TP8", "moonshotai__Kimi-K2-Instruct", trtllm.Input{TPSize: 8, KVCacheDType: "fp8"}, 35136, 35136, nil},
		// One MTP layer on top of 92: 2 · 93 · (128 · 8 // 8) · 2.
		{"GLM-4.5 MTP TP8", "zai-org__GLM-4.5", trtllm.Input{TPSize: 8, SpeculativeMode: trtllm.SpecMTP}, 2 * 93 * 128 * 2, 2 * 93 * 128 * 2, nil},
		{"GLM-4.5 without MTP", "zai-org__GLM-4.5", trtllm.Input{TPSize: 8}, 2 * 92 * 128 * 2, 2 * 92 * 128 * 2, nil},
		// An fp8 checkpoint without kv_cache_quant_algo keeps a bf16 cache: 2 · 62 · 256 · 2.
		{"MiniMax fp8 weights TP4", "MiniMaxAI__MiniMax-M2.7", trtllm.Input{TPSize: 4}, 63488, 63488, nil},
		// Attention DP: every rank holds all 8 heads.
		{"Qwen3 attention DP", "Qwen__Qwen3-8B", trtllm.Input{TPSize: 4, EnableAttentionDP: true}, 147456, 147456, nil},
		{"Qwen3-Next hybrid", "Qwen__Qwen3-Next-80B-A3B-Instruct", trtllm.Input{}, 0, 0, trtllm.ErrUnsupportedModel},
		{"Nemotron-H hybrid", "nvidia__Nemotron-H-56B-Base-8K", trtllm.Input{}, 0, 0, trtllm.ErrUnsupportedModel},
		{"DeepSeek-V3.2 sparse attention", "deepseek-ai__DeepSeek-V3.2", trtllm.Input{}, 0, 0, trtllm.ErrUnsupportedModel},
		{"Mamba2", "AntonV__mamba2-130m-hf", trtllm.Input{}, 0, 0, trtllm.ErrUnsupportedModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load(t, tt.config)
			for _, v := range []string{"1.0", "1.1", "latest"} {
				in := tt.in
				in.Version, in.KVCacheMemory = v, 20*gib
				res, err := trtllm.Plan(s, in)
				if tt.err != nil {
					if !errors.Is(err, tt.err) {
						t.Fatalf("%s: err = %v, want %v", v, err, tt.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				if res.CellSizeBytes != tt.cell {
					t.Errorf("%s: cell_size_bytes = %d, want %d", v, res.CellSizeBytes, tt.cell)
				}
				if v == "latest" && res.EstimateBytesPerToken != tt.est {
					t.Errorf("estimate = %d, want %d", res.EstimateBytesPerToken, tt.est)
				}
				checkInvariants(t, v, res)
			}
			// Modelled on a large GPU as well.
			in := tt.in
			in.GPUMemoryBytes = 183359 << 20
			if in.TPSize == 0 {
				in.TPSize = 8
			}
			res, err := trtllm.Plan(s, in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("modelled: err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("modelled: %v", err)
			}
			checkInvariants(t, "modelled", res)
		})
	}
}

func checkInvariants(t *testing.T, label string, res *trtllm.Result) {
	t.Helper()
	if res.NumBlocks <= 0 || res.MaxTokens != res.NumBlocks*int64(res.TokensPerBlock) {
		t.Errorf("%s: blocks %d, tokens %d", label, res.NumBlocks, res.MaxTokens)
	}
	if len(res.Windows) == 0 && res.KVCacheBytes != res.MaxTokens*res.CellSizeBytes {
		t.Errorf("%s: kv_cache_bytes %d != %d × %d", label, res.KVCacheBytes, res.MaxTokens, res.CellSizeBytes)
	}
	if res.MaxSeqLen <= 0 || res.MaxSeqLen > res.RequestedMaxSeqLen || int64(res.MaxSeqLen) > res.MaxTokens {
		t.Errorf("%s: max_seq_len %d (requested %d, pool %d)", label, res.MaxSeqLen, res.RequestedMaxSeqLen, res.MaxTokens)
	}
	if c := res.MaxConcurrency(res.MaxSeqLen); c < 1 {
		t.Errorf("%s: MaxConcurrency(max_seq_len) = %v < 1", label, c)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("%s: %v", label, err)
	}
	if len(res.LogLines) == 0 || res.Error != "" {
		t.Errorf("%s: lines %d, error %q", label, len(res.LogLines), res.Error)
	}
}
