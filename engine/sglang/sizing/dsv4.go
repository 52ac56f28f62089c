package sizing

import (
	"errors"
	"fmt"
	"math"
)

// ErrDSV4 reports a DeepSeek-V4 pool SGLang refuses to build (page size,
// compress-state dtype, SWA floor).
var ErrDSV4 = errors.New("sizing: DeepSeek-V4 pool")

// DSV4 is SGLang's DSV4PoolConfigurator (pool_configurator.py,
// docs/sglang.md#dsv4): DeepSeek-V4's compressed-attention pools. One
// "full" token of max_total_num_tokens costs BytesPerFullToken across the
// SWA, c4, c128, indexer and c4-state pools; the request-scoped c128-state
// pool is a fixed term subtracted from the budget first.
type DSV4 struct {
	// Layers, C4Layers and C128Layers count this stage's layers, all of
	// them and those with compress ratio 4 and 128.
	Layers, C4Layers, C128Layers int
	// QKNope, QKRope and IndexHeadDim are the head dims (448, 64, 128).
	QKNope, QKRope, IndexHeadDim int
	// Window is the config's sliding_window: the SWA page of the state rings.
	Window int
	// SWARatio is --swa-full-tokens-ratio.
	SWARatio float64
	// StateElem is the compress-state element size: 4 (fp32, the default)
	// or 2 (bf16), from SGLANG_DSV4_COMPRESS_STATE_DTYPE.
	StateElem int
	// Shrink is the HiSparse host_to_device_ratio (1 when off): it divides
	// the c4 pool.
	Shrink int
	// Speculative reports MTP: rings double (c4 16, c128 256) and the
	// bytes per token grow by (L+1)/L for the draft worker.
	Speculative bool
	// RequestedPerWorker is --max-running-requests // attn_dp_size, or -1
	// when not given (the fixed term then uses SGLang's estimate).
	RequestedPerWorker int
	// ContextLen is the context length (for the request estimate).
	ContextLen int
	// DecodeExtraSlots is the PD-decode pre-allocated slots (0 otherwise).
	DecodeExtraSlots int
	// FloorPages is the SWA admission floor in pages (0: none); the
	// version SGLang's unit test pins uses 3.
	FloorPages int
}

// Ring sizes of the compress-state pools (get_compress_state_ring_size).
func (d DSV4) C4Ring() int {
	if d.Speculative {
		return 16
	}
	return 8
}

// C128Ring is the c128 state ring: 128 tokens, 256 with MTP.
func (d DSV4) C128Ring() int {
	if d.Speculative {
		return 256
	}
	return 128
}

// KVBytes is one layer-token of the SWA and compressed pools: fp8 NoPE,
// bf16 RoPE and 8 scale bytes (448 + 128 + 8 = 584).
func (d DSV4) KVBytes() int { return d.QKNope + 2*d.QKRope + 8 }

// IndexerBytes is one c4 indexer row: fp8 keys and an fp32 scale per 128
// (128 + 4 = 132).
func (d DSV4) IndexerBytes() int { return d.IndexHeadDim + d.IndexHeadDim/128*4 }

// C4StateBytes is one c4 state slot of one layer: (kv, score) × 2 overlap
// rows of head_dim in the state dtype, plus the indexer's state.
func (d DSV4) C4StateBytes() int {
	return 2*2*(d.QKNope+d.QKRope)*d.StateElem + 2*2*d.IndexHeadDim*d.StateElem
}

// C128StateRowBytes is one c128 state row of one layer: (kv, score).
func (d DSV4) C128StateRowBytes() int { return 2 * (d.QKNope + d.QKRope) * d.StateElem }

// BaseBytesPerFullToken is _get_bytes_per_full_token before the draft
// scaling.
func (d DSV4) BaseBytesPerFullToken() float64 {
	kv, l, l4, l128 := float64(d.KVBytes()), float64(d.Layers), float64(d.C4Layers), float64(d.C128Layers)
	r := d.SWARatio
	c4Ratio := float64(d.C4Ring()) / float64(d.Window)
	attn := float64(d.QKNope + d.QKRope)
	c4State := 2 * 2 * attn * float64(d.StateElem)
	c4IdxState := 2 * 2 * float64(d.IndexHeadDim) * float64(d.StateElem)
	c4Frac := 1 / (4 * float64(max(d.Shrink, 1)))
	return r*kv*l + c4Frac*kv*l4 + 1.0/128*kv*l128 + 0.25*float64(d.IndexerBytes())*l4 +
		r*c4Ratio*c4State*l4 + r*c4Ratio*c4IdxState*l4
}

