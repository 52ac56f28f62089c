package sglang

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
)

const gib = float64(1 << 30)

// Result is what Configure decided for one rank.
type Result struct {
	// Configurator names the pool configurator the factory picked.
	Configurator sizing.Kind `json:"configurator"`
	// Stage is the PP stage whose pool bounds the others (0 without PP).
	Stage int `json:"stage"`
	// KVLayers is the number of KV layers of that stage's full pool.
	KVLayers int `json:"kv_layers"`
	// CellSize is the bytes one token of max_total_num_tokens costs.
	CellSize float64 `json:"cell_size_bytes"`
	// PreLoadGiB, AvailableGiB and SlackGiB are the profiling readings:
	// free memory before and after weight load, and pre·(1−mfs).
	PreLoadGiB   float64 `json:"pre_load_free_gib"`
	AvailableGiB float64 `json:"available_gib"`
	SlackGiB     float64 `json:"slack_gib"`
	// MultimodalGiB is the VLM cache reservation.
	MultimodalGiB float64 `json:"multimodal_gib,omitempty"`
	// AvailableBytes is the profiled KV budget (after mamba state).
	AvailableBytes int64 `json:"available_kv_bytes"`

	MaxTotalNumTokens     int64 `json:"max_total_num_tokens"`
	FullMaxTotalNumTokens int64 `json:"full_max_total_num_tokens,omitempty"`
	SWAMaxTotalNumTokens  int64 `json:"swa_max_total_num_tokens,omitempty"`
	Hybrid                bool  `json:"hybrid,omitempty"`
	MaxRunningRequests    int   `json:"max_running_requests"`
	// Concurrency is how max_running_requests was resolved: its limits
	// and the one that bound it.
	Concurrency Concurrency `json:"concurrency"`

	// Mamba state (mambaish models).
	MaxMambaCacheSize  int64  `json:"max_mamba_cache_size,omitempty"`
	MambaSlotRatio     int    `json:"mamba_slot_ratio,omitempty"`
	MambaPerRequest    int64  `json:"mamba_state_bytes_per_request,omitempty"`
	MambaStateBytes    int64  `json:"mamba_state_bytes,omitempty"`
	MambaSpecBytes     int64  `json:"mamba_spec_bytes,omitempty"`
	MambaConvBytes     int64  `json:"mamba_conv_bytes,omitempty"`
	MambaSSMBytes      int64  `json:"mamba_ssm_bytes,omitempty"`
	MambaCacheSizeFrom string `json:"mamba_cache_size_source,omitempty"`

	// KSizeBytes and VSizeBytes are the K and V buffers as the engine's
	// allocation log counts them (all sub-pools; MLA: the single latent
	// buffer in K, V zero). IndexerBytes is the DSA indexer cache.
	KSizeBytes   int64 `json:"k_size_bytes"`
	VSizeBytes   int64 `json:"v_size_bytes"`
	IndexerBytes int64 `json:"indexer_bytes,omitempty"`
	// DSV4 is DeepSeek-V4's compressed sub-pools (docs/sglang.md#dsv4); nil
	// for other models. KSizeBytes then is their sum.
	DSV4 *DSV4Pools `json:"dsv4_pools,omitempty"`
	// Unified is the unified memory pool's shared buffer
	// (--enable-unified-memory); KSizeBytes then is its total_bytes.
	Unified *UnifiedPool `json:"unified_memory_pool,omitempty"`
	// HostPool is the HiCache host tier (--enable-hierarchical-cache).
	HostPool *HostPool `json:"hicache_host_pool,omitempty"`
	// KVPoolBytes is what the configurator charges the budget for the
	// pools: tokens × cell.
	KVPoolBytes int64 `json:"kv_pool_bytes"`
	// Overcommit is set when the release counts a token at fewer bytes
	// than its pool allocates (an fp8 DeepSeek sparse-attention pool before
	// 0.5.17): the pool it allocates is larger than the budget.
	Overcommit *Overcommit `json:"pool_overcommit,omitempty"`

	// Logs are the lines SGLang prints; Warnings its warnings.
	Logs     []string `json:"log_lines"`
	Warnings []string `json:"warnings,omitempty"`

	// The derived settings MaxConcurrency needs.
	pageSize, swaWindow, contextLength int
	mambaish                           bool
}

