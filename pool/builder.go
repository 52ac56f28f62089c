package pool

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kvcfg/kvcfg/prefix"
	"github.com/kvcfg/kvcfg/quant"
)

// Config describes the pools of one rank: SGLang's _init_pools inputs as a
// plain struct. The configurator decides the sizes; ConfigFromConfigurator
// fills a Config from its result.
type Config struct {
	// PageSize is the allocator page size (0 or 1: token allocator).
	PageSize int `json:"page_size"`
	// MaxTotalTokens is the full-attention pool size in tokens
	// (max_total_num_tokens, or full_max_total_num_tokens for hybrid SWA).
	MaxTotalTokens int `json:"max_total_num_tokens"`
	// SWATokens is the sliding-window pool size; > 0 builds the hybrid SWA
	// allocator and a second KV buffer for the SWA layers.
	SWATokens int `json:"swa_max_total_num_tokens,omitempty"`
	// MaxRunningRequests is the number of request slots.
	MaxRunningRequests int `json:"max_running_requests"`
	// ReqToTokenWidth is the request table's row width (context length plus
	// the extra of docs/sglang.md#request-table-width).
	ReqToTokenWidth int `json:"req_to_token_width"`

	// Format is the KV storage format name (bf16, fp8_e4m3, nvfp4, ...).
	Format string `json:"kv_format"`
	// Attention is mha or mla.
	Attention Attention `json:"attention"`
	// LayerIDs are the global ids of the full-attention KV layers, in pool
	// order (for a Mamba hybrid: its full-attention layers only).
	LayerIDs []int `json:"layer_ids"`
	// Heads, HeadDim, VHeadDim are the per-rank MHA geometry; KVLoraRank and
	// QKRopeHeadDim the MLA latent.
	Heads         int `json:"heads,omitempty"`
	HeadDim       int `json:"head_dim,omitempty"`
	VHeadDim      int `json:"v_head_dim,omitempty"`
	KVLoraRank    int `json:"kv_lora_rank,omitempty"`
	QKRopeHeadDim int `json:"qk_rope_head_dim,omitempty"`
	// SWALayerIDs are the global ids of the sliding-window layers (hybrid
	// SWA); SWAHeads, SWAHeadDim and SWAVHeadDim their geometry (0: same as
	// the full layers).
	SWALayerIDs []int `json:"swa_layer_ids,omitempty"`
	SWAHeads    int   `json:"swa_heads,omitempty"`
	SWAHeadDim  int   `json:"swa_head_dim,omitempty"`
	SWAVHeadDim int   `json:"swa_v_head_dim,omitempty"`
	// SlidingWindow is reported in the SWA pool's events.
	SlidingWindow int `json:"sliding_window,omitempty"`

	// State configures the Mamba state pool of a hybrid linear-attention
	// model; nil for none.
	State *StateConfig `json:"state,omitempty"`
	// NeedSort is AllocatorConfig.NeedSort (PD disaggregation).
	NeedSort bool `json:"need_sort,omitempty"`
	// Events receives the allocator's KV events (the full pool's, with
	// hybrid SWA); nil for none. SWAEvents receives the SWA pool's.
	Events    EventSink `json:"-"`
	SWAEvents EventSink `json:"-"`
	// EventMeta sets the locality fields of the (full pool's) events; the
	// zero value means full_attention (mla_attention for MLA) on GPU.
	EventMeta EventMeta `json:"event_meta,omitzero"`
	// KCodec and VCodec override the default codecs (see KVConfig).
	KCodec quant.Codec `json:"-"`
	VCodec quant.Codec `json:"-"`
}

