package trtllm_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/model"
)

func kvOf(t *testing.T, name string, s *model.Spec) trtllm.CacheDType {
	t.Helper()
	kv, _, err := trtllm.ResolveKVDType(name, s, trtllm.Latest)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// The spec's worked examples A, B, C and E, and D's stage layers: both cost
// functions by hand.
func TestWorkedExampleCosts(t *testing.T) {
	tests := []struct {
		name       string
		config     string
		kv         string
		tp         int
		layers     int
		est, alloc int64
	}{
		// A: 2 · 36 layers · 8 heads · 64 · 2 B; every layer full.
		{"A gpt-oss-120b auto", "openai__gpt-oss-120b", "auto", 1, 36, 73728, 73728},
		// B: (512 + 64) · 61 · 1 B on every rank, not split by TP.
		{"B Kimi-K2 MLA fp8 TP8", "moonshotai__Kimi-K2-Instruct", "fp8", 8, 61, 35136, 35136},
		{"B Kimi-K2 MLA bf16 TP8", "moonshotai__Kimi-K2-Instruct", "auto", 8, 61, 70272, 70272},
		// C: head = 128 · 8 // 2 = 512; E = 2 · 32 · 512.
		{"C Llama-3.1-8B fp8 TP2", "meta-llama__Llama-3.1-8B-Instruct", "fp8", 2, 32, 32768, 32768},
		// C: TP16 estimates 128 · 8 // 16 = 64 (half a head), allocates ceil(8/16) = 1 head.
		{"C Llama-3.1-8B fp8 TP16", "meta-llama__Llama-3.1-8B-Instruct", "fp8", 16, 32, 2 * 32 * 64, 2 * 32 * 128},
		// D: the first stage of 61 layers over PP 2 holds 31: 576 · 31 · 2 B.
		{"D DeepSeek-V3 bf16 stage 0", "deepseek-ai__DeepSeek-V3", "auto", 8, 31, 35712, 35712},
		// E: E = 2 · 36 · 8 · 128 = 73,728 → 36,864 + 4,608.
		{"E Qwen3-8B nvfp4", "Qwen__Qwen3-8B", "nvfp4", 1, 36, 41472, 41472},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load(t, tt.config)
			kv := kvOf(t, tt.kv, s)
			if got := trtllm.EstimateBytesPerToken(s, kv, tt.tp, false, tt.layers); got != tt.est {
				t.Errorf("estimate = %d, want %d", got, tt.est)
			}
			got, err := trtllm.AllocationBytesPerToken(s, kv, tt.tp, false, tt.layers)
			if err != nil || got != tt.alloc {
				t.Errorf("allocation = %d, %v, want %d", got, err, tt.alloc)
			}
		})
	}
}

// Attention DP keeps every KV head on every rank.
func TestAttentionDPCosts(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	kv := kvOf(t, "auto", s)
	if got := trtllm.EstimateBytesPerToken(s, kv, 8, true, 32); got != 131072 {
		t.Errorf("estimate with attention DP = %d, want 131072", got)
	}
	if got, _ := trtllm.AllocationBytesPerToken(s, kv, 8, true, 32); got != 131072 {
		t.Errorf("allocation with attention DP = %d, want 131072", got)
	}
}

func TestStageLayers(t *testing.T) {
	tests := []struct {
		n, pp int
		want  []int
	}{
		{61, 2, []int{31, 30}},
		{10, 4, []int{3, 3, 2, 2}},
		{36, 1, []int{36}},
		{4, 4, []int{1, 1, 1, 1}},
		{3, 4, nil},
		{0, 1, nil},
		{8, 0, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, trtllm.StageLayers(tt.n, tt.pp)); diff != "" {
			t.Errorf("StageLayers(%d, %d) mismatch (-want +got):\n%s", tt.n, tt.pp, diff)
		}
	}
}

// NVFP4 needs the values per token to be a multiple of 16.
func TestNVFP4Divisibility(t *testing.T) {
	s := &model.Spec{Name: "tiny", NumLayers: 1, NumAttentionHeads: 1, NumKVHeads: 1, HeadDim: 4, ContextLength: 64, ModelDType: dtype.BFloat16}
	kv := kvOf(t, "nvfp4", s)
	_, err := trtllm.AllocationBytesPerToken(s, kv, 1, false, 1)
	if !errors.Is(err, trtllm.ErrRefused) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	var re *engine.Refusal
	if !errors.As(err, &re) || re.Message != "NVFP4 cache size must be divisible by quant vector size" || re.Flag != "kv_cache_dtype" {
		t.Errorf("refusal = %+v", re)
	}
}

// Issue 29 item 3: the dry run's activation from the model's shapes.
// gpt-oss-120b at 8192 tokens on one GPU: 8192 × (4 × (2 × 2880 + 2 ×
// 2880) + 4 × 2880) × 2 bytes = 0.88 GiB; its 1.1.0rc3 log measured 0.85
// GiB. Llama-3.1-8B: 8192 × (3 × 14336 + 4 × 4096) × 2 at TP 1, the MLP
// halved at TP 2.
func TestDryRunActivation(t *testing.T) {
	for _, tt := range []struct {
		name string
		tp   int
		want int64
	}{
		{"openai__gpt-oss-120b", 1, 8192 * (4*(2*2880+2*2880) + 4*2880) * 2},
		{"meta-llama__Llama-3.1-8B-Instruct", 1, 8192 * (3*14336 + 4*4096) * 2},
		{"meta-llama__Llama-3.1-8B-Instruct", 2, 8192 * (3*14336/2 + 4*4096) * 2},
	} {
		got := trtllm.Estimate(load(t, tt.name), tt.tp, 1, 8192, false).ActivationBytes
		if got != tt.want {
			t.Errorf("%s tp %d: %d, want %d", tt.name, tt.tp, got, tt.want)
		}
	}
}
