// Package pools builds the pools an SGLang configurator result sizes: the
// glue between engine/sglang (sizing) and package pool (building). With
// sglang.New and Configure it takes an engine from (model, measured free
// memory) to a ready request table, allocator, KV buffers and Mamba state.
// It sits beside engine/sglang so that the planner, which imports
// engine/sglang, links neither pool nor the codecs of quant.
package pools

import (
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/pool"
	"github.com/kvcfg/kvcfg/prefix"
)

// Config turns a configurator's result into the Config of
// the rank's pools: the glue between sizing and building. in is the input
// the configurator was built from (for the model's layer kinds and heads).
//
// Not covered: pipeline parallelism (build one Config per stage yourself),
// DeepSeek sparse attention (the DSA indexer cache and fp8 656-byte row),
// DeepSeek-V4 and MiniMax sparse pools; they return ErrConfig.
func Config(in sglang.Input, c *sglang.Configurator, res *sglang.Result) (pool.Config, error) {
	s := in.Spec
	if s == nil || c == nil || res == nil {
		return pool.Config{}, fmt.Errorf("%w: configurator input, configurator and result are required", pool.ErrConfig)
	}
	if in.Parallel.PP > 1 {
		return pool.Config{}, fmt.Errorf("%w: pipeline parallel (pp %d): build each stage's pools from its own layer range", pool.ErrConfig, in.Parallel.PP)
	}
	if s.Attention == model.DSA {
		return pool.Config{}, fmt.Errorf("%w: DeepSeek sparse attention pools (indexer cache) are not built by this package", pool.ErrConfig)
	}
	if res.Configurator == sizing.KindDSV4 {
		return pool.Config{}, fmt.Errorf("%w: DeepSeek-V4 compressed pools are not built by this package", pool.ErrConfig)
	}
	if s.SparseIndex != nil {
		return pool.Config{}, fmt.Errorf("%w: MiniMax sparse pools (lightning-indexer cache) are not built by this package", pool.ErrConfig)
	}
	d, kv := c.Derived(), c.KV()
	cfg := pool.Config{
		PageSize:           d.PageSize,
		MaxTotalTokens:     int(res.MaxTotalNumTokens),
		MaxRunningRequests: res.MaxRunningRequests,
		ReqToTokenWidth:    d.ContextLength + 4 + d.DraftTokens, // docs/sglang.md#request-table-width
		Format:             kv.Format.Name,
		Attention:          pool.MHA,
		Heads:              sizing.KVHeadsPerRank(s.NumKVHeads, in.Parallel.AttnTP(), in.Parallel.DCP),
		HeadDim:            s.HeadDim,
		VHeadDim:           orInt(s.VHeadDim, s.HeadDim),
		SlidingWindow:      s.EngineSlidingWindow,
	}
	if s.Attention == model.MLA {
		cfg.Attention = pool.MLA
		cfg.Heads, cfg.HeadDim, cfg.VHeadDim = 0, 0, 0
		cfg.KVLoraRank, cfg.QKRopeHeadDim = s.KVLoraRank, s.QKRopeHeadDim
	}
	full := s.LayerIDs(model.FullAttention)
	sliding := s.LayerIDs(model.SlidingAttention)
	if len(s.LayerKinds) == 0 {
		for i := range s.NumLayers {
			full = append(full, i)
		}
	}
	switch {
	case res.Hybrid && res.FullMaxTotalNumTokens == 0: // all-SWA: one pool
		cfg.EventMeta = pool.EventMeta{SpecKind: prefix.SlidingWindow, SlidingWindow: s.EngineSlidingWindow}
		cfg.MaxTotalTokens = int(res.SWAMaxTotalNumTokens)
		cfg.LayerIDs = sliding
		cfg.Heads = sizing.KVHeadsPerRank(orInt(s.SWANumKVHeads, s.NumKVHeads), in.Parallel.AttnTP(), in.Parallel.DCP)
		cfg.HeadDim = orInt(s.SWAHeadDim, s.HeadDim)
		cfg.VHeadDim = orInt(s.SWAVHeadDim, cfg.HeadDim)
	case res.Hybrid:
		cfg.MaxTotalTokens = int(res.FullMaxTotalNumTokens)
		cfg.SWATokens = int(res.SWAMaxTotalNumTokens)
		cfg.LayerIDs = full
		cfg.SWALayerIDs = sliding
		cfg.SWAHeads = sizing.KVHeadsPerRank(orInt(s.SWANumKVHeads, s.NumKVHeads), in.Parallel.AttnTP(), in.Parallel.DCP)
		cfg.SWAHeadDim = s.SWAHeadDim
		cfg.SWAVHeadDim = s.SWAVHeadDim
	case d.Mambaish:
		cfg.LayerIDs = full
	default:
		cfg.LayerIDs = append(full, sliding...)
	}
	if ms := c.MambaState(); ms != nil && d.Mambaish {
		st := &pool.StateConfig{Size: int(res.MaxMambaCacheSize), Layers: ms.Layers, Conv: ms.Conv, Temporal: ms.Temporal,
			ConvDType: elemDType(ms.ConvElem), SSMDType: elemDType(ms.SSMElem), SlotRatio: res.MambaSlotRatio}
		if d.SpeculativeAlgo != "" && d.DraftTokens > 0 {
			st.SpecStateSize, st.DraftTokens = res.MaxRunningRequests, d.DraftTokens
		}
		cfg.State = st
	}
	return cfg, cfg.Validate()
}

// New builds the pools a configurator's result sizes (Config, then
// pool.New): with sglang.New and Configure it takes an engine from (model,
// measured free memory) to ready request table, allocator and KV buffers.
func New(in sglang.Input, c *sglang.Configurator, res *sglang.Result) (*pool.Pools, error) {
	cfg, err := Config(in, c, res)
	if err != nil {
		return nil, err
	}
	return pool.New(cfg)
}

// elemDType maps a state element size to a dtype of that size (the pool
// stores bytes; 2-byte states are bf16 or fp16 alike).
func elemDType(size int) dtype.DType {
	switch size {
	case 4:
		return dtype.Float32
	case 1:
		return dtype.UInt8
	default:
		return dtype.BFloat16
	}
}

// Resize applies a post-capture result (sglang's PostCaptureResize,
// docs/sglang.md#post-capture-resize) to the pools: the allocator and KV buffers shrink to its token
// counts, keeping live allocations (ErrLiveOutside otherwise, with nothing
// changed). Pass p.Bytes().KV() as PostCaptureResize's backedBytes.
func Resize(p *pool.Pools, res *sglang.Result) error {
	if res == nil {
		return fmt.Errorf("%w: no result", pool.ErrConfig)
	}
	if _, ok := p.Allocator.(*pool.SWAAllocator); ok {
		return p.Resize(int(res.FullMaxTotalNumTokens), int(res.SWAMaxTotalNumTokens))
	}
	if res.Hybrid { // all-SWA: the one pool holds the SWA layers
		return p.Resize(int(res.SWAMaxTotalNumTokens), 0)
	}
	return p.Resize(int(res.MaxTotalNumTokens), 0)
}

func orInt(v, d int) int {
	if v != 0 {
		return v
	}
	return d
}
