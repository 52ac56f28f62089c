package sglang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// UnifiedPool is SGLang's unified memory pool (--enable-unified-memory,
// docs/sglang.md#unified-memory-pool): one byte buffer that the
// full-attention KV pool and the Mamba state pool (hybrid Mamba models) or
// the SWA KV pool (hybrid sliding-window models) share.
type UnifiedPool = sizing.Unified

// ErrUnified reports a model or mode SGLang's unified memory pool refuses.
var ErrUnified = errors.New("sglang: unified memory pool unsupported")

// unifiedRule is the separator line SGLang's unified pool logs around its
// summary.
const unifiedRule = "[unified-memory-pool] ============================================================"

// unifiedRefusal is the ValueError (or assertion) SGLang's
// KVCacheConfigurator._init_pools raises for --enable-unified-memory
// (mem_cache/kv_cache_configurator.py @003fca8, unified_memory_pool.py),
// nil when the pool can be built.
func (c *Configurator) unifiedRefusal(p stagePlan) error {
	pd := c.in.Args.DisaggregationMode != "" && c.in.Args.DisaggregationMode != "null"
	drop := func(msg, hint string) error {
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: %s", ErrUnified, msg), Flag: "--enable-unified-memory", Value: "false", Hint: hint})
	}
	switch {
	case c.state != nil:
		if pd && !c.attnMLA {
			return drop("ValueError: --enable-unified-memory with PD disaggregation currently supports only MLA hybrid-Mamba models (e.g. kimi-linear); this model uses the MHA full-attention pool. Drop --enable-unified-memory or run without PD disaggregation.",
				"drop --enable-unified-memory, or run without PD disaggregation")
		}
		if c.attnMLA {
			return drop("AssertionError: unified memory pool does not support MLA-hybrid-Mamba yet", "drop --enable-unified-memory for MLA hybrid-Mamba models")
		}
	case c.d.HybridSWA && !c.isDSV4():
		if pd {
			return drop("ValueError: --enable-unified-memory with PD disaggregation does not support hybrid-SWA models yet (no whole-envelope transfer scheme for the SWA sub-pool). Drop --enable-unified-memory or run without PD.",
				"drop --enable-unified-memory, or run without PD disaggregation")
		}
		if c.attnMLA {
			return drop("AssertionError: unified memory pool does not support MLA-SWA hybrid yet", "drop --enable-unified-memory for MLA sliding-window models")
		}
		if c.d.SpeculativeAlgo != "" {
			return drop("ValueError: Speculative decoding with --enable-unified-memory is only supported for hybrid-Mamba targets; the unified hybrid-SWA pool's draft sizing (virtual-id space) is not wired yet.",
				"drop --enable-unified-memory or --speculative-algorithm")
		}
	default:
		return drop(fmt.Sprintf("ValueError: --enable-unified-memory only supports hybrid Mamba and hybrid sliding-window-attention models (DeepSeek-V4 excluded); the current model (['%s']) is neither, so the unified memory pool cannot be built. Drop --enable-unified-memory for this model.", c.in.Spec.Architecture),
			"drop --enable-unified-memory for this model")
	}
	if p.attn.Format.BlockSize > 0 {
		return drop("unified memory pool: block-scaled KV dtypes (fp4, mxfp8) are not modelled by kvcfg", "drop --enable-unified-memory or use a plain KV dtype")
	}
	return nil
}

// unifiedFinish replaces the static pools' allocation lines (from
// logStart on) with the unified pool's when --enable-unified-memory is on:
// the buffer is sized from the configurator's token and state counts,
// which the flag does not change.
func (c *Configurator) unifiedFinish(res *Result, p stagePlan, logStart int) error {
	if !c.in.Args.EnableUnifiedMemory {
		return nil
	}
	if err := c.unifiedRefusal(p); err != nil {
		return err
	}
	a := p.attn
	// MHASubPoolSpec: v_head_dim = head_dim on both paths (non-NPU).
	row := int64(a.KVHeads) * int64(a.HeadDim) * int64(a.ElementSize) * 2
	full := sizing.SubPool{Name: "full", Kind: "MHASubPoolSpec", Layers: p.layers, Grow: "down", EntryBytes: int64(p.layers) * row}
	var other sizing.SubPool
	path := "Mamba hybrid"
	if c.state != nil {
		full.Sized = res.MaxTotalNumTokens
		other = sizing.SubPool{Name: "mamba", Kind: "MambaSubPoolSpec", Layers: c.state.Layers, Grow: "up",
			EntryBytes: c.state.PerRequest(), Sized: res.MaxMambaCacheSize}
	} else {
		path = "SWA hybrid"
		full.Sized = res.FullMaxTotalNumTokens
		swa := p.hybrid.SWALayers
		other = sizing.SubPool{Name: "swa", Kind: "MHASubPoolSpec", Layers: swa, Grow: "up", EntryBytes: int64(swa) * row, Sized: res.SWAMaxTotalNumTokens}
	}
	u, err := sizing.NewUnified(path, full, other)
	if err != nil {
		return refusal(engine.Refusal{Err: err, Flag: "--mem-fraction-static", Hint: "give the KV cache more memory"})
	}
	res.Unified = &u
	res.KSizeBytes, res.VSizeBytes, res.IndexerBytes = u.TotalBytes, 0, 0
	res.Logs = append(res.Logs[:logStart], c.unifiedLogs(res, u, a.KVHeads, a.HeadDim)...)
	return nil
}

