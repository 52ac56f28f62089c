package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// TensorRT-LLM through the common entry point: the worked examples of
// docs/trtllm.md give the same numbers as engine/trtllm, and the report
// carries them under the common keys and the trtllm ones.
func TestTRTLLMWorkedExamples(t *testing.T) {
	gib := func(f float64) units.Size { return units.Size(f * (1 << 30)) }
	tests := []struct {
		name                    string
		req                     plan.Request
		cell, estimate          int64
		blocks, tokens          int64
		maxSeqLen               int
		resolved, lastLogPrefix string
		concurrencyAtMaxSeqLen  int64
	}{
		{
			name: "gpt-oss-120b 1.1 measured",
			req:  plan.Request{Model: "openai/gpt-oss-120b", TRTLLMVersion: "1.1.0rc3", KVCacheMemory: 6393065472},
			cell: 73728, estimate: 73728, blocks: 2710, tokens: 86720, maxSeqLen: 86720, resolved: "bf16",
			lastLogPrefix:          "max_seq_len=86720, max_num_requests=2048",
			concurrencyAtMaxSeqLen: 1,
		},
		{
			name: "Kimi-K2 MLA fp8 TP8",
			req:  plan.Request{Model: "moonshotai/Kimi-K2-Instruct", GPU: "H200", TPSize: 8, KVCacheDType: "fp8", KVCacheMemory: gib(40), TRTLLMVersion: "1.1"},
			cell: 35136, estimate: 35136, blocks: ((40<<30)/35136 + 31) / 32, resolved: "fp8_e4m3", maxSeqLen: 131072, // 1.1 rounds up to whole blocks
		},
		{
			name: "Qwen3-8B nvfp4 on B200",
			req:  plan.Request{Model: "Qwen/Qwen3-8B", GPU: "B200", KVCacheDType: "nvfp4", KVCacheMemory: gib(20), TRTLLMVersion: "latest"},
			cell: 41472, estimate: 41472, resolved: "nvfp4", maxSeqLen: 40960,
		},
		{
			// TP16 over 8 KV heads: the estimate floors 128·8/16 = 64
			// elements per layer, the allocation keeps a whole head.
			name: "Llama-3.1-8B fp8 TP16",
			req:  plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", TPSize: 16, KVCacheDType: "fp8", KVCacheMemory: gib(40), TRTLLMVersion: "1.1"},
			cell: 2 * 32 * 128, estimate: 2 * 32 * 64, resolved: "fp8_e4m3", maxSeqLen: 131072,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Engine = plan.EngineTRTLLM
			r, err := plan.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if int64(r.CellSizeBytes) != tt.cell || r.EstimateBytesPerToken != tt.estimate {
				t.Errorf("cell %v estimate %d, want %d %d", r.CellSizeBytes, r.EstimateBytesPerToken, tt.cell, tt.estimate)
			}
			if r.ResolvedKVCacheDType != tt.resolved || r.MaxSeqLen != tt.maxSeqLen || r.ContextLength != tt.maxSeqLen {
				t.Errorf("dtype %s max_seq_len %d context %d, want %s %d", r.ResolvedKVCacheDType, r.MaxSeqLen, r.ContextLength, tt.resolved, tt.maxSeqLen)
			}
			if tt.blocks > 0 && r.NumBlocks != tt.blocks {
				t.Errorf("blocks %d, want %d", r.NumBlocks, tt.blocks)
			}
			if r.MaxTokens != r.NumBlocks*int64(r.TokensPerBlock) || r.MaxTotalNumTokens != r.MaxTokens {
				t.Errorf("max_tokens %d, blocks %d × %d, max_total_num_tokens %d", r.MaxTokens, r.NumBlocks, r.TokensPerBlock, r.MaxTotalNumTokens)
			}
			if tt.tokens > 0 && r.MaxTokens != tt.tokens {
				t.Errorf("max_tokens %d, want %d", r.MaxTokens, tt.tokens)
			}
			if r.KVCacheBytes != r.MaxTokens*int64(r.CellSizeBytes) {
				t.Errorf("kv_cache_bytes %d, want tokens × cell %d", r.KVCacheBytes, r.MaxTokens*int64(r.CellSizeBytes))
			}
			last := r.LogLines[len(r.LogLines)-1]
			if tt.lastLogPrefix != "" && !strings.HasPrefix(last, tt.lastLogPrefix) {
				t.Errorf("last log line %q", last)
			}
			if tt.concurrencyAtMaxSeqLen > 0 && r.MaxConcurrencyAtContextLength != tt.concurrencyAtMaxSeqLen {
				t.Errorf("concurrency %d", r.MaxConcurrencyAtContextLength)
			}
			if r.Verdict != plan.VerdictServes || r.TRTLLMVersion == "" {
				t.Errorf("verdict %q version %q", r.Verdict, r.TRTLLMVersion)
			}
		})
	}
}