// MaxConcurrency is how many requests of contextLen tokens can be resident
// at once on one rank (per DP worker): the pools' Capacity, no more than
// max_running_requests and, for a mamba hybrid, no more than its state
// slots allow (⌊max_mamba_cache_size / slot ratio⌋). contextLen ≤ 0 means
// the derived context length.
func (r *Result) MaxConcurrency(contextLen int) int64 {
	if r.MaxTotalNumTokens <= 0 || r.MaxRunningRequests <= 0 {
		return 0
	}
	if contextLen <= 0 {
		contextLen = r.contextLength
	}
	n := min(int64(r.MaxRunningRequests), Capacity(r.Pools(), contextLen))
	if r.mambaish && r.MambaSlotRatio > 0 {
		n = min(n, r.MaxMambaCacheSize/int64(r.MambaSlotRatio))
	}
	return max(n, 0)
}

// Pools returns the pool sizes Capacity works from.
func (r *Result) Pools() PoolSizes {
	return PoolSizes{Tokens: r.MaxTotalNumTokens, FullTokens: r.FullMaxTotalNumTokens, SWATokens: r.SWAMaxTotalNumTokens,
		Hybrid: r.Hybrid, PageSize: r.pageSize, SWAWindow: r.swaWindow}
}

// PoolSizes are the token pools of one rank as Capacity reads them.
type PoolSizes struct {
	// Tokens is max_total_num_tokens; FullTokens and SWATokens are the two
	// pools of a hybrid sliding-window model (Hybrid), FullTokens 0 for an
	// all-SWA model.
	Tokens, FullTokens, SWATokens int64
	Hybrid                        bool
	// PageSize is the allocator page; SWAWindow the sliding window (0: none).
	PageSize, SWAWindow int
}

// Capacity is how many requests of contextLen tokens the pools hold at
// once, ignoring the running-request cap: ⌊tokens / ctx⌋ with ctx rounded
// up to a page; a hybrid SWA pool keeps only window + page tokens of a
// request, so it adds ⌊swa / (window + page)⌋ (rounded to pages) as a
// second bound, and an all-SWA pool is bounded by that alone (a hybrid
// pool with neither bound is unbounded: math.MaxInt64).
func Capacity(p PoolSizes, contextLen int) int64 {
	if p.Tokens <= 0 || contextLen <= 0 {
		return 0
	}
	page := max(p.PageSize, 1)
	perReq := sizing.CeilPage(int64(contextLen), page)
	if !p.Hybrid {
		return p.Tokens / perReq
	}
	n := int64(math.MaxInt64)
	if p.FullTokens > 0 {
		n = p.FullTokens / perReq
	}
	if p.SWAWindow > 0 {
		w := int64(p.SWAWindow + page)
		n = min(n, p.SWATokens/sizing.CeilPage(min(w, int64(contextLen)), page))
	}
	return n
}

// stagePlan is one PP stage's configurator.
type stagePlan struct {
	cfgr   sizing.Configurator
	layers int // full-pool KV layers (Default) or F (hybrid)
	attn   sizing.Attention
	hybrid *sizing.HybridSWA
	dsv4   *sizing.DSV4
	mamba  int // mamba layers of the stage
	// allocCell is the bytes per token the pool allocates when the release
	// counts fewer (an fp8 DSA pool before 0.5.17); 0 when they agree.
	allocCell int64
}

func (c *Configurator) stageKVLayers(r [2]int) (kv, mamba int) {
	s := c.in.Spec
	if len(s.LayerKinds) == 0 {
		return r[1] - r[0], 0
	}
	for i := r[0]; i < r[1] && i < len(s.LayerKinds); i++ {
		switch s.LayerKinds[i] {
		case model.LinearAttention:
			mamba++
		case model.FullAttention:
			kv++
		case model.SlidingAttention:
			if !c.d.Mambaish {
				kv++
			}
		}
	}
	return kv, mamba
}

func (c *Configurator) attention(layers int) sizing.Attention {
	s := c.in.Spec
	vd := s.VHeadDim
	if vd == 0 {
		vd = s.HeadDim
	}
	return sizing.Attention{
		MLA: c.attnMLA, DSA: s.Attention == model.DSA, Layers: layers,
		KVHeads: sizing.KVHeadsPerRank(s.NumKVHeads, c.in.Parallel.AttnTP(), c.in.Parallel.DCP),
		HeadDim: s.HeadDim, VHeadDim: vd, KVLoraRank: s.KVLoraRank, QKRopeHeadDim: s.QKRopeHeadDim,
		IndexHeadDim: s.IndexHeadDim, DSAFP8Row: c.dsaFP8, ElementSize: c.kv.ElementSize,
		Format: c.kv.Format, DCP: c.in.Parallel.DCP,
	}
}

