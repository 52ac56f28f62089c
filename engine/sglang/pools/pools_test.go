package pools_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/pools"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/pool"
)

// TestBytesMatchSizing ties every pool's bytes to the sizing package's
// cell for the same configuration: (size + page) rows × cell, for every
// format and both attention kinds (docs/sglang.md#cell-size-mha, docs/sglang.md#cell-size-mla).
func TestBytesMatchSizing(t *testing.T) {
	const size, page = 96, 16
	type geo struct {
		att               pool.Attention
		layers, heads, dk int
		dv, lora, rope    int
	}
	geos := []geo{
		{att: pool.MHA, layers: 3, heads: 2, dk: 128, dv: 128},
		{att: pool.MHA, layers: 2, heads: 4, dk: 64, dv: 64},
		{att: pool.MLA, layers: 3, lora: 512, rope: 64},
	}
	for _, g := range geos {
		for _, name := range kvFormats {
			f, _ := dtype.LookupFormat(name)
			if g.att == pool.MLA && (name == "mxfp8" || name == "int8_g64" || name == "int4_g32") {
				continue // SGLang has no MLA pool for these formats
			}
			t.Run(fmt.Sprintf("%s_L%d_H%d_D%d/%s", g.att, g.layers, g.heads, g.dk+g.lora, name), func(t *testing.T) {
				kv := mustKV(t, pool.KVConfig{Attention: g.att, Format: name, Size: size, PageSize: page, Layers: g.layers,
					Heads: g.heads, HeadDim: g.dk, VHeadDim: g.dv, KVLoraRank: g.lora, QKRopeHeadDim: g.rope})
				elem := f.Element.Size() // SGLang's kv_size
				a := sizing.Attention{MLA: g.att == pool.MLA, Layers: g.layers, KVHeads: g.heads, HeadDim: g.dk, VHeadDim: g.dv,
					KVLoraRank: g.lora, QKRopeHeadDim: g.rope, ElementSize: elem, Format: f}
				cell, err := a.Cell()
				if err != nil {
					t.Fatal(err)
				}
				want := (size + page) * cell
				got := kv.Bytes().KV()
				if got != want {
					t.Errorf("pool bytes %v = %d, sizing (size+page)*cell = %d*%d = %d", kv.Bytes(), got, size+page, cell, want)
				}
				if name == "int8_g64" || name == "int4_g32" {
					// The grouped-int pools at their real geometry (int8: 1 +
					// 2/64 B, int4: 0.5 + 2/32 B per element), which sizing
					// now budgets too.
					real := (size + page) * int64(g.layers) * f.Bytes(int64(g.heads*(g.dk+g.dv)))
					if got != real {
						t.Errorf("bytes = %d, want the format geometry %d", got, real)
					}
				}
			})
		}
	}
}

// TestHybridBytesMatchSizing ties a hybrid SWA pool to HybridSWA's
// per-token bytes: full pool (full+P)·full_pt·F, SWA pool (swa+P)·swa_pt·S.
func TestHybridBytesMatchSizing(t *testing.T) {
	for _, name := range []string{"bf16", "fp8_e4m3", "mxfp8"} {
		t.Run(name, func(t *testing.T) {
			f, _ := dtype.LookupFormat(name)
			h := sizing.HybridSWA{FullLayers: 2, SWALayers: 3, Ratio: 0.5}
			pt := func(heads, dim int) int64 {
				b := int64(heads * 2 * dim * f.Element.Size())
				if name == "mxfp8" {
					b += int64(heads*2*dim) / 32
				}
				return b
			}
			h.FullPerToken, h.SWAPerToken = pt(4, 64), pt(2, 128)
			pc, err := h.FromBytes(40<<20, 16)
			if err != nil {
				t.Fatal(err)
			}
			p, err := pool.New(pool.Config{PageSize: 16, MaxTotalTokens: int(pc.FullMaxTotalNumTokens), SWATokens: int(pc.SWAMaxTotalNumTokens),
				MaxRunningRequests: 4, ReqToTokenWidth: 64, Format: name, Attention: pool.MHA, LayerIDs: []int{1, 3},
				Heads: 4, HeadDim: 64, VHeadDim: 64, SWALayerIDs: []int{0, 2, 4}, SWAHeads: 2, SWAHeadDim: 128})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.KV.Bytes().KV(), (pc.FullMaxTotalNumTokens+16)*h.FullPerToken*2; got != want {
				t.Errorf("full pool bytes %d, want %d", got, want)
			}
			if got, want := p.SWAKV.Bytes().KV(), (pc.SWAMaxTotalNumTokens+16)*h.SWAPerToken*3; got != want {
				t.Errorf("swa pool bytes %d, want %d", got, want)
			}
		})
	}
}

