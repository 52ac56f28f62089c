package sglang_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

func TestUnifiedMambaPool(t *testing.T) {
	// Qwen3-Next-80B at TP 4: full entry = 12 full layers × 1 KV head
	// (max(1, 2//4)) × (256 + 256) × 2 B = 12,288 B. Mamba entry (GDN):
	// conv (8192/4, 3) × 2 B = 12,288 B, temporal (32/4, 128, 128) × 4 B =
	// 524,288 B, × 36 layers = 19,316,736 B = exactly 1,572 full tokens.
	args := sglang.ServerArgs{EnableUnifiedMemory: true}
	_, off, err := configureCatalog(t, "Qwen/Qwen3-Next-80B-A3B-Instruct", 4, sglang.ServerArgs{}, "", 138*giB, 100*giB)
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := configureCatalog(t, "Qwen/Qwen3-Next-80B-A3B-Instruct", 4, args, "", 138*giB, 100*giB)
	if err != nil {
		t.Fatal(err)
	}
	// The flag changes no count: the buffer is built from the sizes.
	if res.MaxTotalNumTokens != off.MaxTotalNumTokens || res.MaxMambaCacheSize != off.MaxMambaCacheSize || res.MaxRunningRequests != off.MaxRunningRequests {
		t.Fatalf("unified changed the sizes: %d/%d/%d vs %d/%d/%d", res.MaxTotalNumTokens, res.MaxMambaCacheSize, res.MaxRunningRequests,
			off.MaxTotalNumTokens, off.MaxMambaCacheSize, off.MaxRunningRequests)
	}
	u := res.Unified
	if u == nil || off.Unified != nil {
		t.Fatal("unified pool missing, or present without the flag")
	}
	if u.Full.EntryBytes != 12_288 || u.Other.EntryBytes != 19_316_736 || u.Full.Layers != 12 || u.Other.Layers != 36 {
		t.Fatalf("entries %d/%d layers %d/%d; want 12,288/19,316,736 and 12/36", u.Full.EntryBytes, u.Other.EntryBytes, u.Full.Layers, u.Other.Layers)
	}
	wantTotal := res.MaxTotalNumTokens*12_288 + res.MaxMambaCacheSize*19_316_736
	if u.TotalBytes != wantTotal || res.KSizeBytes != wantTotal {
		t.Errorf("total %d, k size %d; want %d", u.TotalBytes, res.KSizeBytes, wantTotal)
	}
	// min_slot_index: ceil(19,316,736/12,288) = 1,572 for full, 1 for mamba.
	if u.Full.MinSlotIndex != 1572 || u.Other.MinSlotIndex != 1 || u.Full.MaxSlots != wantTotal/12_288 || u.Other.MaxSlots != wantTotal/19_316_736 {
		t.Errorf("slots %+v %+v", u.Full, u.Other)
	}
	// One state slot is worth 1,572 tokens both ways.
	if got := u.FullTokensWith(res.MaxMambaCacheSize - 1); got != res.MaxTotalNumTokens+1572 {
		t.Errorf("tokens with one slot fewer = %d, want %d", got, res.MaxTotalNumTokens+1572)
	}
	logs := strings.Join(res.Logs, "\n")
	for _, want := range []string{
		"[unified-memory-pool]   sub-pool 'full': kind=MHASubPoolSpec, layer_num=12, grow=down, entry_bytes=12288, max_slots=",
		", min_slot_index=1572 (slots [0,1572) reserved)",
		"[unified-memory-pool]   sub-pool 'mamba': kind=MambaSubPoolSpec, layer_num=36, grow=up, entry_bytes=19316736,",
		"[unified-memory-pool] UNIFIED MEMORY POOL ENABLED -- path=Mamba hybrid",
		"[unified-memory-pool]   full_layers=12, mamba_layers=36, head_num=1, head_dim=256, page_size=1, is_draft_worker=False",
		"speculative_num_draft_tokens=None",
		"[unified-memory-pool]   mamba_full_memory_ratio=0.9 governs the total budget only, not the runtime split.",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "Mamba Cache is allocated") || strings.Contains(logs, "KV Cache is allocated") {
		t.Errorf("the static pools' lines are still there:\n%s", logs)
	}
}

func TestUnifiedSWAPool(t *testing.T) {
	// gpt-oss-120b at TP 8: 18 full and 18 sliding layers, 1 KV head per
	// rank (8//8), head_dim 64, bf16: each entry = 18 × 1 × 128 × 2 = 4,608 B.
	_, res, err := configureCatalog(t, "openai/gpt-oss-120b", 8, sglang.ServerArgs{EnableUnifiedMemory: true}, "", 138*giB, 100*giB)
	if err != nil {
		t.Fatal(err)
	}
	u := res.Unified
	if u == nil || u.Other.Name != "swa" || u.Full.EntryBytes != 4608 || u.Other.EntryBytes != 4608 {
		t.Fatalf("unified %+v", u)
	}
	if u.TotalBytes != (res.FullMaxTotalNumTokens+res.SWAMaxTotalNumTokens)*4608 || u.Full.MaxSlots != res.FullMaxTotalNumTokens+res.SWAMaxTotalNumTokens {
		t.Errorf("total %d, full max slots %d; full %d swa %d", u.TotalBytes, u.Full.MaxSlots, res.FullMaxTotalNumTokens, res.SWAMaxTotalNumTokens)
	}
	if !strings.Contains(strings.Join(res.Logs, "\n"), "UNIFIED MEMORY POOL ENABLED -- path=SWA hybrid") {
		t.Errorf("logs %q", res.Logs)
	}
}

func TestUnifiedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		tp          int
		args        sglang.ServerArgs
		want        string
	}{
		{"pd mha mamba", "Qwen/Qwen3-Next-80B-A3B-Instruct", 4, sglang.ServerArgs{DisaggregationMode: "decode"},
			"ValueError: --enable-unified-memory with PD disaggregation currently supports only MLA hybrid-Mamba models (e.g. kimi-linear); this model uses the MHA full-attention pool. Drop --enable-unified-memory or run without PD disaggregation."},
		{"pd hybrid swa", "openai/gpt-oss-120b", 8, sglang.ServerArgs{DisaggregationMode: "prefill"},
			"ValueError: --enable-unified-memory with PD disaggregation does not support hybrid-SWA models yet (no whole-envelope transfer scheme for the SWA sub-pool). Drop --enable-unified-memory or run without PD."},
		{"spec with unified swa", "openai/gpt-oss-120b", 8, sglang.ServerArgs{SpeculativeAlgorithm: "EAGLE3", SpeculativeDraftNumLayers: 1, SpeculativeNumDraftTokens: 4},
			"ValueError: Speculative decoding with --enable-unified-memory is only supported for hybrid-Mamba targets; the unified hybrid-SWA pool's draft sizing (virtual-id space) is not wired yet."},
		{"deepseek-v4", "deepseek-ai/DeepSeek-V4-Flash", 8, sglang.ServerArgs{},
			"ValueError: --enable-unified-memory only supports hybrid Mamba and hybrid sliding-window-attention models (DeepSeek-V4 excluded); the current model (['DeepseekV4ForCausalLM']) is neither, so the unified memory pool cannot be built. Drop --enable-unified-memory for this model."},
		{"dense", "meta-llama/Llama-3.1-8B-Instruct", 1, sglang.ServerArgs{},
			"the current model (['LlamaForCausalLM']) is neither"},
		{"mla mamba", "moonshotai/Kimi-Linear-48B-A3B-Instruct", 4, sglang.ServerArgs{},
			"AssertionError: unified memory pool does not support MLA-hybrid-Mamba yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args.EnableUnifiedMemory = true
			_, _, err := configureCatalog(t, tc.model, tc.tp, tc.args, "", 138*giB, 100*giB)
			var r *engine.Refusal
			if !errors.As(err, &r) || !errors.Is(err, sglang.ErrUnified) {
				t.Fatalf("err = %v, want an ErrUnified refusal", err)
			}
			if !strings.Contains(r.Message, tc.want) || strings.HasPrefix(r.Message, "sglang:") || r.Flag != "--enable-unified-memory" {
				t.Errorf("message %q flag %q; want %q", r.Message, r.Flag, tc.want)
			}
		})
	}
}

func TestNewUnifiedTooSmall(t *testing.T) {
	// total = 1·100 + 1·1,000 = 1,100 B: full max_slots 11, min index 10;
	// mamba max_slots 1 ≤ min index 1, so UnifiedKVPool refuses.
	_, err := sizing.NewUnified("Mamba hybrid", sizing.SubPool{Name: "full", EntryBytes: 100, Sized: 1}, sizing.SubPool{Name: "mamba", EntryBytes: 1000, Sized: 1})
	if !errors.Is(err, sizing.ErrNoMemory) || !strings.Contains(err.Error(), "sub-pool 'mamba' fits only 1 slots in 1100 bytes, but min_slot_index=1") {
		t.Fatalf("err = %v", err)
	}
	u, err := sizing.NewUnified("Mamba hybrid", sizing.SubPool{Name: "full", EntryBytes: 100, Sized: 30}, sizing.SubPool{Name: "mamba", EntryBytes: 1000, Sized: 2})
	// total 5,000: full 50 slots (min 10), mamba 5 (min 1); 3 slots free 20 tokens.
	if err != nil || u.TotalBytes != 5000 || u.Full.MaxSlots != 50 || u.Full.MinSlotIndex != 10 || u.Other.MaxSlots != 5 || u.FullTokensWith(3) != 20 || u.OtherSlotsWith(10) != 4 {
		t.Fatalf("%+v %v", u, err)
	}
}

// explain recognises the refusals kvcfg raises in SGLang's words.
func TestUnifiedAndHiCachePatterns(t *testing.T) {
	for _, msg := range []string{
		"ValueError: --enable-unified-memory with PD disaggregation currently supports only MLA hybrid-Mamba models (e.g. kimi-linear); this model uses the MHA full-attention pool.",
		"ValueError: --enable-unified-memory only supports hybrid Mamba and hybrid sliding-window-attention models (DeepSeek-V4 excluded); the current model (['LlamaForCausalLM']) is neither",
		"ValueError: Speculative decoding with --enable-unified-memory is only supported for hybrid-Mamba targets; the unified hybrid-SWA pool's draft sizing (virtual-id space) is not wired yet.",
		"AssertionError: unified memory pool does not support MLA-hybrid-Mamba yet",
		"ValueError: Not enough host memory available. Requesting 107.80 GB but only have 96.64 GB free. Please reduce the size of the hierarchical cache.",
	} {
		found := ""
		for _, p := range sglang.Patterns() {
			if p.Regexp.MatchString(msg) {
				found = p.Name
				break
			}
		}
		want := "unified_memory_unsupported"
		if strings.Contains(msg, "host memory") {
			want = "hicache_host_memory"
		}
		if found != want {
			t.Errorf("%q matched %q, want %q", msg, found, want)
		}
	}
}
