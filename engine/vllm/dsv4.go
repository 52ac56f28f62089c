package vllm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
)

// DeepSeek-V4's KV cache in vLLM (docs/vllm.md#deepseek-v4), as read in
// vllm/models/deepseek_v4/attention.py and compressor.py,
// v1/attention/backends/mla/sparse_swa.py, v1/kv_cache_interface.py and
// v1/core/kv_cache_utils.py.
const (
	// dsv4Block is cache_config.block_size: the sparse backends' preferred
	// block (DeepseekSparseSWABackend.get_preferred_block_size).
	dsv4Block = 256
	// dsv4SWABlock is DeepseekV4SWACache.block_size, fixed so that a
	// sliding-window page matches a c4 page ([256/4, 584]).
	dsv4SWABlock = 64
	// dsv4SlotBytes is one fp8_ds_mla slot: 448 fp8 NoPE + 128 bf16 RoPE +
	// 8 scale bytes.
	dsv4SlotBytes = 584
	// dsv4Align is the page alignment of every spec in the fp8_ds_mla
	// layout (_apply_alignment_padding).
	dsv4Align = 576
)

// dsv4Spec is one layer's spec with its page rounded up to dsv4Align.
func dsv4Spec(name string, kind SpecKind, variant string, block, ratio int, tokenBytes int64, window int) LayerSpec {
	s := LayerSpec{Name: name, Kind: kind, Variant: variant, BlockSize: block, CompressRatio: ratio, TokenBytes: tokenBytes, Window: window}
	if p := s.PageBytes(); p%dsv4Align != 0 {
		s.PagePadded = cdiv(p, dsv4Align) * dsv4Align
	}
	return s
}

// dsv4Layers are the specs of every layer, in vLLM's registration order:
//   - every layer's DeepseekV4SWACache: SlidingWindowMLASpec, 64-token
//     blocks of 584-byte slots, window sliding_window;
//   - a compressed layer's cache (compress_ratio 4 or 128): MLAAttentionSpec
//     of 256-token blocks holding 256/ratio 584-byte slots;
//   - its compressor state (CompressorStateCache): SlidingWindowMLASpec of
//     fp32 [kv_state, score_state] rows of 2·coff·head_dim, coff = 2 for c4
//     and 1 for c128, window coff·ratio, blocks of 4 (c4) or 8 (c128);
//   - a c4 layer's indexer: its K cache (MLAAttentionSpec, 256-token blocks,
//     compress ratio 4, index_head_dim fp8 + 4 scale bytes per 128, or with
//     the MXFP4 indexer cache index_head_dim/2 + 1 scale byte per 32) and
//     its compressor state (2·2·index_head_dim fp32, 4-token blocks);
//   - each MTP draft layer (compress ratio 1): its SWA cache only.
func dsv4Layers(s *model.Spec, draft int, fp4Indexer bool) []LayerSpec {
	var out []LayerSpec
	hd, ihd := int64(s.HeadDim), int64(s.IndexHeadDim)
	slot := ihd + ihd/128*4
	if fp4Indexer {
		slot = ihd/2 + ihd/32
	}
	for i, r := range s.Compressed.Ratios {
		p := fmt.Sprintf("layers.%d.", i)
		if r == 4 {
			out = append(out,
				dsv4Spec(p+"indexer.k_cache", MLAAttention, "c4_indexer", dsv4Block, 4, slot, 0),
				dsv4Spec(p+"indexer.compressor.state_cache", SlidingWindowMLA, "c4_state", 4, 1, 2*2*ihd*4, 8))
		}
		out = append(out, dsv4Spec(p+"swa_cache", SlidingWindowMLA, "swa", dsv4SWABlock, 1, dsv4SlotBytes, s.Compressed.Window))
		if r > 1 {
			coff, block := 1, 8
			if r == 4 {
				coff, block = 2, 4
			}
			out = append(out,
				dsv4Spec(p+"attn", MLAAttention, fmt.Sprintf("c%d", r), dsv4Block, r, dsv4SlotBytes, 0),
				dsv4Spec(p+"compressor.state_cache", SlidingWindowMLA, fmt.Sprintf("c%d_state", r), block, 1, int64(2*coff)*hd*4, coff*r))
		}
	}
	for i := range draft {
		out = append(out, dsv4Spec(fmt.Sprintf("layers.%d.swa_cache", len(s.Compressed.Ratios)+i), SlidingWindowMLA, "swa", dsv4SWABlock, 1, dsv4SlotBytes, s.Compressed.Window))
	}
	return out
}

// layerTuples is get_num_layer_tuples: the count of the most common page size.
func layerTuples(specs []LayerSpec) int {
	n := map[int64]int{}
	best := 0
	for _, s := range specs {
		n[s.PageBytes()]++
		best = max(best, n[s.PageBytes()])
	}
	return best
}

