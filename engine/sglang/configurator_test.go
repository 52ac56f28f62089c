package sglang_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
)

func gibBytes(g float64) int64 { return int64(math.Round(g * (1 << 30))) }

func kinds(n int, f func(i int) model.LayerKind) []model.LayerKind {
	out := make([]model.LayerKind, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func allFull(int) model.LayerKind { return model.FullAttention }

func llama8B() *model.Spec {
	return &model.Spec{Name: "Llama-3.1-8B", Architecture: "LlamaForCausalLM", NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32,
		NumKVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA, LayerKinds: kinds(32, allFull), ContextLength: 131072, ModelDType: dtype.BFloat16}
}

func llama70B() *model.Spec {
	s := llama8B()
	s.NumLayers, s.NumAttentionHeads, s.LayerKinds = 80, 64, kinds(80, allFull)
	return s
}

func deepseekV3() *model.Spec {
	return &model.Spec{Name: "DeepSeek-V3", Architecture: "DeepseekV3ForCausalLM", NumLayers: 61, NumAttentionHeads: 128, NumKVHeads: 128,
		HeadDim: 256, VHeadDim: 128, Attention: model.MLA, KVLoraRank: 512, QKRopeHeadDim: 64, QKNopeHeadDim: 128,
		LayerKinds: kinds(61, allFull), ContextLength: 163840, ModelDType: dtype.BFloat16,
		Quant: &model.QuantSpec{Method: "fp8", WeightBits: 8}, NumNextNPredictLayers: 1}
}

func gemma2() *model.Spec {
	return &model.Spec{Name: "gemma-2-9b", Architecture: "Gemma2ForCausalLM", NumLayers: 42, NumKVHeads: 8, HeadDim: 256, VHeadDim: 256,
		Attention: model.MHA, LayerKinds: kinds(42, func(i int) model.LayerKind {
			if i%2 == 0 {
				return model.SlidingAttention
			}
			return model.FullAttention
		}), SlidingWindow: 4096, EngineSlidingWindow: 4095, ContextLength: 8192, ModelDType: dtype.BFloat16}
}

func gptOSS() *model.Spec {
	return &model.Spec{Name: "gpt-oss-120b", Architecture: "GptOssForCausalLM", NumLayers: 36, NumKVHeads: 8, HeadDim: 64, VHeadDim: 64,
		Attention: model.MHA, LayerKinds: kinds(36, func(i int) model.LayerKind {
			if i%2 == 0 {
				return model.SlidingAttention
			}
			return model.FullAttention
		}), SlidingWindow: 128, EngineSlidingWindow: 127, HybridSWAPool: true, ContextLength: 131072, ModelDType: dtype.BFloat16,
		Quant: &model.QuantSpec{Method: "mxfp4", WeightBits: 4}}
}

func qwen3Next() *model.Spec {
	k := kinds(48, func(i int) model.LayerKind {
		if (i+1)%4 == 0 {
			return model.FullAttention
		}
		return model.LinearAttention
	})
	s := &model.Spec{Name: "Qwen3-Next-80B-A3B", Architecture: "Qwen3NextForCausalLM", NumLayers: 48, NumKVHeads: 2, HeadDim: 256, VHeadDim: 256,
		Attention: model.MHA, LayerKinds: k, ContextLength: 262144, ModelDType: dtype.BFloat16}
	s.Linear = &model.LinearSpec{Kind: "gdn", LayerIDs: s.LayerIDs(model.LinearAttention), NumHeads: 32, HeadDim: 128, StateSize: 128, NGroups: 16, ConvKernel: 4, IntermediateSize: 4096}
	return s
}

// specRelease is the SGLang release the spec's worked examples and golden
// vectors (docs/sglang.md#worked-examples) come from: their default
// mem_fraction_static is the 0.5.x reserved-MiB formula of the 0.5.3
// profile (Era053). Tests that reproduce those numbers pin it, so the
// default (the newest profile) can move without changing them.
const specRelease = "0.5.3"

var (
	h100 = sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}
	h200 = sglang.Hardware{MemoryMiB: 143771, SM: 90, Platform: "cuda"}
)

type example struct {
	name      string
	spec      *model.Spec
	tp        int
	hw        sglang.Hardware
	args      sglang.ServerArgs
	pre, post float64 // GiB
	mfs       float64
	cell      float64
	tokens    int64
	full, swa int64
	running   int
	logs      []string
}

// docs/sglang.md#worked-examples worked examples.
func TestWorkedExamples(t *testing.T) {
	tests := []example{
		{name: "Ex.1 Llama-3.1-8B H100 TP1", spec: llama8B(), tp: 1, hw: h100, pre: 78.50, post: 78.50 - 14.96,
			mfs: 0.835, cell: 131072, tokens: 414412, running: 2048,
			logs: []string{"KV Cache is allocated. #tokens: 414412, K size: 25.29 GB, V size: 25.29 GB"}},
		{name: "Ex.2 Llama-3.1-70B fp8 TP4", spec: llama70B(), tp: 4, hw: h100, args: sglang.ServerArgs{KVCacheDType: "fp8_e4m3"},
			pre: 78.50, post: 78.50 - 32.85, mfs: 0.824, cell: 40960, tokens: 834509, running: 3259,
			logs: []string{"KV Cache is allocated. #tokens: 834509, K size: 15.92 GB, V size: 15.92 GB"}},
		{name: "Ex.3 DeepSeek-V3 H200 TP8", spec: deepseekV3(), tp: 8, hw: h200, pre: 139.50, post: 59.50,
			mfs: 0.897, cell: 70272, tokens: 689600, running: 2155,
			logs: []string{"KV Cache is allocated. #tokens: 689600, KV size: 45.13 GB"}},
		{name: "Ex.3 DeepSeek-V3 fp8", spec: deepseekV3(), tp: 8, hw: h200, args: sglang.ServerArgs{KVCacheDType: "fp8_e4m3"}, pre: 139.50, post: 59.50,
			mfs: 0.897, cell: 35136, tokens: 1379200, running: 4096},
		{name: "Ex.4 Gemma-2-9B", spec: gemma2(), tp: 1, hw: h100, pre: 78.50, post: 78.50 - 17.21,
			mfs: 0.835, cell: 344064, tokens: 150849, running: 4096,
			logs: []string{"KV Cache is allocated. #tokens: 150849, K size: 24.17 GB, V size: 24.17 GB"}},
		{name: "Ex.4b gpt-oss-120b", spec: gptOSS(), tp: 1, hw: h100, pre: 78.50, post: 78.50 - 60.8,
			mfs: 0.835, cell: 66355.2, tokens: 76822, full: 76822, swa: 61457, running: 2048,
			logs: []string{
				"Use sliding window memory pool. full_layer_tokens=76822, swa_layer_tokens=61457",
				"KV Cache is allocated. #tokens: 61457, K size: 1.05 GB, V size: 1.05 GB",
				"KV Cache is allocated. #tokens: 76822, K size: 1.32 GB, V size: 1.32 GB",
				"SWAKVPool mem usage: 4.75 GB, swa size: 61457, full size: 76822",
			}},
		{name: "Ex.5 Qwen3-Next TP4", spec: qwen3Next(), tp: 4, hw: h100, pre: 78.50, post: 78.50 - 37.25,
			mfs: 0.824, cell: 12288, tokens: 1262235, running: 240,
			logs: []string{
				"Mamba Cache is allocated. max_mamba_cache_size: 721, conv_state size: 0.30GB, ssm_state size: 12.69GB ",
				"KV Cache is allocated. #tokens: 1262235, K size: 7.22 GB, V size: 7.22 GB",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := sglang.New(sglang.Input{Spec: tt.spec, Parallel: sglang.Parallel{TP: tt.tp, PP: 1, DP: 1}, Version: specRelease,
				Args: tt.args, Hardware: tt.hw, PostLoadFreeBytes: gibBytes(tt.post)})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Derived().MemFractionStatic; got != tt.mfs {
				t.Errorf("mem_fraction_static = %v, want %v", got, tt.mfs)
			}
			r, err := c.Configure(gibBytes(tt.pre))
			if err != nil {
				t.Fatal(err)
			}
			type out struct {
				Cell              float64
				Tokens, Full, SWA int64
				Running           int
			}
			if diff := cmp.Diff(out{tt.cell, tt.tokens, tt.full, tt.swa, tt.running},
				out{r.CellSize, r.MaxTotalNumTokens, r.FullMaxTotalNumTokens, r.SWAMaxTotalNumTokens, r.MaxRunningRequests}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.logs != nil {
				if diff := cmp.Diff(tt.logs, r.Logs); diff != "" {
					t.Errorf("logs (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestQwen3NextMambaCap(t *testing.T) {
	c, err := sglang.New(sglang.Input{Spec: qwen3Next(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Version: specRelease, Hardware: h100, PostLoadFreeBytes: gibBytes(41.25)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Configure(gibBytes(78.5))
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxMambaCacheSize != 721 || r.MambaSlotRatio != 3 || r.MambaPerRequest != 19316736 {
		t.Errorf("mamba %+v", r)
	}
	found := false
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "max_running_requests is capped to 240 by the mamba state cache (max_mamba_cache_size=721, 3 state slots per request)") {
			found = true
		}
	}
	if !found {
		t.Errorf("missing mamba cap warning: %q", r.Warnings)
	}
}

// docs/sglang.md#defaults-tier-table / G13.
func TestDefaultMemFraction(t *testing.T) {
	tests := []struct {
		gpu  int64
		tp   int
		want float64
	}{
		{81559, 1, 0.835}, {81559, 4, 0.824}, {81559, 8, 0.818}, {143771, 8, 0.897}, {24564, 1, 0.847}, {0, 1, 0.88},
	}
	for _, tt := range tests {
		tier := sglang.DefaultTier(tt.gpu, tt.tp)
		got := sglang.DefaultMemFraction(sglang.MemFractionInput{GPUMemoryMiB: tt.gpu, TPSize: tt.tp, PPSize: 1, DPSize: 1,
			ChunkedPrefillSize: tier.ChunkedPrefillSize, CudaGraphMaxBS: tier.CudaGraphMaxBS, MaxPrefillTokens: 16384})
		if got != tt.want {
			t.Errorf("gpu %d tp %d: %v, want %v", tt.gpu, tt.tp, got, tt.want)
		}
	}
	if r := sglang.ReservedMiB(sglang.MemFractionInput{GPUMemoryMiB: 81559, TPSize: 1, PPSize: 1, ChunkedPrefillSize: 8192, CudaGraphMaxBS: 256}); r != 13440 {
		t.Errorf("reserved = %v, want 13440", r)
	}
	spec := sglang.MemFractionInput{GPUMemoryMiB: 81559, TPSize: 1, PPSize: 1, ChunkedPrefillSize: 8192, CudaGraphMaxBS: 256}
	spec.SpeculativeAlgorithm = "EAGLE"
	if r := sglang.ReservedMiB(spec); r != 13440+2048 {
		t.Errorf("EAGLE reserve %v", r)
	}
	spec.SpeculativeAlgorithm = "STANDALONE"
	if r := sglang.ReservedMiB(spec); r != 13440+6144 {
		t.Errorf("STANDALONE reserve %v", r)
	}
}

// docs/sglang.md#golden-vectors G14–G18 and docs/sglang.md#engine-unit-test-cases mamba concurrency cap.
func TestResolveMaxNumReqs(t *testing.T) {
	tests := []struct {
		name string
		in   sglang.MaxReqsInput
		want int
		warn bool
	}{
		{"G14", sglang.MaxReqsInput{TokenCapacity: 414412, ContextLen: 131072}, 2048, false},
		{"G15", sglang.MaxReqsInput{TokenCapacity: 834509, ContextLen: 131072}, 3259, false},
		{"G16", sglang.MaxReqsInput{TokenCapacity: 150849, ContextLen: 8192}, 4096, false},
		{"G17", sglang.MaxReqsInput{TokenCapacity: 1000, ContextLen: 4096}, 500, false},
		{"G18", sglang.MaxReqsInput{TokenCapacity: 1_000_000, ContextLen: 4096, MaxRunningRequests: 8000, AttnDP: 2}, 4000, false},
		{"mamba cap", sglang.MaxReqsInput{TokenCapacity: 100_000, ContextLen: 4096, MaxRunningRequests: 8, Mambaish: true, MaxMambaCacheSize: 10, MambaRatio: 5}, 2, true},
		{"mamba ratios", sglang.MaxReqsInput{TokenCapacity: 1_000_000, ContextLen: 4096, MaxRunningRequests: 144, Mambaish: true, MaxMambaCacheSize: 384, MambaRatio: 4}, 96, true},
		{"reduced", sglang.MaxReqsInput{TokenCapacity: 100, ContextLen: 4096, MaxRunningRequests: 64}, 50, true},
	}
	for _, tt := range tests {
		n, warns, err := sglang.ResolveMaxNumReqs(tt.in)
		if err != nil || n != tt.want || (len(warns) > 0) != tt.warn {
			t.Errorf("%s: n=%d warns=%q err=%v; want %d", tt.name, n, warns, err, tt.want)
		}
	}
	_, _, err := sglang.ResolveMaxNumReqs(sglang.MaxReqsInput{TokenCapacity: 1000, ContextLen: 10, Mambaish: true, MaxMambaCacheSize: 2, MambaRatio: 3})
	var fe *engine.Refusal
	if !errors.As(err, &fe) || !errors.Is(err, sglang.ErrNoRequests) || fe.Flag != "--max-mamba-cache-size" || fe.Value != "3" {
		t.Errorf("mamba zero: %v", err)
	}
	if _, _, err := sglang.ResolveMaxNumReqs(sglang.MaxReqsInput{TokenCapacity: 1, ContextLen: 10}); !errors.Is(err, sglang.ErrNoRequests) {
		t.Errorf("zero: %v", err)
	}
}

func TestStageRanges(t *testing.T) {
	if diff := cmp.Diff([][2]int{{0, 15}, {15, 30}, {30, 46}, {46, 62}}, sglang.StageRanges(62, 4)); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([][2]int{{0, 61}}, sglang.StageRanges(61, 1)); diff != "" {
		t.Error(diff)
	}
}

// newC configures in for an H100 at TP 1 unless set, sized with the
// spec's release (specRelease) unless in.Version names another.
func newC(t *testing.T, in sglang.Input) *sglang.Configurator {
	t.Helper()
	if in.Version == "" {
		in.Version = specRelease
	}
	if in.Parallel.TP == 0 {
		in.Parallel = sglang.Parallel{TP: 1, PP: 1, DP: 1}
	}
	if in.Hardware.MemoryMiB == 0 {
		in.Hardware = h100
	}
	c, err := sglang.New(in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fixFlag(t *testing.T, err error, sentinel error, flag string) *engine.Refusal {
	t.Helper()
	var fe *engine.Refusal
	if !errors.As(err, &fe) || !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want an engine.Refusal wrapping %v", err, sentinel)
	}
	if fe.Flag != flag {
		t.Errorf("flag %q, want %q (%v)", fe.Flag, flag, err)
	}
	return fe
}

// docs/sglang.md#errors error paths.
func TestErrors(t *testing.T) {
	// Weights leave nothing: 70B bf16 on one H100.
	c := newC(t, sglang.Input{Spec: llama8B(), PostLoadFreeBytes: gibBytes(10)})
	_, err := c.Configure(gibBytes(78.5))
	fe := fixFlag(t, err, sglang.ErrNoKVMemory, "--mem-fraction-static")
	if !strings.Contains(err.Error(), "Raise --mem-fraction-static above 0.873 (minimum viable = 1 - available/pre = 0.8726)") {
		t.Errorf("text: %v", err)
	}
	if fe.Value != "0.883" {
		t.Errorf("value %q", fe.Value)
	}
	// Nothing at all.
	c = newC(t, sglang.Input{Spec: llama8B(), PostLoadFreeBytes: 0})
	_, err = c.Configure(gibBytes(78.5))
	fixFlag(t, err, sglang.ErrNoKVMemory, "--tp-size")

	// Budget smaller than one token.
	c = newC(t, sglang.Input{Spec: llama8B(), Args: sglang.ServerArgs{MemFractionStatic: 0.5}, PostLoadFreeBytes: gibBytes(39.25) + 1000})
	_, err = c.Configure(gibBytes(78.5))
	fe = fixFlag(t, err, sglang.ErrNotEnoughMemory, "--mem-fraction-static")
	if !strings.Contains(err.Error(), "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.5") || fe.Value != "0.501" {
		t.Errorf("text/value: %v %q", err, fe.Value)
	}

	// Pool too small for one request.
	c = newC(t, sglang.Input{Spec: llama8B(), Args: sglang.ServerArgs{MemFractionStatic: 0.5}, PostLoadFreeBytes: gibBytes(39.25) + 131072*4})
	_, err = c.Configure(gibBytes(78.5))
	fixFlag(t, err, sglang.ErrPoolTooSmall, "--mem-fraction-static")

	// SWA admission floor.
	c = newC(t, sglang.Input{Spec: gptOSS(), Args: sglang.ServerArgs{SWAFullTokensRatio: 0.0005}, PostLoadFreeBytes: gibBytes(78.5 - 60.8)})
	_, err = c.Configure(gibBytes(78.5))
	fe = fixFlag(t, err, sizing.ErrSWAFloor, "--swa-full-tokens-ratio")
	if fe.Value != "0.001" {
		t.Errorf("ratio value %q", fe.Value)
	}

	// SWA chunk cap leaves nothing.
	c = newC(t, sglang.Input{Spec: gptOSS(), Args: sglang.ServerArgs{MaxRunningRequests: 100000, DisableRadixCache: true}, PostLoadFreeBytes: gibBytes(78.5 - 60.8)})
	_, err = c.Configure(gibBytes(78.5))
	fixFlag(t, err, sizing.ErrSWAChunkCap, "--max-running-requests")

	// Mamba state does not fit.
	c = newC(t, sglang.Input{Spec: qwen3Next(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, PostLoadFreeBytes: gibBytes(13.82)})
	_, err = c.Configure(gibBytes(78.5))
	fixFlag(t, err, sizing.ErrMamba, "--mamba-full-memory-ratio")

	// Context length too long.
	_, err = sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, Args: sglang.ServerArgs{ContextLength: 200000}})
	fe = fixFlag(t, err, sglang.ErrContextLength, "--context-length")
	if fe.Value != "131072" {
		t.Errorf("context value %q", fe.Value)
	}

	// Unsupported dtype.
	_, err = sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, Args: sglang.ServerArgs{KVCacheDType: "fp4_e2m1"}})
	if !errors.Is(err, sglang.ErrDeprecatedKV) {
		t.Errorf("fp4_e2m1: %v", err)
	}

	// Invalid inputs are all reported.
	_, err = sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 0, PP: 1, DP: 1}, Args: sglang.ServerArgs{MemFractionStatic: 1.5, PageSize: -1}})
	if !errors.Is(err, sglang.ErrInvalid) || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("invalid: %v", err)
	}
}

func TestMaxTotalTokensCap(t *testing.T) {
	c := newC(t, sglang.Input{Spec: llama8B(), Args: sglang.ServerArgs{MaxTotalTokens: 100_001, PageSize: 16}, PostLoadFreeBytes: gibBytes(63.54)})
	r, err := c.Configure(gibBytes(78.5))
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxTotalNumTokens != 100_000 {
		t.Errorf("tokens %d, want 100000 (cap then page floor)", r.MaxTotalNumTokens)
	}
	c = newC(t, sglang.Input{Spec: llama8B(), Args: sglang.ServerArgs{MaxTotalTokens: 10_000_000}, PostLoadFreeBytes: gibBytes(63.54)})
	r, _ = c.Configure(gibBytes(78.5))
	if r.MaxTotalNumTokens != 414412 || len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "max_total_tokens=10000000 is larger than the profiled value 414412.") {
		t.Errorf("%d %q", r.MaxTotalNumTokens, r.Warnings)
	}
}

func TestPipelineAndDefaults(t *testing.T) {
	// PP 2 of 61 layers: stages 30 / 31 → the 31-layer stage bounds the pool.
	c := newC(t, sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 4, PP: 2, DP: 1}, Hardware: h200, PostLoadFreeBytes: gibBytes(59.5)})
	r, err := c.Configure(gibBytes(139.5))
	if err != nil {
		t.Fatal(err)
	}
	if r.KVLayers != 31 || r.CellSize != 576*31*2 || r.Stage != 1 {
		t.Errorf("pp: %+v", r)
	}
	// DSA on Hopper: bf16, page 64; on Blackwell: fp8 656-byte row, which
	// 0.5.3 (before PR #31992) counts at 576 bytes: 61 × (576 + 132).
	// TestDSAFP8OvercommitByVersion has the versions around the change.
	dsa := deepseekV3()
	dsa.Attention, dsa.IndexHeadDim, dsa.IndexTopK = model.DSA, 128, 2048
	c = newC(t, sglang.Input{Spec: dsa, Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: h200, PostLoadFreeBytes: gibBytes(59.5)})
	r, _ = c.Configure(gibBytes(139.5))
	if c.Derived().PageSize != 64 || r.CellSize != 78324 || r.MaxTotalNumTokens%64 != 0 {
		t.Errorf("dsa hopper: page %d cell %v tokens %d", c.Derived().PageSize, r.CellSize, r.MaxTotalNumTokens)
	}
	b200 := sglang.Hardware{MemoryMiB: 183359, SM: 100, Platform: "cuda"}
	c = newC(t, sglang.Input{Spec: dsa, Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: b200, PostLoadFreeBytes: gibBytes(100)})
	r, _ = c.Configure(gibBytes(178))
	if r.CellSize != 43188 || r.Overcommit == nil || r.Overcommit.AllocatedCellBytes != 48068 || c.KV().Format.Name != "fp8_e4m3" {
		t.Errorf("dsa blackwell: cell %v kv %s", r.CellSize, c.KV().Format.Name)
	}
	// GPT-OSS on Blackwell: full pool, page 64.
	c = newC(t, sglang.Input{Spec: gptOSS(), Hardware: b200, PostLoadFreeBytes: gibBytes(100)})
	r, _ = c.Configure(gibBytes(178))
	if r.Hybrid || c.Derived().PageSize != 64 || r.CellSize != 8*128*36*2 {
		t.Errorf("gpt-oss blackwell: %+v page %d", r, c.Derived().PageSize)
	}
	// KV heads replicated at TP 16.
	c = newC(t, sglang.Input{Spec: llama70B(), Parallel: sglang.Parallel{TP: 16, PP: 1, DP: 1}, PostLoadFreeBytes: gibBytes(60)})
	r, _ = c.Configure(gibBytes(78.5))
	if r.CellSize != 1*256*80*2 {
		t.Errorf("tp16 cell %v", r.CellSize)
	}
	// EAGLE draft scaling on DeepSeek MTP (1 draft layer).
	c = newC(t, sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: h200,
		Args: sglang.ServerArgs{SpeculativeAlgorithm: "EAGLE", SpeculativeNumDraftTokens: 4}, PostLoadFreeBytes: gibBytes(59.5)})
	r, _ = c.Configure(gibBytes(139.5))
	if want := float64(int64(70272 * (1 + 1.0/61))); r.CellSize != want || c.Derived().MemFractionStatic != 0.882 {
		t.Errorf("eagle cell %v want %v, mfs %v", r.CellSize, want, c.Derived().MemFractionStatic)
	}
}

