package sglang_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/model"
)

// An fp8 DeepSeek-V3.2 pool before 0.5.17 is counted at 61 × (576 + 132) =
// 43,188 B a token and allocated at 61 × (656 + 132) = 48,068 B (the
// StevenWang-CY B200 run: TP 4, mem_fraction_static 0.7, 176.22 GiB free
// before weights, 85.41 after); from 0.5.17 (PR #31992) both are 48,068.
// Only the flashmla backends allocate the 656-byte row: from 0.5.10 a
// Blackwell fp8 pool defaults to trtllm (576 bytes, 43,188 counted and
// allocated), so the overcommit needs the flashmla backends given.
func TestDSAFP8OvercommitByVersion(t *testing.T) {
	dsa := deepseekV3()
	dsa.Attention, dsa.IndexHeadDim, dsa.IndexTopK = model.DSA, 128, 2048
	b200 := sglang.Hardware{MemoryMiB: 183359, SM: 100, Platform: "cuda"}
	for _, tc := range []struct {
		version          string
		decode           string // --nsa-decode-backend ("" = the default)
		counted, alloc   int64
		safeMemFraction  float64
		overcommitWanted bool
	}{
		{"0.5.6", "", 43188, 48068, 0.681, true}, // default flashmla_auto / flashmla_kv
		{"0.5.9", "", 43188, 48068, 0.681, true},
		{"0.5.10", "", 43188, 43188, 0, false}, // default trtllm / trtllm
		{"0.5.16", "", 43188, 43188, 0, false},
		{"0.5.16", "flashmla_kv", 43188, 48068, 0.681, true}, // flashmla_auto / flashmla_kv given
		{"0.5.17", "flashmla_kv", 48068, 48068, 0, false},
		{"0.5.17", "", 43188, 43188, 0, false},
		{"latest", "", 43188, 43188, 0, false},
	} {
		args := sglang.ServerArgs{KVCacheDType: "fp8_e4m3", MemFractionStatic: 0.7, AttentionBackend: "nsa", NSADecodeBackend: tc.decode}
		if tc.decode != "" {
			args.NSAPrefillBackend = "flashmla_auto"
		}
		c := newC(t, sglang.Input{Spec: dsa, Version: tc.version, Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Hardware: b200,
			Args: args, PostLoadFreeBytes: gibBytes(85.41)})
		r, err := c.Configure(gibBytes(176.22))
		if err != nil {
			t.Fatalf("%q: %v", tc.version, err)
		}
		if r.CellSize != float64(tc.counted) || r.MaxTotalNumTokens != r.AvailableBytes/tc.counted/64*64 {
			t.Errorf("%q: cell %v tokens %d, want cell %d", tc.version, r.CellSize, r.MaxTotalNumTokens, tc.counted)
		}
		if want := r.MaxTotalNumTokens + 64; r.KSizeBytes+r.IndexerBytes != want*tc.alloc {
			t.Errorf("%q: K %d + indexer %d, want (tokens + page) × %d", tc.version, r.KSizeBytes, r.IndexerBytes, tc.alloc)
		}
		o := r.Overcommit
		if (o != nil) != tc.overcommitWanted {
			t.Fatalf("%q: overcommit %+v", tc.version, o)
		}
		if o == nil {
			continue
		}
		if o.CountedCellBytes != tc.counted || o.AllocatedCellBytes != tc.alloc || o.AllocatedBytes != r.MaxTotalNumTokens*tc.alloc ||
			o.ExcessBytes != o.AllocatedBytes-r.AvailableBytes || math.Abs(o.ExcessFraction-0.113) > 0.001 ||
			o.SafeMemFractionStatic != tc.safeMemFraction || o.FixedIn != "0.5.17" {
			t.Errorf("%q: %+v", tc.version, o)
		}
		w := r.Warnings[len(r.Warnings)-1]
		for _, s := range []string{"43188 B", "48068 B", "11.3 %", "upgrade to SGLang 0.5.17", "--mem-fraction-static 0.681"} {
			if !strings.Contains(w, s) {
				t.Errorf("%q: warning %q lacks %q", tc.version, w, s)
			}
		}
	}
}
