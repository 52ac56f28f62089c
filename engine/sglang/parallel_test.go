package sglang_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

// SGLang's attention layers assert that the attention TP size splits the
// query heads and that KV heads and TP divide one another: the launches
// vLLM refuses fail in SGLang too. The error is an *engine.Refusal on --tp-size
// carrying a *TPError with the sizes that work, and the fix plans.
func TestTensorParallelDivisibility(t *testing.T) {
	tests := []struct {
		model    string
		parallel sglang.Parallel
		msg      string
		valid    []int
		fix      string
	}{
		{"microsoft/phi-4", sglang.Parallel{TP: 8, PP: 1, DP: 1},
			"AssertionError: assert self.total_num_kv_heads % attn_tp_size == 0 (10 KV heads, attention TP size 8)", []int{1, 2, 5, 10, 20, 40}, "10"},
		{"google/gemma-3-1b-pt", sglang.Parallel{TP: 8, PP: 1, DP: 1},
			"AssertionError: assert self.total_num_heads % attn_tp_size == 0 (4 attention heads, attention TP size 8)", []int{1, 2, 4}, "4"},
		{"meta-llama/Llama-3.1-8B-Instruct", sglang.Parallel{TP: 3, PP: 1, DP: 1},
			"AssertionError: assert self.total_num_heads % attn_tp_size == 0 (32 attention heads, attention TP size 3)", []int{1, 2, 4, 8, 16, 32}, "4"},
		// DP attention: attention TP 24/2 = 12 does not split 32 heads; 16
		// (32 over 2 DP ranks) does.
		{"meta-llama/Llama-3.1-8B-Instruct", sglang.Parallel{TP: 24, PP: 1, DP: 2, EnableDPAttention: true},
			"AssertionError: assert self.total_num_heads % attn_tp_size == 0 (32 attention heads, attention TP size 12)", []int{1, 2, 4, 8, 16, 32}, "32"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			s, err := catalog.Load(tt.model)
			if err != nil {
				t.Fatalf("catalog: %v", err)
			}
			in := sglang.Input{Spec: s, Parallel: tt.parallel, Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"},
				PostLoadFreeBytes: 40 << 30}
			_, err = sglang.New(in)
			var fe *engine.Refusal
			var te *sglang.TPError
			if !errors.As(err, &fe) || !errors.As(err, &te) || !errors.Is(err, sglang.ErrTensorParallel) {
				t.Fatalf("err = %v, want an *engine.Refusal with a *TPError", err)
			}
			if te.Message != tt.msg || fe.Flag != "--tp-size" || fe.Value != tt.fix {
				t.Errorf("message %q, fix %s %s; want %q, --tp-size %s", te.Message, fe.Flag, fe.Value, tt.msg, tt.fix)
			}
			if diff := cmp.Diff(tt.valid, te.ValidSizes); diff != "" {
				t.Errorf("valid sizes (-want +got):\n%s", diff)
			}
			in.Parallel.TP = te.Nearest() * in.Parallel.AttnDP()
			if _, err := sglang.New(in); err != nil {
				t.Errorf("the fix --tp-size %d: %v", in.Parallel.TP, err)
			}
		})
	}
	// MLA shards only the query heads.
	s, err := catalog.Load("deepseek-ai/DeepSeek-V3")
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	if _, err := sglang.New(sglang.Input{Spec: s, Parallel: sglang.Parallel{TP: 16, PP: 1, DP: 1}, PostLoadFreeBytes: 40 << 30}); errors.Is(err, sglang.ErrTensorParallel) {
		t.Errorf("DeepSeek-V3 at TP 16: %v", err)
	}
}
