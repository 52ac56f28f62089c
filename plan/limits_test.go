package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// TestVerdictLimitsRule: every engine's verdict has one shape (issue 31
// item 5): the limits on the requests running at once, the binding one
// (the smallest, equal to max_concurrency_at_context_length), and, when the
// target is missed, the flag value that lifts it, re-planned.
func TestVerdictLimitsRule(t *testing.T) {
	tests := []struct {
		name string
		req  plan.Request
		want string
	}{
		{"SGLang: the Mamba state pool, lifted by SGLang's other remedy",
			plan.Request{Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", TPSize: 4, ContextLength: 2048, MaxRunningRequests: 400, Concurrency: 400},
			"bound by mamba_state_pool=229 [max_running_requests=400 kv_capacity=604107 mamba_state_pool=229 kv_pool=589] lift --mamba-ssm-dtype bfloat16 → 400 bound by max_running_requests serves"},
		{"SGLang: the KV pool at the context length",
			plan.Request{Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", TPSize: 4, ContextLength: 8192, MaxRunningRequests: 400, Concurrency: 400},
			"bound by kv_pool=147 [max_running_requests=400 kv_capacity=604107 mamba_state_pool=229 kv_pool=147] lift --kv-cache-dtype fp8_e4m3 → 229 bound by mamba_state_pool"},
		{"SGLang: the heuristic cap",
			plan.Request{Model: "meta-llama/Llama-3.2-1B-Instruct", ContextLength: 256, Concurrency: 5000},
			"bound by heuristic_estimate=4096 [kv_capacity=1029785 heuristic_estimate=4096 kv_pool=8045] lift --max-running-requests 8045 → 8045 bound by max_running_requests serves"},
		{"vLLM: max_num_seqs",
			plan.Request{Engine: "vllm", MaxNumSeqs: 8, MaxModelLen: 8192, Concurrency: 20},
			"bound by max_num_seqs=8 [max_num_seqs=8 kv_blocks=55] lift --max-num-seqs 55 → 55 bound by max_num_seqs serves"},
		{"vLLM: KV blocks with Mamba groups",
			plan.Request{Engine: "vllm", Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", TPSize: 4, MaxModelLen: 8192, Concurrency: 2000},
			"bound by kv_blocks=257 [max_num_seqs=1024 kv_blocks=257 mamba_groups=1590] lift --kv-cache-dtype fp8 → 433 bound by kv_blocks"},
		{"TensorRT-LLM: max_batch_size",
			plan.Request{Engine: "trtllm", MaxBatchSize: 16, ContextLength: 8192, Concurrency: 64},
			"bound by max_batch_size=16 [max_batch_size=16 kv_blocks=55] lift --max-batch-size 55 → 55 bound by max_batch_size"},
		{"TensorRT-LLM: the window clamp of max_seq_len",
			plan.Request{Engine: "trtllm", Model: "meta-llama/Llama-3.1-70B-Instruct", TPSize: 2, Concurrency: 2},
			"bound by max_seq_len=1 [max_batch_size=2048 max_seq_len=1 kv_blocks=1] lift --free-gpu-memory-fraction 0.95 → 1 bound by max_seq_len"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			bound := int64(-1)
			fmt.Fprintf(&b, "bound by %s", rep.BoundBy)
			for _, l := range rep.ConcurrencyLimits {
				if l.Source == rep.BoundBy && bound < 0 {
					bound = l.Value
				}
			}
			fmt.Fprintf(&b, "=%d [", bound)
			for i, l := range rep.ConcurrencyLimits {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%s=%d", l.Source, l.Value)
			}
			b.WriteByte(']')
			if l := rep.Lift; l != nil {
				fmt.Fprintf(&b, " lift %s → %d bound by %s", strings.Join(l.Args, " "), l.MaxConcurrency, l.BoundBy)
				if l.Serves {
					b.WriteString(" serves")
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if bound != rep.MaxConcurrencyAtContextLength {
				t.Errorf("binding limit %d, max_concurrency_at_context_length %d", bound, rep.MaxConcurrencyAtContextLength)
			}
		})
	}
}