func (c *Configurator) eagleFamily() bool {
	switch c.d.SpeculativeAlgo {
	case "EAGLE", "EAGLE3", "STANDALONE":
		return true
	}
	return false
}

// plans builds each PP stage's configurator (the factory of
// docs/sglang.md#configurator-factory), appended to dst (the caller's
// buffer: one stage without PP).
func (c *Configurator) plans(dst []stagePlan, maxTotal int64) ([]stagePlan, error) {
	pp := c.in.Parallel.PP
	out := slices.Grow(dst[:0], pp)[:pp]
	withKV := 0 // stages with KV layers
	for i := range out {
		out[i] = stagePlan{}
		out[i].layers, out[i].mamba = c.stageKVLayers(stageRange(c.in.Spec.NumLayers, pp, i))
		if out[i].layers > 0 {
			withKV++
		}
	}
	for i := range out {
		sp := &out[i]
		if c.isDSV4() {
			if err := c.dsv4Stage(sp, stageRange(c.in.Spec.NumLayers, pp, i)); err != nil {
				return nil, err
			}
			continue
		}
		if c.d.HybridSWA {
			h, err := c.hybridSWA()
			if err != nil {
				return nil, err
			}
			sp.hybrid = &h
			sp.layers = h.FullLayers
			sp.attn = c.attention(h.FullLayers)
			if c.chunkCapApplies(h) {
				sp.cfgr = sizing.SWAChunkCap{HybridSWA: h, Cap: c.chunkCap()}
			} else {
				sp.cfgr = h
			}
			continue
		}
		sp.attn = c.attention(sp.layers)
		if err := c.miniMaxStage(sp, stageRange(c.in.Spec.NumLayers, pp, i)); err != nil {
			return nil, err
		}
		cell, err := c.specCell(sp.attn, sp.layers)
		if err != nil {
			return nil, err
		}
		if sp.attn.DSAFP8Row && !c.prof.dsaFP8Counted {
			// Before PR #31992 the budget counted kv_lora_rank +
			// qk_rope_head_dim elements of the KV dtype, not the 656-byte
			// row NSATokenToKVPool allocates (docs/sglang-versions.md).
			counted := sp.attn
			counted.DSAFP8Row = false
			sp.allocCell = cell
			if cell, err = c.specCell(counted, sp.layers); err != nil {
				return nil, err
			}
		}
		other := withKV > 1 || withKV == 1 && sp.layers == 0 // another stage has KV layers
		sp.cfgr = sizing.Default{Cell: cell, ZeroKVTokens: sizing.ZeroKVTokens(other, maxTotal, c.d.ContextLength)}
	}
	return out, nil
}

// specCell is the Default configurator's cell of a: its bytes per token
// with the EAGLE or DFLASH draft budget.
func (c *Configurator) specCell(a sizing.Attention, layers int) (int64, error) {
	cell, err := a.Cell()
	if err != nil {
		return 0, fmt.Errorf("sglang: %w", err)
	}
	switch {
	case c.eagleFamily():
		cell = sizing.ScaleEAGLE(cell, layers, c.d.DraftLayers, c.in.Parallel.DCP)
	case c.d.SpeculativeAlgo == "DFLASH" && cell > 0:
		cell, err = sizing.ScaleDFlash(cell, layers, c.d.DraftLayers, 0, c.in.Parallel.DCP)
		if err != nil {
			return 0, fmt.Errorf("sglang: %w", err)
		}
	}
	return cell, nil
}

func (c *Configurator) hybridSWA() (sizing.HybridSWA, error) {
	s := c.in.Spec
	tp := c.in.Parallel.AttnTP()
	el := int64(c.kv.ElementSize)
	H := int64(sizing.KVHeadsPerRank(s.NumKVHeads, tp, c.in.Parallel.DCP))
	dk, dv := int64(s.HeadDim), int64(s.VHeadDim)
	if dv == 0 {
		dv = dk
	}
	Hs := H
	if s.SWANumKVHeads > 0 {
		Hs = int64(max(1, s.SWANumKVHeads/tp))
	}
	sdk, sdv := int64(s.SWAHeadDim), int64(s.SWAVHeadDim)
	if sdk == 0 {
		sdk = dk
	}
	if sdv == 0 {
		sdv = sdk // swa_v_head_dim defaults to swa_head_dim (k.1)
	}
	full := sizing.TokenBytes(c.kv.Format, int(el), int(H), int(dk), int(dv))
	swa := sizing.TokenBytes(c.kv.Format, int(el), int(Hs), int(sdk), int(sdv))
	h := sizing.HybridSWA{
		FullPerToken: full, SWAPerToken: swa,
		FullLayers: s.CountLayers(model.FullAttention), SWALayers: s.CountLayers(model.SlidingAttention),
		Ratio: c.d.SWAFullTokensRatio, SlidingWindow: c.window(),
	}
	switch {
	case c.eagleFamily():
		h.DraftFull = c.d.DraftLayers
	case c.d.SpeculativeAlgo == "DFLASH":
		h.DraftCell = full * int64(c.d.DraftLayers) * int64(c.in.Parallel.DCP)
	}
	if h.SWALayers == 0 {
		return h, fmt.Errorf("%w: Hybrid SWA model must have at least one SWA layer", ErrInvalid)
	}
	return h, nil
}

