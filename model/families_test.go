package model_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
)

// shape is the part of a Spec checked per family. The numbers are the
// models' published architecture facts (model cards, papers), not output of
// this package.
type shape struct {
	Arch                    string
	Layers                  int
	Full, SWA, Linear, None int
	Heads, KVHeads          int
	HeadDim, VHeadDim       int
	Attention               model.AttentionKind
	KVLoraRank, QKRope      int
	IndexHeadDim            int
	Window, EngineWindow    int
	HybridPool              bool
	Context                 int
	ModelDType              dtype.DType
	Multimodal              bool
}

func shapeOf(s *model.Spec) shape {
	return shape{
		Arch:   s.Architecture,
		Layers: s.NumLayers,
		Full:   s.CountLayers(model.FullAttention), SWA: s.CountLayers(model.SlidingAttention),
		Linear: s.CountLayers(model.LinearAttention), None: s.CountLayers(model.NoCache),
		Heads: s.NumAttentionHeads, KVHeads: s.NumKVHeads,
		HeadDim: s.HeadDim, VHeadDim: s.VHeadDim,
		Attention:  s.Attention,
		KVLoraRank: s.KVLoraRank, QKRope: s.QKRopeHeadDim,
		IndexHeadDim: s.IndexHeadDim,
		Window:       s.SlidingWindow, EngineWindow: s.EngineSlidingWindow,
		HybridPool: s.HybridSWAPool,
		Context:    s.ContextLength,
		ModelDType: s.ModelDType,
		Multimodal: s.Multimodal,
	}
}

