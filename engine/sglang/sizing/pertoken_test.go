package sizing_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// TestPerToken pins the per-token breakdown of Llama-3.1-8B's 32 layers at
// TP 1 (8 KV heads × 128) per format, and checks that the budgeted cell is
// its total.
func TestPerToken(t *testing.T) {
	tests := []struct {
		format string
		size   int
		want   sizing.PerToken
	}{
		{"bf16", 2, sizing.PerToken{K: 65536, V: 65536}},
		{"fp8_e4m3", 1, sizing.PerToken{K: 32768, V: 32768}},
		// MXFP8: (H·(D_k+D_v)·L)//32 scale bytes.
		{"mxfp8", 1, sizing.PerToken{K: 32768, V: 32768, KScales: 2048}},
		// NVFP4: nibbles, (H·D_k·L·2)//16 scales, one layer's fp8 workspace.
		{"nvfp4", 1, sizing.PerToken{K: 16384, V: 16384, KScales: 4096, Workspace: 2048}},
		// int4_g32: 0.5 B per element plus one fp16 scale per 32, in the row.
		{"int4_g32", 1, sizing.PerToken{K: 16384, V: 16384, KScales: 2048, VScales: 2048, ScalesInRow: true}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			f, err := dtype.LookupFormat(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			a := sizing.Attention{Layers: 32, KVHeads: 8, HeadDim: 128, VHeadDim: 128, ElementSize: tt.size, Format: f}
			got, err := a.PerToken()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("PerToken = %+v, want %+v", got, tt.want)
			}
			cell, _ := a.Cell()
			if cell != got.Total() {
				t.Errorf("Cell %d != Total %d", cell, got.Total())
			}
			wantRow := got.K
			if got.ScalesInRow {
				wantRow += got.KScales
			}
			if got.KRow() != wantRow {
				t.Errorf("KRow %d, want %d", got.KRow(), wantRow)
			}
		})
	}
	// MLA with the DSA indexer: one latent row (512+64) and 128+4 indexer
	// bytes per layer.
	a := sizing.Attention{MLA: true, DSA: true, Layers: 61, KVLoraRank: 512, QKRopeHeadDim: 64, IndexHeadDim: 128, ElementSize: 2}
	got, err := a.PerToken()
	if err != nil {
		t.Fatal(err)
	}
	if want := (sizing.PerToken{K: 576 * 61 * 2, Indexer: 132 * 61}); got != want {
		t.Errorf("DSA PerToken = %+v, want %+v", got, want)
	}
	if _, err := (sizing.Attention{Layers: 1}).PerToken(); err == nil {
		t.Error("invalid geometry: no error")
	}
}