func (c *Configurator) window() int { return SlidingWindow(c.in.Spec) }

// SlidingWindow is the window SGLang's SWA pools use for spec: the
// engine's own window where the config gives one, else sliding_window.
func SlidingWindow(s *model.Spec) int {
	if s == nil {
		return 0
	}
	if s.EngineSlidingWindow > 0 {
		return s.EngineSlidingWindow
	}
	return s.SlidingWindow
}

func (c *Configurator) chunkCapApplies(h sizing.HybridSWA) bool {
	a := c.in.Args
	return a.MaxRunningRequests > 0 && c.d.DisableRadixCache && c.d.ChunkedPrefillSize > 0 && c.window() > 0 && h.FullLayers > 0
}

func (c *Configurator) chunkCap() int64 { return c.chunkCapFor(c.in.Args.MaxRunningRequests) }

func (c *Configurator) chunkCapFor(maxRunning int) int64 {
	ev := c.in.Args.SWAEvictionInterval
	if ev == 0 {
		ev = 128
	}
	decode := c.d.PageSize
	draft := 1
	if c.d.DraftTokens > 0 {
		draft = c.d.DraftTokens
		decode = 2 * c.d.DraftTokens // spec v2: 2 × alloc_len_per_decode
	}
	return sizing.ChunkCap(sizing.ChunkCapInput{
		SlidingWindow: c.window(), DraftTokens: draft, EvictionInterval: ev, PageSize: c.d.PageSize,
		DecodeAlloc: decode, MaxRunningRequests: maxRunning, AttnDPSize: c.in.Parallel.AttnDP(),
		ChunkedPrefillSize: c.d.ChunkedPrefillSize, OverlapSchedule: c.d.OverlapSchedule,
	})
}

// Configure runs SGLang's configure() for a rank whose free memory before
// weight load was preLoadFreeBytes: profile the KV budget (docs/sglang.md#profile-kv-budget), size the
// pools (docs/sglang.md#profile-config-from-budget), resolve max_running_requests (docs/sglang.md#max-running-requests). On an error the
// partial result gathered so far is returned with it.
func (c *Configurator) Configure(preLoadFreeBytes int64) (*Result, error) {
	res := new(Result)
	return res, c.ConfigureInto(res, preLoadFreeBytes)
}

// ConfigureInto is Configure writing its result into res, which it resets
// first, so that a loop of plans can reuse one Result: it reuses the arrays
// of res.Logs and res.Warnings (which may then be empty rather than nil),
// so copy those out before the next call.
func (c *Configurator) ConfigureInto(res *Result, preLoadFreeBytes int64) error {
	*res = Result{Logs: res.Logs[:0], Warnings: append(res.Warnings[:0], c.notes...)}
	return c.configure(res, preLoadFreeBytes)
}

