package model_test

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/model"
)

// TestNemotron3Pattern: Nemotron-3 style patterns add E (MoE) layers, which
// hold no cache, next to M (Mamba2) and * (attention).
func TestNemotron3Pattern(t *testing.T) {
	pattern := "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
	cfg := map[string]any{
		"architectures": []any{"NemotronHForCausalLM"}, "model_type": "nemotron_h",
		"num_hidden_layers": len(pattern), "hybrid_override_pattern": pattern,
		"hidden_size": 2688, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
		"mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
		"n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
		"moe_shared_expert_intermediate_size": 3712, "intermediate_size": 1856,
		"vocab_size": 131072, "max_position_embeddings": 262144, "torch_dtype": "bfloat16", "mamba_ssm_dtype": "float32",
	}
	s, err := model.Parse(encode(t, cfg), "nemotron-3")
	if err != nil {
		t.Fatal(err)
	}
	got := []int{s.NumLayers, s.CountLayers(model.LinearAttention), s.CountLayers(model.FullAttention), s.CountLayers(model.NoCache)}
	want := []int{len(pattern), strings.Count(pattern, "M"), strings.Count(pattern, "*"), strings.Count(pattern, "E")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layers, M, *, E (-want +got):\n%s", diff)
	}
	if s.Linear.ConfigSSMDType != "float32" || s.Linear.IntermediateSize != 64*64 {
		t.Errorf("Linear = %+v", s.Linear)
	}
	if s.Params.Active >= s.Params.Total/3 {
		t.Errorf("MoE Params: active %d not well below total %d", s.Params.Active, s.Params.Total)
	}
	bad := patch(cfg, "hybrid_override_pattern", pattern[:10])
	if _, err := model.Parse(encode(t, bad), "short"); err == nil || !strings.Contains(err.Error(), "hybrid_override_pattern") {
		t.Errorf("short pattern: %v", err)
	}
	bad = patch(cfg, "hybrid_override_pattern", strings.Replace(pattern, "E", "X", 1))
	if _, err := model.Parse(encode(t, bad), "bad char"); err == nil || !strings.Contains(err.Error(), `'X'`) {
		t.Errorf("bad char: %v", err)
	}
}

// TestDeepSeekV2Lite: MLA without q_lora_rank; published 15.7B total.
func TestDeepSeekV2Lite(t *testing.T) {
	cfg := map[string]any{
		"architectures": []any{"DeepseekV2ForCausalLM"}, "model_type": "deepseek_v2",
		"hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
		"kv_lora_rank": 512, "q_lora_rank": nil, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
		"n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
		"intermediate_size": 10944, "first_k_dense_replace": 1, "moe_layer_freq": 1, "vocab_size": 102400,
		"tie_word_embeddings": false, "max_position_embeddings": 163840, "torch_dtype": "bfloat16",
		"rope_scaling": map[string]any{"factor": 40, "original_max_position_embeddings": 4096, "type": "yarn"},
	}
	s, err := model.Parse(encode(t, cfg), "v2-lite")
	if err != nil {
		t.Fatal(err)
	}
	if s.Attention != model.MLA || s.KVLoraRank+s.QKRopeHeadDim != 576 || s.ContextLength != 163840 {
		t.Errorf("V2-Lite: %s %d+%d ctx %d", s.Attention, s.KVLoraRank, s.QKRopeHeadDim, s.ContextLength)
	}
	if g := float64(s.Params.Total) / 1e9; math.Abs(g-15.7)/15.7 > 0.02 {
		t.Errorf("V2-Lite total = %.2fB, want 15.7B", g)
	}
}

