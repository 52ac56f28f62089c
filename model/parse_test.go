package model_test

import (
	"encoding/json"
	"errors"
	"github.com/kvcfg/kvcfg/catalog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
)

// llama is a minimal Llama-3.1-8B config; tests patch it.
func llama() map[string]any {
	return map[string]any{
		"architectures":           []any{"LlamaForCausalLM"},
		"model_type":              "llama",
		"hidden_size":             4096,
		"intermediate_size":       14336,
		"num_hidden_layers":       32,
		"num_attention_heads":     32,
		"num_key_value_heads":     8,
		"max_position_embeddings": 131072,
		"rope_scaling":            map[string]any{"factor": 8.0, "rope_type": "llama3", "original_max_position_embeddings": 8192},
		"torch_dtype":             "bfloat16",
		"vocab_size":              128256,
	}
}

func encode(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func patch(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == deleteKey {
			delete(m, k)
			continue
		}
		m[k] = kv[i+1]
	}
	return m
}

type del struct{}

var deleteKey = del{}

func TestContextLength(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want int
	}{
		{"llama3 rope keeps the length", llama(), 131072},
		{"legacy type llama3", patch(llama(), "rope_scaling", map[string]any{"factor": 8.0, "type": "llama3"}), 131072},
		{"original_max keeps the length", patch(llama(), "rope_scaling", map[string]any{"factor": 4.0, "type": "yarn", "original_max_position_embeddings": 32768}), 131072},
		{"linear factor multiplies", patch(llama(), "max_position_embeddings", 4096, "rope_scaling", map[string]any{"factor": 4.0, "type": "linear"}), 16384},
		{"dynamic factor multiplies", patch(llama(), "max_position_embeddings", 4096, "rope_scaling", map[string]any{"factor": 2.0, "rope_type": "dynamic"}), 8192},
		{"fractional product truncates", patch(llama(), "max_position_embeddings", 1000, "rope_scaling", map[string]any{"factor": 1.5555, "rope_type": "dynamic"}), 1555},
		{"rope_parameters when rope_scaling is missing", patch(llama(), "max_position_embeddings", 4096, "rope_scaling", deleteKey, "rope_parameters", map[string]any{"factor": 4.0, "rope_type": "linear"}), 16384},
		{"rope_parameters when rope_scaling is null", patch(llama(), "max_position_embeddings", 4096, "rope_scaling", nil, "rope_parameters", map[string]any{"factor": 4.0, "rope_type": "linear"}), 16384},
		{"no factor", patch(llama(), "rope_scaling", map[string]any{"type": "longrope"}), 131072},
		{"first key in SGLang order wins", patch(llama(), "seq_length", 4096, "model_max_length", 8192), 4096},
		{"model_max_length before max_position_embeddings", patch(llama(), "model_max_length", 200000), 200000},
		{"null key is skipped", patch(llama(), "max_sequence_length", nil), 131072},
		{"no length key => 2048", patch(llama(), "max_position_embeddings", deleteKey, "rope_scaling", deleteKey), 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := model.Parse(encode(t, tt.cfg), "test")
			if err != nil {
				t.Fatal(err)
			}
			if s.ContextLength != tt.want {
				t.Errorf("ContextLength = %d, want %d", s.ContextLength, tt.want)
			}
		})
	}
}

// gemma3_27b is Gemma-3-27B-it's config.json (vision_config trimmed): its
// text_config omits max_position_embeddings (class default 131072) and has
// a linear x8 rope without original_max_position_embeddings.
const gemma3_27b = `{
  "architectures": ["Gemma3ForConditionalGeneration"],
  "boi_token_index": 255999,
  "eoi_token_index": 256000,
  "image_token_index": 262144,
  "model_type": "gemma3",
  "text_config": {
    "head_dim": 128,
    "hidden_size": 5376,
    "intermediate_size": 21504,
    "model_type": "gemma3_text",
    "num_attention_heads": 32,
    "num_hidden_layers": 62,
    "num_key_value_heads": 16,
    "query_pre_attn_scalar": 168,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024
  },
  "torch_dtype": "bfloat16",
  "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model", "num_hidden_layers": 27}
}`

