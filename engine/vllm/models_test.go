package vllm_test

import (
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
)

// Hand-built model specs with the public configs' shapes.

func kinds(n int, f func(i int) model.LayerKind) []model.LayerKind {
	out := make([]model.LayerKind, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func allFull(int) model.LayerKind { return model.FullAttention }

// llama31_8B: 32 layers, 8 KV heads, head_dim 128, bf16.
func llama31_8B() *model.Spec {
	return &model.Spec{Name: "meta-llama/Llama-3.1-8B-Instruct", ModelType: "llama", NumLayers: 32, HiddenSize: 4096,
		NumAttentionHeads: 32, NumKVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA,
		LayerKinds: kinds(32, allFull), ContextLength: 131072, ModelDType: dtype.BFloat16, ConfigDType: "bfloat16",
		Params: model.Params{Total: 8_030_261_248}}
}

// gptOSS: 18 sliding (window 128) + 18 full layers alternating, 8 KV heads of
// 64, bf16 cache (gpt-oss-120b has 36 layers, gpt-oss-20b 24).
func gptOSS(layers int) *model.Spec {
	return &model.Spec{Name: "openai/gpt-oss", ModelType: "gpt_oss", NumLayers: layers, HiddenSize: 2880,
		NumAttentionHeads: 64, NumKVHeads: 8, HeadDim: 64, VHeadDim: 64, Attention: model.MHA,
		LayerKinds: kinds(layers, func(i int) model.LayerKind {
			if i%2 == 0 {
				return model.SlidingAttention
			}
			return model.FullAttention
		}),
		SlidingWindow: 128, ContextLength: 131072, ModelDType: dtype.BFloat16}
}

// gemma3_27B: 62 layers, every sixth global, window 1024, 16 KV heads of 128.
func gemma3_27B() *model.Spec {
	return &model.Spec{Name: "google/gemma-3-27b-it", ModelType: "gemma3_text", NumLayers: 62, HiddenSize: 5376,
		NumAttentionHeads: 32, NumKVHeads: 16, HeadDim: 128, VHeadDim: 128, Attention: model.MHA,
		LayerKinds: kinds(62, func(i int) model.LayerKind {
			if (i+1)%6 == 0 {
				return model.FullAttention
			}
			return model.SlidingAttention
		}),
		SlidingWindow: 1024, ContextLength: 131072, ModelDType: dtype.BFloat16}
}

// deepseekV3: 61 MLA layers, kv_lora_rank 512, rope 64.
func deepseekV3() *model.Spec {
	return &model.Spec{Name: "deepseek-ai/DeepSeek-V3", ModelType: "deepseek_v3", NumLayers: 61, HiddenSize: 7168,
		NumAttentionHeads: 128, NumKVHeads: 128, HeadDim: 192, VHeadDim: 128, Attention: model.MLA,
		KVLoraRank: 512, QKRopeHeadDim: 64, QKNopeHeadDim: 128, LayerKinds: kinds(61, allFull),
		ContextLength: 163840, ModelDType: dtype.BFloat16}
}

// deepseekV32 adds the DSA indexer (index_head_dim 128).
func deepseekV32() *model.Spec {
	s := deepseekV3()
	s.Name, s.ModelType, s.Attention = "deepseek-ai/DeepSeek-V3.2", "deepseek_v32", model.DSA
	s.IndexHeadDim, s.IndexTopK = 128, 2048
	return s
}

// qwen3Next: 48 layers, full attention every fourth (2 KV heads of 256),
// the others gated delta net (16 key heads, 32 value heads of 128, kernel 4).
func qwen3Next() *model.Spec {
	var ids []int
	for i := range 48 {
		if (i+1)%4 != 0 {
			ids = append(ids, i)
		}
	}
	return &model.Spec{Name: "Qwen/Qwen3-Next-80B-A3B-Instruct", ModelType: "qwen3_next", NumLayers: 48, HiddenSize: 2048,
		NumAttentionHeads: 16, NumKVHeads: 2, HeadDim: 256, VHeadDim: 256, Attention: model.MHA,
		LayerKinds: kinds(48, func(i int) model.LayerKind {
			if (i+1)%4 == 0 {
				return model.FullAttention
			}
			return model.LinearAttention
		}),
		Linear: &model.LinearSpec{Kind: "gdn", LayerIDs: ids, NumHeads: 32, HeadDim: 128, StateSize: 128,
			NGroups: 16, ConvKernel: 4, IntermediateSize: 32 * 128},
		ContextLength: 262144, ModelDType: dtype.BFloat16}
}

// llama4Scout: 48 layers, every fourth global, the rest chunked local
// attention (8192), 8 KV heads of 128.
func llama4Scout() *model.Spec {
	return &model.Spec{Name: "meta-llama/Llama-4-Scout-17B-16E-Instruct", ModelType: "llama4_text", NumLayers: 48, HiddenSize: 5120,
		NumAttentionHeads: 40, NumKVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA,
		LayerKinds: kinds(48, func(i int) model.LayerKind {
			if (i+1)%4 == 0 {
				return model.FullAttention
			}
			return model.SlidingAttention
		}),
		SlidingWindow: 8192, ContextLength: 10485760, ModelDType: dtype.BFloat16}
}