func TestPostCaptureResizeShrinksOnly(t *testing.T) {
	c := newC(t, sglang.Input{Spec: llama8B(), PostLoadFreeBytes: gibBytes(63.54)})
	r, err := c.Configure(gibBytes(78.5))
	if err != nil {
		t.Fatal(err)
	}
	// Much more free memory after capture: still capped at the current pool.
	big, err := c.PostCaptureResize(r, gibBytes(70), 0)
	if err != nil || big.MaxTotalNumTokens != r.MaxTotalNumTokens {
		t.Errorf("grow: %+v %v", big, err)
	}
	// Less: shrinks. Backed bytes are the pool already allocated.
	small, err := c.PostCaptureResize(r, gibBytes(12.9525+1.001), 0)
	if err != nil || small.MaxTotalNumTokens >= r.MaxTotalNumTokens || small.MaxTotalNumTokens != 8200 {
		t.Errorf("shrink: %d %v", small.MaxTotalNumTokens, err)
	}
	if !strings.HasPrefix(small.Logs[len(small.Logs)-1], "Post-capture KV sizing: max_total_num_tokens=8200, free memory=13.95 GB") {
		t.Errorf("log %q", small.Logs)
	}
}

func TestSpeculativeMambaNeedsMaxRunning(t *testing.T) {
	_, err := sglang.New(sglang.Input{Spec: qwen3Next(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Hardware: h100,
		Args: sglang.ServerArgs{SpeculativeAlgorithm: "EAGLE", SpeculativeNumDraftTokens: 4}})
	fixFlag(t, err, sglang.ErrInvalid, "--max-running-requests")
	c := newC(t, sglang.Input{Spec: qwen3Next(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1},
		Args: sglang.ServerArgs{SpeculativeAlgorithm: "EAGLE", SpeculativeNumDraftTokens: 4, MaxRunningRequests: 64}, PostLoadFreeBytes: gibBytes(41.25)})
	r, err := c.Configure(gibBytes(78.5))
	if err != nil {
		t.Fatal(err)
	}
	// Spec scratch: p·(min(64, K/3)+1)·D is charged before the slots.
	if r.MambaSpecBytes != 19316736*65*4 || r.MaxRunningRequests != 64 {
		t.Errorf("spec bytes %d running %d", r.MambaSpecBytes, r.MaxRunningRequests)
	}
	if !strings.Contains(r.Logs[0], "intermediate_ssm_state_cache size: ") {
		t.Errorf("log %q", r.Logs[0])
	}
}

// The suggested values of docs/sglang.md#errors errors really work.
func TestSuggestedValuesWork(t *testing.T) {
	// SWA chunk cap: the suggested --max-running-requests fits.
	in := sglang.Input{Spec: gptOSS(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
		Args: sglang.ServerArgs{MaxRunningRequests: 100000, DisableRadixCache: true}, PostLoadFreeBytes: gibBytes(78.5 - 60.8)}
	c := newC(t, in)
	_, err := c.Configure(gibBytes(78.5))
	fe := fixFlag(t, err, sizing.ErrSWAChunkCap, "--max-running-requests")
	if fe.Value == "" {
		t.Fatalf("no value: %v", err)
	}
	var n int
	if _, e := fmt.Sscan(fe.Value, &n); e != nil || n <= 0 || n >= 100000 {
		t.Fatalf("value %q", fe.Value)
	}
	in.Args.MaxRunningRequests = n
	if _, err := newC(t, in).Configure(gibBytes(78.5)); err != nil {
		t.Errorf("suggested %d fails: %v", n, err)
	}
	in.Args.MaxRunningRequests = n + 1
	if _, err := newC(t, in).Configure(gibBytes(78.5)); !errors.Is(err, sizing.ErrSWAChunkCap) {
		t.Errorf("%d+1 still fits: %v", n, err)
	}

	// Mamba: a tiny --mamba-full-memory-ratio gets a working one.
	in = sglang.Input{Spec: qwen3Next(), Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Hardware: h100,
		Args: sglang.ServerArgs{MambaFullMemoryRatio: 0.0001}, PostLoadFreeBytes: gibBytes(41.25)}
	_, err = newC(t, in).Configure(gibBytes(78.5))
	fe = fixFlag(t, err, sizing.ErrMamba, "--mamba-full-memory-ratio")
	var r float64
	if _, e := fmt.Sscan(fe.Value, &r); e != nil || r <= 0.0001 {
		t.Fatalf("value %q", fe.Value)
	}
	in.Args.MambaFullMemoryRatio = r
	if _, err := newC(t, in).Configure(gibBytes(78.5)); err != nil {
		t.Errorf("suggested ratio %v fails: %v", r, err)
	}

	// Not enough memory: the suggested --mem-fraction-static works.
	in = sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
		Args: sglang.ServerArgs{MemFractionStatic: 0.5}, PostLoadFreeBytes: gibBytes(39.25) + 1000}
	_, err = newC(t, in).Configure(gibBytes(78.5))
	fe = fixFlag(t, err, sglang.ErrNotEnoughMemory, "--mem-fraction-static")
	if _, e := fmt.Sscan(fe.Value, &in.Args.MemFractionStatic); e != nil {
		t.Fatal(e)
	}
	if _, err := newC(t, in).Configure(gibBytes(78.5)); err != nil {
		t.Errorf("suggested mfs %v fails: %v", in.Args.MemFractionStatic, err)
	}
	// No KV memory: the suggested --mem-fraction-static works.
	in = sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: gibBytes(10)}
	_, err = newC(t, in).Configure(gibBytes(78.5))
	fe = fixFlag(t, err, sglang.ErrNoKVMemory, "--mem-fraction-static")
	if _, e := fmt.Sscan(fe.Value, &in.Args.MemFractionStatic); e != nil {
		t.Fatal(e)
	}
	if _, err := newC(t, in).Configure(gibBytes(78.5)); err != nil {
		t.Errorf("suggested mfs %v fails: %v", in.Args.MemFractionStatic, err)
	}
}

