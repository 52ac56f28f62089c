package sizing_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
)

func mha(h, d, l, s int) sizing.Attention {
	return sizing.Attention{KVHeads: h, HeadDim: d, VHeadDim: d, Layers: l, ElementSize: s}
}

// docs/sglang.md#golden-vectors G1–G10.
func TestCells(t *testing.T) {
	format := func(name string) dtype.Format {
		f, err := dtype.LookupFormat(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	with := func(a sizing.Attention, name string) sizing.Attention {
		a.Format = format(name)
		return a
	}
	fp4 := with(mha(8, 128, 32, 1), "nvfp4")
	mx := with(mha(8, 128, 32, 1), "mxfp8")
	dsv3 := sizing.Attention{MLA: true, Layers: 61, KVLoraRank: 512, QKRopeHeadDim: 64, ElementSize: 2}
	dsv3fp8 := dsv3
	dsv3fp8.ElementSize = 1
	mlaFP4 := with(dsv3fp8, "nvfp4")
	dsa := sizing.Attention{MLA: true, DSA: true, Layers: 61, KVLoraRank: 512, QKRopeHeadDim: 64, IndexHeadDim: 128, ElementSize: 1, DSAFP8Row: true}
	dsaBF16 := dsa
	dsaBF16.ElementSize, dsaBF16.DSAFP8Row = 2, false
	glm := sizing.Attention{MLA: true, DSA: true, Layers: 78, KVLoraRank: 512, QKRopeHeadDim: 64, IndexHeadDim: 128, ElementSize: 2}
	dcp := sizing.Attention{MLA: true, DSA: true, Layers: 2, KVLoraRank: 512, QKRopeHeadDim: 64, IndexHeadDim: 128, ElementSize: 1, DCP: 8}
	tests := []struct {
		name string
		a    sizing.Attention
		want int64
	}{
		{"G1 bf16", mha(8, 128, 32, 2), 131072},
		{"G2 fp8", mha(8, 128, 32, 1), 65536},
		{"G3 fp4", fp4, 38912},
		{"G3 fp4_mx_block16", with(fp4, "fp4_mx_block16"), 38912},
		{"G4 mxfp8", mx, 67584},
		// A format without block scales is ElementSize bytes per element.
		{"G2 fp8 format", with(mha(8, 128, 32, 1), "fp8_e4m3"), 65536},
		{"G1 bf16 format", with(mha(8, 128, 32, 2), "bf16"), 131072},
		// Grouped-int pools at their real layout (dtype.Format): per layer
		// and token, K and V rows of 8·128 = 1024 elements each.
		//   int8_g64: 1024 + 1024/64·2 = 1056 B per row → 2·1056·32 = 67,584
		//   int4_g32: 512 + 1024/32·2 = 576 B per row  → 2·576·32  = 36,864
		{"int8_g64", with(mha(8, 128, 32, 1), "int8_g64"), 67584},
		{"int4_g32", with(mha(8, 128, 32, 1), "int4_g32"), 36864},
		{"int8ring_int4 (ring not per token)", with(mha(8, 128, 32, 1), "int8ring_int4"), 36864},
		// MLA latent row of 576 elements: int8 576 + 9·2 = 594 B per layer.
		{"MLA int8_g64", with(dsv3fp8, "int8_g64"), 594 * 61},
		{"G5 70B TP4 fp8", mha(sizing.KVHeadsPerRank(8, 4, 1), 128, 80, 1), 40960},
		{"G6 Qwen3-Next TP4", mha(sizing.KVHeadsPerRank(2, 4, 1), 256, 12, 2), 12288},
		{"G7 DeepSeek-V3 bf16", dsv3, 70272},
		{"G7 DeepSeek-V3 fp8", dsv3fp8, 35136},
		{"G8 DSA fp8", dsa, 48068},
		{"G8 DSA bf16", dsaBF16, 78324},
		{"G9 MLA fp4", mlaFP4, 19764},
		{"G10 Gemma-2-9B", mha(8, 256, 42, 2), 344064},
		{"h.1 default mock", mha(4, 64, 32, 2), 32768},
		{"h.1 GLM-5-like DSA", glm, 100152},
		{"h.1 DSA DCP 8", dcp, 3264},
	}
	for _, tt := range tests {
		got, err := tt.a.Cell()
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: cell = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestCellErrors(t *testing.T) {
	for _, a := range []sizing.Attention{
		{KVHeads: 8, HeadDim: 128, VHeadDim: 128, Layers: 32}, // no element size
		{KVHeads: 0, HeadDim: 128, VHeadDim: 128, Layers: 32, ElementSize: 2},
		{MLA: true, Layers: 4, ElementSize: 2},
		{KVHeads: 1, HeadDim: 1, VHeadDim: 1, Layers: -1, ElementSize: 2},
	} {
		if _, err := a.Cell(); !errors.Is(err, sizing.ErrInvalid) {
			t.Errorf("%+v: err = %v", a, err)
		}
	}
}

func TestKVHeadsPerRank(t *testing.T) {
	tests := []struct{ kv, tp, dcp, want int }{
		{8, 1, 1, 8}, {8, 4, 1, 2}, {8, 8, 1, 1}, {8, 16, 1, 1}, {2, 4, 1, 1}, {8, 8, 8, 8}, {8, 8, 2, 2}, {1, 8, 0, 1},
	}
	for _, tt := range tests {
		if got := sizing.KVHeadsPerRank(tt.kv, tt.tp, tt.dcp); got != tt.want {
			t.Errorf("KVHeadsPerRank(%d,%d,%d) = %d, want %d", tt.kv, tt.tp, tt.dcp, got, tt.want)
		}
	}
}

// docs/sglang.md#engine-unit-test-cases EAGLE draft DCP budgeting.
func TestScaleEAGLE(t *testing.T) {
	for dcp, want := range map[int]int64{1: 1033, 2: 1066, 4: 1133, 8: 1266} {
		if got := sizing.ScaleEAGLE(1000, 60, 2, dcp); got != want {
			t.Errorf("dcp %d: %d, want %d", dcp, got, want)
		}
	}
	if got := sizing.ScaleEAGLE(1000, 60, 0, 1); got != 1000 {
		t.Errorf("no draft: %d", got)
	}
	if got := sizing.ScaleEAGLE(1000, 0, 2, 1); got != 1000 {
		t.Errorf("L=0: %d", got)
	}
}

func TestScaleDFlash(t *testing.T) {
	got, err := sizing.ScaleDFlash(1000, 60, 1, 0, 1)
	if err != nil || got != 1017 { // ceil(1000*61/60) = 1017
		t.Errorf("ceil scaling: %d, %v", got, err)
	}
	got, err = sizing.ScaleDFlash(1000, 60, 1, 300, 2)
	if err != nil || got != 1600 {
		t.Errorf("explicit: %d, %v", got, err)
	}
	if _, err := sizing.ScaleDFlash(0, 60, 1, 0, 1); !errors.Is(err, sizing.ErrInvalid) {
		t.Errorf("zero target: %v", err)
	}
	if _, err := sizing.ScaleDFlash(10, 60, 1, -1, 1); !errors.Is(err, sizing.ErrInvalid) {
		t.Errorf("negative draft cell: %v", err)
	}
}

type poolWant struct{ Max, Full, SWA int64 }

func pw(c sizing.PoolConfig) poolWant {
	return poolWant{c.MaxTotalNumTokens, c.FullMaxTotalNumTokens, c.SWAMaxTotalNumTokens}
}

// docs/sglang.md#engine-unit-test-cases pool_configurator CPU test.
func TestDefaultPool(t *testing.T) {
	d := sizing.Default{Cell: 32768}
	check := func(name string, c sizing.PoolConfig, err error, want int64) {
		t.Helper()
		if err != nil || c.MaxTotalNumTokens != want || c.Hybrid || c.FullMaxTotalNumTokens != 0 || c.SWAMaxTotalNumTokens != 0 {
			t.Errorf("%s: %+v, %v; want %d", name, c, err, want)
		}
	}
	c, err := d.FromBytes(10_000_000, 1)
	check("page 1", c, err, 305)
	c, err = d.FromBytes(10_000_000, 128)
	check("page 128", c, err, 256)
	c, err = d.FromMaxTokens(100, 1)
	check("constraint", c, err, 100)
	c, err = d.FromMaxTokens(1000, 128)
	check("constraint page", c, err, 896)
	c, err = sizing.Default{Cell: 0, ZeroKVTokens: sizing.ZeroKVTokens(false, 0, 4096)}.FromBytes(1<<30, 1)
	check("zero kv", c, err, 4096)
	if _, err := d.FromBytes(1, 0); !errors.Is(err, sizing.ErrInvalid) {
		t.Errorf("page 0: %v", err)
	}
	if (sizing.Default{}).Kind() != sizing.KindDefault {
		t.Error("kind")
	}
}

func hyb(full, swa int, ratio float64) sizing.HybridSWA {
	return sizing.HybridSWA{FullPerToken: 4 * 128 * 2, SWAPerToken: 4 * 128 * 2, FullLayers: full, SWALayers: swa, Ratio: ratio}
}

func TestHybridSWAPool(t *testing.T) {
	tests := []struct {
		name string
		h    sizing.HybridSWA
		page int
		want poolWant
	}{
		{"16+16 r0.5", hyb(16, 16, 0.5), 1, poolWant{406, 406, 203}},
		{"r0.25", hyb(16, 16, 0.25), 1, poolWant{488, 488, 122}},
		{"r0.75", hyb(16, 16, 0.75), 1, poolWant{348, 348, 261}},
		{"r1.0", hyb(16, 16, 1.0), 1, poolWant{305, 305, 305}},
		{"r0.5 page 128", hyb(16, 16, 0.5), 128, poolWant{384, 384, 128}},
		{"24+8 r0.5", hyb(24, 8, 0.5), 1, poolWant{348, 348, 174}},
		{"all SWA", hyb(0, 32, 0.5), 1, poolWant{305, 0, 305}},
	}
	for _, tt := range tests {
		c, err := tt.h.FromBytes(10_000_000, tt.page)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, pw(c)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if !c.Hybrid || len(c.Logs) != 1 {
			t.Errorf("%s: hybrid/logs %+v", tt.name, c)
		}
	}
	h := hyb(16, 16, 0.5)
	if h.CellSize() != 24576 {
		t.Errorf("cell %v", h.CellSize())
	}
	c, _ := h.FromMaxTokens(200, 1)
	if diff := cmp.Diff(poolWant{200, 200, 100}, pw(c)); diff != "" {
		t.Errorf("constraint: %s", diff)
	}
	c, _ = hyb(0, 32, 0.5).FromMaxTokens(500, 1)
	if diff := cmp.Diff(poolWant{500, 0, 500}, pw(c)); diff != "" {
		t.Errorf("all-SWA constraint: %s", diff)
	}
	if _, err := hyb(16, 0, 0.5).FromBytes(1e7, 1); !errors.Is(err, sizing.ErrInvalid) {
		t.Errorf("S=0: %v", err)
	}
}

// docs/sglang.md#ex4 (hypothetical split) and Ex.4b / G11.
func TestHybridSWAExamples(t *testing.T) {
	g := sizing.HybridSWA{FullPerToken: 8192, SWAPerToken: 8192, FullLayers: 21, SWALayers: 21, Ratio: 0.8}
	c, err := g.FromBytes(51_901_995_417, 1)
	if err != nil || c.FullMaxTotalNumTokens != 167610 || c.SWAMaxTotalNumTokens != 134088 {
		t.Errorf("Gemma-2 split: %+v %v", c, err)
	}
	o := sizing.HybridSWA{FullPerToken: 2048, SWAPerToken: 2048, FullLayers: 18, SWALayers: 18, Ratio: 0.8, SlidingWindow: 127}
	if o.CellSize() != 66355.2 {
		t.Errorf("gpt-oss cell %v", o.CellSize())
	}
	c, err = o.FromBytes(5_097_589_309, 1)
	if err != nil || c.FullMaxTotalNumTokens != 76822 || c.SWAMaxTotalNumTokens != 61457 {
		t.Errorf("gpt-oss: %+v %v", c, err)
	}
	want := "Use sliding window memory pool. full_layer_tokens=76822, swa_layer_tokens=61457"
	if len(c.Logs) != 1 || c.Logs[0] != want {
		t.Errorf("log %q", c.Logs)
	}
}

func TestHybridSWAFloor(t *testing.T) {
	o := sizing.HybridSWA{FullPerToken: 2048, SWAPerToken: 2048, FullLayers: 18, SWALayers: 18, Ratio: 0.001, SlidingWindow: 127}
	_, err := o.FromMaxTokens(100000, 1)
	if !errors.Is(err, sizing.ErrSWAFloor) {
		t.Fatalf("err = %v", err)
	}
	want := "sizing: SWA pool cannot hold one request: SWA pool (100 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (127) + page_size (1). Increase --swa-full-tokens-ratio or the total KV budget"
	if err.Error() != want {
		t.Errorf("got %q", err)
	}
	if r := o.MinRatio(100000, 1); r != 0.002 {
		t.Errorf("MinRatio = %v", r)
	}
	// window + page == swa is still an error (>=).
	o.Ratio = 0.5
	if _, err := o.FromMaxTokens(256, 1); !errors.Is(err, sizing.ErrSWAFloor) {
		t.Errorf("boundary: %v", err)
	}
	if _, err := o.FromMaxTokens(258, 1); err != nil {
		t.Errorf("just above: %v", err)
	}
}

func TestSWAChunkCap(t *testing.T) {
	in := sizing.ChunkCapInput{SlidingWindow: 127, EvictionInterval: 128, PageSize: 1, DecodeAlloc: 1, MaxRunningRequests: 64, AttnDPSize: 1, ChunkedPrefillSize: 8192, OverlapSchedule: true}
	// trailing = 127+128+1 = 256; per req 257; 64*257 + 2*8192 + 1.
	if got := sizing.ChunkCap(in); got != 64*257+16384+1 {
		t.Errorf("cap = %d", got)
	}
	in.OverlapSchedule = false
	if got := sizing.ChunkCap(in); got != 64*257+8192+1 {
		t.Errorf("cap no overlap = %d", got)
	}
	in.PDDecode, in.ExtraSlots = true, 2
	if got := sizing.ChunkCap(in); got != 64*257+128*2 {
		t.Errorf("cap PD = %d", got)
	}
	c := sizing.SWAChunkCap{HybridSWA: sizing.HybridSWA{FullPerToken: 2048, SWAPerToken: 2048, FullLayers: 18, SWALayers: 18, Ratio: 0.8}, Cap: 1000}
	got, err := c.FromBytes(100_000_000, 64)
	// swa = 1024; fixed = 1024*2048*18 = 37,748,736; full = (62,251,264 // 36,864) = 1688 → 1664.
	if err != nil || got.SWAMaxTotalNumTokens != 1024 || got.FullMaxTotalNumTokens != 1664 || got.MaxTotalNumTokens != 1664 {
		t.Errorf("chunk cap: %+v %v", got, err)
	}
	got, _ = c.FromMaxTokens(900, 64)
	if got.FullMaxTotalNumTokens != 896 || got.SWAMaxTotalNumTokens != 900 {
		t.Errorf("constraint: %+v", got)
	}
	if _, err := c.FromBytes(30_000_000, 64); !errors.Is(err, sizing.ErrSWAChunkCap) {
		t.Errorf("no room: %v", err)
	}
}

func qwen3Next() *model.LinearSpec {
	ids := make([]int, 0, 36)
	for i := range 48 {
		if (i+1)%4 != 0 {
			ids = append(ids, i)
		}
	}
	return &model.LinearSpec{Kind: "gdn", LayerIDs: ids, NumHeads: 32, HeadDim: 128, StateSize: 128, NGroups: 16, ConvKernel: 4, IntermediateSize: 4096}
}

// docs/sglang.md#ex5 / G12.
func TestMambaState(t *testing.T) {
	ls := qwen3Next()
	for tp, want := range map[int]int64{4: 19_316_736, 1: 77_266_944} {
		conv, temporal, err := ls.StateShapes(tp)
		if err != nil {
			t.Fatal(err)
		}
		m := sizing.MambaState{Conv: conv, Temporal: temporal, ConvElem: 2, SSMElem: 4, Layers: len(ls.LayerIDs)}
		if got := m.PerRequest(); got != want {
			t.Errorf("tp %d: per request %d, want %d", tp, got, want)
		}
	}
	conv, temporal, _ := ls.StateShapes(4)
	if diff := cmp.Diff([][]int{{2048, 3}}, conv); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]int{8, 128, 128}, temporal); diff != "" {
		t.Error(diff)
	}
	// One group replicated across TP 8 (n_groups += tp - n_groups).
	one := &model.LinearSpec{Kind: "mamba2", NumHeads: 24, HeadDim: 64, StateSize: 128, NGroups: 1, ConvKernel: 4, IntermediateSize: 1536}
	conv, _, err := one.StateShapes(8)
	if err != nil || conv[0][0] != (1536+2*8*128)/8 {
		t.Errorf("groups: %v %v", conv, err)
	}
	if _, _, err := one.StateShapes(5); !errors.Is(err, model.ErrShape) {
		t.Errorf("indivisible: %v", err)
	}
	if _, _, err := (*model.LinearSpec)(nil).StateShapes(1); !errors.Is(err, model.ErrRange) {
		t.Errorf("nil: %v", err)
	}
}

// docs/sglang.md#ex5: auto split of 27.434 GiB with ratio 0.9.
func TestHandleMaxMambaCache(t *testing.T) {
	rest := 78.50 - 37.25 - 78.50*(1-0.824)
	r, err := sizing.HandleMaxMambaCache(sizing.MambaBudget{PerRequest: 19_316_736, FullMemoryRatio: 0.9, AttnDPSize: 1}, rest)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxMambaCacheSize != 721 || r.StateBytes != 722*19_316_736 || r.Source != "auto" {
		t.Errorf("got %+v", r)
	}
	if kv := int64(r.RestGiB*(1<<30)) / 12288; kv != 1_262_235 {
		t.Errorf("KV tokens %d, want 1262235", kv)
	}
	r, err = sizing.HandleMaxMambaCache(sizing.MambaBudget{PerRequest: 1 << 20, MaxMambaCacheSize: 100, AttnDPSize: 2}, 10)
	if err != nil || r.MaxMambaCacheSize != 50 || r.Source != "max_mamba_cache_size" {
		t.Errorf("explicit: %+v %v", r, err)
	}
	r, err = sizing.HandleMaxMambaCache(sizing.MambaBudget{PerRequest: 1 << 20, MaxRunningRequests: 64, DisableRadixCache: true, AttnDPSize: 1, DraftTokens: 4}, 10)
	if err != nil || r.MaxMambaCacheSize != 64 || r.SpecBytes != 65*4<<20 {
		t.Errorf("radix off: %+v %v", r, err)
	}
	if _, err := sizing.HandleMaxMambaCache(sizing.MambaBudget{PerRequest: 1 << 30, FullMemoryRatio: 0.9, AttnDPSize: 1}, 1); !errors.Is(err, sizing.ErrMamba) {
		t.Errorf("too small: %v", err)
	}
}

// docs/sglang.md#engine-unit-test-cases: DSA (GLM-5-like: 78 layers, page 64) sizes for 32/64/96 GiB —
// pool bytes within budget, tokens page aligned; 32 GiB ⇒ 343,040 tokens.
func TestDSAPoolSizes(t *testing.T) {
	a := sizing.Attention{MLA: true, DSA: true, Layers: 78, KVLoraRank: 512, QKRopeHeadDim: 64, IndexHeadDim: 128, ElementSize: 2}
	cell, _ := a.Cell()
	for _, g := range []int64{32, 64, 96} {
		c, err := sizing.Default{Cell: cell}.FromBytes(g<<30, 64)
		if err != nil {
			t.Fatal(err)
		}
		if c.MaxTotalNumTokens%64 != 0 || c.MaxTotalNumTokens*cell > g<<30 || (c.MaxTotalNumTokens+64)*cell <= g<<30 {
			t.Errorf("%d GiB: %d tokens", g, c.MaxTotalNumTokens)
		}
		if g == 32 && c.MaxTotalNumTokens != 343040 {
			t.Errorf("32 GiB: %d, want 343040", c.MaxTotalNumTokens)
		}
	}
}

// docs/sglang.md#engine-unit-test-cases: a hybrid constraint at half the profiled full pool uses about
// half the memory.
func TestHybridConstraintHalf(t *testing.T) {
	h := hyb(16, 16, 0.5)
	full, _ := h.FromBytes(10_000_000, 1)
	half, _ := h.FromMaxTokens(full.FullMaxTotalNumTokens/2, 1)
	mem := func(c sizing.PoolConfig) float64 {
		return float64(c.FullMaxTotalNumTokens*h.FullCell() + c.SWAMaxTotalNumTokens*h.SWAPerToken*int64(h.SWALayers))
	}
	if r := mem(half) / mem(full); r < 0.49 || r > 0.51 {
		t.Errorf("ratio %v", r)
	}
	if half.FullMaxTotalNumTokens != 203 || half.SWAMaxTotalNumTokens != 101 {
		t.Errorf("half %+v", half)
	}
	if full.MaxTotalNumTokens*int64(h.CellSize()) > 10_000_000 {
		t.Error("over budget")
	}
}

// TokenBytes: the SWA sub-pools' bytes per token and layer for H = 8,
// D = 128 (2·1024 elements): bf16 4096; fp8 2048; mxfp8 2048 + 2048//32;
// FP4 one uint8 per element (docs/sglang.md#kv-dtype-element-sizes) 2048; int8_g64 2·(1024 + 32) = 2112;
// int4_g32 2·(512 + 64) = 1152.
func TestTokenBytes(t *testing.T) {
	tests := []struct {
		format string
		el     int
		want   int64
	}{
		{"bf16", 2, 4096}, {"fp8_e4m3", 1, 2048}, {"mxfp8", 1, 2112}, {"nvfp4", 1, 2048},
		{"int8_g64", 1, 2112}, {"int4_g32", 1, 1152},
	}
	for _, tt := range tests {
		f, err := dtype.LookupFormat(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		if got := sizing.TokenBytes(f, tt.el, 8, 128, 128); got != tt.want {
			t.Errorf("%s: TokenBytes = %d, want %d", tt.format, got, tt.want)
		}
		if got, want := sizing.RealLayout(f), tt.format == "int8_g64" || tt.format == "int4_g32"; got != want {
			t.Errorf("%s: RealLayout = %v", tt.format, got)
		}
	}
}