// bySize splits specs by page size, sizes in first-seen order.
func bySize(specs []LayerSpec) [][]LayerSpec {
	var sizes []int64
	var out [][]LayerSpec
	for _, s := range specs {
		i := slices.Index(sizes, s.PageBytes())
		if i < 0 {
			sizes, out = append(sizes, s.PageBytes()), append(out, nil)
			i = len(sizes) - 1
		}
		out[i] = append(out[i], s)
	}
	return out
}

// approximateGCD is _approximate_gcd: the d in [lower, max(values)] that
// rounds the values up to multiples of d with the least padding, ties to
// the larger d.
func approximateGCD(values []int, lower int) int {
	lo, hi := max(1, lower), slices.Max(values)
	if lo > hi {
		return lo
	}
	best, bestPad := lo, -1
	for d := lo; d <= hi; d++ {
		pad := 0
		for _, x := range values {
			pad += (d - x%d) % d
		}
		if bestPad < 0 || pad < bestPad || (pad == bestPad && d > best) {
			best, bestPad = d, pad
		}
	}
	return best
}

// uniformGroup is a KVCacheGroupSpec over a UniformTypeKVCacheSpecs: its
// page is the sum of its layers' pages.
func uniformGroup(members []LayerSpec) Group {
	var page int64
	for _, s := range members {
		page += s.PageBytes()
	}
	s := members[0]
	v := s.Variant
	if s.Kind == MLAAttention {
		v = "compressed"
	}
	return Group{Kind: s.Kind, Variant: v, Layers: names(members), BlockSize: s.BlockSize, PageBytes: page,
		Window: s.Window, UniformType: true, spec: s, specs: members}
}

// dsv4Groups is group_and_unify_kv_cache_specs and
// _get_kv_cache_groups_uniform_groups: one group of every MLAAttentionSpec
// (the compressed caches and indexer K caches), then the sliding-window
// specs bucketed by (block_size, sliding_window) — the SWA caches, the c4
// states (attention and indexer), the c128 states — each bucket split
// into groups of at most approximateGCD layer tuples, interleaved.
func dsv4Groups(layers []LayerSpec) ([]Group, error) {
	type key struct{ block, window int }
	var mla []LayerSpec
	var keys []key
	buckets := map[key][]LayerSpec{}
	for _, l := range layers {
		if l.Kind == MLAAttention {
			mla = append(mla, l)
			continue
		}
		k := key{l.BlockSize, l.Window}
		if _, ok := buckets[k]; !ok {
			keys = append(keys, k)
		}
		buckets[k] = append(buckets[k], l)
	}
	if len(mla) == 0 {
		return nil, fmt.Errorf("%w: DeepSeek-V4 model without compressed layers", ErrUnsupportedModel)
	}
	tuples := []int{layerTuples(mla)}
	for _, k := range keys {
		tuples = append(tuples, layerTuples(buckets[k]))
	}
	n := approximateGCD(tuples, tuples[0])
	groups := []Group{uniformGroup(mla)}
	for _, k := range keys {
		sizes := bySize(buckets[k])
		per := len(sizes[0])
		for _, sz := range sizes {
			if len(sz) != per {
				return nil, fmt.Errorf("%w: DeepSeek-V4 state caches of %d-token blocks have unequal layer counts per page size, which vLLM asserts against", ErrUnsupportedModel, k.block)
			}
		}
		ng := (per + n - 1) / n
		for i := range ng {
			var members []LayerSpec
			for j := i; j < per; j += ng {
				for _, sz := range sizes {
					members = append(members, sz[j])
				}
			}
			groups = append(groups, uniformGroup(members))
		}
	}
	return groups, nil
}

// dsv4Stride is _get_packed_kv_cache_layout's block stride: the groups
// overlay one slab, one block ID owned by one group at a time, so a block
// costs the largest group page.
func dsv4Stride(groups []Group) int64 {
	var stride int64
	for _, g := range groups {
		stride = max(stride, g.PageBytes)
	}
	return stride
}

// dsv4Tensors is the number of KVCacheTensors _get_kv_cache_config_packed
// emits: one per distinct byte offset of a layer page within a block, each
// group laying its layers out from offset 0.
func dsv4Tensors(groups []Group) int {
	offsets := map[int64]bool{}
	for _, g := range groups {
		var off int64
		for _, s := range g.specs {
			offsets[off] = true
			off += s.PageBytes()
		}
	}
	return len(offsets)
}

// dsv4Needed is _max_memory_usage_bytes_from_groups for all-uniform groups:
// Σ over groups of num_layer_tuples × pages × layer_tuple_bytes, with
// num_layer_tuples the most over the groups and layer_tuple_bytes the
// distinct page sizes of the first (compressed) group summed.
func dsv4Needed(groups []Group, u usage) int64 {
	var tupleBytes int64
	for _, sz := range bySize(groups[0].specs) {
		tupleBytes += sz[0].PageBytes()
	}
	t := 0
	for _, g := range groups {
		t = max(t, layerTuples(g.specs))
	}
	var sum int64
	for i := range groups {
		sum += int64(t) * cdiv(groups[i].maxMemory(u), groups[i].PageBytes) * tupleBytes
	}
	return sum
}