func TestFamilies(t *testing.T) {
	bf16 := dtype.BFloat16
	tests := []struct {
		name string
		want shape
	}{
		// Llama-3.1: GQA 8 KV heads, llama3 rope keeps 131072 (docs/sglang.md#model-context-length).
		{"meta-llama/Llama-3.1-8B-Instruct", shape{Arch: "LlamaForCausalLM", Layers: 32, Full: 32, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		{"meta-llama/Llama-3.1-70B-Instruct", shape{Arch: "LlamaForCausalLM", Layers: 80, Full: 80, Heads: 64, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		// Llama-3.2-1B has an explicit head_dim 64 (2048/32 also 64).
		{"meta-llama/Llama-3.2-1B-Instruct", shape{Arch: "LlamaForCausalLM", Layers: 16, Full: 16, Heads: 32, KVHeads: 8, HeadDim: 64, VHeadDim: 64, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		{"meta-llama/Llama-3.2-3B-Instruct", shape{Arch: "LlamaForCausalLM", Layers: 28, Full: 28, Heads: 24, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		// Llama-4 Scout: chunked attention 8192 on 3 of every 4 layers; hybrid pool; served language-only (docs/sglang.md#model-multimodal).
		{"meta-llama/Llama-4-Scout-17B-16E", shape{Arch: "Llama4ForConditionalGeneration", Layers: 48, Full: 12, SWA: 36, Heads: 40, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Window: 8192, EngineWindow: 8192, HybridPool: true, Context: 262144, ModelDType: bf16}},
		// Mistral-7B v0.3: sliding_window null => no sliding layers.
		{"mistralai/Mistral-7B-Instruct-v0.3", shape{Arch: "MistralForCausalLM", Layers: 32, Full: 32, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 32768, ModelDType: bf16}},
		// A Mistral-v0.1-style config with a 4096 window slides on every layer.
		{"dicta-il/dictalm2.0-instruct", shape{Arch: "MistralForCausalLM", Layers: 32, SWA: 32, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Window: 4096, EngineWindow: 4096, Context: 32768, ModelDType: bf16}},
		{"mistralai/Mixtral-8x7B-v0.1", shape{Arch: "MixtralForCausalLM", Layers: 32, Full: 32, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 32768, ModelDType: bf16}},
		// Mistral-Small-3 family wrapped in Mistral3ForConditionalGeneration; yarn with original_max keeps 393216.
		{"mistralai/Devstral-Small-2-24B-Instruct", shape{Arch: "Mistral3ForConditionalGeneration", Layers: 40, Full: 40, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 393216, ModelDType: bf16, Multimodal: true}},
		{"Qwen/Qwen2.5-7B-Instruct", shape{Arch: "Qwen2ForCausalLM", Layers: 28, Full: 28, Heads: 28, KVHeads: 4, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 32768, ModelDType: bf16}},
		{"Qwen/Qwen2.5-72B-Instruct", shape{Arch: "Qwen2ForCausalLM", Layers: 80, Full: 80, Heads: 64, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 32768, ModelDType: bf16}},
		{"Qwen/Qwen3-8B", shape{Arch: "Qwen3ForCausalLM", Layers: 36, Full: 36, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 40960, ModelDType: bf16}},
		{"Qwen/Qwen3-30B-A3B", shape{Arch: "Qwen3MoeForCausalLM", Layers: 48, Full: 48, Heads: 32, KVHeads: 4, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 40960, ModelDType: bf16}},
		{"Qwen/Qwen3-235B-A22B", shape{Arch: "Qwen3MoeForCausalLM", Layers: 94, Full: 94, Heads: 64, KVHeads: 4, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 40960, ModelDType: bf16}},
		// Qwen3-Next: 12 gated-attention + 36 gated-delta-net layers (spec Ex.5).
		{"Qwen/Qwen3-Next-80B-A3B-Instruct", shape{Arch: "Qwen3NextForCausalLM", Layers: 48, Full: 12, Linear: 36, Heads: 16, KVHeads: 2, HeadDim: 256, VHeadDim: 256, Attention: model.MHA, Context: 262144, ModelDType: bf16}},
		// Phi-4-mini: a 262144 window is longer than the 131072 context, so nothing slides; longrope has no factor.
		{"microsoft/Phi-4-mini-instruct", shape{Arch: "Phi3ForCausalLM", Layers: 32, Full: 32, Heads: 24, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		{"microsoft/phi-4", shape{Arch: "Phi3ForCausalLM", Layers: 40, Full: 40, Heads: 40, KVHeads: 10, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 16384, ModelDType: bf16}},
		// Gemma-2-9B: even layers slide (4096), head_dim 256, engine window 4095; no hybrid pool (spec Ex.4).
		{"google/gemma-2-9b-it", shape{Arch: "Gemma2ForCausalLM", Layers: 42, Full: 21, SWA: 21, Heads: 16, KVHeads: 8, HeadDim: 256, VHeadDim: 256, Attention: model.MHA, Window: 4096, EngineWindow: 4095, Context: 8192, ModelDType: bf16}},
		// Gemma-3-1B: 5 local : 1 global, window 512, MQA.
		{"google/gemma-3-1b-pt", shape{Arch: "Gemma3ForCausalLM", Layers: 26, Full: 4, SWA: 22, Heads: 4, KVHeads: 1, HeadDim: 256, VHeadDim: 256, Attention: model.MHA, Window: 512, EngineWindow: 511, Context: 32768, ModelDType: bf16}},
		// Command-R: MHA 64/64, fp16, model_max_length 131072 comes before max_position_embeddings 8192.
		{"CohereForAI/c4ai-command-r-v01", shape{Arch: "CohereForCausalLM", Layers: 40, Full: 40, Heads: 64, KVHeads: 64, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: dtype.Float16}},
		// Command-A: 3 sliding (4096) : 1 full; not a hybrid pool in SGLang.
		{"CohereForAI/c4ai-command-a-03-2025", shape{Arch: "Cohere2ForCausalLM", Layers: 64, Full: 16, SWA: 48, Heads: 96, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Window: 4096, EngineWindow: 4096, Context: 262144, ModelDType: bf16}},
		{"allenai/OLMo-2-1124-7B-Instruct", shape{Arch: "Olmo2ForCausalLM", Layers: 32, Full: 32, Heads: 32, KVHeads: 32, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 4096, ModelDType: bf16}},
		{"ibm-granite/granite-3.3-8b-instruct", shape{Arch: "GraniteForCausalLM", Layers: 40, Full: 40, Heads: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		{"HuggingFaceTB/SmolLM2-1.7B-Instruct", shape{Arch: "LlamaForCausalLM", Layers: 24, Full: 24, Heads: 32, KVHeads: 32, HeadDim: 64, VHeadDim: 64, Attention: model.MHA, Context: 8192, ModelDType: bf16}},
		// Falcon3-7B: head_dim 256 explicit (3072/12 would also be 256), 4 KV heads.
		{"tiiuae/Falcon3-7B-Instruct", shape{Arch: "LlamaForCausalLM", Layers: 28, Full: 28, Heads: 12, KVHeads: 4, HeadDim: 256, VHeadDim: 256, Attention: model.MHA, Context: 32768, ModelDType: bf16}},
		// Falcon-7B: multi_query => 1 KV head, 4544/71 = 64, no length key => 2048.
		{"tiiuae/falcon-7b", shape{Arch: "FalconForCausalLM", Layers: 32, Full: 32, Heads: 71, KVHeads: 1, HeadDim: 64, VHeadDim: 64, Attention: model.MHA, Context: 2048, ModelDType: bf16}},
		// GLM-4.5 is plain GQA (96 q heads, 8 KV heads, head_dim 128).
		{"zai-org/GLM-4.5", shape{Arch: "Glm4MoeForCausalLM", Layers: 92, Full: 92, Heads: 96, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 131072, ModelDType: bf16}},
		// DeepSeek-V3: MLA 512+64, qk 128+64, v 128; yarn with original_max keeps 163840.
		{"deepseek-ai/DeepSeek-V3", shape{Arch: "DeepseekV3ForCausalLM", Layers: 61, Full: 61, Heads: 128, KVHeads: 128, HeadDim: 192, VHeadDim: 128, Attention: model.MLA, KVLoraRank: 512, QKRope: 64, Context: 163840, ModelDType: bf16}},
		{"deepseek-ai/DeepSeek-V3.2", shape{Arch: "DeepseekV32ForCausalLM", Layers: 61, Full: 61, Heads: 128, KVHeads: 128, HeadDim: 192, VHeadDim: 128, Attention: model.DSA, KVLoraRank: 512, QKRope: 64, IndexHeadDim: 128, Context: 163840, ModelDType: bf16}},
		// Kimi-K2 runs as DeepseekV3ForCausalLM without index_topk: MLA.
		{"moonshotai/Kimi-K2-Instruct", shape{Arch: "DeepseekV3ForCausalLM", Layers: 61, Full: 61, Heads: 64, KVHeads: 64, HeadDim: 192, VHeadDim: 128, Attention: model.MLA, KVLoraRank: 512, QKRope: 64, Context: 131072, ModelDType: bf16}},
		// Kimi-Linear: 7 MLA layers (4,8,...,24,27 1-based) and 20 KDA layers, 1M context.
		{"moonshotai/Kimi-Linear-48B-A3B-Instruct", shape{Arch: "KimiLinearForCausalLM", Layers: 27, Full: 7, Linear: 20, Heads: 32, KVHeads: 32, HeadDim: 192, VHeadDim: 128, Attention: model.MLA, KVLoraRank: 512, QKRope: 64, Context: 1048576, ModelDType: bf16}},
		// gpt-oss-120b: alternating 128-window / full, engine window 127 (docs/sglang.md#model-sliding-window), mxfp4 without a dtype runs bf16.
		{"openai/gpt-oss-120b", shape{Arch: "GptOssForCausalLM", Layers: 36, Full: 18, SWA: 18, Heads: 64, KVHeads: 8, HeadDim: 64, VHeadDim: 64, Attention: model.MHA, Window: 128, EngineWindow: 127, HybridPool: true, Context: 131072, ModelDType: bf16}},
		// MiMo-V2-Flash: 9 full (4 KV heads) + 39 sliding (8 KV heads), qk 192 / v 128.
		{"XiaomiMiMo/MiMo-V2-Flash", shape{Arch: "MiMoV2FlashForCausalLM", Layers: 48, Full: 9, SWA: 39, Heads: 64, KVHeads: 4, HeadDim: 192, VHeadDim: 128, Attention: model.MHA, Window: 128, EngineWindow: 128, HybridPool: true, Context: 262144, ModelDType: bf16}},
		// MiniMax-M2.7 has no lightning-indexer fields: plain GQA.
		{"MiniMaxAI/MiniMax-M2.7", shape{Arch: "MiniMaxM2ForCausalLM", Layers: 62, Full: 62, Heads: 48, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 204800, ModelDType: bf16}},
		// MiniMax-M3: 60 GQA layers (4 KV heads); 3 dense + 57 sparse layers,
		// every sparse layer's lightning indexer K-only.
		{"MiniMaxAI/MiniMax-M3", shape{Arch: "MiniMaxM3SparseForCausalLM", Layers: 60, Full: 60, Heads: 64, KVHeads: 4, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 524288, ModelDType: bf16}},
		// DeepSeek-V4: one KV head of 512 (448 NoPE + 64 RoPE), 128-token window;
		// yarn has original_max_position_embeddings, so the context is 1M as written.
		{"deepseek-ai/DeepSeek-V4-Flash", shape{Arch: "DeepseekV4ForCausalLM", Layers: 43, Full: 43, Heads: 64, KVHeads: 1, HeadDim: 512, VHeadDim: 512, Attention: model.MHA, QKRope: 64, IndexHeadDim: 128, Window: 128, EngineWindow: 128, Context: 1048576, ModelDType: bf16}},
		{"deepseek-ai/DeepSeek-V4-Pro", shape{Arch: "DeepseekV4ForCausalLM", Layers: 61, Full: 61, Heads: 128, KVHeads: 1, HeadDim: 512, VHeadDim: 512, Attention: model.MHA, QKRope: 64, IndexHeadDim: 128, Window: 128, EngineWindow: 128, Context: 1048576, ModelDType: bf16}},
		// Nemotron-H-56B: 118 layers = 54 Mamba2 + 10 attention + 54 MLP.
		{"nvidia/Nemotron-H-56B-Base-8K", shape{Arch: "NemotronHForCausalLM", Layers: 118, Full: 10, Linear: 54, None: 54, Heads: 64, KVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, Context: 8192, ModelDType: bf16}},
		// mamba2-130m: no architectures, all 24 layers are Mamba2, fp32 config dtype absent => fp16.
		{"AntonV/mamba2-130m-hf", shape{Arch: "Mamba2ForCausalLM", Layers: 24, Linear: 24, Attention: model.MHA, Context: 2048, ModelDType: dtype.Float16}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen[tt.name] = true
			s, err := catalog.Load(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, shapeOf(s)); diff != "" {
				t.Errorf("shape mismatch (-want +got):\n%s", diff)
			}
			if len(s.LayerKinds) != s.NumLayers {
				t.Errorf("len(LayerKinds) = %d, want %d", len(s.LayerKinds), s.NumLayers)
			}
		})
	}
	for _, n := range catalog.Names() {
		if !seen[n] {
			t.Errorf("catalog model %s has no family test", n)
		}
	}
}

// TestLayerIDs pins the layer-id rules of docs/sglang.md#model-sliding-window and the notes.
func TestLayerIDs(t *testing.T) {
	tests := []struct {
		name string
		kind model.LayerKind
		want []int
	}{
		// gpt-oss layer_types: odd layers full.
		{"openai/gpt-oss-120b", model.FullAttention, []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35}},
		// Llama-4: full where (i+1) % 4 == 0.
		{"meta-llama/Llama-4-Scout-17B-16E", model.FullAttention, []int{3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47}},
		// MiMo: hybrid_layer_pattern 0 = full.
		{"XiaomiMiMo/MiMo-V2-Flash", model.FullAttention, []int{0, 5, 11, 17, 23, 29, 35, 41, 47}},
		// Qwen3-Next: full_attention_interval 4 => 3, 7, ..., 47 (spec Ex.5).
		{"Qwen/Qwen3-Next-80B-A3B-Instruct", model.FullAttention, []int{3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47}},
		// Kimi-Linear: full_attn_layers 4, 8, ..., 24, 27 are 1-based.
		{"moonshotai/Kimi-Linear-48B-A3B-Instruct", model.FullAttention, []int{3, 7, 11, 15, 19, 23, 26}},
		// Gemma-3: every 6th layer global.
		{"google/gemma-3-1b-pt", model.FullAttention, []int{5, 11, 17, 23}},
		// Command-A: every 4th layer global.
		{"CohereForAI/c4ai-command-a-03-2025", model.FullAttention, []int{3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63}},
		// Nemotron-H: "M-M-M-M*-..." puts the first attention layer at index 7.
		{"nvidia/Nemotron-H-56B-Base-8K", model.FullAttention, []int{7, 18, 29, 40, 51, 62, 73, 84, 95, 106}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := catalog.Load(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.LayerIDs(tt.kind)); diff != "" {
				t.Errorf("LayerIDs(%s) mismatch (-want +got):\n%s", tt.kind, diff)
			}
		})
	}
	s, err := catalog.Load("google/gemma-2-9b-it")
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range s.LayerKinds {
		if want := i%2 == 0; (k == model.SlidingAttention) != want {
			t.Errorf("gemma-2 layer %d: kind %s, want sliding=%v", i, k, want)
		}
	}
}

// TestMiMoSWAHeads checks the asymmetric sliding-layer heads (docs/sglang.md#model-sliding-window).
func TestMiMoSWAHeads(t *testing.T) {
	s, err := catalog.Load("XiaomiMiMo/MiMo-V2-Flash")
	if err != nil {
		t.Fatal(err)
	}
	got := []int{s.SWAKVHeads(), s.SWAKDim(), s.SWAVDim(), s.NumKVHeads, s.HeadDim, s.VHeadDim}
	if diff := cmp.Diff([]int{8, 192, 128, 4, 192, 128}, got); diff != "" {
		t.Errorf("MiMo SWA heads (-want +got):\n%s", diff)
	}
	l, err := catalog.Load("openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	if l.SWAKVHeads() != 8 || l.SWAKDim() != 64 || l.SWAVDim() != 64 {
		t.Errorf("gpt-oss SWA dims = %d/%d/%d, want 8/64/64 (same as full)", l.SWAKVHeads(), l.SWAKDim(), l.SWAVDim())
	}
}

// TestStateShapes uses docs/sglang.md#mamba-state and Ex.5 / G12.
func TestStateShapes(t *testing.T) {
	next, err := catalog.Load("Qwen/Qwen3-Next-80B-A3B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	nem, err := catalog.Load("nvidia/Nemotron-H-56B-Base-8K")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := catalog.Load("AntonV/mamba2-130m-hf")
	if err != nil {
		t.Fatal(err)
	}
	kimi, err := catalog.Load("moonshotai/Kimi-Linear-48B-A3B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		l        *model.LinearSpec
		tp       int
		conv     [][]int
		temporal []int
		slot     int64 // bf16 conv, fp32 ssm, all linear layers
	}{
		{"qwen3-next tp4", next.Linear, 4, [][]int{{2048, 3}}, []int{8, 128, 128}, 19_316_736},
		{"qwen3-next tp1", next.Linear, 1, [][]int{{8192, 3}}, []int{32, 128, 128}, 77_266_944},
		// Nemotron-H: conv_dim = 256*64 + 2*8*256 = 20480.
		{"nemotron-h tp1", nem.Linear, 1, [][]int{{20480, 3}}, []int{256, 64, 256}, 54 * (20480*3*2 + 256*64*256*4)},
		{"nemotron-h tp8", nem.Linear, 8, [][]int{{2560, 3}}, []int{32, 64, 256}, 54 * (2560*3*2 + 32*64*256*4)},
		// mamba2-130m, 1 group: at tp 2 the group is replicated (n_groups -> 2): (1536 + 2*2*128)/2 = 1024.
		{"mamba2 tp1", m2.Linear, 1, [][]int{{1792, 3}}, []int{24, 64, 128}, 24 * (1792*3*2 + 24*64*128*4)},
		{"mamba2 tp2", m2.Linear, 2, [][]int{{1024, 3}}, []int{12, 64, 128}, 24 * (1024*3*2 + 12*64*128*4)},
		// KDA: conv (K-1, 3*4096/tp), temporal (heads/tp, 128, 128).
		{"kimi-linear tp2", kimi.Linear, 2, [][]int{{3, 6144}}, []int{16, 128, 128}, 20 * (3*6144*2 + 16*128*128*4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv, temporal, err := tt.l.StateShapes(tt.tp)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.conv, conv); diff != "" {
				t.Errorf("conv (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.temporal, temporal); diff != "" {
				t.Errorf("temporal (-want +got):\n%s", diff)
			}
			slot, err := tt.l.SlotBytes(tt.tp, 2, 4)
			if err != nil {
				t.Fatal(err)
			}
			if slot != tt.slot {
				t.Errorf("SlotBytes = %d, want %d", slot, tt.slot)
			}
		})
	}
	// Per layer at TP4: 12,288 B conv + 524,288 B ssm = 536,576 B (spec Ex.5).
	if per, _ := next.Linear.SlotBytes(4, 2, 4); per/int64(len(next.Linear.LayerIDs)) != 536_576 {
		t.Errorf("qwen3-next per-layer slot = %d, want 536576", per/int64(len(next.Linear.LayerIDs)))
	}
	for _, tp := range []int{0, -1, 3} {
		if _, _, err := next.Linear.StateShapes(tp); err == nil {
			t.Errorf("StateShapes(%d): no error", tp)
		}
	}
	if next.Linear.SSMDType() != dtype.Float32 {
		t.Errorf("SSMDType = %v, want float32", next.Linear.SSMDType())
	}
}

// TestParams checks the config-derived parameter counts against published
// totals (within tol, a fraction).
func TestParams(t *testing.T) {
	tests := []struct {
		name          string
		total, active float64 // billions; active 0 = not checked
		tol           float64
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", 8.03, 8.03, 0.01},
		{"meta-llama/Llama-3.1-70B-Instruct", 70.6, 0, 0.01},
		{"meta-llama/Llama-3.2-1B-Instruct", 1.24, 0, 0.02},
		{"meta-llama/Llama-3.2-3B-Instruct", 3.21, 0, 0.02},
		{"meta-llama/Llama-4-Scout-17B-16E", 109, 17, 0.03},
		{"mistralai/Mistral-7B-Instruct-v0.3", 7.25, 0, 0.01},
		{"mistralai/Mixtral-8x7B-v0.1", 46.7, 12.9, 0.01},
		{"Qwen/Qwen2.5-7B-Instruct", 7.61, 0, 0.01},
		{"Qwen/Qwen2.5-72B-Instruct", 72.7, 0, 0.01},
		{"Qwen/Qwen3-8B", 8.2, 0, 0.01},
		{"Qwen/Qwen3-30B-A3B", 30.5, 3.3, 0.03},
		{"Qwen/Qwen3-235B-A22B", 235, 22, 0.02},
		{"Qwen/Qwen3-Next-80B-A3B-Instruct", 80, 0, 0.02},
		{"google/gemma-2-9b-it", 9.24, 0, 0.01},
		{"google/gemma-3-1b-pt", 1.0, 0, 0.02},
		{"microsoft/phi-4", 14.7, 0, 0.01},
		{"microsoft/Phi-4-mini-instruct", 3.84, 0, 0.01},
		{"CohereForAI/c4ai-command-r-v01", 35, 0, 0.01},
		{"CohereForAI/c4ai-command-a-03-2025", 111, 0, 0.01},
		{"ibm-granite/granite-3.3-8b-instruct", 8.17, 0, 0.01},
		{"tiiuae/falcon-7b", 6.92, 0, 0.02},
		{"deepseek-ai/DeepSeek-V3", 671, 37, 0.02},
		{"moonshotai/Kimi-K2-Instruct", 1040, 32, 0.03},
		{"zai-org/GLM-4.5", 355, 32, 0.05},
		{"openai/gpt-oss-120b", 116.8, 0, 0.01},
		{"XiaomiMiMo/MiMo-V2-Flash", 309, 15, 0.03},
		{"MiniMaxAI/MiniMax-M2.7", 230, 0, 0.02},
		{"nvidia/Nemotron-H-56B-Base-8K", 56, 0, 0.02},
		{"AntonV/mamba2-130m-hf", 0.13, 0, 0.02},
		{"moonshotai/Kimi-Linear-48B-A3B-Instruct", 48, 3, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := catalog.Load(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got int64, want float64, tol float64) {
				g := float64(got) / 1e9
				if math.Abs(g-want)/want > tol {
					t.Errorf("%s = %.3fB, want %.3fB ± %.0f%%", what, g, want, tol*100)
				}
			}
			check("Total", s.Params.Total, tt.total, tt.tol)
			if tt.active > 0 {
				check("Active", s.Params.Active, tt.active, 0.2) // conventions differ on counting embeddings
			}
			p := s.Params
			if !(p.Embedding > 0 && p.Embedding < p.Total && p.Quantizable > 0 && p.Quantizable < p.Total && p.Active <= p.Total) {
				t.Errorf("inconsistent Params %+v", p)
			}
		})
	}
	// DeepSeek-V3 ships 685B: 671B main model plus a 14B MTP module.
	s, err := catalog.Load("deepseek-ai/DeepSeek-V3")
	if err != nil {
		t.Fatal(err)
	}
	if g := float64(s.Params.MTP) / 1e9; math.Abs(g-14)/14 > 0.05 {
		t.Errorf("DeepSeek-V3 MTP = %.2fB, want about 14B", g)
	}
	// gpt-oss leaves attention unquantized: quantizable is the experts only.
	g, err := catalog.Load("openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	experts := int64(36 * 128 * 3 * 2880 * 2880)
	if g.Params.Quantizable != experts {
		t.Errorf("gpt-oss Quantizable = %d, want %d (experts only)", g.Params.Quantizable, experts)
	}
}

// TestQuant checks quantization_config reading.
func TestQuant(t *testing.T) {
	tests := []struct {
		name string
		want *model.QuantSpec
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", nil},
		{"deepseek-ai/DeepSeek-V3", &model.QuantSpec{Method: "fp8", WeightBits: 8}},
		{"openai/gpt-oss-120b", &model.QuantSpec{Method: "mxfp4", WeightBits: 4}},
		{"mistralai/Devstral-Small-2-24B-Instruct", &model.QuantSpec{Method: "fp8", WeightBits: 8}},
	}
	for _, tt := range tests {
		s, err := catalog.Load(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, s.Quant); diff != "" {
			t.Errorf("%s Quant (-want +got):\n%s", tt.name, diff)
		}
	}
}
