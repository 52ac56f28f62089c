package model_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/catalog"
)

// TestSummaryJSON pins the inspect JSON keys and their nulls.
func TestSummaryJSON(t *testing.T) {
	required := []string{"architecture", "model_type", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim", "v_head_dim",
		"kv_lora_rank", "qk_rope_head_dim", "index_head_dim", "sliding_window", "num_full_attention_layers", "num_swa_layers",
		"num_linear_attention_layers", "hybrid_swa_pool", "context_length", "model_dtype", "attention_kind"}
	tests := []struct {
		name string
		want map[string]any // subset of keys
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", map[string]any{
			"architecture": "LlamaForCausalLM", "model_type": "llama", "num_layers": 32.0, "num_attention_heads": 32.0, "num_kv_heads": 8.0,
			"head_dim": 128.0, "v_head_dim": 128.0, "kv_lora_rank": nil, "qk_rope_head_dim": nil, "index_head_dim": nil, "sliding_window": nil,
			"num_full_attention_layers": 32.0, "num_swa_layers": 0.0, "num_linear_attention_layers": 0.0, "hybrid_swa_pool": false,
			"context_length": 131072.0, "model_dtype": "bfloat16", "attention_kind": "mha", "linear_attention": nil, "quantization": nil,
		}},
		{"deepseek-ai/DeepSeek-V3.2", map[string]any{
			"attention_kind": "dsa", "kv_lora_rank": 512.0, "qk_rope_head_dim": 64.0, "index_head_dim": 128.0, "index_topk": 2048.0,
			"sliding_window": nil, "num_full_attention_layers": 61.0, "context_length": 163840.0,
		}},
		{"openai/gpt-oss-120b", map[string]any{
			"attention_kind": "mha", "sliding_window": 128.0, "engine_sliding_window": 127.0, "num_swa_layers": 18.0,
			"num_full_attention_layers": 18.0, "hybrid_swa_pool": true, "kv_lora_rank": nil, "config_dtype": nil, "model_dtype": "bfloat16",
		}},
		{"AntonV/mamba2-130m-hf", map[string]any{
			"attention_kind": nil, "num_attention_heads": nil, "num_kv_heads": nil, "head_dim": nil, "v_head_dim": nil,
			"num_linear_attention_layers": 24.0, "num_full_attention_layers": 0.0, "model_dtype": "float16",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := catalog.Load(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(s.Summary())
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range required {
				if _, ok := got[k]; !ok {
					t.Errorf("key %s missing", k)
				}
			}
			sub := map[string]any{}
			for k := range tt.want {
				sub[k] = got[k]
			}
			if diff := cmp.Diff(tt.want, sub); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
