package sglang_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kvcfg/kvcfg/engine/sglang"
)

// A Configurator reused with Reset gives exactly what a new one does, in
// any order of inputs (notes, mamba state and dtype of the previous input
// must not leak into the next), and a failed Reset can be followed by a
// good one.
func TestReset(t *testing.T) {
	h100 := sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}
	post := gibBytes(60)
	tests := []struct {
		name string
		in   sglang.Input
	}{
		{"llama8B bf16", sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: post}},
		{"qwen3-next mamba", sglang.Input{Spec: qwen3Next(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: post}},
		{"bad dtype", sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: post,
			Args: sglang.ServerArgs{KVCacheDType: "fp3"}}},
		{"gpt-oss hip long context", sglang.Input{Spec: gptOSS(), Parallel: sglang.Parallel{TP: 2, PP: 1, DP: 1},
			Hardware: sglang.Hardware{MemoryMiB: 196288, Platform: "hip", FNUZ: true}, PostLoadFreeBytes: post, Args: sglang.ServerArgs{KVCacheDType: "fp8_e4m3"}}},
		{"deepseek-v3 pp2 speculative", sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 2, DP: 1}, Hardware: h100,
			PostLoadFreeBytes: gibBytes(20), Args: sglang.ServerArgs{SpeculativeAlgorithm: "EAGLE"}}},
		{"gemma2 no weights room", sglang.Input{Spec: gemma2(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: 1}},
		{"llama70B again", sglang.Input{Spec: llama70B(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: post}},
	}
	type outcome struct {
		Err     string
		Derived sglang.Derived
		Notes   []string
		Result  *sglang.Result
		ResErr  string
	}
	// reuse, when set, is the Result ConfigureInto fills.
	run := func(c *sglang.Configurator, err error, reuse *sglang.Result) outcome {
		if err != nil {
			return outcome{Err: err.Error()}
		}
		var res *sglang.Result
		if reuse != nil {
			res, err = reuse, c.ConfigureInto(reuse, gibBytes(78.5))
		} else {
			res, err = c.Configure(gibBytes(78.5))
		}
		o := outcome{Derived: c.Derived(), Notes: c.Notes(), Result: res}
		if err != nil {
			o.ResErr = err.Error()
		}
		return o
	}
	var reused sglang.Configurator
	var result sglang.Result
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1, 0}, {1, 0, 3, 2, 1, 4}} {
		for _, i := range order {
			tt := tests[i]
			fresh, err := sglang.New(tt.in)
			want := run(fresh, err, nil)
			got := run(&reused, reused.Reset(tt.in), &result) // compared before the next run reuses it
			// A reused Result may hold empty rather than nil slices.
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(sglang.Result{}, sglang.Concurrency{})); diff != "" {
				t.Errorf("%s: Reset + ConfigureInto differ from New + Configure (-new +reused):\n%s", tt.name, diff)
			}
		}
	}
}
