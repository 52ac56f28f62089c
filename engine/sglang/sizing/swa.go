package sizing

import (
	"fmt"
)

// HybridSWA is HybridSWAPoolConfigurator (docs/sglang.md#hybrid-swa-pool): a full pool for
// full-attention layers and a sliding-window pool sized at
// swa_full_tokens_ratio of it.
type HybridSWA struct {
	// FullPerToken and SWAPerToken are per-layer bytes per token:
	// heads*(D_k+D_v)*s (+ the mxfp8 scale bytes).
	FullPerToken, SWAPerToken int64
	// FullLayers (F) and SWALayers (S) count the whole model's layers.
	FullLayers, SWALayers int
	// DraftFull and DraftSWAFull are EAGLE/STANDALONE draft layers budgeted
	// in the full and in the SWA pool; DraftCell is DFLASH's flat term.
	DraftFull, DraftSWAFull int
	DraftCell               int64
	// Ratio is swa_full_tokens_ratio.
	Ratio float64
	// SlidingWindow is the engine's window (0 = none); with page size it is
	// the SWA admission floor.
	SlidingWindow int
}

// Kind implements Configurator.
func (h HybridSWA) Kind() Kind { return KindHybridSWA }

// CellSize implements Configurator.
func (h HybridSWA) CellSize() float64 {
	full, swa := h.FullPerToken, h.SWAPerToken
	F, S := int64(h.FullLayers), int64(h.SWALayers)
	if F == 0 {
		return float64(swa*S + full*int64(h.DraftFull) + swa*int64(h.DraftSWAFull) + h.DraftCell)
	}
	base := float64(full*(F+int64(h.DraftFull)) + swa*int64(h.DraftSWAFull))
	scaled := float64(float64(h.Ratio*float64(swa)) * float64(S))
	return float64(base+scaled) + float64(h.DraftCell)
}

// FullCell is the bytes per full-pool token when the SWA pool is fixed
// (SWAChunkCap): full_pt*(F+draft_full) + swa_pt*draft_swa_full.
func (h HybridSWA) FullCell() int64 {
	return h.FullPerToken*(int64(h.FullLayers)+int64(h.DraftFull)) + h.SWAPerToken*int64(h.DraftSWAFull)
}

func (h HybridSWA) validate(page int) error {
	if err := checkPage(page); err != nil {
		return err
	}
	if h.SWALayers <= 0 {
		return fmt.Errorf("%w: Hybrid SWA model must have at least one SWA layer", ErrInvalid)
	}
	if h.FullPerToken < 0 || h.SWAPerToken <= 0 || h.FullLayers < 0 {
		return fmt.Errorf("%w: hybrid SWA per-token sizes %d/%d", ErrInvalid, h.FullPerToken, h.SWAPerToken)
	}
	if h.FullLayers > 0 && (h.Ratio <= 0 || h.Ratio > 1e6 || h.Ratio != h.Ratio) {
		return fmt.Errorf("%w: swa_full_tokens_ratio %v must be positive", ErrInvalid, h.Ratio)
	}
	return nil
}

// FromBytes implements Configurator.
func (h HybridSWA) FromBytes(available int64, page int) (PoolConfig, error) {
	if err := h.validate(page); err != nil {
		return PoolConfig{}, err
	}
	return h.solve(floorDiv(available, h.CellSize()), page)
}

// FromMaxTokens implements Configurator.
func (h HybridSWA) FromMaxTokens(tokens int64, page int) (PoolConfig, error) {
	if err := h.validate(page); err != nil {
		return PoolConfig{}, err
	}
	if tokens < 0 {
		tokens = 0
	}
	return h.solve(tokens, page)
}

func (h HybridSWA) solve(t int64, page int) (PoolConfig, error) {
	if h.FullLayers == 0 {
		swa := FloorPage(t, page)
		return PoolConfig{
			MaxTotalNumTokens:    swa,
			SWAMaxTotalNumTokens: swa,
			Hybrid:               true,
			Logs:                 []string{fmt.Sprintf("Use sliding window memory pool (all SWA). swa_layer_tokens=%d", swa)},
		}, nil
	}
	full := FloorPage(t, page)
	swa := FloorPage(int64(float64(full)*h.Ratio), page)
	cfg := PoolConfig{MaxTotalNumTokens: full, FullMaxTotalNumTokens: full, SWAMaxTotalNumTokens: swa, Hybrid: true}
	if full > 0 && h.SlidingWindow > 0 && int64(h.SlidingWindow+page) >= swa {
		return cfg, fmt.Errorf("%w: SWA pool (%d tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (%d) + page_size (%d). Increase --swa-full-tokens-ratio or the total KV budget",
			ErrSWAFloor, swa, h.SlidingWindow, page)
	}
	cfg.Logs = []string{fmt.Sprintf("Use sliding window memory pool. full_layer_tokens=%d, swa_layer_tokens=%d", full, swa)}
	return cfg, nil
}

