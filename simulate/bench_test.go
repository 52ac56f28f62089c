package simulate

import (
	"context"
	"testing"

	"github.com/kvcfg/kvcfg/pool"
)

// benchWorkload is 2000 requests of ~1k tokens (800 prompt, 200 output, a
// shared 400-token system prompt in 4 groups) arriving faster than a
// 60k-token pool drains them: admission, eviction and retraction all run.
func benchWorkload() Generator {
	return Generator{Requests: 2000, Rate: 400, Prompt: Lengths{Kind: DistUniform, Min: 200, Max: 600},
		Output: Lengths{Kind: DistUniform, Min: 100, Max: 300}, SharedPrefix: 400, PrefixGroups: 4, Seed: 1}
}

func benchSim(b *testing.B, cfg Config) {
	cfg.Time.ConstantStepS = 0.02
	var steps, reqSteps int64
	b.ReportAllocs()
	for b.Loop() {
		src, _ := benchWorkload().Source()
		sum, err := Run(context.Background(), cfg, src)
		if err != nil {
			b.Fatal(err)
		}
		steps += sum.Steps
		reqSteps += sum.RequestSteps
	}
	b.ReportMetric(float64(reqSteps)/b.Elapsed().Seconds(), "request-steps/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reqSteps), "ns/request-step")
}

func BenchmarkSimulateSGLang(b *testing.B) {
	benchSim(b, Config{Engine: EngineSGLang, MaxTotalNumTokens: 60000, MaxRunningRequests: 256, ChunkedPrefillSize: 8192})
}

func BenchmarkSimulateVLLM(b *testing.B) {
	benchSim(b, Config{Engine: EngineVLLM, NumGPUBlocks: 60000 / 16, BlockSize: 16, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256})
}

// BenchmarkBaselineAllocDecode is the floor the simulator is compared
// with: one pool.AllocDecode per request-step of a 128-request batch and
// the frees that keep the pool steady, nothing else.
func BenchmarkBaselineAllocDecode(b *testing.B) {
	a, _ := pool.NewTokenAllocator(1 << 20)
	const batch = 128
	decs := make([]pool.Decode, batch)
	locs := make([]int32, 0, batch)
	var n int64
	for b.Loop() {
		for range 4096 { // about as many request-steps as one simulation run
			locs, _ = a.AllocDecode(locs[:0], decs)
			_ = a.Free(locs)
			n += batch
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/request-step")
}

// steady-state steps allocate nothing: decode steps of a warm engine.
func TestDecodeStepAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count")
	}
	for _, eng := range []string{EngineSGLang, EngineVLLM} {
		s := testSim()
		var e engine
		if eng == EngineSGLang {
			e, _ = newSGLang(Config{Engine: eng, MaxTotalNumTokens: 1 << 20}, s)
		} else {
			e, _ = newVLLM(Config{Engine: eng, NumGPUBlocks: 1 << 16, BlockSize: 16, MaxNumSeqs: 512}, s)
		}
		for i := range 256 {
			e.arrive(Request{PromptTokens: 100, OutputTokens: 4000}, int64(i))
		}
		for range 64 {
			iter(e, s)
		}
		allocs := testing.AllocsPerRun(100, func() { iter(e, s) })
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per decode step of 256 requests, want 0", eng, allocs)
		}
	}
}