// TestLayerTypesFamilies: Step3p5 lists MTP layers past num_hidden_layers;
// Gemma4 is a hybrid pool.
func TestLayerTypesFamilies(t *testing.T) {
	types := []any{"sliding_attention", "sliding_attention", "sliding_attention", "full_attention", "sliding_attention"}
	base := func(arch string, n int) map[string]any {
		return map[string]any{
			"architectures": []any{arch}, "num_hidden_layers": n, "hidden_size": 1024, "num_attention_heads": 8,
			"num_key_value_heads": 2, "sliding_window": 512, "layer_types": types, "max_position_embeddings": 65536,
			"torch_dtype": "bfloat16",
		}
	}
	s, err := model.Parse(encode(t, base("Step3p5ForCausalLM", 4)), "step")
	if err != nil {
		t.Fatal(err)
	}
	if s.NumLayers != 4 || s.CountLayers(model.SlidingAttention) != 3 || !s.HybridSWAPool {
		t.Errorf("Step3p5: %d layers, %d sliding, hybrid %v", s.NumLayers, s.CountLayers(model.SlidingAttention), s.HybridSWAPool)
	}
	if _, err := model.Parse(encode(t, base("Qwen3ForCausalLM", 4)), "other"); err == nil {
		t.Error("layer_types longer than the layers accepted outside Step3p5")
	}
	s, err = model.Parse(encode(t, base("Gemma4ForCausalLM", 5)), "gemma4")
	if err != nil {
		t.Fatal(err)
	}
	if !s.HybridSWAPool || s.LayerIDs(model.FullAttention)[0] != 3 {
		t.Errorf("Gemma4: hybrid %v, full %v", s.HybridSWAPool, s.LayerIDs(model.FullAttention))
	}
}

// TestLlavaNestedDefaults: LLaVA-1.5's text_config lists only what differs
// from LlamaConfig; the rest (32 layers, 32 heads, 4096 wide) are defaults.
func TestLlavaNestedDefaults(t *testing.T) {
	cfg := `{
	  "architectures": ["LlavaForConditionalGeneration"],
	  "model_type": "llava",
	  "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
	    "max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05, "torch_dtype": "float16", "vocab_size": 32064},
	  "torch_dtype": "float16",
	  "vision_config": {"hidden_size": 1024, "model_type": "clip_vision_model", "num_hidden_layers": 24}
	}`
	s, err := model.Parse([]byte(cfg), "llava-hf/llava-1.5-7b-hf")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{s.NumLayers, s.NumAttentionHeads, s.NumKVHeads, s.HeadDim, s.ContextLength, s.ModelDType.String(), s.Multimodal, len(s.Warnings)}
	want := []any{32, 32, 32, 128, 4096, "float16", true, 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("llava (-want +got):\n%s\nwarnings: %q", diff, s.Warnings)
	}
}

// TestLlavaNextMistralDefaults: llava-v1.6-mistral-7b-hf's text_config
// lists intermediate_size, num_key_value_heads and vocab_size; the width,
// depth and head count are MistralConfig's defaults.
func TestLlavaNextMistralDefaults(t *testing.T) {
	cfg := `{
	  "architectures": ["LlavaNextForConditionalGeneration"],
	  "model_type": "llava_next",
	  "text_config": {"architectures": ["MistralForCausalLM"], "intermediate_size": 14336, "max_position_embeddings": 32768,
	    "model_type": "mistral", "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
	    "torch_dtype": "bfloat16", "vocab_size": 32064},
	  "torch_dtype": "float16",
	  "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096, "model_type": "clip_vision_model",
	    "num_attention_heads": 16, "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768, "vocab_size": 32000},
	  "vocab_size": 32064
	}`
	s, err := model.Parse([]byte(cfg), "llava-hf/llava-v1.6-mistral-7b-hf")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{s.NumLayers, s.NumAttentionHeads, s.NumKVHeads, s.HeadDim, s.HiddenSize, s.FFN.Intermediate, s.FFN.VocabSize, s.ContextLength, s.Multimodal}
	want := []any{32, 32, 8, 128, 4096, 14336, 32064, 32768, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("llava-next (-want +got):\n%s\nwarnings: %q", diff, s.Warnings)
	}
}