// TestGemma3ConditionalGeneration covers docs/sglang.md#model-multimodal, docs/sglang.md#model-context-length and docs/sglang.md#model-dtype at once.
func TestGemma3ConditionalGeneration(t *testing.T) {
	s, err := model.Parse([]byte(gemma3_27b), "google/gemma-3-27b-it")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{s.ContextLength, s.ModelType, s.ModelDType, s.Multimodal, s.Encoder, s.NumLayers, s.NumKVHeads, s.HeadDim,
		s.CountLayers(model.FullAttention), s.CountLayers(model.SlidingAttention), s.SlidingWindow, s.EngineSlidingWindow, s.HybridSWAPool}
	want := []any{1_048_576, "gemma3_text", dtype.BFloat16, false, true, 62, 16, 128, 10, 52, 1024, 1023, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gemma-3-27b (-want +got):\n%s", diff)
	}
}

func TestModelDType(t *testing.T) {
	tests := []struct {
		name       string
		cfg        map[string]any
		wantConfig string
		want       dtype.DType
	}{
		{"bfloat16", llama(), "bfloat16", dtype.BFloat16},
		{"float16", patch(llama(), "torch_dtype", "float16"), "float16", dtype.Float16},
		{"fp32 runs as fp16", patch(llama(), "torch_dtype", "float32"), "float32", dtype.Float16},
		{"missing runs as fp16", patch(llama(), "torch_dtype", deleteKey), "", dtype.Float16},
		{"gemma fp32 runs as bf16", patch(llama(), "model_type", "gemma", "architectures", []any{"GemmaForCausalLM"}, "torch_dtype", "float32"), "float32", dtype.BFloat16},
		{"transformers v5 dtype key", patch(llama(), "torch_dtype", deleteKey, "dtype", "float16"), "float16", dtype.Float16},
		{"dtype wins over torch_dtype", patch(llama(), "torch_dtype", "float32", "dtype", "bfloat16"), "bfloat16", dtype.BFloat16},
		{"torch. prefix", patch(llama(), "torch_dtype", "torch.bfloat16"), "torch.bfloat16", dtype.BFloat16},
		{"mxfp4 without dtype runs bf16", patch(llama(), "torch_dtype", deleteKey, "quantization_config", map[string]any{"quant_method": "mxfp4"}), "", dtype.BFloat16},
		{"text_config without dtype falls back to the top level", map[string]any{
			"architectures": []any{"LlavaForConditionalGeneration"}, "model_type": "llava", "torch_dtype": "float16",
			"text_config": patch(llama(), "torch_dtype", deleteKey),
		}, "float16", dtype.Float16},
		{"text_config dtype wins", map[string]any{
			"architectures": []any{"LlavaForConditionalGeneration"}, "model_type": "llava", "torch_dtype": "float16",
			"text_config": llama(),
		}, "bfloat16", dtype.BFloat16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := model.Parse(encode(t, tt.cfg), "test")
			if err != nil {
				t.Fatal(err)
			}
			if s.ConfigDType != tt.wantConfig || s.ModelDType != tt.want {
				t.Errorf("dtype = %q / %v, want %q / %v", s.ConfigDType, s.ModelDType, tt.wantConfig, tt.want)
			}
		})
	}
}

func TestKVHeads(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want int
	}{
		{"num_key_value_heads", llama(), 8},
		{"n_head_kv first", patch(llama(), "n_head_kv", 4), 4},
		{"num_kv_heads before num_key_value_heads", patch(llama(), "num_kv_heads", 16), 16},
		{"multi_query_group_num (ChatGLM)", patch(llama(), "num_key_value_heads", deleteKey, "multi_query_group_num", 2), 2},
		{"num_attention_groups", patch(llama(), "num_key_value_heads", deleteKey, "num_attention_groups", 4), 4},
		{"default: MHA", patch(llama(), "num_key_value_heads", deleteKey), 32},
		{"null falls through", patch(llama(), "n_head_kv", nil), 8},
		{"multi_query => 1", patch(llama(), "multi_query", true), 1},
		{"new-decoder falcon ignores multi_query", patch(llama(), "architectures", []any{"FalconForCausalLM"}, "model_type", "falcon", "multi_query", true, "new_decoder_architecture", true, "num_key_value_heads", deleteKey, "num_kv_heads", 8), 8},
		{"MPT attn_config.kv_n_heads", patch(llama(), "num_key_value_heads", deleteKey, "attn_config", map[string]any{"kv_n_heads": 4}), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := model.Parse(encode(t, tt.cfg), "test")
			if err != nil {
				t.Fatal(err)
			}
			if s.NumKVHeads != tt.want {
				t.Errorf("NumKVHeads = %d, want %d", s.NumKVHeads, tt.want)
			}
		})
	}
}