func tinySpec(kinds []model.LayerKind) *model.Spec {
	return &model.Spec{Name: "tiny", Architecture: "LlamaForCausalLM", NumLayers: len(kinds), HiddenSize: 512, NumAttentionHeads: 8,
		NumKVHeads: 2, HeadDim: 64, VHeadDim: 64, Attention: model.MHA, LayerKinds: kinds, ContextLength: 2048, ModelDType: dtype.BFloat16}
}

func layerKinds(n int, f func(i int) model.LayerKind) []model.LayerKind {
	out := make([]model.LayerKind, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// TestReadyPoolsInTwoCalls goes from (model, free memory) to ready pools
// with sglang.Configure and pools.New, and checks that
// the built KV pools occupy the configured budget within one page per pool,
// and the state pool exactly what the configurator charged.
func TestReadyPoolsInTwoCalls(t *testing.T) {
	const gib = 1 << 30
	full := func(int) model.LayerKind { return model.FullAttention }
	mla := tinySpec(layerKinds(3, full))
	mla.Name, mla.Architecture, mla.Attention, mla.KVLoraRank, mla.QKRopeHeadDim, mla.NumKVHeads = "tiny-mla", "DeepseekV3ForCausalLM", model.MLA, 512, 64, 8
	swa := tinySpec(layerKinds(6, func(i int) model.LayerKind {
		if i%2 == 0 {
			return model.SlidingAttention
		}
		return model.FullAttention
	}))
	swa.Name, swa.Architecture, swa.SlidingWindow, swa.EngineSlidingWindow, swa.HybridSWAPool = "tiny-gpt-oss", "GptOssForCausalLM", 128, 127, true
	mamba := tinySpec(layerKinds(8, func(i int) model.LayerKind {
		if (i+1)%4 == 0 {
			return model.FullAttention
		}
		return model.LinearAttention
	}))
	mamba.Name, mamba.Architecture = "tiny-qwen3-next", "Qwen3NextForCausalLM"
	mamba.Linear = &model.LinearSpec{Kind: "gdn", LayerIDs: mamba.LayerIDs(model.LinearAttention), NumHeads: 4, HeadDim: 32, StateSize: 32, NGroups: 2, ConvKernel: 4, IntermediateSize: 128}

	tests := []struct {
		name   string
		spec   *model.Spec
		args   sglang.ServerArgs
		pools  int // KV pools (one page of slack each)
		hybrid bool
	}{
		{"mha bf16", tinySpec(layerKinds(4, full)), sglang.ServerArgs{}, 1, false},
		{"mha paged fp8", tinySpec(layerKinds(4, full)), sglang.ServerArgs{KVCacheDType: "fp8_e4m3", PageSize: 64}, 1, false},
		{"mha fp4", tinySpec(layerKinds(4, full)), sglang.ServerArgs{KVCacheDType: "fp4_mx_block16", PageSize: 16}, 1, false},
		{"mha nvfp4", tinySpec(layerKinds(4, full)), sglang.ServerArgs{KVCacheDType: "nvfp4", PageSize: 16}, 1, false},
		{"mha mxfp8", tinySpec(layerKinds(4, full)), sglang.ServerArgs{KVCacheDType: "mxfp8", PageSize: 16}, 1, false},
		{"mla bf16", mla, sglang.ServerArgs{PageSize: 64}, 1, false},
		{"mla fp4", mla, sglang.ServerArgs{KVCacheDType: "fp4_mx_block16", PageSize: 64}, 1, false},
		{"hybrid swa", swa, sglang.ServerArgs{SWAFullTokensRatio: 0.5}, 2, true},
		{"hybrid swa paged", swa, sglang.ServerArgs{SWAFullTokensRatio: 0.5, PageSize: 16}, 2, true},
		{"mamba hybrid", mamba, sglang.ServerArgs{}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			args.MemFractionStatic = 0.9
			args.MaxRunningRequests = 8
			in := sglang.Input{Spec: tt.spec, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1, DCP: 1}, Args: args,
				Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: gib + 24<<20}
			// Call 1: configure from the measured free memory; call 2: build the pools.
			c, res, p := readyPools(t, in)
			b := p.Bytes()
			slack := pageSlack(c, p)
			diff := b.KV() - res.KVPoolBytes
			if diff < 0 {
				diff = -diff
			}
			if diff > slack {
				t.Errorf("kv pools occupy %d B, configured budget %d B: off by %d > one page per pool (%d)", b.KV(), res.KVPoolBytes, diff, slack)
			}
			if res.KVPoolBytes > res.AvailableBytes {
				t.Errorf("configured pool %d B exceeds the budget %d B", res.KVPoolBytes, res.AvailableBytes)
			}
			if tt.hybrid {
				s := p.Allocator.(*pool.SWAAllocator)
				if int64(s.Full().Size()) != res.FullMaxTotalNumTokens || int64(s.SWA().Size()) != res.SWAMaxTotalNumTokens {
					t.Errorf("allocator sizes %d/%d, configured %d/%d", s.Full().Size(), s.SWA().Size(), res.FullMaxTotalNumTokens, res.SWAMaxTotalNumTokens)
				}
			} else if int64(p.Allocator.Size()) != res.MaxTotalNumTokens {
				t.Errorf("allocator size %d, configured %d", p.Allocator.Size(), res.MaxTotalNumTokens)
			}
			if p.ReqToToken.Size() != res.MaxRunningRequests {
				t.Errorf("request slots %d, configured %d", p.ReqToToken.Size(), res.MaxRunningRequests)
			}
			if p.State != nil {
				if b.Conv != res.MambaConvBytes || b.SSM != res.MambaSSMBytes || int64(p.State.Size()) != res.MaxMambaCacheSize {
					t.Errorf("state conv %d ssm %d slots %d, configured %d %d %d", b.Conv, b.SSM, p.State.Size(), res.MambaConvBytes, res.MambaSSMBytes, res.MaxMambaCacheSize)
				}
			} else if res.MaxMambaCacheSize != 0 {
				t.Errorf("no state pool for a mamba cache of %d", res.MaxMambaCacheSize)
			}
			if k, v := res.KSizeBytes, res.VSizeBytes; k != 0 && (b.K != k || b.V != v) {
				t.Logf("log K/V sizes %d/%d vs pool payload %d/%d (logs may count scales)", k, v, b.K, b.V)
			}
			// The pools work: allocate a request, write and read a layer.
			exercise(t, p)
		})
	}
}

