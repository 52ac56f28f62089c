package plan

import (
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// sglangBudget fills rep.Budget for an SGLang plan whose free memory
// before weights kvcfg predicted (no --pre-load-free-memory): the device
// total less the CUDA context, torch.distributed's initialisation (at one
// rank from 0.5.8 the first CUDA kernel), the first kernel after the
// reading (one rank before 0.5.8, weights not read from the engine), the
// weights, the share mem_fraction_static keeps out of the static pool, a
// multimodal cache and a state pool, which leaves the KV budget
// (docs/predict.md#sglang-the-free-memory-before-weights). The band is the SGLang table's once it holds
// minBandRuns runs; before that the plan says why it has none.
func sglangBudget(rep *Report, mem memory, spec *model.Spec) {
	p := &mem.preLoad
	if !mem.modelled || rep.AvailableKVBytes <= 0 {
		return
	}
	bd := &rep.Breakdown
	weightsOrigin := weightsOriginOf(mem.source)
	// One allocation for the budget and its terms (a plan's hot path).
	buf := new(struct {
		b     Budget
		terms [8]BudgetTerm
		band  Band
	})
	b := &buf.b
	b.Terms = append(buf.terms[:0],
		BudgetTerm{Name: "total", Bytes: p.TotalBytes, Origin: "computed"},
		BudgetTerm{Name: "cuda_context", Bytes: p.ContextBytes, Origin: "predicted"})
	if p.DistributedBytes > 0 {
		b.Terms = append(b.Terms, BudgetTerm{Name: "distributed_init", Bytes: p.DistributedBytes, Origin: "predicted"})
	}
	if mem.firstKernel > 0 {
		// Before 0.5.8 a TP-1 worker's first CUDA kernel runs inside
		// load_model, after the pre-load reading; weights that are not a
		// reading leave it out (sglang.FirstKernelAfterPreLoadBytes).
		b.Terms = append(b.Terms, BudgetTerm{Name: "first_kernel", Bytes: mem.firstKernel, Origin: "predicted"})
	}
	b.Terms = append(b.Terms, BudgetTerm{Name: "weights", Bytes: mem.weights, Origin: weightsOrigin},
		BudgetTerm{Name: "reserved", Bytes: bd.ReservedBytes, Origin: "computed"})
	if bd.MultimodalCacheBytes > 0 {
		b.Terms = append(b.Terms, BudgetTerm{Name: "multimodal_cache", Bytes: bd.MultimodalCacheBytes, Origin: "computed"})
	}
	if bd.StateBytes > 0 {
		b.Terms = append(b.Terms, BudgetTerm{Name: "state", Bytes: bd.StateBytes, Origin: "computed"})
	}
	rep.Budget = b
	band := &buf.band
	band.WeightsEstimated = weightsOrigin == "estimated"
	if note := tableBand(band, "sglang", rep.Platform); note != "" {
		rep.warn(note)
		return
	}
	// The requests at once move with the pool when the pool bounds them
	// (a plain pool: tokens over the context length); a request cap does
	// not move.
	var conc float64
	if rep.ContextLength > 0 && rep.FullMaxTotalNumTokens == 0 && rep.SWAMaxTotalNumTokens == 0 && rep.MaxMambaCacheSize == 0 {
		conc = float64(rep.MaxTotalNumTokens) / float64(rep.ContextLength)
	} else {
		conc = float64(Capacity(rep, spec, rep.ContextLength))
	}
	limit := rep.MaxConcurrencyAtContextLength
	if rep.MaxRunningRequests > 0 {
		limit = max(limit, int64(rep.MaxRunningRequests))
	}
	band.scale(rep.AvailableKVBytes, rep.MaxTotalNumTokens, conc, limit)
	band.ConcurrencyLow = min(band.ConcurrencyLow, rep.MaxConcurrencyAtContextLength)
	band.ConcurrencyHigh = max(band.ConcurrencyHigh, rep.MaxConcurrencyAtContextLength)
	b.Band = band
}

// weightsOriginOf is a budget term's origin for weights from src.
func weightsOriginOf(src weights.Source) string {
	switch src {
	case weights.Estimated:
		return "estimated"
	case weights.Safetensors, weights.HubSafetensors:
		return "exact"
	case weights.Measured:
		return "measured"
	case weights.Given:
		return "given"
	}
	return string(src)
}
