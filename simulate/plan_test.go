package simulate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

func TestFromPlan(t *testing.T) {
	ctx := context.Background()
	g := Generator{Requests: 300, Rate: 20, Prompt: Lengths{Mean: 1000}, Output: Lengths{Mean: 200}, SharedPrefix: 500, Seed: 1}
	for _, eng := range []string{plan.EngineSGLang, plan.EngineVLLM} {
		c, rep, err := FromPlan(ctx, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", Engine: eng}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Engine == EngineSGLang && (int64(c.MaxTotalNumTokens) != rep.MaxTotalNumTokens || c.ChunkedPrefillSize != 8192) {
			t.Errorf("sglang config %+v from plan pool %d", c, rep.MaxTotalNumTokens)
		}
		if c.Engine == EngineVLLM && (int64(c.NumGPUBlocks) != rep.NumGPUBlocks || c.MaxNumBatchedTokens != 8192 || c.MaxNumSeqs != 1024) {
			t.Errorf("vllm config %+v from plan blocks %d", c, rep.NumGPUBlocks)
		}
		src, _ := g.Source()
		sum, err := Run(ctx, c, src)
		if err != nil {
			t.Fatal(err)
		}
		if sum.RequestsCompleted != 300 || sum.PrefixHitRate < 0.3 || sum.MeanITLEstS <= 0 || sum.MeanITLEstS > 0.1 {
			t.Errorf("%s: %+v", eng, sum)
		}
		t.Logf("%s: pool %d hit %.3f itl %.4f ttft %.3f peak running %d binding %s", eng, sum.PoolTokens, sum.PrefixHitRate, sum.MeanITLEstS, sum.MeanTTFTEstS, sum.PeakRunning, sum.BindingLimit)
	}
	_, _, err := FromPlan(ctx, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "T4"}, Options{})
	if !errors.Is(err, ErrConfig) && !errors.Is(err, plan.ErrInfeasible) {
		t.Errorf("T4 without figures: %v", err)
	}
	_, _, err = FromPlan(ctx, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", Engine: plan.EngineTRTLLM}, Options{})
	if err == nil || !strings.Contains(err.Error(), "not simulated") {
		t.Errorf("trtllm: %v", err)
	}
}

// The host tier and the unified pool's trade are not simulated; the
// config says so, and the pool stays the plan's.
func TestFromPlanTierNotes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		req  plan.Request
		note string
	}{
		{plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", Engine: plan.EngineSGLang, EnableHierarchicalCache: true}, "host KV tier (--enable-hierarchical-cache, "},
		{plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", Engine: plan.EngineVLLM, KVOffloadingSize: 16}, "host KV tier (--kv-offloading-size, "},
		{plan.Request{Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", GPU: "H200", TPSize: 4, Engine: plan.EngineSGLang, EnableUnifiedMemory: true}, "unified memory pool: the token pool is simulated at its sized "},
	} {
		c, rep, err := FromPlan(ctx, tc.req, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(c.Notes, "\n"), tc.note) {
			t.Errorf("%s: notes %q lack %q", tc.req.Engine, c.Notes, tc.note)
		}
		if c.Engine == EngineSGLang && int64(c.MaxTotalNumTokens) != rep.MaxTotalNumTokens {
			t.Errorf("pool %d, plan %d", c.MaxTotalNumTokens, rep.MaxTotalNumTokens)
		}
	}
}