// CellSize implements Configurator: bytes_per_full_token, × (L+1)/L with
// MTP (the draft worker's pools).
func (d DSV4) CellSize() float64 {
	b := d.BaseBytesPerFullToken()
	if d.Speculative && d.Layers > 0 {
		b *= float64(d.Layers+1) / float64(d.Layers)
	}
	return b
}

// Kind implements Configurator.
func (d DSV4) Kind() Kind { return KindDSV4 }

// ReqSlots is _get_num_req_slots: max_running_requests + 1, plus the PD
// decode extra slots.
func (d DSV4) ReqSlots(maxRunning int) int { return maxRunning + d.DecodeExtraSlots + 1 }

// C128StateFixedBytes is _get_c128_state_fixed_bytes: the c128 state
// pool for maxRunning requests, rows = slots·ring + ring + 1 rounded up
// to 128, × 2·head_dim × elem × c128 layers.
func (d DSV4) C128StateFixedBytes(maxRunning int) int64 {
	if d.C128Layers == 0 {
		return 0
	}
	ring := int64(d.C128Ring())
	rows := int64(d.ReqSlots(maxRunning))*ring + ring + 1
	rows = (rows + 127) / 128 * 128
	return rows * int64(d.C128StateRowBytes()) * int64(d.C128Layers)
}

// EstimatedRequests is the request count the fixed term assumes without
// --max-running-requests: clamp(int(tokens/ctx·512), 2048, 4096), at most
// tokens // 2.
func (d DSV4) EstimatedRequests(tokens int64) int {
	est := int64(0)
	if d.ContextLen > 0 {
		est = int64(float64(tokens) / float64(d.ContextLen) * 512)
	}
	est = max(min(est, 4096), 2048)
	return int(min(est, tokens/2))
}

// FixedBytes is the c128-state term calculate_pool_sizes subtracts from
// available bytes before dividing.
func (d DSV4) FixedBytes(available int64) int64 {
	if d.RequestedPerWorker >= 0 {
		return d.C128StateFixedBytes(d.RequestedPerWorker)
	}
	full := int64(0)
	if c := d.CellSize(); c > 0 && available > 0 {
		full = int64(float64(available) / c)
	}
	return d.C128StateFixedBytes(d.EstimatedRequests(full))
}

func (d DSV4) validate(page int) error {
	if err := checkPage(page); err != nil {
		return err
	}
	if page%128 != 0 {
		return fmt.Errorf("%w: page_size must be multiple of 128 for compressed attention", ErrDSV4)
	}
	if d.Window <= 0 || d.Layers <= 0 || d.StateElem <= 0 || d.QKNope <= 0 {
		return fmt.Errorf("%w: window %d, layers %d, state element %d, NoPE dim %d", ErrInvalid, d.Window, d.Layers, d.StateElem, d.QKNope)
	}
	return nil
}

// DSV4Sizes are the sub-pool sizes of _DSV4PoolSizes.
type DSV4Sizes struct {
	Full      int64 `json:"full_max_total_num_tokens"`
	SWA       int64 `json:"swa_max_total_num_tokens"`
	C4        int64 `json:"c4_max_total_num_tokens"`
	C128      int64 `json:"c128_max_total_num_tokens"`
	C4State   int64 `json:"c4_state_pool_size"`
	C128State int64 `json:"c128_state_pool_size"`
}

// Sizes is _compute_dsv4_sizes: full page-floored, swa = floor_page(int(full·r)),
// c4 = full // (4·shrink), c128 = full // 128, c4_state = swa // window · ring;
// c128_state is set once max_running_requests is known (Finalize). With
// FloorPages set, an SWA pool below that many pages is refused.
func (d DSV4) Sizes(full int64, page int) (DSV4Sizes, error) {
	full = FloorPage(max(full, 0), page)
	swa := FloorPage(int64(float64(full)*d.SWARatio), page)
	s := DSV4Sizes{Full: full, SWA: swa, C4: full / int64(4*max(d.Shrink, 1)), C128: full / 128,
		C4State: swa / int64(d.Window) * int64(d.C4Ring())}
	if m := int64(d.FloorPages * page); d.FloorPages > 0 && full > 0 && swa < m {
		return s, fmt.Errorf("%w: DSV4 SWA pool (%d tokens) is below the admission floor: minimum=%d tokens (%d pages of %d); with full=%d tokens --swa-full-tokens-ratio must be at least %s",
			ErrSWAFloor, swa, m, d.FloorPages, page, full, trimFloat(d.MinRatio(full, page)))
	}
	return s, nil
}