// Validate reports every problem with the config.
func (c Config) Validate() error {
	var errs []error
	if c.MaxTotalTokens <= 0 {
		errs = append(errs, fmt.Errorf("%w: max total tokens %d must be positive", ErrConfig, c.MaxTotalTokens))
	}
	if c.SWATokens < 0 {
		errs = append(errs, fmt.Errorf("%w: swa tokens %d is negative", ErrConfig, c.SWATokens))
	}
	if c.MaxRunningRequests <= 0 || c.ReqToTokenWidth <= 0 {
		errs = append(errs, fmt.Errorf("%w: request table %d x %d", ErrConfig, c.MaxRunningRequests, c.ReqToTokenWidth))
	}
	if (c.SWATokens > 0) != (len(c.SWALayerIDs) > 0) {
		errs = append(errs, fmt.Errorf("%w: swa tokens %d with %d swa layers (both or neither)", ErrConfig, c.SWATokens, len(c.SWALayerIDs)))
	}
	if c.SWATokens > 0 && c.Attention == MLA {
		errs = append(errs, fmt.Errorf("%w: hybrid SWA pools are MHA only", ErrConfig))
	}
	seen := map[int]bool{}
	for _, id := range slices.Concat(c.LayerIDs, c.SWALayerIDs) {
		if id < 0 || seen[id] {
			errs = append(errs, fmt.Errorf("%w: layer id %d negative or listed twice", ErrConfig, id))
		}
		seen[id] = true
	}
	errs = append(errs, c.kvConfig().Validate())
	if c.SWATokens > 0 {
		errs = append(errs, c.swaKVConfig().Validate())
	}
	if c.State != nil {
		errs = append(errs, c.State.Validate())
	}
	errs = append(errs, AllocatorConfig{Size: max(c.MaxTotalTokens, 0), PageSize: c.PageSize}.Validate())
	return errors.Join(errs...)
}

func (c Config) kvConfig() KVConfig {
	return KVConfig{Attention: c.Attention, Format: c.Format, Size: max(c.MaxTotalTokens, 0), PageSize: c.PageSize, Layers: len(c.LayerIDs),
		Heads: c.Heads, HeadDim: c.HeadDim, VHeadDim: c.VHeadDim, KVLoraRank: c.KVLoraRank, QKRopeHeadDim: c.QKRopeHeadDim,
		KCodec: c.KCodec, VCodec: c.VCodec}
}

