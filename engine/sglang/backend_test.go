package sglang_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

var mi300x = sglang.Hardware{MemoryMiB: 196288, Platform: "hip", FNUZ: true}

// DeepSeek-R1 (DeepSeek-V3's config) at TP 16 on HIP has 128/16 = 8 KV
// heads per rank, so SGLang picks triton, not aiter, and leaves the
// fraction alone. The real run (fp8_e4m3, 0.9, readings 143.05/101.33 GiB)
// logged 2,659,072 tokens; with the logged readings the formula gives
// 2,659,448 (0.014 % more: the logged readings are TP0's, the engine
// uses the minimum over 16 ranks). Scaling by 0.85 gave 2,069,289.
func TestHIPMLAPicksTritonWithEightHeadsPerRank(t *testing.T) {
	in := sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 16, PP: 1, DP: 1}, Hardware: mi300x,
		Args: sglang.ServerArgs{KVCacheDType: "fp8_e4m3", MemFractionStatic: 0.9}, PostLoadFreeBytes: gibBytes(101.33)}
	c, err := sglang.New(in)
	if err != nil {
		t.Fatal(err)
	}
	if b := c.AttentionBackend(); b != "triton" {
		t.Errorf("backend %q, want triton (8 KV heads per rank)", b)
	}
	if mfs := c.Derived().MemFractionStatic; mfs != 0.9 {
		t.Errorf("mem_fraction_static %v, want 0.9 (triton is never scaled)", mfs)
	}
	res, err := c.Configure(gibBytes(143.05))
	if err != nil {
		t.Fatal(err)
	}
	const logged = 2659072
	if res.MaxTotalNumTokens != 2659448 {
		t.Errorf("tokens %d, want 2,659,448", res.MaxTotalNumTokens)
	}
	if d := math.Abs(float64(res.MaxTotalNumTokens-logged)) / logged; d > 0.0002 {
		t.Errorf("tokens %d are %.4f %% off the logged %d", res.MaxTotalNumTokens, 100*d, logged)
	}
}

// SGLang's default attention backend (_get_default_attn_backend).
func TestDefaultAttentionBackend(t *testing.T) {
	latest, _, _ := sglang.ResolveProfile("latest")
	p053, _, _ := sglang.ResolveProfile("0.5.5")
	p048, _, _ := sglang.ResolveProfile("0.5.0")
	p045, _, _ := sglang.ResolveProfile("0.4.5")
	tests := []struct {
		name string
		p    sglang.Profile
		in   sglang.BackendInput
		want string
	}{
		{"HIP MLA 16 heads/rank", latest, sglang.BackendInput{Platform: "hip", MLA: true, KVHeadsPerRank: 16}, "aiter"},
		{"HIP MLA 128 heads/rank", latest, sglang.BackendInput{Platform: "hip", MLA: true, KVHeadsPerRank: 128}, "aiter"},
		{"HIP MLA 8 heads/rank", latest, sglang.BackendInput{Platform: "hip", MLA: true, KVHeadsPerRank: 8}, "triton"},
		{"HIP MLA 32 heads/rank", latest, sglang.BackendInput{Platform: "hip", MLA: true, KVHeadsPerRank: 32}, "triton"},
		{"HIP MLA 16 heads + spec, newest", latest, sglang.BackendInput{Platform: "hip", MLA: true, KVHeadsPerRank: 16, Speculative: true}, "aiter"},
		{"HIP MLA 16 heads + spec, 0.5.0", p048, sglang.BackendInput{Platform: "hip", MLA: true, KVHeadsPerRank: 16, Speculative: true}, "triton"},
		{"HIP MHA", latest, sglang.BackendInput{Platform: "hip", KVHeadsPerRank: 8}, "aiter"},
		{"HIP MHA 0.4.5", p045, sglang.BackendInput{Platform: "hip", KVHeadsPerRank: 8}, "triton"},
		{"Hopper MHA", latest, sglang.BackendInput{Platform: "cuda", SM: 90}, "fa3"},
		{"Hopper MLA", latest, sglang.BackendInput{Platform: "cuda", SM: 90, MLA: true}, "fa3"},
		{"Blackwell MLA", p053, sglang.BackendInput{Platform: "cuda", SM: 100, MLA: true}, "trtllm_mla"},
		{"Blackwell MLA 0.5.0", p048, sglang.BackendInput{Platform: "cuda", SM: 100, MLA: true}, "flashinfer"},
		{"Blackwell GPT-OSS", p053, sglang.BackendInput{Platform: "cuda", SM: 100, Architecture: "GptOssForCausalLM"}, "trtllm_mha"},
		{"Blackwell Llama 0.5.5", p053, sglang.BackendInput{Platform: "cuda", SM: 100, Architecture: "LlamaForCausalLM"}, "flashinfer"},
		{"Blackwell Llama newest", latest, sglang.BackendInput{Platform: "cuda", SM: 100, Architecture: "LlamaForCausalLM"}, "trtllm_mha"},
		{"Ampere MHA", latest, sglang.BackendInput{Platform: "cuda", SM: 80}, "flashinfer"},
		{"Ampere MLA", latest, sglang.BackendInput{Platform: "cuda", SM: 80, MLA: true}, "triton"},
		{"DSA", latest, sglang.BackendInput{Platform: "cuda", SM: 90, DSA: true, MLA: true}, "nsa"},
	}
	for _, tt := range tests {
		if got := tt.p.DefaultAttentionBackend(tt.in); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The 0.85 scale applies only to aiter with a context above 8192, in
// releases from 0.4.7; it also scales a user-supplied fraction.
func TestAiterScaleOnlyForAiterLongContext(t *testing.T) {
	llama := llama8B()
	short := llama8B()
	short.ContextLength = 8192
	tests := []struct {
		name    string
		in      sglang.Input
		backend string
		want    float64
	}{
		{"DeepSeek TP8: 16 heads/rank → aiter", sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9}}, "aiter", 0.9 * 0.85},
		{"DeepSeek TP16: 8 heads/rank → triton", sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 16, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9}}, "triton", 0.9},
		{"DeepSeek TP8 --attention-backend dcu_mla", sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9, AttentionBackend: "dcu_mla"}}, "dcu_mla", 0.9},
		{"DeepSeek TP8 --attention-backend triton", sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9, AttentionBackend: "triton"}}, "triton", 0.9},
		{"Llama: aiter, 131072 context", sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9}}, "aiter", 0.9 * 0.85},
		{"Llama: --context-length 8192", sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9, ContextLength: 8192}}, "aiter", 0.9},
		{"model context 8192", sglang.Input{Spec: short, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9}}, "aiter", 0.9},
		{"Llama on 0.4.5: triton, no scale", sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9}, Version: "0.4.5"}, "triton", 0.9},
		{"Llama on 0.4.5 --attention-backend aiter: no rule yet", sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9, AttentionBackend: "aiter"}, Version: "0.4.5"}, "aiter", 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Hardware, in.PostLoadFreeBytes = mi300x, gibBytes(100)
			c, err := sglang.New(in)
			if err != nil {
				t.Fatal(err)
			}
			if c.AttentionBackend() != tt.backend || math.Abs(c.Derived().MemFractionStatic-tt.want) > 1e-12 {
				t.Errorf("backend %q mfs %v, want %q %v", c.AttentionBackend(), c.Derived().MemFractionStatic, tt.backend, tt.want)
			}
		})
	}
}

