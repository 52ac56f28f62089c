package sglang_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

// TestMambaSlotRatioRule: the state slots one running request holds
// (kv_cache_configurator.py @ 003fca8; docs/sglang.md#mamba-slot-ratio): 1 without the radix cache; a base of 3 (2 under
// SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK) plus the extra buffer's 2 with the
// overlap scheduler, 1 lazily, 1 without overlap, and 1 for no buffer under
// the env. They bound max_running_requests: Qwen3-Next at TP 4 on an H100
// with 41 GiB free after loading has 706 state slots. 0.5.13 counts the
// lazy buffer as the extra buffer and ignores the env.
func TestMambaSlotRatioRule(t *testing.T) {
	spec, err := catalog.Load("Qwen/Qwen3-Next-80B-A3B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		version  string
		args     sglang.ServerArgs
		ratio    int
		requests int
	}{
		{"no radix cache", "latest", sglang.ServerArgs{DisableRadixCache: true}, 1, 0},
		{"no_buffer", "latest", sglang.ServerArgs{}, 3, 235},
		{"no_buffer, skip lock", "latest", sglang.ServerArgs{MambaSkipDecodeLock: true}, 3, 235},
		{"extra_buffer, overlap", "latest", sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer"}, 5, 141},
		{"extra_buffer, no overlap", "latest", sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer", DisableOverlapSchedule: true}, 4, 176},
		{"extra_buffer, skip lock", "latest", sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer", MambaSkipDecodeLock: true}, 4, 176},
		{"extra_buffer_lazy", "latest", sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer_lazy"}, 4, 176},
		{"extra_buffer_lazy, skip lock", "latest", sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer_lazy", MambaSkipDecodeLock: true}, 3, 235},
		{"0.5.13 lazy is the extra buffer", "0.5.13", sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer_lazy", MambaSkipDecodeLock: true}, 5, 0},
		{"0.5.13 ignores the env", "0.5.13", sglang.ServerArgs{MambaSkipDecodeLock: true}, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := sglang.Input{Spec: spec, Version: tt.version, Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1}, Args: tt.args,
				Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: 41 << 30}
			c, err := sglang.New(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Derived().MambaSlotRatio; got != tt.ratio {
				t.Errorf("mamba slot ratio %d, want %d", got, tt.ratio)
			}
			if tt.requests == 0 {
				return
			}
			res, err := c.Configure(78 << 30)
			if err != nil {
				t.Fatal(err)
			}
			if res.MaxMambaCacheSize/int64(tt.ratio) != int64(tt.requests) {
				t.Errorf("%d state slots / %d = %d requests, want %d", res.MaxMambaCacheSize, tt.ratio, res.MaxMambaCacheSize/int64(tt.ratio), tt.requests)
			}
		})
	}
	// SGLang asserts that the lazy buffer has the overlap scheduler.
	in := sglang.Input{Spec: spec, Parallel: sglang.Parallel{TP: 4, PP: 1, DP: 1},
		Args:     sglang.ServerArgs{MambaRadixCacheStrategy: "extra_buffer_lazy", DisableOverlapSchedule: true},
		Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: 41 << 30}
	if _, err := sglang.New(in); err == nil {
		t.Error("lazy extra buffer without the overlap scheduler: no error")
	}
}

// TestDecodeReservationRule: the newest SGLang's decode reservation per
// running request (mem_cache/allocation_sizing.py @ 027bddf,
// docs/sglang.md#decode-reservation).
func TestDecodeReservationRule(t *testing.T) {
	tests := []struct {
		name                      string
		page                      int
		spec                      bool
		steps, topk, draft        int
		allocLen, reserve, rowPad int
	}{
		{"no speculation", 1, false, 0, 0, 0, 1, 2, 4},
		{"no speculation, page 64", 64, false, 0, 0, 0, 1, 2, 4},
		{"EAGLE 3 steps, top-k 1, 4 draft tokens", 1, true, 3, 1, 4, 4, 8, 8},
		{"the same on pages of 64", 64, true, 3, 1, 4, 4, 8, 71},
		{"tree: 3 steps, top-k 4, page 16, 8 draft tokens", 16, true, 3, 4, 8, 192, 384, 399},
		{"steps dominate", 1, true, 5, 2, 4, 10, 20, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sglang.DecodeReservationFor(tt.page, tt.spec, tt.steps, tt.topk, tt.draft)
			if r.AllocLen != tt.allocLen || r.Reserve != tt.reserve || r.ReqToTokenExtra != tt.rowPad {
				t.Errorf("got %+v, want alloc %d, reserve %d, row headroom %d", r, tt.allocLen, tt.reserve, tt.rowPad)
			}
		})
	}
	// A plan carries it: EAGLE on flashmla's pages of 64 in the newest
	// profile; 0.5.13 keeps the headroom 4 + draft tokens.
	spec, err := catalog.Load("deepseek-ai/DeepSeek-V3")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		version string
		pad     int
	}{{"latest", 71}, {"0.5.13", 8}} {
		in := sglang.Input{Spec: spec, Version: v.version, Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1},
			Args:     sglang.ServerArgs{AttentionBackend: "flashmla", SpeculativeAlgorithm: "EAGLE", SpeculativeNumDraftTokens: 4, SpeculativeDraftNumLayers: 1},
			Hardware: sglang.Hardware{MemoryMiB: 143771, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: 60 << 30}
		c, err := sglang.New(in)
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Derived(); d.PageSize != 64 || d.Decode.ReqToTokenExtra != v.pad {
			t.Errorf("%s: page %d, row headroom %d, want 64, %d", v.version, d.PageSize, d.Decode.ReqToTokenExtra, v.pad)
		}
	}
}
