package model_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/model"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and a
// successful result must pass Validate and give shapes StateShapes accepts
// or rejects without panicking.
func FuzzParse(f *testing.F) {
	for _, n := range []string{"meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3.2", "openai/gpt-oss-120b",
		"Qwen/Qwen3-Next-80B-A3B-Instruct", "nvidia/Nemotron-H-56B-Base-8K", "moonshotai/Kimi-Linear-48B-A3B-Instruct",
		"XiaomiMiMo/MiMo-V2-Flash", "meta-llama/Llama-4-Scout-17B-16E", "google/gemma-3-1b-pt", "AntonV/mamba2-130m-hf"} {
		data, err := catalog.Config(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"num_hidden_layers": 1e400, "x": [NaN, -Infinity]}`))
	f.Add([]byte(`{"architectures": ["NemotronHForCausalLM"], "num_hidden_layers": 3, "hybrid_override_pattern": "M*-", "num_attention_heads": 2, "hidden_size": 8}`))
	f.Add([]byte(`{"text_config": {"num_hidden_layers": 2, "num_attention_heads": 1, "hidden_size": 2}}`))
	f.Add([]byte(`"Infinity"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := model.Parse(data, "fuzz")
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse result fails Validate: %v", err)
		}
		_ = s.Summary()
		if s.Linear != nil {
			for _, tp := range []int{1, 2, 8} {
				_, _, _ = s.Linear.StateShapes(tp)
			}
		}
	})
}