// dsv4Check refuses what kvcfg does not model for DeepSeek-V4 in vLLM and
// returns the cache dtype (fp8_ds_mla, FlashMLA's layout).
func dsv4Check(c Input) (CacheDType, error) {
	req := strings.ToLower(strings.TrimSpace(c.KVCacheDType))
	if req == "" {
		req = "auto"
	}
	switch {
	case !slices.Contains([]string{"auto", "fp8", "fp8_e4m3", "fp8_ds_mla"}, req):
		return CacheDType{}, fmt.Errorf("%w: kvcfg models DeepSeek-V4 in vLLM's fp8_ds_mla cache layout (FlashMLA) only; %q selects the plain-row layout, which it does not model: pass --kv-cache-dtype fp8", ErrUnsupportedDType, c.KVCacheDType)
	case c.BlockSize != 0 && c.BlockSize != dsv4Block:
		return CacheDType{}, fmt.Errorf("%w: kvcfg models DeepSeek-V4 with vLLM's %d-token blocks only (--block-size %d)", ErrInvalidConfig, dsv4Block, c.BlockSize)
	case max(c.PipelineParallelSize, 1) > 1:
		return CacheDType{}, fmt.Errorf("%w: kvcfg does not model DeepSeek-V4 with pipeline parallelism in vLLM; plan it with --pipeline-parallel-size 1", ErrInvalidConfig)
	}
	f, err := dtype.LookupFormat("fp8_e4m3")
	if err != nil {
		return CacheDType{}, fmt.Errorf("vllm: %w", err)
	}
	return CacheDType{Requested: req, Name: "fp8_ds_mla", Format: f, DSMLA: true}, nil
}

// planDSV4 plans DeepSeek-V4 (latest profile): its groups, the packed
// layout's block count, admission (and auto-fit) on the layer-tuple
// figure, and the combined report line.
func planDSV4(res *Result, s *model.Spec, c Input, r rules, autoFit bool) (*Result, error) {
	cache, err := dsv4Check(c)
	if err != nil {
		return nil, err
	}
	res.KVCacheDType = cache
	if cache.Requested != "fp8_ds_mla" {
		res.LogLines = append(res.LogLines, "Using DeepSeek's fp8_ds_mla KV cache format.")
	}
	layers := dsv4Layers(s, c.DraftLayers, c.FP4IndexerCache)
	groups, err := dsv4Groups(layers)
	if err != nil {
		return nil, err
	}
	res.BytesPerToken = groups[0].PageBytes / dsv4Block
	res.BlockSize = slices.MinFunc(groups, func(a, b Group) int { return a.BlockSize - b.BlockSize }).BlockSize
	if err := budget(res, s, c, r, res.TensorParallelSize, 1); err != nil {
		return res, err
	}
	avail := res.Memory.AvailableKVBytes
	stride := dsv4Stride(groups)
	res.PageBytes, res.GroupSize = stride, dsv4Tensors(groups)
	batched := res.MaxNumBatchedTokens * maxConcurrentBatches(r, c, 1)
	use := func(L int) usage { return usage{maxModelLen: L, batchedTokens: batched} }
	need := func(L int) int64 { return dsv4Needed(groups, use(L)) }
	ca := avail - stride // the null block
	if err := admit(res, r, avail, autoFit, []admitStage{{avail: ca, need: need}}); err != nil {
		return res, err
	}
	nb := max(avail/stride, 0)
	if c.NumGPUBlocksOverride > 0 {
		res.LogLines = append(res.LogLines, fmt.Sprintf("Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d", nb, c.NumGPUBlocksOverride))
		nb = c.NumGPUBlocksOverride
	}
	res.NumGPUBlocks = nb
	L := res.MaxModelLen
	var perReq, sumMax int64
	for i := range groups {
		g := &groups[i]
		mm := g.maxMemory(use(L))
		g.BlocksPerRequest = cdiv(mm, g.PageBytes)
		perReq += g.BlocksPerRequest
		sumMax += mm
	}
	res.Groups, res.BlocksPerRequest = groups, perReq
	if perReq > 0 {
		res.TokenCapacity = mulDiv(nb, int64(L), perReq)
	}
	reportLines(res, r, nb, perReq, sumMax, res.BlockSize, int64(L))
	groupBlockSizes(res, "none")
	res.Notes = append(res.Notes, fmt.Sprintf("DeepSeek-V4: %d KV cache groups overlay one packed slab; a block costs the largest group page, %d bytes, and a request of %d tokens needs %d blocks across the groups", len(groups), stride, L, perReq))
	if cache.Requested == "auto" {
		res.Notes = append(res.Notes, "DeepSeek-V4's FlashMLA backend stores fp8_ds_mla (584-byte slots); kvcfg takes --kv-cache-dtype auto as the fp8 its recipes pass")
	}
	return res, nil
}