func TestHeadDim(t *testing.T) {
	s, err := model.Parse(encode(t, patch(llama(), "head_dim", 96)), "test")
	if err != nil {
		t.Fatal(err)
	}
	if s.HeadDim != 96 || s.VHeadDim != 96 {
		t.Errorf("explicit head_dim: %d/%d, want 96/96", s.HeadDim, s.VHeadDim)
	}
	s, err = model.Parse(encode(t, patch(llama(), "head_dim", 96, "v_head_dim", 64)), "test")
	if err != nil {
		t.Fatal(err)
	}
	if s.HeadDim != 96 || s.VHeadDim != 64 {
		t.Errorf("v_head_dim: %d/%d, want 96/64", s.HeadDim, s.VHeadDim)
	}
}

func TestSlidingRules(t *testing.T) {
	tests := []struct {
		name          string
		cfg           map[string]any
		full, sliding int
		window        int
	}{
		{"mistral window slides everywhere", patch(llama(), "architectures", []any{"MistralForCausalLM"}, "model_type", "mistral", "sliding_window", 4096), 0, 32, 4096},
		{"mistral null window", patch(llama(), "architectures", []any{"MistralForCausalLM"}, "model_type", "mistral", "sliding_window", nil), 32, 0, 0},
		{"window >= context never slides", patch(llama(), "sliding_window", 131072), 32, 0, 0},
		{"use_sliding_window false", patch(llama(), "sliding_window", 4096, "use_sliding_window", false), 32, 0, 0},
		{"qwen2 max_window_layers", patch(llama(), "architectures", []any{"Qwen2ForCausalLM"}, "model_type", "qwen2", "sliding_window", 4096, "use_sliding_window", true, "max_window_layers", 28), 28, 4, 4096},
		{"layer_types", patch(llama(), "architectures", []any{"Qwen3ForCausalLM"}, "model_type", "qwen3", "num_hidden_layers", 4, "sliding_window", 1024,
			"layer_types", []any{"sliding_attention", "full_attention", "sliding_attention", "full_attention"}), 2, 2, 1024},
		{"window_size key", patch(llama(), "window_size", 2048), 0, 32, 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := model.Parse(encode(t, tt.cfg), "test")
			if err != nil {
				t.Fatal(err)
			}
			got := []int{s.CountLayers(model.FullAttention), s.CountLayers(model.SlidingAttention), s.SlidingWindow}
			if diff := cmp.Diff([]int{tt.full, tt.sliding, tt.window}, got); diff != "" {
				t.Errorf("full, sliding, window (-want +got):\n%s", diff)
			}
			if s.HybridSWAPool {
				t.Error("HybridSWAPool set for a non-hybrid architecture")
			}
		})
	}
}

