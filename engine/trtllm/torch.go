package trtllm

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// torchFlow is the PyTorch backend (1.0, 1.1, latest): the estimation dry
// run, the profiled estimate, then the final pool (KvCacheCreator,
// KVCacheManager).
func (p *planner) torchFlow() error {
	if p.vswa && !p.r.cudaGraphDryRun {
		p.note("the estimation dry run of a per-window (VSWA) launch under 1.1 is not reproduced (tmp kv_mem shows 0); its temporary pool is added back to the budget anyway")
	} else if err := p.dryRun(); err != nil {
		return err
	}
	p.estimate()
	if p.r.cudaGraphDryRun && isMLA(p.s) && p.res.KVCacheDType.Name == "fp8" {
		p.note("TensorRT-LLM main may reserve an fp8 context-MLA attention workspace out of this budget (a backend-declared bytes-per-token reserve, logged as \"Reserving … GiB for the context-MLA attention workspace\"); kvcfg does not subtract it")
	}
	if p.vswa {
		return p.vswaPools()
	}
	return p.singlePool()
}

// dryRunExtra is the extra tokens per dummy request
// (_get_token_num_for_estimation).
func (p *planner) dryRunExtra() int64 {
	spec := p.draft > 0
	overlap := !p.in.DisableOverlapScheduler
	extra := int64(1)
	if p.res.Profile == V10 {
		if overlap {
			extra++
			if spec {
				extra += int64(p.draftLen)
			}
		}
	} else if overlap && spec {
		extra += int64(p.draftLen)
	}
	if spec {
		extra += int64(p.draftLen + p.extraKV)
	}
	return extra
}

// dryRun reproduces try_prepare_estimation and the temporary manager: its
// max_tokens, its pool and the lines it logs.
func (p *planner) dryRun() error {
	st := p.res.Stages[0]
	L := int64(p.maxSeqLen)
	tpb := p.tpb
	inLen := min(int64(p.maxTokens), max(1, L-1))
	extra := p.dryRunExtra()
	full := int64(p.maxTokens) / inLen
	blocks := satMul(full, cdiv(inLen+extra, tpb))
	if rem := int64(p.maxTokens) % inLen; rem > 0 {
		blocks += cdiv(rem+extra, tpb)
	}
	if p.in.EnableAttentionDP && p.tp > 1 && !p.r.cudaGraphDryRun {
		// 1.x replicates the dummy requests on every rank's pool.
		blocks = satMul(blocks, int64(p.tp))
	}
	if p.r.cudaGraphDryRun {
		cgBS := p.in.CUDAGraphMaxBatchSize
		if cgBS == 0 {
			cgBS = DefaultCUDAGraphMaxBatchSize
		}
		cg := cdiv(L+1, tpb) + int64(min(p.maxBatch, cgBS)) - 1
		blocks = max(blocks, cg, int64(p.maxBatch))
	}
	blocks = satMul(blocks, int64(p.beam))
	T := satMul(blocks, tpb)
	if p.r.cudaGraphDryRun && p.b.freeStart > 0 {
		memT := floorInt(p.frac*p.b.freeStart/float64(st.EstimateBytesPerToken)) / tpb * tpb
		T = min(T, memT)
	}

	var dryBlocks int64
	host := p.in.HostCacheSize
	if p.r.cudaGraphDryRun {
		dryBlocks = T / tpb
		ws := distinct(p.windows)
		slices.Sort(ws)
		parts := make([]string, len(ws))
		for i, w := range ws {
			parts[i] = fmt.Sprintf("%d: (%d, %d)", w, dryBlocks, host/st.CellSizeBytes/tpb)
		}
		p.info("[kv cache manager] Primary/secondary blocks for window sizes set to {%s} for estimation dry run", strings.Join(parts, ", "))
	} else {
		tok := float64(T)
		if p.b.freeStart > 0 {
			tok = math.Min(tok, p.frac*p.b.freeStart/float64(st.CellSizeBytes))
		}
		p.warn("Both free_gpu_memory_fraction and max_tokens are set (to %s and %d, respectively). The smaller value will be used.",
			fractionRepr(p.res.FreeGPUMemoryFraction, p.r), T)
		dryBlocks = p.blocksFor(tok)
	}
	blocksBy := map[int]int64{}
	for _, w := range distinct(p.windows) {
		blocksBy[w] = dryBlocks
	}
	_, dryMaxSeqLen, err := p.clamp(p.windows, blocksBy, distinct(p.windows), p.maxSeqLen)
	if err != nil {
		return fmt.Errorf("%w (in the estimation dry run)", err)
	}
	tokens := satMul(dryBlocks, tpb)
	p.poolLines(satMul(tokens, st.CellSizeBytes), tokens)
	p.runtimeLine(dryMaxSeqLen)
	p.res.DryRunTokens = tokens
	if p.r.cudaGraphDryRun {
		p.res.Memory.TemporaryKVBytes = satMul(tokens, st.CellSizeBytes)
	} else {
		p.res.Memory.TemporaryKVBytes = satMul(tokens, st.EstimateBytesPerToken)
	}
	return nil
}

