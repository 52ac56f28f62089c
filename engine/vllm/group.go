package vllm

import (
	"fmt"
	"slices"
)

// unifyFailed is vLLM's refusal of a hybrid model whose layers cannot be
// cached as one type without the hybrid KV cache manager.
const unifyFailed = "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type."

// unifyHint is the fix of a model whose page sizes this version cannot unify.
const unifyHint = "this vLLM version cannot unify the model's page sizes; try --vllm-version latest"

// Group is one KV cache group (vLLM's KVCacheGroupSpec): layers that share a
// block table. Every group has the same page size after unification.
type Group struct {
	// Kind is the spec kind of the group's layers.
	Kind SpecKind `json:"kind"`
	// Variant distinguishes groups of one kind ("indexer").
	Variant string `json:"variant,omitempty"`
	// Layers names the group's layers.
	Layers []string `json:"layers"`
	// BlockSize is the tokens per block of the group (after inflation).
	BlockSize int `json:"block_size"`
	// PageBytes is the page of one layer; for a uniform-type group (one type,
	// different sizes) it is the sum over the layers of one block.
	PageBytes int64 `json:"page_bytes"`
	// Window and ChunkSize repeat the group spec's window or chunk.
	Window    int `json:"window,omitempty"`
	ChunkSize int `json:"chunk_size,omitempty"`
	// UniformType marks vLLM's UniformTypeKVCacheSpecs.
	UniformType bool `json:"uniform_type,omitempty"`
	// BlocksPerRequest is the blocks one request of max_model_len tokens
	// needs from this group (max_memory_usage_bytes / page).
	BlocksPerRequest int64 `json:"blocks_per_request"`

	spec  LayerSpec   // the merged spec
	specs []LayerSpec // per-layer specs (all groups)
}

// maxMemory is the group spec's max_memory_usage_bytes.
func (g *Group) maxMemory(u usage) int64 {
	if g.UniformType {
		var blocks int64
		for _, s := range g.specs {
			blocks = max(blocks, s.blocks(u))
		}
		return blocks * g.PageBytes
	}
	return g.spec.maxMemory(u)
}

// sameType reports whether all specs are one vLLM spec type (with the same
// window or chunk and block size), so that they fit UniformTypeKVCacheSpecs.
func sameType(specs []LayerSpec) bool {
	first := specs[0]
	for _, s := range specs[1:] {
		if s.BlockSize != first.BlockSize {
			return false
		}
		switch {
		case first.Kind.fullType():
			if !s.Kind.fullType() {
				return false
			}
		case s.Kind != first.Kind:
			return false
		case s.Kind == SlidingWindow && s.Window != first.Window:
			return false
		case s.Kind == ChunkedLocalAttention && s.ChunkSize != first.ChunkSize:
			return false
		}
	}
	return true
}

func allEqual(specs []LayerSpec) bool {
	k := specs[0].key()
	for _, s := range specs[1:] {
		if s.key() != k {
			return false
		}
	}
	return true
}