func TestDSARequiresIndexTopK(t *testing.T) {
	ds := map[string]any{
		"architectures": []any{"DeepseekV3ForCausalLM"}, "model_type": "deepseek_v3",
		"hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
		"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536,
		"max_position_embeddings": 163840, "torch_dtype": "bfloat16",
	}
	s, err := model.Parse(encode(t, ds), "v3")
	if err != nil {
		t.Fatal(err)
	}
	if s.Attention != model.MLA {
		t.Errorf("without index_topk: %s, want mla", s.Attention)
	}
	s, err = model.Parse(encode(t, patch(ds, "index_topk", 2048, "index_head_dim", 128, "index_n_heads", 64)), "v3.2 on the V3 arch")
	if err != nil {
		t.Fatal(err)
	}
	if s.Attention != model.DSA || s.IndexHeadDim != 128 || s.IndexTopK != 2048 {
		t.Errorf("with index_topk: %s %d %d, want dsa 128 2048", s.Attention, s.IndexHeadDim, s.IndexTopK)
	}
	_, err = model.Parse(encode(t, patch(ds, "index_head_dim", deleteKey)), "dsa without index_head_dim")
	if !errors.Is(err, model.ErrMissing) || !strings.Contains(err.Error(), "index_head_dim") {
		t.Errorf("DSA without index_head_dim: %v, want ErrMissing naming index_head_dim", err)
	}
	// A non-MLA architecture ignores MLA fields.
	s, err = model.Parse(encode(t, patch(llama(), "kv_lora_rank", 512, "qk_rope_head_dim", 64)), "llama with stray fields")
	if err != nil {
		t.Fatal(err)
	}
	if s.Attention != model.MHA {
		t.Errorf("Llama with kv_lora_rank: %s, want mha", s.Attention)
	}
}

func TestUnknownArchitecture(t *testing.T) {
	s, err := model.Parse(encode(t, patch(llama(), "architectures", []any{"FooBarForCausalLM"}, "model_type", "foobar")), "foo")
	if err != nil {
		t.Fatal(err)
	}
	if s.NumLayers != 32 || s.NumKVHeads != 8 || s.HeadDim != 128 {
		t.Errorf("generic read: %d layers, %d kv heads, head_dim %d", s.NumLayers, s.NumKVHeads, s.HeadDim)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "FooBarForCausalLM") {
		t.Errorf("Warnings = %q, want one naming the architecture", s.Warnings)
	}
	_, err = model.Parse([]byte(`{"architectures": ["FooBarForCausalLM"], "vocab_size": 1000}`), "bare")
	for _, want := range []string{"num_hidden_layers", "num_attention_heads", "FooBarForCausalLM"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if !errors.Is(err, model.ErrMissing) {
		t.Errorf("error %v is not ErrMissing", err)
	}
	var fe *model.FieldError
	if !errors.As(err, &fe) || fe.File != "bare" {
		t.Errorf("error %v carries no FieldError for file bare", err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		is     error
		fields []string // substrings the error must contain
	}{
		{"empty", ``, model.ErrSyntax, []string{"empty"}},
		{"truncated", `{"num_hidden_layers": 32,`, model.ErrSyntax, []string{"end of input"}},
		{"bad token", "{\n  \"a\": 1,\n  \"b\": tru\n}", model.ErrSyntax, []string{"line 3"}},
		{"array top level", `[1, 2]`, model.ErrSyntax, []string{"array"}},
		{"trailing data", `{} {}`, model.ErrSyntax, []string{"trailing"}},
		{"layers as string", string(encode(t, patch(llama(), "num_hidden_layers", "32"))), model.ErrType, []string{"num_hidden_layers", `"32"`}},
		{"fractional heads", string(encode(t, patch(llama(), "num_attention_heads", 32.5))), model.ErrType, []string{"num_attention_heads"}},
		{"architectures not a list", string(encode(t, patch(llama(), "architectures", "LlamaForCausalLM"))), model.ErrType, []string{"architectures"}},
		{"rope_scaling not an object", string(encode(t, patch(llama(), "rope_scaling", 8))), model.ErrType, []string{"rope_scaling"}},
		{"zero layers", string(encode(t, patch(llama(), "num_hidden_layers", 0))), model.ErrRange, []string{"num_hidden_layers"}},
		{"negative kv heads", string(encode(t, patch(llama(), "num_key_value_heads", -8))), model.ErrRange, []string{"num_key_value_heads"}},
		{"kv heads do not divide", string(encode(t, patch(llama(), "num_key_value_heads", 5))), model.ErrRange, []string{"does not divide"}},
		{"negative head_dim", string(encode(t, patch(llama(), "head_dim", -128))), model.ErrRange, []string{"head_dim"}},
		{"absurd layers", string(encode(t, patch(llama(), "num_hidden_layers", 1e15))), model.ErrRange, []string{"num_hidden_layers"}},
		{"absurd float layers", `{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1e300, "num_attention_heads": 32, "hidden_size": 4096}`, model.ErrRange, []string{"num_hidden_layers"}},
		{"huge layers", string(encode(t, patch(llama(), "num_hidden_layers", 5_000_000))), model.ErrRange, []string{"num_hidden_layers"}},
		{"unknown dtype", string(encode(t, patch(llama(), "torch_dtype", "int3"))), model.ErrRange, []string{"torch_dtype", "int3"}},
		{"negative context", string(encode(t, patch(llama(), "max_position_embeddings", -1))), model.ErrRange, []string{"context_length"}},
		{"negative vocab", string(encode(t, patch(llama(), "vocab_size", -5))), model.ErrRange, []string{"vocab_size"}},
		{"negative intermediate", string(encode(t, patch(llama(), "intermediate_size", -5))), model.ErrRange, []string{"intermediate_size"}},
		{"negative experts", string(encode(t, patch(llama(), "num_local_experts", -8, "num_experts_per_tok", 2))), model.ErrRange, []string{"num_local_experts"}},
		{"layer_types length", string(encode(t, patch(llama(), "layer_types", []any{"full_attention"}))), model.ErrRange, []string{"layer_types"}},
		{"unknown layer type", string(encode(t, patch(llama(), "num_hidden_layers", 1, "layer_types", []any{"weird"}))), model.ErrRange, []string{"weird"}},
		{"infinite factor", `{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 32, "hidden_size": 4096, "rope_scaling": {"factor": Infinity}}`, model.ErrType, []string{"rope_scaling.factor", "Infinity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := model.Parse([]byte(tt.data), "cfg.json")
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", s)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not contain %q", err, f)
				}
			}
			if !strings.HasPrefix(err.Error(), "model: ") {
				t.Errorf("error %q lacks the model: prefix", err)
			}
		})
	}
}

