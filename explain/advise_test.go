package explain_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/explain"
	"github.com/kvcfg/kvcfg/plan"
)

// notEnough is SGLang's error with the fraction the launch ran with.
const notEnough = "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.7"

// llama70 is Llama-3.1-70B on two H100s (TP 2): the weights leave no KV
// memory at 0.7; one 32,768-token request needs 0.915 (33,146 tokens),
// four 8,192-token requests the same, one 8,192-token request 0.866 (8,310
// tokens); six need more than SGLang's safe 0.93, so TP 4 (34 requests).
// (Each H100 rank loses 1254 MiB to NCCL over NVSwitch and 26 MiB to the
// custom all-reduce before weights: sglang.PreLoadMemory.)
func llama70(ctx, concurrency int) plan.Request {
	return plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", TPSize: 2, ContextLength: ctx, Concurrency: concurrency}
}

// fractions are the memory fractions an answer states (0.7, 0.915, ...).
var fractions = regexp.MustCompile(`\b0\.\d+\b`)

// The message's fraction is the plan's input, and the answer names one
// value: the planned one, in the explanation and the advice alike.
func TestAdvisePlansThePastedFraction(t *testing.T) {
	tests := []struct {
		name        string
		req         plan.Request
		flag, value string
		tokens      int64
		requests    int64
	}{
		{"one 32k request", llama70(32768, 0), "--mem-fraction-static", "0.915", 33146, 1},
		{"one 8k request", llama70(8192, 1), "--mem-fraction-static", "0.866", 8310, 1},
		{"--concurrency 4", llama70(8192, 4), "--mem-fraction-static", "0.915", 33146, 4},
		{"--concurrency 6: past the safe share", llama70(8192, 6), "--tp-size", "4", 278970, 34},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := explain.Explain(notEnough)
			if err != nil {
				t.Fatal(err)
			}
			a, err := explain.Advise(context.Background(), e, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{a.FromMessage, a.Reproduced, a.Flag, a.Value, e.Knob, e.Value, a.Report.MaxTotalNumTokens, a.Report.MaxConcurrencyAtContextLength}
			want := []any{[]string{"mem_fraction_static=0.7"}, true, tt.flag, tt.value, tt.flag, tt.value, tt.tokens, tt.requests}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("advice (-want +got):\n%s", d)
			}
			if a.TargetConcurrency != max(tt.req.Concurrency, 1) {
				t.Errorf("target %d", a.TargetConcurrency)
			}
			// The plan ran at the pasted 0.7 (not SGLang's default), and
			// the answer states no fraction but the launch's and the
			// planned one: neither the pattern's rule of thumb nor the
			// engine's minimum.
			if !strings.Contains(a.PlanError, "--mem-fraction-static=0.7.") {
				t.Errorf("plan error %q: not planned at the pasted 0.7", a.PlanError)
			}
			for _, s := range []string{e.Advice, a.Note, a.PlanError} {
				for _, f := range fractions.FindAllString(s, -1) {
					if f != "0.7" && f != tt.value {
						t.Errorf("the answer states %s besides %s: %q", f, tt.value, s)
					}
				}
			}
			if !strings.Contains(e.Advice, tt.flag+" "+tt.value) {
				t.Errorf("advice %q does not name %s %s", e.Advice, tt.flag, tt.value)
			}
		})
	}
}

// A flag given wins over the message's value.
func TestAdviseFlagWinsOverMessage(t *testing.T) {
	e, err := explain.Explain(notEnough)
	if err != nil {
		t.Fatal(err)
	}
	req := llama70(32768, 0)
	req.MemFractionStatic = 0.8
	a, err := explain.Advise(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.FromMessage) != 0 || !strings.Contains(a.PlanError, "=0.8.") || a.Value != "0.915" {
		t.Errorf("from message %q, plan error %q, value %s", a.FromMessage, a.PlanError, a.Value)
	}
}

// Without a context length the plan takes the model's full context, and
// says so in the advice.
func TestAdviseSaysWhatItAssumed(t *testing.T) {
	e, err := explain.Explain(notEnough)
	if err != nil {
		t.Fatal(err)
	}
	a, err := explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", TPSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Assumed) != 1 || !strings.Contains(a.Assumed[0], "context length 131072 tokens") {
		t.Fatalf("assumed %q", a.Assumed)
	}
	if !strings.Contains(e.Advice, a.Assumed[0]) || e.Value == "" || e.Value != a.Value {
		t.Errorf("explanation %s %q does not state the assumption or the planned value %s", e.Value, e.Advice, a.Value)
	}
	// Nothing given: the default model and GPU are assumed too.
	e, _ = explain.Explain(notEnough)
	a, err = explain.Advise(context.Background(), e, plan.Request{ContextLength: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Assumed) != 2 || !strings.HasPrefix(a.Assumed[0], "model ") || !strings.HasPrefix(a.Assumed[1], "GPU ") {
		t.Errorf("assumed %q", a.Assumed)
	}
}

