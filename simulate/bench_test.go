package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
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

// BenchmarkSimulateSGLangOverlap is BenchmarkSimulateSGLang under the
// overlap scheduler (SGLang's default; docs/simulate.md#overlap-scheduler).
func BenchmarkSimulateSGLangOverlap(b *testing.B) {
	benchSim(b, Config{Engine: EngineSGLang, MaxTotalNumTokens: 60000, MaxRunningRequests: 256, ChunkedPrefillSize: 8192, OverlapSchedule: true, EvictShortfall: true})
}

// BenchmarkSimulateSGLangNoRadix is the run simulate/testdata/baseline.py
// replays in plain Python (docs/simulate.md#performance).
func BenchmarkSimulateSGLangNoRadix(b *testing.B) {
	benchSim(b, benchNoRadix)
}

var benchNoRadix = Config{Engine: EngineSGLang, MaxTotalNumTokens: 60000, MaxRunningRequests: 256, ChunkedPrefillSize: 8192, DisableRadixCache: true}

func BenchmarkSimulateVLLM(b *testing.B) {
	benchSim(b, Config{Engine: EngineVLLM, NumGPUBlocks: 60000 / 16, BlockSize: 16, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256})
}

// BenchmarkBaselineAllocDecode is the floor the simulator is compared
// with: one pool.AllocDecode per request-step of a 128-request batch (each
// request's next token, SeqLen >= 1, so the allocation succeeds) and the
// frees that keep the pool steady, nothing else.
func BenchmarkBaselineAllocDecode(b *testing.B) {
	a, _ := pool.NewTokenAllocator(1 << 20)
	const batch = 128
	decs := make([]pool.Decode, batch)
	for i := range decs {
		decs[i] = pool.Decode{SeqLen: 1000 + i, LastLoc: -1}
	}
	locs := make([]int32, 0, batch)
	var n int64
	var err error
	for b.Loop() {
		for range 4096 { // about as many request-steps as one simulation run
			if locs, err = a.AllocDecode(locs[:0], decs); err != nil || len(locs) != batch {
				b.Fatalf("AllocDecode: %d slots, %v", len(locs), err)
			}
			if err = a.Free(locs); err != nil {
				b.Fatal(err)
			}
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

// TestWriteBenchTrace writes benchWorkload as a JSONL trace to the file
// KVCFG_BENCH_TRACE names, for simulate/testdata/baseline.py.
func TestWriteBenchTrace(t *testing.T) {
	path := os.Getenv("KVCFG_BENCH_TRACE")
	if path == "" {
		t.Skip("KVCFG_BENCH_TRACE not set")
	}
	src, err := benchWorkload().Source()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSimulatePeakMemory replays the largest workload the server
// takes (200,000 requests, all arriving at once: the waiting queue holds
// them all) through an 8B model's H100 pool and reports the peak heap in
// use (sampled every 1024 steps) and the memory the Go runtime got from the
// OS (docs/simulate.md#memory). Run it alone: -bench PeakMemory -benchtime 1x.
func BenchmarkSimulatePeakMemory(b *testing.B) {
	g := Generator{Requests: 200_000, Prompt: Lengths{Kind: DistUniform, Min: 100, Max: 900},
		Output: Lengths{Kind: DistUniform, Min: 10, Max: 190}, SharedPrefix: 500, PrefixGroups: 8, Seed: 1}
	cfg := Config{Engine: EngineSGLang, MaxTotalNumTokens: 411217, MaxRunningRequests: 2048, ChunkedPrefillSize: 8192,
		ContextLength: 131072, Time: TimeModel{ConstantStepS: 0.02}}
	var peak uint64
	var ms runtime.MemStats
	cfg.Progress = func(_, _ int64) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	for b.Loop() {
		src, _ := g.Source()
		sum, err := Run(context.Background(), cfg, src)
		if err != nil || sum.RequestsCompleted != int64(g.Requests) {
			b.Fatalf("%v: %+v", err, sum)
		}
	}
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MB")
}

// The run baseline.py replays: these counts are the ones it prints for the
// same trace (TestWriteBenchTrace), the check that both do the same
// bookkeeping.
func TestBenchNoRadixCountsMatchPythonBaseline(t *testing.T) {
	cfg := benchNoRadix
	cfg.Time.ConstantStepS = 0.02
	src, _ := benchWorkload().Source()
	sum, err := Run(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 7761 || sum.RequestSteps != 402541 || sum.RequestsCompleted != 2000 || *sum.Retractions != 4 || sum.UnservableRequests != 0 {
		t.Errorf("steps %d request-steps %d completed %d retractions %d unservable %d, want 7761, 402541, 2000, 4, 0 (baseline.py's)",
			sum.Steps, sum.RequestSteps, sum.RequestsCompleted, *sum.Retractions, sum.UnservableRequests)
	}
}
