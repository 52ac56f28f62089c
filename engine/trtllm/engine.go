package trtllm

import (
	"fmt"

	"github.com/kvcfg/kvcfg/engine"
)

// engineFlow is an engine build on the C++ executor
// (KVCacheManager::calculateMaxNumBlocks, TrtGptModelInflightBatching).
func (p *planner) engineFlow() error {
	res, m := p.res, &p.res.Memory
	free := p.b.avail
	m.FreeAfterLoadBytes = floorInt(free)
	m.AvailableKVBytes = floorInt(p.frac * free)
	if p.b.total > 0 {
		p.info("Memory usage when calculating max tokens in paged kv cache: total: %s GiB, available: %s GiB", gib2(float64(p.b.total)), gib2(free))
	} else {
		p.note("the \"Memory usage when calculating max tokens in paged kv cache\" line prints the device memory; pass gpu_memory_bytes to see it")
	}
	minTok := int64(-1)
	for i := range res.Stages {
		st := &res.Stages[i]
		// static_cast<SizeType32>(fraction × free / bytes per token)
		tok := min(floorInt(p.frac*free/float64(st.CellSizeBytes)), 1<<31-1)
		st.EstimatedMaxTokens = tok
		if p.in.MaxTokens > 0 {
			tok = min(tok, p.in.MaxTokens)
			if i == 0 {
				p.warn("Both freeGpuMemoryFraction (aka kv_cache_free_gpu_mem_fraction) and maxTokens (aka max_tokens_in_paged_kv_cache) are set (to %s and %d, respectively). The smaller value will be used.",
					cFloat(p.frac), p.in.MaxTokens)
			}
		}
		st.MaxTokens = float64(tok)
		if minTok < 0 || tok < minTok {
			minTok = tok
		}
	}
	res.EstimatedMaxTokens = minTok
	if p.in.MaxGPUTotalBytes > 0 {
		p.note("max_gpu_total_bytes is not a setting of engine builds; it is ignored")
	}
	blocks := cdiv(minTok, p.tpb)
	res.NumBlocks = blocks
	p.info("Number of blocks in KV cache primary pool: %d", blocks)
	cell := res.CellSizeBytes
	res.NumSecondaryBlocks = min(p.in.HostCacheSize/cell, 1<<31-1) / p.tpb
	p.info("Number of blocks in KV cache secondary pool: %d, onboard blocks to primary memory before reuse: true", res.NumSecondaryBlocks)

	// The C++ clamp: the cheapest sequence (max_input_len prompt, the rest
	// output) must fit, else maxAttentionWindow and max_seq_len shrink.
	L := int64(p.maxSeqLen)
	window := min(int64(p.windows[0]), L)
	inputLen := int64(p.in.MaxInputLen)
	if inputLen == 0 {
		inputLen = min(DefaultEngineMaxInputLen, max(L-1, 1))
	}
	inputLen = min(inputLen, L)
	output := L - inputLen
	beam := int64(p.beam)
	if need := p.blockRequirements(inputLen, output, window, beam); need > blocks {
		w := p.maxWindowFor(inputLen, output, blocks, beam)
		p.warn("maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache. they are reduced to %d", w)
		window, L = w, w
		if inputLen > L-1 {
			inputLen = L - 1
			p.warn("maxInputLen is reduced to %d", inputLen)
		}
	}
	pages := cdiv(window, p.tpb)
	p.info("Max KV cache pages per sequence: %d", pages)
	tokens := satMul(blocks, p.tpb)
	if blocks == 0 || tokens < beam*pages*p.tpb {
		shown := max(pages, cdiv(int64(p.maxSeqLen), p.tpb))
		return &engine.Refusal{Engine: engineName, Err: ErrRefused,
			Message: fmt.Sprintf("maxTokensInPagedKvCache (%d) must be large enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (%d) * tokensPerBlock (%d) * maxBlocksPerSeq (%d))",
				tokens, beam, p.tpb, shown),
			Flag: "free_gpu_memory_fraction", Hint: "the free memory after the engine loaded holds no sequence; raise kv_cache_free_gpu_mem_fraction, rebuild with a smaller max_batch_size / max_num_tokens, or use an fp8 KV cache"}
	}
	res.MaxSeqLen = int(L)
	res.MaxAttentionWindow = []int{int(window)}
	res.MaxTokens = tokens
	res.KVCacheBytes = satMul(tokens, cell)
	p.poolLines(satMul(tokens, res.Stages[0].CellSizeBytes), tokens)
	return nil
}

// blockRequirements is KVCacheManager::calculateMaxBlockRequirements with no
// sink tokens: the blocks one sequence of in + out tokens needs.
func (p *planner) blockRequirements(in, out, window, beam int64) int64 {
	perBeam := func(seq, w int64) int64 { return cdiv(min(seq, w), p.tpb) }
	whole := in + out
	if beam <= 1 {
		return perBeam(whole, window)
	}
	if window <= out {
		return perBeam(window, window) * beam
	}
	eff := min(window, whole)
	ctx := eff - out
	ctxBlocks := ctx / p.tpb
	left := ctx - ctxBlocks*p.tpb
	return ctxBlocks + cdiv(out+left, p.tpb)*beam
}

// maxWindowFor is KVCacheManager::calculateMaxAttentionWindow: the largest
// window whose cheapest sequence fits in capacity blocks.
func (p *planner) maxWindowFor(in, out, capacity, beam int64) int64 {
	outReq := p.blockRequirements(0, out, out, beam)
	if outReq > capacity {
		return capacity / max(beam, 1) * p.tpb
	}
	return min(out+(capacity-outReq)*p.tpb, in+out)
}