// vLLM's message gives the launch's max_model_len and the KV budget it
// measured: the plan uses them (not the L4's modelled budget, 36,224
// tokens), sharpened by vLLM's own estimate, so one request gets exactly
// vLLM's estimate and --concurrency 4 a quarter of the pool.
func TestAdviseVLLMPastedBudget(t *testing.T) {
	const msg = "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.56 GiB). Based on the available memory, the estimated maximum model length is 70112. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
	for _, tt := range []struct {
		concurrency int
		value       string
	}{{0, "70112"}, {4, "17520"}} {
		e, err := explain.Explain(msg)
		if err != nil {
			t.Fatal(err)
		}
		a, err := explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", Concurrency: tt.concurrency})
		if err != nil {
			t.Fatal(err)
		}
		got := []any{a.FromMessage, a.Flag, a.Value, e.Value, a.Report.MaxConcurrencyAtContextLength >= int64(max(tt.concurrency, 1))}
		want := []any{[]string{"kv_cache_memory=8.56GiB", "max_model_len=131072"}, "--max-model-len", tt.value, tt.value, true}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("concurrency %d (-want +got):\n%s", tt.concurrency, d)
		}
		if strings.Contains(e.Advice, "36224") || !strings.Contains(e.Advice, "--max-model-len "+tt.value) {
			t.Errorf("advice %q", e.Advice)
		}
	}
}

// TensorRT-LLM's warning states the launch's free_gpu_memory_fraction:
// the plan uses it.
func TestAdviseTRTLLMPastedFraction(t *testing.T) {
	e, err := explain.Explain("[TensorRT-LLM][WARNING] Both freeGpuMemoryFraction (aka. kv_cache_free_gpu_mem_fraction) and maxTokens (aka. max_tokens_in_paged_kv_cache) are set (to 0.5 and 20000, respectively)")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"free_gpu_memory_fraction": "0.5"}, e.Launch); d != "" {
		t.Fatalf("launch (-want +got):\n%s", d)
	}
	a, err := explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", ContextLength: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.FromMessage, []string{"free_gpu_memory_fraction=0.5"}) || a.Report.FreeGPUMemoryFraction != 0.5 {
		t.Errorf("from message %q, planned fraction %g", a.FromMessage, a.Report.FreeGPUMemoryFraction)
	}
}

// A pasted value the engine refuses (a context over the model's: every
// engine refuses it at start-up) does not turn the explanation into an
// error: the launch is planned with it and reproduces the refusal, and the one
// value named is the model's context.
func TestAdviseRefusedPastedValue(t *testing.T) {
	e, err := explain.Explain("User-specified context_length (10000000) is greater than the derived context_length (131072).")
	if err != nil {
		t.Fatal(err)
	}
	a, err := explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100"})
	if err != nil {
		t.Fatalf("advise: %v", err)
	}
	if !slices.Equal(a.FromMessage, []string{"context_length=10000000"}) || !a.Reproduced {
		t.Errorf("from message %q, reproduced %v", a.FromMessage, a.Reproduced)
	}
	if e.Value != "131072" || (a.Value != "" && a.Value != "131072") {
		t.Errorf("value %q / %q (note %q), want the model's context 131072", e.Value, a.Value, a.Note)
	}
}

// vLLM V0's message gives the pool's size in tokens, its log the block
// count: the plan pins the pool to it (2,000 blocks of 16 tokens), so the
// longest context is the pool's 32,000 tokens, or 16,000 for two
// requests, whatever kvcfg's memory model of the A100 says.
func TestAdviseVLLMPastedBlocks(t *testing.T) {
	const msg = "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (32000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
	for _, tt := range []struct {
		name, log, version string
		concurrency        int
		value              string
		from, measured     []string
	}{
		{"V0", "", "0.6", 0, "32000", []string{"max_model_len=131072", "num_gpu_blocks_override=2000 (32000 tokens)"}, nil},
		{"V0, two requests", "", "0.6", 2, "16000", []string{"max_model_len=131072", "num_gpu_blocks_override=2000 (32000 tokens)"}, nil},
		{"newest profile", "", "", 0, "32000", []string{"max_model_len=131072", "num_gpu_blocks_override=2000 (32000 tokens)"}, nil},
		{"the log's block count", "INFO 07-01 10:00:00 executor_base.py:110] # CUDA blocks: 2000, # CPU blocks: 2048\n", "0.7", 0, "32000",
			[]string{"max_model_len=131072"}, []string{"num_gpu_blocks_override"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := explain.Explain(tt.log + msg)
			if err != nil {
				t.Fatal(err)
			}
			a, err := explain.Advise(context.Background(), e, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "A100-40GB",
				VLLMVersion: tt.version, Concurrency: tt.concurrency})
			if err != nil {
				t.Fatal(err)
			}
			got := []any{a.FromMessage, a.Measured, a.Flag, a.Value, e.Value, a.Report.NumGPUBlocks}
			want := []any{tt.from, tt.measured, "--max-model-len", tt.value, tt.value, int64(2000)}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