func (c *Configurator) configure(res *Result, preLoadFreeBytes int64) error {
	res.pageSize, res.swaWindow, res.contextLength, res.mambaish = c.d.PageSize, c.d.SWAWindow, c.d.ContextLength, c.d.Mambaish
	if preLoadFreeBytes <= 0 {
		return fmt.Errorf("%w: free memory before weight load must be positive", ErrInvalid)
	}
	pre := c.reading(preLoadFreeBytes)
	avail := c.reading(c.in.PostLoadFreeBytes)
	mfs := c.d.MemFractionStatic
	res.PreLoadGiB, res.AvailableGiB = pre, avail
	res.SlackGiB = float64(pre * float64(1-mfs))
	res.MultimodalGiB = float64(c.d.MultimodalReserveMB) / 1024
	rest := avail - res.SlackGiB - res.MultimodalGiB

	var buf [1]stagePlan
	plans, err := c.plans(buf[:], c.in.Args.MaxTotalTokens)
	if err != nil {
		return err
	}
	// Until the pools are sized, describe the most loaded stage.
	for i, p := range plans {
		if i == 0 || p.layers >= res.KVLayers {
			res.Configurator, res.CellSize, res.KVLayers, res.Stage = p.cfgr.Kind(), p.cfgr.CellSize(), p.layers, i
		}
	}
	if c.state != nil {
		if err := c.handleMamba(res, plans, &rest); err != nil {
			return err
		}
	}
	if rest <= 0 {
		return c.noKVMemoryError(pre, avail)
	}
	res.AvailableBytes = int64(float64(rest * gib))

	cfg, idx, err := c.configFromBudget(plans, res.AvailableBytes, -1, res)
	if err != nil {
		return err
	}
	c.fill(res, plans[idx], idx, cfg)
	if cfg.MaxTotalNumTokens <= 0 {
		return c.notEnoughMemoryError(plans[idx], pre, avail, res)
	}
	mr := c.maxReqsInput(cfg.MaxTotalNumTokens, res.MaxMambaCacheSize)
	mr.deferLine = true
	err = res.Concurrency.resolve(mr)
	res.MaxRunningRequests = res.Concurrency.MaxRunningRequests
	res.Warnings = append(res.Warnings, res.Concurrency.Warnings...)
	if res.Concurrency.Downgrade {
		res.Warnings = append(res.Warnings, res.Concurrency.Line)
	}
	if err != nil {
		if mr.Report && res.Concurrency.Line == "" {
			res.Concurrency.Line = concurrencyLine(&res.Concurrency, mr)
			res.Logs = append(res.Logs, res.Concurrency.Line)
		}
		return err
	}
	c.dsv4Finish(res, plans[idx], cfg)
	if err := c.checkAdmission(res, plans[idx]); err != nil {
		return err
	}
	var line []byte // the INFO line, logged before the pools'
	var lineBuf [384]byte
	if mr.Report && res.Concurrency.Line == "" {
		line = appendConcurrencyLine(lineBuf[:0], &res.Concurrency, mr)
	}
	logStart := len(res.Logs)
	if len(line) > 0 {
		logStart++ // the concurrency report stays; the unified pool replaces the pools' lines after it
	}
	c.poolLogs(res, plans[idx], line)
	if err := c.unifiedFinish(res, plans[idx], logStart); err != nil {
		return err
	}
	return c.hostTier(res, plans, idx)
}

func (c *Configurator) maxReqsInput(tokens, mambaSlots int64) MaxReqsInput {
	return MaxReqsInput{
		TokenCapacity: tokens, ContextLen: c.d.ContextLength, MaxRunningRequests: c.in.Args.MaxRunningRequests,
		AttnDP: c.in.Parallel.AttnDP(), Mambaish: c.d.Mambaish, MaxMambaCacheSize: mambaSlots, MambaRatio: c.d.MambaSlotRatio,
		ReqPoolPlusOne: c.prof.reqPoolPlusOne, Report: c.prof.concurrencyReport,
	}
}

// configFromBudget is config_from_budget over all PP stages: each stage
// sizes from the budget, the user cap and the PP minimum apply, and the
// bounding stage re-splits. capTokens < 0 means none.
func (c *Configurator) configFromBudget(plans []stagePlan, budget, capTokens int64, res *Result) (sizing.PoolConfig, int, error) {
	page := c.d.PageSize
	var best sizing.PoolConfig // the bounding stage's, plans[idx]
	idx := 0
	t := int64(math.MaxInt64)
	for i, p := range plans {
		cfg, err := p.cfgr.FromBytes(budget, page)
		if err != nil {
			return cfg, i, c.poolError(err, p, cfg, budget)
		}
		if cfg.MaxTotalNumTokens <= t {
			t, idx, best = cfg.MaxTotalNumTokens, i, cfg
		}
	}
	profiled := best.MaxTotalNumTokens
	own := best.MaxTotalNumTokens
	if u := c.in.Args.MaxTotalTokens; u > 0 {
		if u > profiled && res != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("max_total_tokens=%d is larger than the profiled value %d. Use the profiled value instead.", u, profiled))
		}
		t = min(t, u)
	}
	if capTokens >= 0 {
		t = min(t, capTokens)
	}
	cfg := best
	if t != own {
		var err error
		cfg, err = plans[idx].cfgr.FromMaxTokens(t, page)
		if err != nil {
			return cfg, idx, c.poolError(err, plans[idx], cfg, budget)
		}
	}
	return cfg, idx, nil
}

