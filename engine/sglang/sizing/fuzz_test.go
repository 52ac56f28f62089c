package sizing_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// FuzzConfigurators drives the default and hybrid SWA configurators with
// random geometry and budgets: no panic, page-aligned results, swa ≤
// full·ratio, the budget is never exceeded, nothing negative.
func FuzzConfigurators(f *testing.F) {
	f.Add(int64(10_000_000), uint16(4), uint16(64), uint8(32), uint8(16), uint8(16), uint8(50), uint8(1), uint16(0), uint8(0))
	f.Add(int64(5_097_589_309), uint16(8), uint16(64), uint8(36), uint8(18), uint8(18), uint8(80), uint8(1), uint16(127), uint8(1))
	f.Add(int64(1<<40), uint16(1), uint16(1), uint8(1), uint8(0), uint8(32), uint8(100), uint8(7), uint16(4096), uint8(2))
	f.Add(int64(-5), uint16(0), uint16(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0), uint8(3))
	f.Fuzz(func(t *testing.T, avail int64, heads, dim uint16, layers, full, swa, ratioPct, pageIdx uint8, window uint16, fp uint8) {
		page := []int{1, 16, 32, 64, 128, 256, 3, 1}[pageIdx%8]
		format, _ := dtype.LookupFormat([]string{"bf16", "fp8_e4m3", "nvfp4", "mxfp8", "int8_g64", "int4_g32", "fp4_mx_block16", "int8ring_int4"}[fp%8])
		a := sizing.Attention{KVHeads: int(heads), HeadDim: int(dim), VHeadDim: int(dim), Layers: int(layers), ElementSize: max(format.Element.Size(), 1), Format: format}
		if cell, err := a.Cell(); err == nil {
			if cell < 0 {
				t.Fatalf("negative cell %d", cell)
			}
			c, err := sizing.Default{Cell: cell, ZeroKVTokens: 4096}.FromBytes(avail, page)
			if err != nil {
				t.Fatal(err)
			}
			if c.MaxTotalNumTokens < 0 || c.MaxTotalNumTokens%int64(page) != 0 {
				t.Fatalf("tokens %d page %d", c.MaxTotalNumTokens, page)
			}
			if cell > 0 && avail > 0 && c.MaxTotalNumTokens > 0 && c.MaxTotalNumTokens > avail/cell {
				t.Fatalf("over budget: %d × %d > %d", c.MaxTotalNumTokens, cell, avail)
			}
		}
		pt := int64(heads) * int64(dim) * 2 * 2
		h := sizing.HybridSWA{FullPerToken: pt, SWAPerToken: pt, FullLayers: int(full), SWALayers: int(swa), Ratio: float64(ratioPct) / 100, SlidingWindow: int(window)}
		c, err := h.FromBytes(avail, page)
		if err != nil {
			if !errors.Is(err, sizing.ErrInvalid) && !errors.Is(err, sizing.ErrSWAFloor) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if c.SWAMaxTotalNumTokens < 0 || c.FullMaxTotalNumTokens < 0 || c.MaxTotalNumTokens%int64(page) != 0 || c.SWAMaxTotalNumTokens%int64(page) != 0 {
			t.Fatalf("bad split %+v page %d", c, page)
		}
		if full > 0 && float64(c.SWAMaxTotalNumTokens) > float64(c.FullMaxTotalNumTokens)*h.Ratio {
			t.Fatalf("swa %d > full %d × %v", c.SWAMaxTotalNumTokens, c.FullMaxTotalNumTokens, h.Ratio)
		}
		used := float64(c.FullMaxTotalNumTokens)*float64(h.FullCell()) + float64(c.SWAMaxTotalNumTokens)*float64(pt)*float64(swa)
		if avail > 0 && used > float64(avail)*(1+1e-9) && !math.IsInf(used, 0) {
			t.Fatalf("used %v > avail %d (%+v)", used, avail, c)
		}
	})
}