// MinRatio is the smallest --swa-full-tokens-ratio whose SWA pool meets
// the floor for a full pool of full tokens (0 when full is empty).
func (d DSV4) MinRatio(full int64, page int) float64 {
	if full <= 0 {
		return 0
	}
	return float64(d.FloorPages*page) / float64(full)
}

func trimFloat(f float64) string { return fmt.Sprintf("%.4g", f) }

// Finalize is finalize_with_max_running_requests: the c128 state pool holds
// ring rows per request slot.
func (d DSV4) Finalize(s DSV4Sizes, maxRunning int) DSV4Sizes {
	s.C128State = int64(d.ReqSlots(maxRunning)) * int64(d.C128Ring())
	return s
}

// FromBytes implements Configurator (calculate_pool_sizes): the fixed
// c128-state term comes off the budget, the rest divides by the cell.
func (d DSV4) FromBytes(available int64, page int) (PoolConfig, error) {
	if err := d.validate(page); err != nil {
		return PoolConfig{}, err
	}
	fixed := d.FixedBytes(available)
	rest := max(available-fixed, 0)
	full := int64(0)
	if c := d.CellSize(); c > 0 {
		full = int64(math.Floor(float64(rest) / c))
	}
	s, err := d.Sizes(full, page)
	cfg := d.config(s)
	cfg.Logs = append([]string{fmt.Sprintf("DSV4 memory calculation: bytes_per_full_token=%.2f, available_bytes=%.2f GB, c128_state_fixed=%.2f GB, full_token=%d",
		d.CellSize(), float64(available)/(1<<30), float64(fixed)/(1<<30), s.Full)}, cfg.Logs...)
	return cfg, err
}

// FromMaxTokens implements Configurator (calculate_pool_sizes_from_max_tokens).
func (d DSV4) FromMaxTokens(tokens int64, page int) (PoolConfig, error) {
	if err := d.validate(page); err != nil {
		return PoolConfig{}, err
	}
	s, err := d.Sizes(tokens, page)
	return d.config(s), err
}

// config is _to_config: the pool-sizes log line (c128_state still 0, as
// SGLang prints it before finalize) and the MemoryPoolConfig.
func (d DSV4) config(s DSV4Sizes) PoolConfig {
	return PoolConfig{MaxTotalNumTokens: s.Full, FullMaxTotalNumTokens: s.Full, SWAMaxTotalNumTokens: s.SWA, Hybrid: true,
		DSV4: &s,
		Logs: []string{fmt.Sprintf("DSV4 pool sizes: full=%d, swa=%d, c4=%d, c128=%d, c4_state=%d, c128_state=%d",
			s.Full, s.SWA, s.C4, s.C128, s.C4State, s.C128State)}}
}

// DSV4Bytes are the bytes of each sub-pool of one rank, as the configurator
// budgets them (the pools add a page of padding rows; not counted here).
type DSV4Bytes struct {
	SWA       int64 `json:"swa_bytes"`
	C4        int64 `json:"c4_bytes"`
	C128      int64 `json:"c128_bytes"`
	Indexer   int64 `json:"indexer_bytes"`
	C4State   int64 `json:"c4_state_bytes"`
	C128State int64 `json:"c128_state_bytes"`
	// Draft is the MTP draft worker's share: full · (cell − base cell).
	Draft int64 `json:"draft_bytes,omitempty"`
}

// Total is the sum of the sub-pools.
func (b DSV4Bytes) Total() int64 {
	return b.SWA + b.C4 + b.C128 + b.Indexer + b.C4State + b.C128State + b.Draft
}

// Bytes splits the pools of s (finalized for maxRunning requests) into
// their budgeted bytes.
func (d DSV4) Bytes(s DSV4Sizes, maxRunning int) DSV4Bytes {
	kv := int64(d.KVBytes())
	st := d.C4StateBytes()
	b := DSV4Bytes{
		SWA:       s.SWA * kv * int64(d.Layers),
		C4:        s.C4 * kv * int64(d.C4Layers),
		C128:      s.C128 * kv * int64(d.C128Layers),
		Indexer:   s.Full / 4 * int64(d.IndexerBytes()) * int64(d.C4Layers),
		C4State:   s.C4State * int64(st) * int64(d.C4Layers),
		C128State: d.C128StateFixedBytes(maxRunning),
	}
	if d.Speculative {
		b.Draft = int64(float64(s.Full) * (d.CellSize() - d.BaseBytesPerFullToken()))
	}
	return b
}