func (c *Configurator) fill(res *Result, p stagePlan, idx int, cfg sizing.PoolConfig) {
	res.Configurator = p.cfgr.Kind()
	res.Stage = idx
	res.KVLayers = p.layers
	res.CellSize = p.cfgr.CellSize()
	res.MaxTotalNumTokens = cfg.MaxTotalNumTokens
	res.FullMaxTotalNumTokens = cfg.FullMaxTotalNumTokens
	res.SWAMaxTotalNumTokens = cfg.SWAMaxTotalNumTokens
	res.Hybrid = cfg.Hybrid
	res.Logs = append(res.Logs, cfg.Logs...)
	res.KVPoolBytes = c.poolCharge(p, cfg)
	c.overcommit(res, p, cfg)
}

// poolCharge is what the configurator charges the budget for cfg.
func (c *Configurator) poolCharge(p stagePlan, cfg sizing.PoolConfig) int64 {
	if p.hybrid != nil {
		h := p.hybrid
		b := cfg.FullMaxTotalNumTokens*h.FullCell() + cfg.SWAMaxTotalNumTokens*h.SWAPerToken*int64(h.SWALayers)
		if p.cfgr.Kind() == sizing.KindHybridSWA {
			b += cfg.FullMaxTotalNumTokens * h.DraftCell // SWAChunkCap does not budget the DFLASH term
		}
		return b
	}
	cell := int64(p.cfgr.CellSize())
	if cfg.MaxTotalNumTokens > 0 && cell > math.MaxInt64/cfg.MaxTotalNumTokens {
		return math.MaxInt64
	}
	return cfg.MaxTotalNumTokens * cell
}

func (c *Configurator) handleMamba(res *Result, plans []stagePlan, rest *float64) error {
	per := c.state.PerRequest()
	all := c.state.Layers
	maxStage := 0
	for _, p := range plans {
		maxStage = max(maxStage, p.mamba)
	}
	stagePer := per
	if all > 0 && len(plans) > 1 {
		stagePer = int64(float64(per) * float64(maxStage) / float64(all))
	}
	ratio := c.in.Args.MambaFullMemoryRatio
	if ratio == 0 {
		ratio = 0.9
	}
	res.MambaSlotRatio = c.d.MambaSlotRatio
	res.MambaPerRequest = stagePer
	m, err := sizing.HandleMaxMambaCache(sizing.MambaBudget{
		PerRequest: stagePer, MaxMambaCacheSize: c.in.Args.MaxMambaCacheSize, MaxRunningRequests: c.in.Args.MaxRunningRequests,
		DisableRadixCache: c.d.DisableRadixCache, FullMemoryRatio: ratio, AttnDPSize: c.in.Parallel.AttnDP(),
		DraftTokens: c.d.DraftTokens, SlotRatio: c.d.MambaSlotRatio,
	}, *rest)
	res.MaxMambaCacheSize = m.MaxMambaCacheSize
	res.MambaCacheSizeFrom = m.Source
	if err != nil {
		fe := refusal(engine.Refusal{Err: err, Flag: "--mem-fraction-static", Hint: "raise --mem-fraction-static, lower --max-running-requests, or use more GPUs (--tp-size)"})
		if m.Source == "auto" {
			fe.Flag = "--mamba-full-memory-ratio"
			fe.Hint = "raise --mamba-full-memory-ratio or --mem-fraction-static, or use more GPUs (--tp-size)"
			// K ≥ 1 needs budget = rest·r/(1+r) ≥ 2 slots; keep some room for KV.
			if x := float64(2*(stagePer+1)) / gib / *rest; *rest > 0 && x < 0.5 {
				r := math.Ceil(x/(1-x)*100) / 100
				fe.Value = fmt.Sprintf("%.2f", r)
				fe.Hint = fmt.Sprintf("set --mamba-full-memory-ratio %s or higher, raise --mem-fraction-static, or use more GPUs (--tp-size)", fe.Value)
			}
		}
		return fe
	}
	res.MambaStateBytes = m.StateBytes
	res.MambaSpecBytes = m.SpecBytes
	stageLayers := int64(maxStage)
	if len(plans) == 1 {
		stageLayers = int64(all)
	}
	res.MambaConvBytes = stageLayers * (m.MaxMambaCacheSize + 1) * c.state.ConvBytesPerLayer()
	res.MambaSSMBytes = stageLayers * (m.MaxMambaCacheSize + 1) * c.state.SSMBytesPerLayer()
	*rest = m.RestGiB
	return nil
}

