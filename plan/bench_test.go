package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/internal/cputime"
	"github.com/kvcfg/kvcfg/plan"
)

// BenchmarkRunDefault plans the default request. Its cpu-ns/op (all
// threads, GC included) is what BenchmarkSweepCatalog's cpu-ns/plan
// compares with on a shared machine.
func BenchmarkRunDefault(b *testing.B) {
	cpu0 := cputime.Process()
	for b.Loop() {
		if _, err := plan.Run(context.Background(), plan.Request{}); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkRunInfeasible(b *testing.B) {
	for b.Loop() {
		_, _ = plan.Run(context.Background(), plan.Request{Model: "moonshotai/Kimi-K2-Instruct"})
	}
}

// BenchmarkRunFile plans a config.json path already resolved once: no file
// is read or stat'ed again (compare with BenchmarkRunDefault, a catalog
// model, in the same run).
func BenchmarkRunFile(b *testing.B) {
	dir := b.TempDir()
	cfg, err := catalog.Config(catalog.Default)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		b.Fatal(err)
	}
	req := plan.Request{Model: path}
	if _, err := plan.Run(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := plan.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunPinnedVersion plans the default request pinned to an SGLang
// release (--sglang-version): it costs what BenchmarkRunDefault does (the
// release's profile is resolved once per process).
func BenchmarkRunPinnedVersion(b *testing.B) {
	benchRun(b, plan.Request{SGLangVersion: "0.5.3"})
}

// BenchmarkRunVLLM and BenchmarkRunPinnedVLLM plan the default model on
// vLLM at its newest profile, unpinned and pinned to a release of it
// (--vllm-version 0.28.1): the pin costs one warning more.
func BenchmarkRunVLLM(b *testing.B) { benchRun(b, plan.Request{Engine: plan.EngineVLLM}) }

func BenchmarkRunPinnedVLLM(b *testing.B) {
	benchRun(b, plan.Request{Engine: plan.EngineVLLM, VLLMVersion: "0.28.1"})
}

// BenchmarkRunTRTLLM and BenchmarkRunPinnedTRTLLM: the same on
// TensorRT-LLM (--trtllm-version 1.2.0, sized with its latest profile).
func BenchmarkRunTRTLLM(b *testing.B) { benchRun(b, plan.Request{Engine: plan.EngineTRTLLM}) }

func BenchmarkRunPinnedTRTLLM(b *testing.B) {
	benchRun(b, plan.Request{Engine: plan.EngineTRTLLM, TRTLLMVersion: "1.2.0"})
}

// benchRun plans req in a loop.
func benchRun(b *testing.B, req plan.Request) {
	for b.Loop() {
		if _, err := plan.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
