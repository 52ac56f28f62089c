package plan_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// Launches the engines refuse while loading the model (heads that do not
// split over TP, a context longer than the model's, a KV dtype no
// attention backend on the GPU accepts) are refusals with a fix kvcfg
// re-planned, not input errors.
func TestLoadTimeRefusals(t *testing.T) {
	tests := []struct {
		name    string
		req     plan.Request
		words   string
		fixArgs []string
		verdict string
	}{
		{"sglang phi-4 tp8", plan.Request{Model: "microsoft/phi-4", GPU: "H100", TPSize: 8},
			"AssertionError: assert self.total_num_kv_heads % attn_tp_size == 0 (10 KV heads, attention TP size 8)",
			[]string{"--tp-size", "10"}, plan.VerdictRefuses},
		{"sglang gemma-3-1b tp8", plan.Request{Model: "google/gemma-3-1b-pt", GPU: "H100", TPSize: 8},
			"AssertionError: assert self.total_num_heads % attn_tp_size == 0 (4 attention heads, attention TP size 8)",
			[]string{"--tp-size", "4"}, plan.VerdictRefuses},
		{"vllm phi-4 tp8", plan.Request{Engine: plan.EngineVLLM, Model: "microsoft/phi-4", GPU: "H100", TPSize: 8},
			"AssertionError: assert self.total_num_kv_heads % tp_size == 0 (10 KV heads, tensor parallel size 8)",
			[]string{"--tensor-parallel-size", "10"}, plan.VerdictRefuses},
		// Issue 32: TensorRT-LLM's attention asserts the heads split.
		{"trtllm llama tp3", plan.Request{Engine: plan.EngineTRTLLM, TPSize: 3},
			"AssertionError: assert self.num_heads % tp_size == 0 (32 attention heads, tp_size 3)",
			[]string{"--tp-size", "4"}, plan.VerdictRefuses},
		// Issue 32: a context longer than the model's is one answer on
		// every engine: refused, the fix the longest context.
		{"sglang context too long", plan.Request{ContextLength: 500000},
			"User-specified context_length (500000) is greater than the derived context_length (131072)",
			[]string{"--context-length", "131072"}, plan.VerdictRefuses},
		{"vllm context too long", plan.Request{Engine: plan.EngineVLLM, ContextLength: 500000},
			"User-specified max_model_len (500000) is greater than the derived max_model_len (131072)",
			[]string{"--max-model-len", "131072"}, plan.VerdictRefuses},
		{"trtllm context too long", plan.Request{Engine: plan.EngineTRTLLM, ContextLength: 500000},
			"Specified self.max_seq_len=500000 is larger than what the model can support (131072)",
			[]string{"--max-seq-len", "131072"}, plan.VerdictRefuses},
		{"vllm mla fp8_e5m2", plan.Request{Engine: plan.EngineVLLM, Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8, KVCacheDType: "fp8_e5m2"},
			"No valid attention backend found for cuda with",
			[]string{"--kv-cache-dtype", "fp8"}, plan.VerdictRefuses},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), tt.req)
			if !errors.Is(err, plan.ErrInfeasible) || errors.Is(err, plan.ErrInvalid) {
				t.Fatalf("err = %v, want an infeasible plan", err)
			}
			if rep == nil {
				t.Fatal("no report")
			}
			if len(rep.Error) < len(tt.words) || rep.Error[:len(tt.words)] != tt.words {
				t.Errorf("error = %q, want the engine's words %q", rep.Error, tt.words)
			}
			if rep.Verdict != tt.verdict || !slices.Equal(rep.FixArgs, tt.fixArgs) {
				t.Errorf("verdict %q fix_args %q, want %q %q (hint %q)", rep.Verdict, rep.FixArgs, tt.verdict, tt.fixArgs, rep.FixHint)
			}
			// A TP refusal's fix names every size that splits the heads.
			if tt.req.TPSize == 8 && tt.req.KVCacheDType == "" && !strings.Contains(rep.FixHint, "that work: 1, 2,") && !strings.Contains(rep.FixHint, "heads: 1, 2,") {
				t.Errorf("fix %q does not name the TP sizes that work", rep.FixHint)
			}
		})
	}
}