func or(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func (c Config) swaKVConfig() KVConfig {
	return KVConfig{Attention: MHA, Format: c.Format, Size: c.SWATokens, PageSize: c.PageSize, Layers: len(c.SWALayerIDs),
		Heads: or(c.SWAHeads, c.Heads), HeadDim: or(c.SWAHeadDim, c.HeadDim), VHeadDim: or(c.SWAVHeadDim, or(c.SWAHeadDim, c.VHeadDim)),
		KCodec: c.KCodec, VCodec: c.VCodec}
}

type layerRef struct {
	local int
	swa   bool
}

// Pools are the ready pools of one rank: what _init_pools builds.
type Pools struct {
	// Config is the configuration the pools were built from.
	Config Config
	// ReqToToken is the request-to-token table.
	ReqToToken *ReqToTokenPool
	// Allocator hands out KV slots: a *PagedAllocator (page size 1 or P)
	// or, for hybrid SWA, a *SWAAllocator.
	Allocator Allocator
	// KV holds the full-attention layers; SWAKV the sliding-window layers
	// (nil unless hybrid SWA).
	KV    *KV
	SWAKV *KV
	// State is the Mamba state pool (nil unless configured).
	State *StatePool

	layers  map[int]layerRef
	scratch []int32
}

// New builds the pools cfg describes (allocating host memory for every
// buffer). It is the Go counterpart of SGLang's _init_pools: request table,
// allocator, KV buffers and state pool, sized together.
func New(cfg Config) (*Pools, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pools{Config: cfg, layers: map[int]layerRef{}}
	var err error
	if p.ReqToToken, err = NewReqToTokenPool(cfg.MaxRunningRequests, cfg.ReqToTokenWidth); err != nil {
		return nil, err
	}
	if cfg.SWATokens > 0 {
		p.Allocator, err = NewSWAAllocator(SWAConfig{FullSize: cfg.MaxTotalTokens, SWASize: cfg.SWATokens, PageSize: cfg.PageSize,
			NeedSort: cfg.NeedSort, FullEvents: cfg.Events, SWAEvents: cfg.SWAEvents, SlidingWindow: cfg.SlidingWindow})
	} else {
		meta := cfg.EventMeta
		if meta.SpecKind == "" && cfg.Attention == MLA {
			meta.SpecKind = prefix.MLAAttention
		}
		p.Allocator, err = NewAllocator(AllocatorConfig{Size: cfg.MaxTotalTokens, PageSize: cfg.PageSize, NeedSort: cfg.NeedSort, Events: cfg.Events, EventMeta: meta})
	}
	if err != nil {
		return nil, err
	}
	if p.KV, err = NewKV(cfg.kvConfig()); err != nil {
		return nil, err
	}
	for i, id := range cfg.LayerIDs {
		p.layers[id] = layerRef{local: i}
	}
	if cfg.SWATokens > 0 {
		if p.SWAKV, err = NewKV(cfg.swaKVConfig()); err != nil {
			return nil, err
		}
		for i, id := range cfg.SWALayerIDs {
			p.layers[id] = layerRef{local: i, swa: true}
		}
	}
	if cfg.State != nil {
		if p.State, err = NewStatePool(*cfg.State); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Bytes is the memory of every pool, by purpose.
func (p *Pools) Bytes() Bytes {
	b := p.KV.Bytes()
	if p.SWAKV != nil {
		b = b.Add(p.SWAKV.Bytes())
	}
	if p.State != nil {
		b = b.Add(p.State.Bytes())
	}
	b.ReqToToken = p.ReqToToken.Bytes()
	return b
}

// Layer maps a global layer id to its buffer and pool-local layer index
// (SGLang's layers_mapping); swa reports a sliding-window layer, whose
// locations must be translated with the SWA allocator's FullToSWA. Layers
// without KV (Mamba layers) are an ErrInvalid.
func (p *Pools) Layer(id int) (kv *KV, local int, swa bool, err error) {
	r, ok := p.layers[id]
	if !ok {
		return nil, 0, false, fmt.Errorf("%w: layer_id=%d not in the KV pools' layers", ErrInvalid, id)
	}
	if r.swa {
		return p.SWAKV, r.local, true, nil
	}
	return p.KV, r.local, false, nil
}

func (p *Pools) route(id int, locs []int32) (*KV, int, []int32, error) {
	kv, l, swa, err := p.Layer(id)
	if err != nil {
		return nil, 0, nil, err
	}
	if swa {
		p.scratch = p.Allocator.(*SWAAllocator).FullToSWA(p.scratch[:0], locs)
		locs = p.scratch
	}
	return kv, l, locs, nil
}

// SetKV writes K and V of a global layer at full-pool locations (SWA
// layers are translated to the SWA pool). Not safe for concurrent use on
// SWA layers (it uses a scratch buffer); use Layer and the KV directly.
func (p *Pools) SetKV(layer int, locs []int32, k, v []float32) error {
	kv, l, locs, err := p.route(layer, locs)
	if err != nil {
		return err
	}
	return kv.SetKV(l, locs, k, v)
}

// GetKey reads K of a global layer at full-pool locations into dst.
func (p *Pools) GetKey(dst []float32, layer int, locs []int32) error {
	kv, l, locs, err := p.route(layer, locs)
	if err != nil {
		return err
	}
	return kv.GetKey(dst, l, locs)
}

// GetValue reads V of a global layer at full-pool locations into dst.
func (p *Pools) GetValue(dst []float32, layer int, locs []int32) error {
	kv, l, locs, err := p.route(layer, locs)
	if err != nil {
		return err
	}
	return kv.GetValue(dst, l, locs)
}

// Resize shrinks the pools to new token sizes (swa ignored without hybrid
// SWA), keeping live allocations: the post-capture resize of docs/sglang.md#post-capture-resize
// (finalize_backing + allocator.resize). It fails with ErrLiveOutside, and
// changes nothing, when a live slot lies beyond a new size.
func (p *Pools) Resize(full, swa int) error {
	if s, ok := p.Allocator.(*SWAAllocator); ok {
		if err := s.ResizeBoth(full, swa); err != nil {
			return err
		}
		return errors.Join(p.KV.Resize(s.Full().Size()), p.SWAKV.Resize(s.SWA().Size()))
	}
	if err := p.Allocator.Resize(full); err != nil {
		return err
	}
	return p.KV.Resize(p.Allocator.Size())
}