func exercise(t *testing.T, p *pool.Pools) {
	t.Helper()
	slots, err := p.ReqToToken.Alloc(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	locs, err := p.Allocator.AllocExtend(nil, []pool.Extend{{SeqLen: 20, LastLoc: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ReqToToken.Write(slots[0], 0, locs); err != nil {
		t.Fatal(err)
	}
	last, _ := p.ReqToToken.LastLoc(slots[0], 20)
	if last != locs[19] {
		t.Errorf("last loc %d, want %d", last, locs[19])
	}
	layers := append(append([]int{}, p.Config.LayerIDs...), p.Config.SWALayerIDs...)
	for _, id := range layers {
		kv, _, _, err := p.Layer(id)
		if err != nil {
			t.Fatal(err)
		}
		c := kv.Config()
		ke, ve := c.Heads*c.HeadDim, c.Heads*c.VHeadDim
		if c.Attention == pool.MLA {
			ke, ve = c.KVLoraRank+c.QKRopeHeadDim, 0
		}
		k := make([]float32, len(locs)*ke)
		for i := range k {
			k[i] = float32(i%7) - 3
		}
		v := make([]float32, len(locs)*ve)
		if err := p.SetKV(id, locs, k, v); err != nil {
			t.Fatalf("layer %d: %v", id, err)
		}
		got := make([]float32, len(k))
		if err := p.GetKey(got, id, locs); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k, got); diff != "" && kv.Format().ElementBits >= 8 {
			t.Fatalf("layer %d key round trip (-want +got):\n%s", id, diff)
		}
	}
	if _, _, _, err := p.Layer(1000); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("unknown layer: err = %v", err)
	}
	if err := p.Allocator.Free(locs); err != nil {
		t.Fatal(err)
	}
	if err := p.ReqToToken.Free(slots...); err != nil {
		t.Fatal(err)
	}
}

func TestPoolsResize(t *testing.T) {
	p, err := pool.New(pool.Config{PageSize: 4, MaxTotalTokens: 64, MaxRunningRequests: 2, ReqToTokenWidth: 32, Format: "bf16",
		Attention: pool.MHA, LayerIDs: []int{0}, Heads: 1, HeadDim: 8, VHeadDim: 8})
	if err != nil {
		t.Fatal(err)
	}
	before := p.Bytes().KV()
	locs, _ := p.Allocator.Alloc(nil, 40) // pages 1..10
	if err := p.Resize(32, 0); !errors.Is(err, pool.ErrLiveOutside) {
		t.Fatalf("resize over live pages: err = %v", err)
	}
	if p.Bytes().KV() != before {
		t.Errorf("refused resize changed the buffers")
	}
	if err := p.Resize(41, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Bytes().KV(), before*(40+4)/(64+4); got != want {
		t.Errorf("bytes after resize %d, want %d", got, want)
	}
	_ = p.Allocator.Free(locs)
}

func TestConfigValidate(t *testing.T) {
	err := pool.Config{SWATokens: -1, Format: "nope", Attention: "x", LayerIDs: []int{1, 1}}.Validate()
	for _, want := range []string{"max total tokens", "swa tokens -1", "request table", "listed twice", "nope"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
	if !errors.Is(err, pool.ErrConfig) {
		t.Errorf("Validate() does not wrap ErrConfig")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// TestPostCaptureResize shrinks built pools with the configurator's
// post-capture result: refused while a live page lies beyond the new size,
// applied once it is freed.
func TestPostCaptureResize(t *testing.T) {
	const gib = 1 << 30
	for _, tt := range []struct {
		name string
		spec *model.Spec
		args sglang.ServerArgs
	}{
		{"paged", tinySpec(layerKinds(4, func(int) model.LayerKind { return model.FullAttention })), sglang.ServerArgs{PageSize: 16}},
		{"hybrid swa", func() *model.Spec {
			s := tinySpec(layerKinds(4, func(i int) model.LayerKind {
				if i%2 == 0 {
					return model.SlidingAttention
				}
				return model.FullAttention
			}))
			s.Architecture, s.SlidingWindow, s.EngineSlidingWindow, s.HybridSWAPool = "GptOssForCausalLM", 128, 127, true
			return s
		}(), sglang.ServerArgs{PageSize: 16, SWAFullTokensRatio: 0.5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			args.MemFractionStatic, args.MaxRunningRequests = 0.9, 4
			in := sglang.Input{Spec: tt.spec, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1, DCP: 1}, Args: args,
				Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: gib + 16<<20}
			c, res, p := readyPools(t, in)
			size := p.Allocator.Size()
			// Fill the pool so its last pages are live.
			live, err := p.Allocator.Alloc(nil, size/16*16)
			if err != nil {
				t.Fatal(err)
			}
			// After capture only 4 MiB more are free than the headroom.
			shrunk, err := c.PostCaptureResize(res, gib+4<<20, 0)
			if err != nil {
				t.Fatal(err)
			}
			if shrunk.MaxTotalNumTokens >= res.MaxTotalNumTokens {
				t.Fatalf("post-capture result did not shrink: %d -> %d", res.MaxTotalNumTokens, shrunk.MaxTotalNumTokens)
			}
			before := p.Bytes()
			if err := pools.Resize(p, shrunk); !errors.Is(err, pool.ErrLiveOutside) {
				t.Fatalf("resize with live pages beyond: err = %v, want ErrLiveOutside", err)
			}
			if diff := cmp.Diff(before, p.Bytes()); diff != "" {
				t.Fatalf("refused resize changed the pools (-before +after):\n%s", diff)
			}
			if err := p.Allocator.Free(live); err != nil {
				t.Fatal(err)
			}
			if err := pools.Resize(p, shrunk); err != nil {
				t.Fatal(err)
			}
			page := int64(c.Derived().PageSize)
			if got := p.Bytes().KV(); got > shrunk.KVPoolBytes+page*(before.KV()/int64(p.KV.Rows()))*2 || got >= before.KV() {
				t.Errorf("kv bytes after resize %d (before %d, configured %d)", got, before.KV(), shrunk.KVPoolBytes)
			}
			exercise(t, p)
		})
	}
}

// readyPools configures in's rank with 10 GiB free before loading (sglang.New,
// Configure) and builds its pools (pools.New), failing t on any error.
func readyPools(t *testing.T, in sglang.Input) (*sglang.Configurator, *sglang.Result, *pool.Pools) {
	t.Helper()
	c, err := sglang.New(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Configure(10 << 30)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pools.New(in, c, res)
	if err != nil {
		t.Fatal(err)
	}
	return c, res, p
}

// pageSlack is one page of rows per KV pool of p: page × that pool's bytes
// per token, how far its bytes may be off the configured budget.
func pageSlack(c *sglang.Configurator, p *pool.Pools) int64 {
	page := int64(c.Derived().PageSize)
	slack := page * p.KV.Bytes().KV() / int64(p.KV.Rows())
	if p.SWAKV != nil {
		slack += page * p.SWAKV.Bytes().KV() / int64(p.SWAKV.Rows())
	}
	return slack
}

var kvFormats = []string{"bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16", "int8_g64", "int4_g32"}

func mustKV(t testing.TB, cfg pool.KVConfig) *pool.KV {
	t.Helper()
	kv, err := pool.NewKV(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
