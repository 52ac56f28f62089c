package engine_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// Every engine exports the contract's entry points with the contract's
// shapes (a signature change fails to compile here).
var (
	_ engine.PlanFunc[sglang.Input, sglang.Result] = sglang.Plan
	_ engine.PlanFunc[vllm.Input, vllm.Result]     = vllm.Plan
	_ engine.PlanFunc[trtllm.Input, trtllm.Result] = trtllm.Plan

	_ engine.ResolveProfileFunc[sglang.Profile] = sglang.ResolveProfile
	_ engine.ResolveProfileFunc[vllm.Profile]   = vllm.ResolveProfile
	_ engine.ResolveProfileFunc[trtllm.Profile] = trtllm.ResolveProfile

	_ engine.AcceptedKVDTypesFunc[sglang.Profile] = sglang.AcceptedKVDTypes
	_ engine.AcceptedKVDTypesFunc[vllm.Profile]   = vllm.AcceptedKVDTypes
	_ engine.AcceptedKVDTypesFunc[trtllm.Profile] = trtllm.AcceptedKVDTypes

	_ engine.MaxConcurrencyFunc[sglang.Result] = sglang.MaxConcurrency
	_ engine.MaxConcurrencyFunc[vllm.Result]   = vllm.MaxConcurrency
	_ engine.MaxConcurrencyFunc[trtllm.Result] = trtllm.MaxConcurrency

	_ engine.PatternsFunc = sglang.Patterns
	_ engine.PatternsFunc = vllm.Patterns
	_ engine.PatternsFunc = trtllm.Patterns
)

const gib = 1 << 30

// Each engine plans Llama-3.1-8B through the contract, holds requests of
// its context at once, and refuses a pool too small for one request with
// an *engine.Refusal that names its engine, its own sentinel and a flag.
func TestEnginesKeepTheContract(t *testing.T) {
	m, err := catalog.Open("meta-llama/Llama-3.1-8B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	spec := m.Spec
	sg := func(post int64) (float64, error) {
		res, err := sglang.Plan(spec, sglang.Input{Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: post, PreLoadFreeBytes: 78 * gib})
		return sglang.MaxConcurrency(res, 8192), err
	}
	vl := func(kv int64) (float64, error) {
		res, err := vllm.Plan(spec, vllm.Input{MaxModelLen: 8192, KVCacheMemoryBytes: kv})
		return vllm.MaxConcurrency(res, 8192), err
	}
	tr := func(kv int64) (float64, error) {
		res, err := trtllm.Plan(spec, trtllm.Input{MaxSeqLen: 8192, KVCacheMemory: kv})
		return trtllm.MaxConcurrency(res, 8192), err
	}
	tests := []struct {
		name     string
		plan     func(int64) (float64, error)
		ok, tiny int64
		sentinel error
	}{
		{"sglang", sg, 62 * gib, 8 * gib, nil},
		{"vllm", vl, 20 * gib, 1 << 20, vllm.ErrRefused},
		{"trtllm", tr, 20 * gib, 1 << 20, trtllm.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.plan(tt.ok)
			if err != nil || n < 1 {
				t.Fatalf("plan: %v, %g requests of 8192 tokens", err, n)
			}
			_, err = tt.plan(tt.tiny)
			var re *engine.Refusal
			if !errors.As(err, &re) || !errors.Is(err, engine.ErrRefused) {
				t.Fatalf("err = %v, want an *engine.Refusal", err)
			}
			if re.Engine != tt.name || re.Message == "" || re.Flag == "" || re.Err == nil {
				t.Errorf("refusal %+v", re)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("err = %v, want %v too", err, tt.sentinel)
			}
		})
	}
}

// Every engine's patterns name their engine, are unique, and advise on a
// match without numbers.
func TestPatternsKeepTheContract(t *testing.T) {
	for name, ps := range map[string][]engine.Pattern{"sglang": sglang.Patterns(), "vllm": vllm.Patterns(), "trtllm": trtllm.Patterns(), engine.Any: engine.Patterns()} {
		seen := map[string]bool{}
		for _, p := range ps {
			if p.Engine != name || seen[p.Name] || p.Regexp == nil || p.Regexp.String() != p.Expr || len(p.Groups) != p.Regexp.NumSubexp() {
				t.Errorf("%s: pattern %+v", name, p)
			}
			seen[p.Name] = true
			if p.Severity != engine.Warning && p.Severity != engine.Fatal {
				t.Errorf("%s/%s: severity %q", name, p.Name, p.Severity)
			}
			if a := p.Advise(map[string]float64{}, make([]string, len(p.Groups))); a.Meaning == "" || a.Text == "" {
				t.Errorf("%s/%s: advice %+v", name, p.Name, a)
			}
		}
	}
}