func ceil3(x float64) float64 { return math.Ceil(x*1000-1e-9) / 1000 }

func (c *Configurator) noKVMemoryError(pre, avail float64) error {
	mfs := c.d.MemFractionStatic
	minMFS := 1 - avail/pre
	sugg := ceil3(minMFS)
	msg := fmt.Errorf("%w: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=%v. Raise --mem-fraction-static above %.3f (minimum viable = 1 - available/pre = %.4f). If using speculative decoding, draft weights are now counted",
		ErrNoKVMemory, mfs, sugg, minMFS)
	fe := refusal(engine.Refusal{Err: msg, Flag: "--mem-fraction-static"})
	if avail <= 0 || sugg >= 0.99 {
		fe.Flag = "--tp-size"
		fe.Hint = "the weights do not fit on this GPU: use more GPUs (raise --tp-size or --pp-size), a larger GPU, or a quantized checkpoint"
		return fe
	}
	// Leave room for at least a modest pool: one more percent.
	fe.Value = fmt.Sprintf("%.3f", math.Min(sugg+0.01, 0.99))
	fe.Hint = fmt.Sprintf("set --mem-fraction-static %s or higher, or use more GPUs (--tp-size)", fe.Value)
	return fe
}

func (c *Configurator) notEnoughMemoryError(p stagePlan, pre, avail float64, res *Result) error {
	mfs := c.d.MemFractionStatic
	msg := fmt.Errorf("%w: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=%v", ErrNotEnoughMemory, mfs)
	return c.mfsFix(msg, p, pre, avail, res, int64(c.d.PageSize))
}

// mfsFix suggests the mem_fraction_static that leaves room for tokens
// tokens of p's pool, or more GPUs when no fraction below 0.99 does.
func (c *Configurator) mfsFix(msg error, p stagePlan, pre, avail float64, res *Result, tokens int64) error {
	need := p.cfgr.CellSize() * float64(sizing.CeilPage(tokens, c.d.PageSize)) / gib
	if p.dsv4 != nil { // the fixed c128-state term comes off the budget first
		need += float64(p.dsv4.FixedBytes(int64(need*gib))) / gib
	}
	extra := res.MultimodalGiB + float64(res.MambaStateBytes+res.MambaSpecBytes)/gib
	want := 1 - (avail-extra-need)/pre
	fe := refusal(engine.Refusal{Err: msg, Flag: "--mem-fraction-static"})
	if v := ceil3(want); v < 0.99 && avail > extra+need {
		fe.Value = fmt.Sprintf("%.3f", v)
		fe.Hint = fmt.Sprintf("set --mem-fraction-static %s or higher", fe.Value)
	} else {
		fe.Flag = "--tp-size"
		fe.Hint = "use more GPUs (raise --tp-size), a larger GPU, or a smaller --kv-cache-dtype"
	}
	return fe
}

// poolError attaches the fixing flag to a configurator error.
func (c *Configurator) poolError(err error, p stagePlan, cfg sizing.PoolConfig, budget int64) error {
	switch {
	case errors.Is(err, sizing.ErrSWAFloor) && p.dsv4 != nil:
		fe := refusal(engine.Refusal{Err: err, Flag: "--swa-full-tokens-ratio"})
		if r := p.dsv4.MinRatio(cfg.FullMaxTotalNumTokens, c.d.PageSize); r > 0 && r <= 1 {
			fe.Value = fmt.Sprintf("%.4g", r)
			fe.Hint = fmt.Sprintf("set --swa-full-tokens-ratio %s or higher, or give the KV cache more memory", fe.Value)
		} else {
			fe.Flag, fe.Hint = "--mem-fraction-static", "the full pool is too small for a 3-page SWA pool: give the KV cache more memory"
		}
		return fe
	case errors.Is(err, sizing.ErrDSV4):
		return refusal(engine.Refusal{Err: err, Flag: "--page-size", Value: "256", Hint: "leave --page-size out (256) for DeepSeek-V4"})
	case errors.Is(err, sizing.ErrSWAFloor) && p.hybrid != nil:
		fe := refusal(engine.Refusal{Err: err, Flag: "--swa-full-tokens-ratio"})
		if r := p.hybrid.MinRatio(cfg.FullMaxTotalNumTokens, c.d.PageSize); r > 0 {
			fe.Value = fmt.Sprintf("%.3f", r)
			fe.Hint = fmt.Sprintf("set --swa-full-tokens-ratio %s or higher, or give the KV cache more memory", fe.Value)
		} else {
			fe.Flag = "--mem-fraction-static"
			fe.Hint = "the full pool is smaller than one sliding window: give the KV cache more memory (--mem-fraction-static, more GPUs)"
		}
		return fe
	case errors.Is(err, sizing.ErrSWAChunkCap):
		fe := refusal(engine.Refusal{Err: err, Flag: "--max-running-requests", Hint: "lower --max-running-requests or raise --mem-fraction-static"})
		if n := c.maxChunkCapRequests(p, budget); n > 0 {
			fe.Value = fmt.Sprint(n)
			fe.Hint = fmt.Sprintf("set --max-running-requests %d or fewer, or raise --mem-fraction-static", n)
		}
		return fe
	}
	return fmt.Errorf("sglang: %w", err)
}