// TestAllErrorsAtOnce checks that independent problems are all reported.
func TestAllErrorsAtOnce(t *testing.T) {
	_, err := model.Parse(encode(t, patch(llama(), "num_key_value_heads", 5, "head_dim", -1, "max_position_embeddings", 0)), "x")
	for _, want := range []string{"num_key_value_heads", "head_dim", "context_length"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %s", err, want)
		}
	}
	_, err = model.Parse(encode(t, patch(llama(), "num_hidden_layers", "x", "num_attention_heads", true)), "x")
	for _, want := range []string{"num_hidden_layers", "num_attention_heads"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %s", err, want)
		}
	}
}

func TestNonFinite(t *testing.T) {
	data := strings.Replace(string(encode(t, llama())), `"vocab_size":128256`, `"vocab_size":128256,"time_step_limit":[0.0, Infinity],"x":-Infinity,"y":NaN,"s":"Infinity NaN"`, 1)
	s, err := model.Parse([]byte(data), "inf")
	if err != nil {
		t.Fatal(err)
	}
	if s.NumLayers != 32 {
		t.Errorf("NumLayers = %d", s.NumLayers)
	}
	// The error position is that of the input, not of the rewritten text.
	_, err = model.Parse([]byte("{\"a\": [Infinity, NaN],\n\"b\": ]}"), "pos")
	if err == nil || !strings.Contains(err.Error(), "line 2, column 6") {
		t.Errorf("error %v, want line 2, column 6", err)
	}
}