// TensorRT-LLM's refusals are refusals (exit 1) in its words, with the knob
// to change; its input errors are field errors.
func TestTRTLLMRefusalsAndInput(t *testing.T) {
	r, err := plan.Run(context.Background(), plan.Request{Engine: plan.EngineTRTLLM, FreeGPUMemoryFraction: 1})
	if !errors.Is(err, plan.ErrInfeasible) || r == nil || r.FixFlag != "--free-gpu-memory-fraction" || r.Verdict != plan.VerdictRefuses {
		t.Fatalf("fraction 1: err %v report %+v", err, r)
	}
	for _, req := range []plan.Request{
		{Engine: plan.EngineTRTLLM, KVCacheDType: "int8"},
		{Engine: plan.EngineTRTLLM, TRTLLMVersion: "banana"},
		{Engine: plan.EngineTRTLLM, FreeGPUMemoryFraction: 1.5},
		{Engine: plan.EngineTRTLLM, MaxAttentionWindow: []int{128, 0}},
		{Engine: plan.EngineTRTLLM, MaxBatchSize: -1},
		{Engine: plan.EngineTRTLLM, TPSize: 8, EPSize: 3},
	} {
		if _, err := plan.Run(context.Background(), req); !errors.Is(err, plan.ErrInvalid) {
			t.Errorf("%+v: err %v, want an input error", req, err)
		}
	}
}

// A model too large for one GPU gets a verified fix, as with the other
// engines.
func TestTRTLLMAdvice(t *testing.T) {
	r, err := plan.Run(context.Background(), plan.Request{Engine: plan.EngineTRTLLM, Model: "meta-llama/Llama-3.1-70B-Instruct", ContextLength: 32768})
	if err == nil && r.Verdict == plan.VerdictServes {
		t.Fatalf("70B on one H100 serves: %+v", r.Outcome)
	}
	if len(r.FixArgs) == 0 {
		t.Fatalf("no verified fix: hint %q error %q", r.FixHint, r.Error)
	}
	req := plan.Request{Engine: plan.EngineTRTLLM, Model: "meta-llama/Llama-3.1-70B-Instruct", ContextLength: 32768}
	for i := 0; i+1 < len(r.FixArgs); i += 2 {
		key := strings.ReplaceAll(strings.TrimPrefix(r.FixArgs[i], "--"), "-", "_")
		if err := req.SetField(key, r.FixArgs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	fixed, err := plan.Run(context.Background(), req)
	if err != nil || fixed.Verdict != plan.VerdictServes {
		t.Fatalf("with %q: %v, verdict %q", r.FixArgs, err, fixed.Verdict)
	}
}

// --ep-size reaches TensorRT-LLM's MoE term: at EP = TP a DeepSeek-V3 rank
// holds whole experts, so the routed rows carry the full intermediate and
// the activation grows; the launch flag is trtllm-serve's --ep_size.
func TestTRTLLMEPSize(t *testing.T) {
	base := plan.Request{Engine: plan.EngineTRTLLM, Model: "deepseek-ai/DeepSeek-V3", GPU: "B200", TPSize: 8, MaxSeqLen: 8192}
	activation := func(req plan.Request) int64 {
		t.Helper()
		r, err := plan.Run(context.Background(), req)
		if err != nil || r.Budget == nil {
			t.Fatalf("%+v: err %v", req, err)
		}
		for _, term := range r.Budget.Terms {
			if term.Name == "activation" {
				return term.Bytes
			}
		}
		t.Fatal("no activation term")
		return 0
	}
	ep := base
	ep.EPSize = 8
	if tp, ep8 := activation(base), activation(ep); ep8 <= tp {
		t.Errorf("activation at EP 8 %d, at TP 8 without EP %d: want more", ep8, tp)
	}
	if got := plan.KeyOfFlag("--ep_size"); got != "ep_size" {
		t.Errorf("KeyOfFlag(--ep_size) = %q", got)
	}
}
