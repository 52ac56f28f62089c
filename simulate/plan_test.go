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

// TestFromPlanFollowsSGLangVersion: the plan's SGLang version picks the
// radix eviction (the newest main evicts the shortfall, releases the whole
// need) and the overlap scheduler is on unless --disable-overlap-schedule.
func TestFromPlanFollowsSGLangVersion(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		version   string
		disable   bool
		shortfall bool
		overlap   bool
	}{
		{"", false, true, true},
		{"latest", true, true, false},
		{"main", false, true, true},
		{"0.5.3", false, false, true},
		{"0.5.19", false, false, true},
		{"0.4.7", true, false, false},
	} {
		req := plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", Engine: plan.EngineSGLang, SGLangVersion: c.version}
		cfg, _, err := FromPlan(ctx, req, Options{DisableOverlapSchedule: c.disable})
		if err != nil {
			t.Fatalf("%q: %v", c.version, err)
		}
		if cfg.EvictShortfall != c.shortfall || cfg.OverlapSchedule != c.overlap {
			t.Errorf("version %q disable %v: evict_shortfall %v overlap_schedule %v, want %v %v", c.version, c.disable, cfg.EvictShortfall, cfg.OverlapSchedule, c.shortfall, c.overlap)
		}
	}
}

// A Mamba model with the radix cache on and no speculative decoding runs
// SGLang's non-overlap loop (the no_buffer strategy).
func TestFromPlanMambaRunsWithoutOverlap(t *testing.T) {
	cfg := func(rep *plan.Report, req plan.Request) Config {
		c, err := ConfigFromReport(req, rep, nil, Options{StepTimeS: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rep := &plan.Report{}
	rep.Engine, rep.MaxTotalNumTokens, rep.MaxRunningRequests, rep.MaxMambaCacheSize = plan.EngineSGLang, 10000, 8, 24
	if c := cfg(rep, plan.Request{}); c.OverlapSchedule {
		t.Error("Mamba model with the radix cache: overlap scheduler on, want off")
	}
	if c := cfg(rep, plan.Request{DisableRadixCache: true}); !c.OverlapSchedule {
		t.Error("Mamba model without the radix cache: overlap scheduler off, want on")
	}
	if c := cfg(rep, plan.Request{SpeculativeAlgorithm: "EAGLE"}); !c.OverlapSchedule {
		t.Error("Mamba model with speculative decoding: overlap scheduler off, want on")
	}
	rep.MaxMambaCacheSize = 0
	if c := cfg(rep, plan.Request{}); !c.OverlapSchedule {
		t.Error("dense model: overlap scheduler off, want on")
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