// unifiedLogs are the lines UnifiedKVPool and init_unified_*_pools log.
func (c *Configurator) unifiedLogs(res *Result, u UnifiedPool, heads, headDim int) []string {
	page := c.d.PageSize
	lines := []string{fmt.Sprintf("[unified-memory-pool] UnifiedKVPool allocated: total_bytes=%s GB (=%d B), 2 sub-pool(s)", gb(u.TotalBytes), u.TotalBytes)}
	for _, s := range []sizing.SubPool{u.Full, u.Other} {
		lines = append(lines, fmt.Sprintf("[unified-memory-pool]   sub-pool '%s': kind=%s, layer_num=%d, grow=%s, entry_bytes=%d, max_slots=%d, min_slot_index=%d (slots [0,%d) reserved)",
			s.Name, s.Kind, s.Layers, s.Grow, s.EntryBytes, s.MaxSlots, s.MinSlotIndex, s.MinSlotIndex))
	}
	if u.Other.Name == "swa" {
		lines = append(lines,
			fmt.Sprintf("[unified-memory-pool] UnifiedSWAKVPool wrapped unified buffer: full_layers=%d (max_slots=%d), swa_layers=%d (max_slots=%d), head_num=%d, head_dim=%d",
				u.Full.Layers, u.Full.MaxSlots, u.Other.Layers, u.Other.MaxSlots, heads, headDim),
			unifiedRule, "[unified-memory-pool] UNIFIED MEMORY POOL ENABLED -- path=SWA hybrid",
			fmt.Sprintf("[unified-memory-pool]   full_layers=%d, swa_layers=%d, head_num=%d, head_dim=%d, v_head_dim=%d, swa_head_num=%d, swa_head_dim=%d, swa_v_head_dim=%d, page_size=%d",
				u.Full.Layers, u.Other.Layers, heads, headDim, headDim, heads, headDim, headDim, page),
			unifiedRule)
		return lines
	}
	draft := "None"
	if c.d.DraftTokens > 0 {
		draft = strconv.Itoa(c.d.DraftTokens)
	}
	return append(lines, unifiedRule, "[unified-memory-pool] UNIFIED MEMORY POOL ENABLED -- path=Mamba hybrid",
		fmt.Sprintf("[unified-memory-pool]   full_layers=%d, mamba_layers=%d, head_num=%d, head_dim=%d, page_size=%d, is_draft_worker=False",
			u.Full.Layers, u.Other.Layers, heads, headDim, page),
		fmt.Sprintf("[unified-memory-pool]   total_bytes=%d, max_total_num_tokens=%d, max_mamba_cache_size=%d, max_num_reqs=%d, speculative_num_draft_tokens=%s",
			u.TotalBytes, res.MaxTotalNumTokens, res.MaxMambaCacheSize, res.MaxRunningRequests, draft),
		fmt.Sprintf("[unified-memory-pool]   mamba_full_memory_ratio=%s governs the total budget only, not the runtime split.", pyFloat(c.mambaFullMemoryRatio())),
		unifiedRule)
}

// mambaFullMemoryRatio is --mamba-full-memory-ratio (0.9 when not given).
func (c *Configurator) mambaFullMemoryRatio() float64 {
	if r := c.in.Args.MambaFullMemoryRatio; r > 0 {
		return r
	}
	return 0.9
}

// pyFloat formats x as Python's str(float) does for the values SGLang
// logs: the shortest repr, with ".0" on whole numbers.
func pyFloat(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// adviseUnifiedUnsupported reads the unified memory pool's refusals
// (docs/sglang.md#unified-memory-pool).
func adviseUnifiedUnsupported(map[string]float64, []string) engine.Advice {
	return engine.Advice{
		Meaning: "SGLang's unified memory pool (one byte buffer for full-attention KV and Mamba state, or full and SWA KV) is built only for MHA hybrid-Mamba and non-MLA hybrid sliding-window models, without PD disaggregation, and for hybrid SWA without speculative decoding; DeepSeek-V4 is excluded.",
		Knob:    "enable_unified_memory", Value: "false",
		Text: "Drop --enable-unified-memory: the static pools size the same tokens and state slots, only without the shared buffer.",
	}
}