func TestAttentionBackendFlag(t *testing.T) {
	b200 := sglang.Hardware{MemoryMiB: 183359, SM: 100, Platform: "cuda"}
	tests := []struct {
		name string
		hw   sglang.Hardware
		args sglang.ServerArgs
		page int
		err  string // flag of the refusal
	}{
		{"aiter on CUDA", h100, sglang.ServerArgs{AttentionBackend: "aiter"}, 0, "--attention-backend"},
		{"trtllm_mla on Hopper", h100, sglang.ServerArgs{AttentionBackend: "trtllm_mla"}, 0, "--attention-backend"},
		{"unknown", h100, sglang.ServerArgs{AttentionBackend: "magic"}, 0, "--attention-backend"},
		{"flashmla page 64", h100, sglang.ServerArgs{AttentionBackend: "flashmla"}, 64, ""},
		{"cutlass_mla page 128", b200, sglang.ServerArgs{AttentionBackend: "cutlass_mla", PageSize: 16}, 128, ""},
		{"trtllm_mla keeps 32", b200, sglang.ServerArgs{AttentionBackend: "trtllm_mla", PageSize: 32}, 32, ""},
		{"trtllm_mla forces 64", b200, sglang.ServerArgs{PageSize: 1}, 64, ""},
		{"fa3 page 1", h100, sglang.ServerArgs{}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := sglang.New(sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: tt.hw,
				Args: tt.args, PostLoadFreeBytes: gibBytes(60)})
			if tt.err != "" {
				var fe *engine.Refusal
				if !errors.As(err, &fe) || fe.Flag != tt.err || !errors.Is(err, sglang.ErrInvalid) {
					t.Fatalf("err %v, want a %s refusal", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Derived().PageSize; got != tt.page {
				t.Errorf("page size %d, want %d", got, tt.page)
			}
		})
	}
	// trtllm_mha refuses an MLA model and names trtllm_mla.
	_, err := sglang.New(sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: b200,
		Args: sglang.ServerArgs{AttentionBackend: "trtllm_mha"}, PostLoadFreeBytes: gibBytes(60)})
	var fe *engine.Refusal
	if !errors.As(err, &fe) || fe.Value != "trtllm_mla" {
		t.Errorf("trtllm_mha on MLA: %v, want a fix naming trtllm_mla", err)
	}
}

// The float32 rounding of the free-memory readings applies when the
// engine's world (TP × PP) has more than one rank; plain --dp-size starts
// independent workers of TP × PP ranks each.
func TestDistributedReadingsFollowTheEngineWorld(t *testing.T) {
	const pre = 85899345925 // 80 GiB + 5 B: float32 rounds the 5 B away
	exact := float64(pre) / (1 << 30)
	rounded := float64(float32(float64(pre))) / (1 << 30)
	if exact == rounded {
		t.Fatal("test reading is representable in float32")
	}
	tests := []struct {
		name string
		par  sglang.Parallel
		want float64
	}{
		{"TP1", sglang.Parallel{TP: 1, PP: 1, DP: 1}, exact},
		{"TP1 DP2 (independent workers)", sglang.Parallel{TP: 1, PP: 1, DP: 2}, exact},
		{"TP2", sglang.Parallel{TP: 2, PP: 1, DP: 1}, rounded},
		{"TP1 PP2", sglang.Parallel{TP: 1, PP: 2, DP: 1}, rounded},
		{"TP2 DP2 DP attention", sglang.Parallel{TP: 2, PP: 1, DP: 2, EnableDPAttention: true}, rounded},
	}
	for _, tt := range tests {
		c, err := sglang.New(sglang.Input{Spec: llama8B(), Parallel: tt.par, Hardware: h100, PostLoadFreeBytes: gibBytes(60)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Configure(pre)
		if err != nil {
			t.Fatal(err)
		}
		if res.PreLoadGiB != tt.want {
			t.Errorf("%s: pre-load reading %v GiB, want %v", tt.name, res.PreLoadGiB, tt.want)
		}
	}
}