func TestValidate(t *testing.T) {
	s, err := model.Parse(encode(t, llama()), "ok")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	bad := *s
	bad.LayerKinds = append([]model.LayerKind{}, s.LayerKinds...)
	bad.LayerKinds[3] = model.SlidingAttention
	bad.Attention = "gqa"
	bad.HybridSWAPool = true
	bad.ModelDType = dtype.Invalid
	err = bad.Validate()
	for _, want := range []string{"sliding_window", "attention_kind", "model_dtype"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v does not report %s", err, want)
		}
	}
	bad = *s
	bad.LayerKinds = s.LayerKinds[:3]
	bad.Linear = &model.LinearSpec{Kind: "mamba2", LayerIDs: []int{5}}
	err = bad.Validate()
	for _, want := range []string{"layer_kinds", "linear_attention.num_heads", "linear_attention.layer_ids"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v does not report %s", err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	data := encode(t, llama())
	dir := t.TempDir()
	snap := filepath.Join(dir, "models--meta-llama--Llama-3.1-8B-Instruct", "snapshots", "0e9e39f")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, name string
	}{
		{snap, "meta-llama/Llama-3.1-8B-Instruct"},
		{filepath.Join(snap, "config.json"), "meta-llama/Llama-3.1-8B-Instruct"},
		{plain, filepath.ToSlash(plain)},
		{filepath.Join(plain, "config.json"), filepath.ToSlash(filepath.Join(plain, "config.json"))},
	}
	for _, tt := range tests {
		s, err := model.Load(tt.path)
		if err != nil {
			t.Fatalf("Load(%s): %v", tt.path, err)
		}
		if s.Name != tt.name || s.NumLayers != 32 {
			t.Errorf("Load(%s): name %q, %d layers; want %q, 32", tt.path, s.Name, s.NumLayers, tt.name)
		}
	}
	if _, err := model.Load(dir); !errors.Is(err, model.ErrNoConfig) {
		t.Errorf("Load(dir without config) = %v, want ErrNoConfig", err)
	}
	if _, err := model.Load(filepath.Join(dir, "nope")); err == nil {
		t.Error("Load(missing) succeeded")
	}

	fsys := fstest.MapFS{
		"m/config.json": {Data: data},
		"x.json":        {Data: []byte(`{"num_hidden_layers": "x"}`)},
		"empty/readme":  {Data: []byte("hi")},
	}
	for _, p := range []string{"m", "m/config.json"} {
		s, err := model.LoadFS(fsys, p)
		if err != nil || s.NumKVHeads != 8 {
			t.Errorf("LoadFS(%s) = %v, %v", p, s, err)
		}
	}
	if _, err := model.LoadFS(fsys, "x.json"); !errors.Is(err, model.ErrType) {
		t.Errorf("LoadFS(x.json) = %v, want ErrType", err)
	}
	if _, err := model.LoadFS(fsys, "empty"); !errors.Is(err, model.ErrNoConfig) {
		t.Errorf("LoadFS(empty) = %v, want ErrNoConfig", err)
	}
}

func TestCompressedAndSparseIndex(t *testing.T) {
	pro, err := catalog.Load("deepseek-ai/DeepSeek-V4-Pro")
	if err != nil {
		t.Fatal(err)
	}
	c := pro.Compressed
	// 62 compress_ratios entries, cut to 61 layers: 128,128, then 4,128 × 29, then 4.
	if c == nil || len(c.Ratios) != 61 || c.CountRatio(4) != 30 || c.CountRatio(128) != 31 || c.Window != 128 || pro.QKNopeHeadDim != 448 {
		t.Errorf("V4-Pro compressed %+v, nope %d", c, pro.QKNopeHeadDim)
	}
	m3, err := catalog.Load("MiniMaxAI/MiniMax-M3")
	if err != nil {
		t.Fatal(err)
	}
	si := m3.SparseIndex
	if si == nil || si.IndexDim != 128 || len(si.DenseLayerIDs) != 3 || len(si.SparseLayerIDs) != 57 || len(si.KOnlyLayerIDs) != 57 || si.SparseLayerIDs[0] != 3 {
		t.Errorf("M3 sparse index %+v", si)
	}
	for _, bad := range []string{
		`{"architectures":["DeepseekV4ForCausalLM"],"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":1,"head_dim":512,"qk_rope_head_dim":64,"index_head_dim":128,"sliding_window":128,"compress_ratios":[4]}`,
		`{"architectures":["DeepseekV4ForCausalLM"],"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":1,"head_dim":512,"qk_rope_head_dim":64,"index_head_dim":128,"sliding_window":128,"compress_ratios":[4,8]}`,
		`{"architectures":["DeepseekV4ForCausalLM"],"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":1,"head_dim":512,"qk_rope_head_dim":64,"index_head_dim":128,"compress_ratios":[4,128]}`,
		`{"architectures":["MiniMaxM3SparseForCausalLM"],"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":1,"head_dim":64,"sparse_attention_config":{"sparse_index_dim":128,"sparse_attention_freq":[0,1,1]}}`,
	} {
		if _, err := model.Parse([]byte(bad), "bad"); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