func names(specs []LayerSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// groupLayers is get_kv_cache_groups: it returns the groups and the
// (possibly converted or unified) specs, logging what vLLM logs.
func groupLayers(in []LayerSpec, r rules, disableHybrid bool, logs *[]string) ([]Group, []LayerSpec, error) {
	specs := slices.Clone(in)
	if len(specs) == 0 {
		return nil, specs, nil
	}
	hasChunked := slices.ContainsFunc(specs, func(s LayerSpec) bool { return s.Kind == ChunkedLocalAttention })
	if (disableHybrid || (hasChunked && !r.hybridWithChunked)) && !allEqual(specs) && !sameType(specs) {
		if err := unifyHybridSpecs(specs, logs); err != nil {
			return nil, specs, err
		}
	}
	if g, ok := uniformSpecGroup(specs); ok {
		return g, specs, nil
	}
	// Hybrid: unify page sizes by growing the block size of smaller pages.
	if err := unifyPageSizes(specs, r); err != nil {
		return nil, specs, err
	}
	return uniformPageGroups(specs, logs), specs, nil
}

// unifyHybridSpecs is unify_hybrid_kv_cache_specs, run with the hybrid KV
// cache manager off: sliding and chunked layers next to full ones become
// full attention; anything else still mixed is refused.
func unifyHybridSpecs(specs []LayerSpec, logs *[]string) error {
	*logs = append(*logs, "Hybrid KV cache manager is disabled for this hybrid model, This means we do not enable any optimizations for saving KV cache memory (e.g., dropping the KV cache outside the sliding window). The compute of layers like sliding window is still saved.")
	hasFull := slices.ContainsFunc(specs, func(s LayerSpec) bool { return s.Kind.fullType() })
	if hasFull {
		for i, s := range specs {
			if s.Kind == SlidingWindow || s.Kind == ChunkedLocalAttention {
				s.Kind = FullAttention
				s.Window, s.ChunkSize = 0, 0
				specs[i] = s
			}
		}
	}
	if !allEqual(specs) && !sameType(specs) {
		return fix(refusal(unifyFailed), "", "", unifyHint)
	}
	return nil
}

// uniformSpecGroup is the one group of a model whose layers share a spec
// (_get_kv_cache_groups_uniform_spec) or a type with different page sizes
// (_get_kv_cache_groups_uniform_type, one page of their sum); false for a
// hybrid.
func uniformSpecGroup(specs []LayerSpec) ([]Group, bool) {
	s := specs[0]
	if allEqual(specs) {
		return []Group{{Kind: s.Kind, Variant: s.Variant, Layers: names(specs), BlockSize: s.BlockSize,
			PageBytes: s.PageBytes(), Window: s.Window, ChunkSize: s.ChunkSize, spec: s, specs: specs}}, true
	}
	if sameType(specs) {
		var page int64
		for _, l := range specs {
			page += l.PageBytes()
		}
		return []Group{{Kind: s.Kind, Layers: names(specs), BlockSize: s.BlockSize, PageBytes: page,
			Window: s.Window, ChunkSize: s.ChunkSize, UniformType: true, spec: s, specs: specs}}, true
	}
	return nil, false
}

// unifyPageSizes is unify_kv_cache_spec_page_size: every page grows to the
// largest by a larger block (Mamba pages, and pages that do not divide it
// where the release pads, are padded instead).
func unifyPageSizes(specs []LayerSpec, r rules) error {
	var maxPage int64
	for _, s := range specs {
		maxPage = max(maxPage, s.PageBytes())
	}
	for i, s := range specs {
		p := s.PageBytes()
		if p == maxPage || p == 0 {
			continue
		}
		if s.Kind == Mamba {
			s.PagePadded = maxPage
			specs[i] = s
			continue
		}
		if maxPage%p != 0 && !r.padPages {
			return fix(refusal("The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting block_size."), "", "", unifyHint)
		}
		s.BlockSize *= int(maxPage / p)
		if s.PageBytes() != maxPage {
			s.PagePadded = maxPage
		}
		specs[i] = s
	}
	return nil
}

// specBucket is the layers of one spec, in layer order.
type specBucket struct {
	key    LayerSpec
	layers []LayerSpec
}

// uniformPageGroups is _get_kv_cache_groups_uniform_page_size: layers
// bucketed by spec, each bucket split into groups of the group size
// (padding the last, as vLLM logs).
func uniformPageGroups(specs []LayerSpec, logs *[]string) []Group {
	buckets := bucketSpecs(specs)
	size := layersPerGroup(buckets, len(specs))
	var groups []Group
	for _, b := range buckets {
		n := len(b.layers)
		if pad := size - n%size; pad != size {
			*logs = append(*logs, fmt.Sprintf("Add %d padding layers, may waste at most %.2f%% KV cache memory",
				pad, float64(pad)/float64(n)*100))
		}
		ng := (n + size - 1) / size
		for i := range ng {
			var members []LayerSpec
			for j := i; j < n; j += ng {
				members = append(members, b.layers[j])
			}
			s := members[0]
			groups = append(groups, Group{Kind: s.Kind, Variant: s.Variant, Layers: names(members),
				BlockSize: s.BlockSize, PageBytes: s.PageBytes(), Window: s.Window, ChunkSize: s.ChunkSize,
				spec: s, specs: members})
		}
	}
	return groups
}

// bucketSpecs buckets equal specs (same_type_layers), in layer order.
func bucketSpecs(specs []LayerSpec) []*specBucket {
	var buckets []*specBucket
	for _, s := range specs {
		i := slices.IndexFunc(buckets, func(b *specBucket) bool { return b.key == s.key() })
		if i < 0 {
			buckets = append(buckets, &specBucket{key: s.key()})
			i = len(buckets) - 1
		}
		buckets[i].layers = append(buckets[i].layers, s)
	}
	return buckets
}

// layersPerGroup is the group size: the smallest bucket's layer count, or
// the largest's when that is less than 1.5 times the smallest.
func layersPerGroup(buckets []*specBucket, layers int) int {
	minN, maxN := layers, 0
	for _, b := range buckets {
		minN = min(minN, len(b.layers))
		maxN = max(maxN, len(b.layers))
	}
	if float64(maxN) < float64(minN)*1.5 {
		return maxN
	}
	return minN
}

// project keeps the layers of one pipeline stage in every group (groups
// that lose all their layers stay, empty, as in vLLM).
func project(groups []Group, stage int) []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		g.Layers = nil
		var specs []LayerSpec
		for _, s := range g.specs {
			if s.Stage == stage {
				specs = append(specs, s)
				g.Layers = append(g.Layers, s.Name)
			}
		}
		if g.UniformType {
			g.PageBytes = 0
			for _, s := range specs {
				g.PageBytes += s.PageBytes()
			}
			if len(specs) > 0 {
				g.specs = specs
			}
		} else {
			g.specs = specs
		}
		out[i] = g
	}
	return out
}

