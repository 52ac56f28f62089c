package sglang_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
)

var fuzzKV = []string{"", "auto", "bf16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16", "fp16", "bogus"}

// FuzzConfigure builds random model shapes and server flags and asserts
// that Configure never panics and that successful results keep the
// invariants: page-aligned pools, swa ≤ full·ratio, nothing negative,
// running requests within capacity.
func FuzzConfigure(f *testing.F) {
	f.Add(uint8(0), uint8(32), uint8(8), uint8(128), uint8(1), uint8(1), uint8(0), uint8(0), uint16(64), uint16(0), uint8(0), uint8(0), uint16(0), false, uint8(0))
	f.Add(uint8(1), uint8(61), uint8(128), uint8(0), uint8(8), uint8(2), uint8(3), uint8(6), uint16(80), uint16(0), uint8(0), uint8(64), uint16(0), true, uint8(1))
	f.Add(uint8(2), uint8(36), uint8(8), uint8(64), uint8(1), uint8(1), uint8(2), uint8(0), uint16(18), uint16(128), uint8(80), uint8(0), uint16(64), true, uint8(0))
	f.Add(uint8(3), uint8(48), uint8(2), uint8(255), uint8(4), uint8(1), uint8(0), uint8(0), uint16(41), uint16(0), uint8(0), uint8(0), uint16(0), false, uint8(2))
	f.Add(uint8(2), uint8(4), uint8(1), uint8(8), uint8(1), uint8(1), uint8(0), uint8(1), uint16(0), uint16(4096), uint8(1), uint8(16), uint16(1), false, uint8(0))
	f.Fuzz(func(t *testing.T, family, layers, kvHeads, headDim, tp, pp, kvIdx, page uint8, postGiB, window uint16, ratioPct, maxRun uint8, maxTotal uint16, radixOff bool, spec uint8) {
		s := fuzzSpec(family, int(layers)%96+1, int(kvHeads)%64+1, int(headDim)%256+1, int(window))
		in := sglang.Input{
			Spec:     s,
			Parallel: sglang.Parallel{TP: 1 << (tp % 4), PP: int(pp)%4 + 1, DP: 1},
			Args: sglang.ServerArgs{
				KVCacheDType: fuzzKV[int(kvIdx)%len(fuzzKV)], PageSize: []int{0, 1, 16, 64, 128}[int(page)%5],
				SWAFullTokensRatio: float64(ratioPct%101) / 100, MaxRunningRequests: int(maxRun) * 8,
				MaxTotalTokens: int64(maxTotal) * 97, DisableRadixCache: radixOff,
				SpeculativeAlgorithm: []string{"", "EAGLE", "DFLASH", "NGRAM", "STANDALONE"}[int(spec)%5],
			},
			Hardware:          sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"},
			PostLoadFreeBytes: int64(postGiB) << 26, // 1/16 GiB steps
		}
		c, err := sglang.New(in)
		if err != nil {
			return
		}
		r, err := c.Configure(int64(78) << 30)
		if r == nil {
			t.Fatalf("nil result (err %v)", err)
		}
		if err != nil {
			var fe *engine.Refusal
			if !errors.As(err, &fe) && !errors.Is(err, sglang.ErrInvalid) && !errors.Is(err, sizing.ErrInvalid) {
				t.Fatalf("error without a fix: %v", err)
			}
			return
		}
		pageSize := int64(c.Derived().PageSize)
		if r.MaxTotalNumTokens <= 0 || r.MaxTotalNumTokens%pageSize != 0 {
			t.Fatalf("tokens %d, page %d", r.MaxTotalNumTokens, pageSize)
		}
		if r.Hybrid && r.Configurator == sizing.KindHybridSWA && r.FullMaxTotalNumTokens > 0 {
			ratio := c.Derived().SWAFullTokensRatio
			if r.SWAMaxTotalNumTokens > int64(float64(r.FullMaxTotalNumTokens)*ratio) || r.SWAMaxTotalNumTokens%pageSize != 0 {
				t.Fatalf("swa %d full %d ratio %v", r.SWAMaxTotalNumTokens, r.FullMaxTotalNumTokens, ratio)
			}
		}
		if in.Args.MaxTotalTokens > 0 && r.MaxTotalNumTokens > in.Args.MaxTotalTokens && r.CellSize > 0 {
			t.Fatalf("tokens %d above cap %d", r.MaxTotalNumTokens, in.Args.MaxTotalTokens)
		}
		if r.MaxRunningRequests <= 0 || int64(r.MaxRunningRequests) > r.MaxTotalNumTokens/2 {
			t.Fatalf("running %d tokens %d", r.MaxRunningRequests, r.MaxTotalNumTokens)
		}
		for _, v := range []int64{r.AvailableBytes, r.KSizeBytes, r.VSizeBytes, r.MaxMambaCacheSize, r.MambaStateBytes, r.KVPoolBytes} {
			if v < 0 {
				t.Fatalf("negative value in %+v", r)
			}
		}
		if r.CellSize > 0 && r.KVPoolBytes > r.AvailableBytes {
			t.Fatalf("pool %d > budget %d", r.KVPoolBytes, r.AvailableBytes)
		}
	})
}

func fuzzSpec(family uint8, layers, kvHeads, headDim, window int) *model.Spec {
	s := &model.Spec{Name: "fuzz", Architecture: "LlamaForCausalLM", NumLayers: layers, NumKVHeads: kvHeads, NumAttentionHeads: kvHeads * 4,
		HeadDim: headDim, VHeadDim: headDim, Attention: model.MHA, ContextLength: 32768, ModelDType: dtype.BFloat16,
		LayerKinds: kinds(layers, allFull)}
	switch family % 5 {
	case 1: // MLA / DSA
		s.Attention, s.KVLoraRank, s.QKRopeHeadDim = model.MLA, 512, 64
		if layers%2 == 0 {
			s.Attention, s.IndexHeadDim, s.IndexTopK = model.DSA, 128, 2048
		}
	case 2: // hybrid SWA
		s.Architecture, s.HybridSWAPool, s.SlidingWindow, s.EngineSlidingWindow = "GptOssForCausalLM", true, window, max(window-1, 0)
		s.LayerKinds = kinds(layers, func(i int) model.LayerKind {
			if i%2 == 0 || layers == 1 {
				return model.SlidingAttention
			}
			return model.FullAttention
		})
	case 3: // GDN hybrid
		s.LayerKinds = kinds(layers, func(i int) model.LayerKind {
			if (i+1)%4 == 0 {
				return model.FullAttention
			}
			return model.LinearAttention
		})
		s.Linear = &model.LinearSpec{Kind: "gdn", LayerIDs: s.LayerIDs(model.LinearAttention), NumHeads: 32, HeadDim: 128, StateSize: 128, NGroups: 16, ConvKernel: 4, IntermediateSize: 4096}
	case 4: // Mamba2 hybrid with a single group
		s.LayerKinds = kinds(layers, func(i int) model.LayerKind {
			if i%5 == 4 {
				return model.FullAttention
			}
			return model.LinearAttention
		})
		s.Linear = &model.LinearSpec{Kind: "mamba2", LayerIDs: s.LayerIDs(model.LinearAttention), NumHeads: 64, HeadDim: 64, StateSize: 128, NGroups: 1, ConvKernel: 4, IntermediateSize: 4096}
	}
	return s
}