func TestPreResolvedKV(t *testing.T) {
	kv, err := sglang.ResolveKV(sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: dtype.BFloat16})
	if err != nil {
		t.Fatal(err)
	}
	c := newC(t, sglang.Input{Spec: llama8B(), KV: &kv, PostLoadFreeBytes: gibBytes(63.54)})
	r, err := c.Configure(gibBytes(78.5))
	if err != nil || r.CellSize != 65536 {
		t.Errorf("cell %v err %v", r.CellSize, err)
	}
	if _, err := sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, KV: &sglang.KVResolution{}}); !errors.Is(err, sglang.ErrInvalid) {
		t.Errorf("empty resolution: %v", err)
	}
}

// Errata k.1: swa_v_head_dim defaults to swa_head_dim (itself head_dim),
// not to v_head_dim.
func TestSWAVHeadDimDefault(t *testing.T) {
	s := gptOSS()
	s.HeadDim, s.VHeadDim = 128, 64
	c := newC(t, sglang.Input{Spec: s, PostLoadFreeBytes: gibBytes(40)})
	r, err := c.Configure(gibBytes(78.5))
	if err != nil {
		t.Fatal(err)
	}
	full, swa := 8.0*(128+64)*2, 8.0*(128+128)*2
	if want := full*18 + float64(0.8*swa)*18; r.CellSize != want {
		t.Errorf("cell %v, want %v", r.CellSize, want)
	}
}