// groupSize is the number of shared tensors: the most layers in a group.
func groupSize(groups []Group) int {
	n := 0
	for _, g := range groups {
		n = max(n, len(g.Layers))
	}
	return n
}

// numBlocks is get_kv_cache_config_from_groups' block count for one worker.
func numBlocks(groups []Group, avail int64) int64 {
	if len(groups) == 0 {
		return 1
	}
	if avail <= 0 {
		return 0
	}
	if len(groups) == 1 && groups[0].UniformType {
		if groups[0].PageBytes == 0 {
			return 0
		}
		return avail / groups[0].PageBytes
	}
	gs := int64(groupSize(groups))
	if gs == 0 || groups[0].PageBytes == 0 {
		return 0
	}
	return avail / groups[0].PageBytes / gs
}

// nullBytes is the memory of one block in every tensor (the null block).
func nullBytes(groups []Group) int64 {
	if len(groups) == 0 {
		return 0
	}
	if len(groups) == 1 && groups[0].UniformType {
		return groups[0].PageBytes
	}
	return int64(groupSize(groups)) * groups[0].PageBytes
}

// groupsNeeded is _max_memory_usage_bytes_from_groups: the memory one
// request of u.maxModelLen tokens needs, padding included.
func groupsNeeded(groups []Group, u usage) int64 {
	if len(groups) == 0 {
		return 0
	}
	if len(groups) == 1 && groups[0].UniformType {
		var sum int64
		for _, s := range groups[0].specs {
			sum += s.maxMemory(u)
		}
		return sum
	}
	page := groups[0].PageBytes
	var blocks int64
	for i := range groups {
		blocks += cdiv(groups[i].maxMemory(u), page)
	}
	return int64(groupSize(groups)) * page * blocks
}

// layersNeeded is the per-layer sum of max_memory_usage_bytes (0.11).
func layersNeeded(specs []LayerSpec, u usage) int64 {
	var sum int64
	for _, s := range specs {
		sum += s.maxMemory(u)
	}
	return sum
}

// searchMaxLen binary-searches the largest L in [1, hi] with need(L) ≤
// avail; 0 when even one token does not fit.
func searchMaxLen(hi int, avail int64, need func(L int) int64) int {
	if hi < 1 || need(1) > avail {
		return 0
	}
	lo, res := 1, 1
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if need(mid) <= avail {
			res = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return res
}
