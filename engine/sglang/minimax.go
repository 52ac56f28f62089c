package sglang

import (
	"fmt"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// miniMaxStage adds MiniMax-M3's lightning-indexer pool to sp's cell
// (docs/sglang.md#minimax-sparse): the layers of PP stage r split into
// K/V and K-only indexer layers, one head of sparse_index_dim in the model
// dtype. The 0.5.10 configurator reads kvc.model_dtype, which its
// KVCacheConfigurator does not have: that release raises AttributeError.
func (c *Configurator) miniMaxStage(sp *stagePlan, r [2]int) error {
	si := c.in.Spec.SparseIndex
	if si == nil {
		return nil
	}
	if c.prof.Era == Era0510 {
		return refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: AttributeError: 'KVCacheConfigurator' object has no attribute 'model_dtype'", ErrInvalid),
			Flag: "--sglang-version", Value: "latest",
			Hint: "this release's configurator cannot size MiniMax sparse attention; use a newer SGLang (0.5.19 or main)",
		})
	}
	m := &sizing.MiniMaxIndexer{Dim: si.IndexDim, ElementSize: c.in.Spec.ModelDType.Size()}
	kOnly := make(map[int]bool, len(si.KOnlyLayerIDs))
	for _, id := range si.KOnlyLayerIDs {
		kOnly[id] = true
	}
	for _, id := range si.SparseLayerIDs {
		switch {
		case id < r[0] || id >= r[1]:
		case kOnly[id]:
			m.KOnlyLayers++
		default:
			m.KVLayers++
		}
	}
	sp.attn.MiniMax = m
	return nil
}

// miniMaxLogs are the allocation lines of MiniMaxSparseKVPool's indexer
// sub-pools (one head of sparse_index_dim, size + page rows): the K/V pool
// and the K-only pool, each when it has layers.
func (c *Configurator) miniMaxLogs(res *Result, m *sizing.MiniMaxIndexer) {
	rows := res.MaxTotalNumTokens + int64(c.d.PageSize)
	row := rows * int64(m.Dim) * int64(m.ElementSize)
	if m.KVLayers > 0 {
		k := row * int64(m.KVLayers)
		res.Logs = append(res.Logs, c.kvLine(res.MaxTotalNumTokens, k, k))
	}
	if m.KOnlyLayers > 0 {
		res.Logs = append(res.Logs, c.kvLine(res.MaxTotalNumTokens, row*int64(m.KOnlyLayers), 0))
	}
	res.IndexerBytes = row * int64(2*m.KVLayers+m.KOnlyLayers)
}