// NEXTN is SGLang's alias of EAGLE: server_args rewrites it before sizing,
// so the plan is EAGLE's (DeepSeek-V3's MTP layer as the draft, the 2 GiB
// speculative reserve of the 0.5.3 fraction: 0.882).
func TestNEXTNIsEAGLE(t *testing.T) {
	var got []string
	for _, alg := range []string{"NEXTN", "nextn", "EAGLE"} {
		c := newC(t, sglang.Input{Spec: deepseekV3(), Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: h200,
			Args: sglang.ServerArgs{SpeculativeAlgorithm: alg, SpeculativeNumDraftTokens: 4}, PostLoadFreeBytes: gibBytes(59.5)})
		r, err := c.Configure(gibBytes(139.5))
		if err != nil {
			t.Fatal(err)
		}
		d := c.Derived()
		got = append(got, fmt.Sprintf("%s %d %v %v %d", d.SpeculativeAlgo, d.DraftLayers, d.MemFractionStatic, r.CellSize, r.MaxTotalNumTokens))
	}
	if got[0] != got[2] || got[1] != got[2] || !strings.HasPrefix(got[2], "EAGLE 1 0.882 ") {
		t.Errorf("NEXTN / nextn / EAGLE: %q", got)
	}
	if _, err := sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
		Args: sglang.ServerArgs{SpeculativeAlgorithm: "MTP"}}); !errors.Is(err, sglang.ErrInvalid) {
		t.Errorf("MTP: err %v, want ErrInvalid (SGLang's parser has no MTP choice)", err)
	}
}
