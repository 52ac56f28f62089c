package vllm

import (
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
)

// The specs, groups and tuple figures of DeepSeek-V4-Flash, by hand from
// vLLM's source. Flash has 43 layers: compress_ratios[0:43] gives layers 0
// and 1 ratio 0 (SWA only), c4 at 2, 4, …, 42 (21 layers) and c128 at 3,
// 5, …, 41 (20 layers).
//
// Pages (fp8_ds_mla, rounded up to 576 bytes):
//   - SWA cache: 64 slots × 584 = 37,376 → 37,440;
//   - c4 cache: 256/4 = 64 slots × 584 = 37,376 → 37,440;
//   - c128 cache: 256/128 = 2 slots × 584 = 1,168 → 1,728;
//   - c4 indexer K: 64 slots × (128 + 128/128·4 = 132) = 8,448 → 8,640;
//   - c4 state: 4 × (2·2·512 = 2,048 fp32 = 8,192 bytes) = 32,768 → 32,832;
//   - c128 state: 8 × (2·1·512 fp32 = 4,096 bytes) = 32,768 → 32,832;
//   - c4 indexer state: 4 × (2·2·128 fp32 = 2,048 bytes) = 8,192 → 8,640.
//
// Groups: the MLA specs (21 c4 + 21 indexer K + 20 c128: 21 tuples); the
// sliding specs by (block, window): SWA (64, 128) 43 layers, c4 states
// (4, 8) 21 + 21, c128 states (8, 128) 20. _approximate_gcd([21, 43, 21,
// 20], lower 21) = 22 (padding 1+1+1+2 = 5; 21 pads 0+20+0+1 = 21, 23 pads
// 10), so SWA splits into cdiv(43, 22) = 2 groups of 22 and 21 layers.
func TestDSV4FlashGroups(t *testing.T) {
	s, err := catalog.Load("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	groups, err := dsv4Groups(dsv4Layers(s, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		variant       string
		block, layers int
		page          int64
	}{
		{"compressed", 256, 62, 21*37440 + 21*8640 + 20*1728}, // 1,002,240
		{"swa", 64, 22, 22 * 37440},
		{"swa", 64, 21, 21 * 37440},
		{"c4_state", 4, 42, 21 * (32832 + 8640)},
		{"c128_state", 8, 20, 20 * 32832},
	}
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	for i, w := range want {
		g := groups[i]
		if g.Variant != w.variant || g.BlockSize != w.block || len(g.Layers) != w.layers || g.PageBytes != w.page {
			t.Errorf("group %d: %s block %d, %d layers, page %d; want %+v", i, g.Variant, g.BlockSize, len(g.Layers), g.PageBytes, w)
		}
	}
	if got := dsv4Stride(groups); got != 1002240 {
		t.Errorf("stride %d, want 1,002,240", got)
	}
	if got := approximateGCD([]int{21, 43, 21, 20}, 21); got != 22 {
		t.Errorf("approximateGCD = %d, want 22", got)
	}
	// Interleaved split: the first SWA group holds layers 0, 2, 4, ….
	if groups[1].Layers[1] != "layers.2.swa_cache" || groups[2].Layers[0] != "layers.1.swa_cache" {
		t.Errorf("SWA split %v / %v", groups[1].Layers[:2], groups[2].Layers[:1])
	}
}