// MinRatio returns the smallest swa_full_tokens_ratio (3 decimals) whose SWA
// pool clears the admission floor for a full pool of full tokens, or 0 when
// no ratio ≤ 1 does.
func (h HybridSWA) MinRatio(full int64, page int) float64 {
	if full <= 0 || page < 1 {
		return 0
	}
	for m := int64(1); m <= 1000; m++ {
		r := float64(m) / 1000
		swa := FloorPage(int64(float64(full)*r), page)
		if int64(h.SlidingWindow+page) < swa {
			return r
		}
	}
	return 0
}

// SWAChunkCap is SWAChunkCapPoolConfigurator (docs/sglang.md#swa-chunk-cap): the SWA pool is sized
// from a hard cap (running requests × per-request window footprint plus
// in-flight prefill chunks) and the rest goes to the full pool.
type SWAChunkCap struct {
	HybridSWA
	// Cap is the SWA token cap before page rounding.
	Cap int64
}

// ChunkCapInput are the inputs of the SWA chunk cap.
type ChunkCapInput struct {
	SlidingWindow      int
	DraftTokens        int // speculative_num_draft_tokens or 1
	EvictionInterval   int // SGLANG_SWA_EVICTION_INTERVAL (128)
	PageSize           int
	DecodeAlloc        int // page_size without speculation
	MaxRunningRequests int
	AttnDPSize         int
	ChunkedPrefillSize int
	OverlapSchedule    bool
	// PDDecode selects the disaggregated-decode formula with ExtraSlots.
	PDDecode   bool
	ExtraSlots int
}

// ChunkCap computes the SWA token cap of docs/sglang.md#swa-chunk-cap.
func ChunkCap(in ChunkCapInput) int64 {
	draft := max(in.DraftTokens, 1)
	ev := max(in.EvictionInterval, 1)
	dp := max(in.AttnDPSize, 1)
	trailing := int64(in.SlidingWindow) + int64(ev)*int64(draft) + int64(in.PageSize)
	perReq := trailing + int64(in.DecodeAlloc)
	numReqs := int64(in.MaxRunningRequests / dp)
	if in.PDDecode {
		return perReq*numReqs + int64(in.SlidingWindow+in.PageSize)*int64(in.ExtraSlots)
	}
	chunks := int64(2)
	if !in.OverlapSchedule {
		chunks = 1
	}
	return perReq*numReqs + chunks*int64(in.ChunkedPrefillSize) + int64(in.PageSize)
}

// Kind implements Configurator.
func (c SWAChunkCap) Kind() Kind { return KindSWAChunkCap }

// FromBytes implements Configurator.
func (c SWAChunkCap) FromBytes(available int64, page int) (PoolConfig, error) {
	if err := c.validate(page); err != nil {
		return PoolConfig{}, err
	}
	swa := CeilPage(c.Cap, page)
	fixed := swa * c.SWAPerToken * int64(c.SWALayers)
	fullCell := c.FullCell()
	var full int64
	if fullCell > 0 && available-fixed > 0 {
		full = FloorPage((available-fixed)/fullCell, page)
	}
	if full <= 0 {
		return PoolConfig{}, fmt.Errorf("%w: SWA pool cap (%d tokens, %.2f GiB) leaves no room for the full KV pool within the available %.2f GiB. Reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static",
			ErrSWAChunkCap, swa, float64(fixed)/(1<<30), float64(available)/(1<<30))
	}
	return c.result(full, swa), nil
}

// FromMaxTokens implements Configurator.
func (c SWAChunkCap) FromMaxTokens(tokens int64, page int) (PoolConfig, error) {
	if err := c.validate(page); err != nil {
		return PoolConfig{}, err
	}
	if tokens < 0 {
		tokens = 0
	}
	return c.result(FloorPage(tokens, page), min(CeilPage(c.Cap, page), tokens)), nil
}

func (c SWAChunkCap) result(full, swa int64) PoolConfig {
	return PoolConfig{
		MaxTotalNumTokens: full, FullMaxTotalNumTokens: full, SWAMaxTotalNumTokens: swa, Hybrid: true,
		Logs: []string{fmt.Sprintf("Use sliding window memory pool. full_layer_tokens=%d, swa_layer_tokens=%d", full, swa)},
	}
}
