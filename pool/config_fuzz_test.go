package pool_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/pool"
)

// FuzzConfig builds pools from arbitrary small (and some absurd) numbers:
// New must either succeed or return an ErrConfig, never panic, and built
// pools must report the bytes their config implies.
func FuzzConfig(f *testing.F) {
	f.Add(uint16(64), uint8(4), uint8(2), uint8(64), uint8(64), uint8(0), uint8(1), uint8(0), uint8(0))
	f.Add(uint16(100), uint8(16), uint8(1), uint8(128), uint8(128), uint8(5), uint8(2), uint8(1), uint8(3))
	f.Add(uint16(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(255), uint8(0), uint8(2), uint8(1))
	formats := []string{"bf16", "fp8_e4m3", "mxfp8", "nvfp4", "fp4_mx_block16", "int8_g64", "int4_g32", "fp32", "bogus"}
	f.Fuzz(func(t *testing.T, tokens uint16, page, heads, dk, dv, swa, layers, fmtIdx, mode uint8) {
		cfg := pool.Config{
			PageSize: int(page % 70), MaxTotalTokens: int(tokens) - 10, MaxRunningRequests: int(mode%5) - 1, ReqToTokenWidth: int(tokens % 300),
			Format: formats[int(fmtIdx)%len(formats)], Attention: pool.MHA, Heads: int(heads % 9), HeadDim: int(dk), VHeadDim: int(dv),
		}
		for i := range int(layers % 4) {
			cfg.LayerIDs = append(cfg.LayerIDs, i*2+1)
		}
		switch mode % 4 {
		case 1:
			cfg.Attention, cfg.KVLoraRank, cfg.QKRopeHeadDim = pool.MLA, int(dk)*4, int(dv%65)
		case 2:
			cfg.SWATokens = int(swa)
			cfg.SWALayerIDs = []int{0, 2}
		case 3:
			cfg.State = &pool.StateConfig{Size: int(swa % 9), Layers: int(layers % 3), Conv: [][]int{{int(dk), 3}}, Temporal: []int{int(heads), 4, 4},
				ConvDType: dtype.BFloat16, SSMDType: dtype.Float32, DraftTokens: int(mode % 3), SpecStateSize: int(mode % 3)}
		}
		p, err := pool.New(cfg)
		if err != nil {
			if !errors.Is(err, pool.ErrConfig) {
				t.Fatalf("New: error %v does not wrap ErrConfig", err)
			}
			return
		}
		b := p.Bytes()
		if (len(cfg.LayerIDs)+len(cfg.SWALayerIDs) > 0) != (b.KV() > 0) || b.ReqToToken != int64(cfg.MaxRunningRequests+1)*int64(cfg.ReqToTokenWidth)*4 {
			t.Fatalf("bytes %+v for %+v", b, cfg)
		}
		if p.Allocator.Size() > cfg.MaxTotalTokens {
			t.Fatalf("allocator size %d > %d", p.Allocator.Size(), cfg.MaxTotalTokens)
		}
	})
}