func (c *Configurator) checkAdmission(res *Result, p stagePlan) error {
	maxReqLen := min(int64(c.d.ContextLength)-1, res.MaxTotalNumTokens-1)
	if maxReqLen-5 <= 0 {
		msg := fmt.Errorf("%w: Memory pool size is too small (max_req_len=%d, max_req_input_len=%d)", ErrPoolTooSmall, maxReqLen, maxReqLen-5)
		if int64(c.d.ContextLength)-1-5 <= 0 {
			return refusal(engine.Refusal{Err: msg, Flag: "--context-length", Value: "8", Hint: "set --context-length 8 or more"})
		}
		if u := c.in.Args.MaxTotalTokens; u > 0 && u < 7 {
			return refusal(engine.Refusal{Err: msg, Flag: "--max-total-tokens", Value: fmt.Sprint(sizing.CeilPage(7, c.d.PageSize)), Hint: "raise --max-total-tokens"})
		}
		return c.mfsFix(msg, p, res.PreLoadGiB, res.AvailableGiB, res, 7)
	}
	return nil
}

// MaxReqsInput is the input of ResolveMaxNumReqs.
type MaxReqsInput struct {
	TokenCapacity      int64
	ContextLen         int
	MaxRunningRequests int // global, 0 = not given
	AttnDP             int
	Mambaish           bool
	MaxMambaCacheSize  int64
	MambaRatio         int
	// ReqPoolPlusOne is the rule of SGLang before 0.5.3: the request pool
	// has one row more than max_num_reqs.
	ReqPoolPlusOne bool
	// Report is the newest SGLang's concurrency report: one line naming
	// the binding limit (concurrency_limit.py).
	Report bool
	// deferLine leaves an INFO line to the configurator, which builds it
	// together with the pool's log line.
	deferLine bool
}

// ErrNoRequests reports a configuration that can run no request at all.
var ErrNoRequests = errors.New("sglang: no request fits")

// ResolveMaxNumReqs is resolve_max_num_reqs (docs/sglang.md#max-running-requests):
// ResolveConcurrency's value and warnings (the newest release's line when
// it is a WARNING, a downgrade).
func ResolveMaxNumReqs(in MaxReqsInput) (int, []string, error) {
	c, err := ResolveConcurrency(in)
	warns := c.Warnings
	if c.Downgrade {
		warns = append(warns, c.Line)
	}
	return c.MaxRunningRequests, warns, err
}

// maxChunkCapRequests is the largest --max-running-requests whose SWA chunk
// cap leaves at least one page for the full pool, 0 if none.
func (c *Configurator) maxChunkCapRequests(p stagePlan, budget int64) int {
	cc, ok := p.cfgr.(sizing.SWAChunkCap)
	if !ok {
		return 0
	}
	lo, hi := 0, c.in.Args.MaxRunningRequests
	for lo < hi { // largest n with a full pool
		mid := (lo + hi + 1) / 2
		cc.Cap = c.chunkCapFor(mid)
		if _, err := cc.FromBytes(budget, c.d.PageSize); err == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// reading converts a free-memory reading to GiB as get_available_gpu_memory
// does: with more than one rank in the engine's world (TP × PP) the byte
// count goes through a float32 all-reduce (MIN), which rounds it to
// float32 precision (docs/sglang.md#profile-free-memory).
func (c *Configurator) reading(bytes int64) float64 {
	b := float64(bytes)
	if c.distributedReading() {
		b = float64(float32(b))
	}
	return b / gib
}