// estimate is estimate_max_tokens (1.0) / configure_kv_cache_capacity (1.1,
// latest) on every stage, with the first stage's lines.
func (p *planner) estimate() {
	m := &p.res.Memory
	avail := p.b.avail
	m.AvailableKVBytes = floorInt(avail)
	if p.b.freeAlloc > 0 {
		m.FreeAtAllocationBytes = floorInt(p.b.freeAlloc)
	}
	if !p.b.measured {
		p.profilingLines(avail)
	} else {
		p.note("the profiling lines (weights, peak, temporary pool) come from the run whose kv_cache_memory was given; they are not repeated")
	}

	userTokens, userBytes := p.in.MaxTokens, p.in.MaxGPUTotalBytes
	if p.res.Profile == V10 && userBytes > 0 {
		p.note("max_gpu_total_bytes is not a 1.0 setting; it is ignored")
		userBytes = 0
	}
	if p.vswa && userTokens > 0 {
		p.warn("max_tokens should not be set for VSWA case as it is ambiguous concept for VSWA.")
	}
	for i := range p.res.Stages {
		st := &p.res.Stages[i]
		if !p.r.memoryFirst {
			p.maxTokensFromMemory(st, i == 0, avail, userTokens)
			continue
		}
		p.kvCacheCapacity(st, i == 0, avail, userTokens, userBytes)
	}
	p.res.EstimatedMaxTokens = p.res.Stages[0].EstimatedMaxTokens
	for _, st := range p.res.Stages {
		p.res.EstimatedMaxTokens = min(p.res.EstimatedMaxTokens, st.EstimatedMaxTokens)
	}
}

// profilingLines are the memory-usage-profiling lines of a modelled run:
// the figures inside and outside torch, and the peak; it records the peak.
func (p *planner) profilingLines(avail float64) {
	m := &p.res.Memory
	tmp := m.TemporaryKVBytes
	pt := p.b.parts
	outside := pt.NonTorchBytes + pt.CUDAGraphBytes + tmp
	m.PeakBytes = pt.WeightsBytes + pt.ActivationBytes + outside
	p.info("Memory used after loading model weights (inside torch) in memory usage profiling: %s GiB", gib2(float64(pt.WeightsBytes)))
	p.info("Memory used after loading model weights (outside torch) in memory usage profiling: %s GiB", gib2(float64(outside)))
	p.info("Memory dynamically allocated during inference (inside torch) in memory usage profiling: %s GiB", gib2(float64(pt.ActivationBytes)))
	p.info("Memory used outside torch (e.g., NCCL and CUDA graphs) in memory usage profiling: %s GiB", gib2(float64(outside)))
	est := p.res.Stages[0].EstimateBytesPerToken
	frac := fractionRepr(p.res.FreeGPUMemoryFraction, p.r)
	if p.r.cudaGraphDryRun {
		p.info("Peak memory during memory usage profiling (torch + non-torch): %s GiB, available KV cache memory when calculating max tokens: %s GiB, fraction is set %s, kv size per token is %d bytes/token. device total memory %s GiB, temporary kv cache memory during profiling %s GiB",
			gib2(float64(m.PeakBytes)), gib2(avail), frac, est, gib2(float64(p.b.total)), gib2(float64(tmp)))
	} else {
		p.info("Peak memory during memory usage profiling (torch + non-torch): %s GiB, available KV cache memory when calculating max tokens: %s GiB, fraction is set %s, kv size is %d. device total memory %s GiB, , tmp kv_mem %s GiB",
			gib2(float64(m.PeakBytes)), gib2(avail), frac, est, gib2(float64(p.b.total)), gib2(float64(tmp)))
	}
}

// maxTokensFromMemory is 1.0's estimate_max_tokens on one stage: the
// available memory over the estimate's bytes per token, capped by
// max_tokens.
func (p *planner) maxTokensFromMemory(st *Stage, first bool, avail float64, userTokens int64) {
	tokens := floorInt(avail / float64(st.EstimateBytesPerToken))
	if userTokens > 0 {
		tokens = min(tokens, userTokens)
	}
	st.EstimatedMaxTokens = tokens
	if first {
		p.info("Estimated max tokens in KV cache : %d", tokens)
	}
}

// kvCacheCapacity is configure_kv_cache_capacity (1.1, latest) on one
// stage: the memory first, capped by max_tokens' worth, the tokens it
// holds, then the max_gpu_total_bytes cap.
func (p *planner) kvCacheCapacity(st *Stage, first bool, avail float64, userTokens, userBytes int64) {
	bpt := st.EstimateBytesPerToken
	mem := floorInt(avail)
	if userTokens > 0 {
		fromTokens := satMul(userTokens, bpt)
		mem = min(mem, fromTokens)
		if first {
			p.info("max_tokens=%d is provided. It limits max memory to %s GiB. New max_memory is set to %s GiB", userTokens, gib2(float64(fromTokens)), gib2(float64(mem)))
		}
	}
	st.EstimatedMaxTokens = mem / max(bpt, 1)
	if userBytes > 0 {
		mem = min(mem, userBytes)
		if first {
			if p.r.cudaGraphDryRun {
				p.info("max_gpu_total_bytes=%s GiB is provided. New max memory is %s GiB", gib2(float64(userBytes)), gib2(float64(mem)))
			} else {
				p.info("max_gpu_total_bytes=%s GiB is provided, max_memory is set to %s GiB", gib2(float64(userBytes)), gib2(float64(mem)))
			}
		}
		if !p.vswa && first {
			p.note("max_gpu_total_bytes caps TensorRT-LLM's per-window (VSWA) pools; with one window the V1 manager sizes the pool from max_tokens, which was computed before this cap")
		}
	}
	st.EstimatedMaxMemory = mem
	if first {
		p.info("Estimated max memory in KV cache : %s GiB", gib2(float64(mem)))
	}
}

// singlePool is calculate_max_num_blocks: min(estimate, fraction × free ÷
// allocation cost) per stage, the minimum over ranks, blocks, the window
// clamp and the pool.
func (p *planner) singlePool() error {
	res := p.res
	minTok := math.Inf(1)
	for i := range res.Stages {
		st := &res.Stages[i]
		byFree := math.Inf(1)
		if p.b.freeAlloc > 0 {
			byFree = p.frac * p.b.freeAlloc / float64(st.CellSizeBytes)
		}
		st.MaxTokens = math.Min(float64(st.EstimatedMaxTokens), byFree)
		minTok = math.Min(minTok, st.MaxTokens)
		if i != 0 {
			continue
		}
		frac := fractionRepr(res.FreeGPUMemoryFraction, p.r)
		switch {
		case !p.r.cudaGraphDryRun:
			p.warn("Both free_gpu_memory_fraction and max_tokens are set (to %s and %d, respectively). The smaller value will be used.", frac, st.EstimatedMaxTokens)
		case p.b.total > 0 && p.b.freeAlloc > 0:
			p.warn("Both free_gpu_memory_fraction and max_tokens are set (to %s and %s with free memory %sGiB of total memory %sGiB, respectively). The smaller value will be used.",
				frac, pyMinRepr(st.EstimatedMaxTokens, byFree), pyRepr(p.b.freeAlloc/gibF), pyRepr(float64(p.b.total)/gibF))
		default:
			p.note("the \"Both free_gpu_memory_fraction and max_tokens are set\" warning prints the device memory; pass gpu_memory_bytes to see it")
		}
	}
	if res.Stages[0].MaxTokens < float64(res.Stages[0].EstimatedMaxTokens) {
		p.note("fraction × free memory ÷ the allocation cost is below the estimate, so it sets the pool (the allocation counts more bytes per token than the estimate)")
	}
	blocks := p.blocksFor(minTok)
	res.NumBlocks = blocks
	cell := res.CellSizeBytes
	if p.in.HostCacheSize > 0 {
		if p.r.cudaGraphDryRun {
			res.NumSecondaryBlocks = p.in.HostCacheSize / cell / p.tpb
		} else {
			res.NumSecondaryBlocks = floorInt(float64(p.in.HostCacheSize) / float64(cell) / float64(p.tpb))
		}
	}
	order := distinct(p.windows)
	blocksBy := map[int]int64{}
	for _, w := range order {
		blocksBy[w] = blocks
	}
	vec, msl, err := p.clamp(p.windows, blocksBy, order, p.maxSeqLen)
	if err != nil {
		return err
	}
	res.MaxAttentionWindow, res.MaxSeqLen = vec, msl
	res.MaxTokens = satMul(blocks, p.tpb)
	res.KVCacheBytes = satMul(res.MaxTokens, cell)
	p.poolLines(satMul(res.MaxTokens, res.Stages[0].CellSizeBytes), res.MaxTokens)
	p.runtimeLine(msl)
	return nil
}
