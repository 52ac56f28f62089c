package trtllm

import (
	"slices"
	"strconv"
	"strings"
)

// windowGroup is the layers of one stage that use one attention window.
type windowGroup struct {
	window    int   // key after adjust_window_sizes_for_vswa
	requested int   // the window as given (first one mapped to the key)
	layers    int   // local layers
	bytes     int64 // get_size_in_bytes of one token (no NVFP4 scales)
	scaled    int64 // with NVFP4 scales (the pool's real bytes per token)
	blocks    int64
	secondary int64
}

// perLayerElements is kv_factor × heads × head_dim of one layer on one rank.
func (p *planner) perLayerElements() int64 { return allocElements(p.s, p.tpKV, 1) }

// sizeNoScale is get_size_in_bytes(n, dtype) without the scale pool.
func sizeNoScale(kv CacheDType, e int64) int64 {
	switch kv.Name {
	case "fp8", "int8":
		return e
	case "nvfp4":
		return e * 4 / 8
	case "float32":
		return 4 * e
	default:
		return 2 * e
	}
}

// stageWindows is _get_window_size_to_layers for one stage: the window
// pattern repeats over the stage's local layers (draft layers included).
func (p *planner) stageWindows(st Stage) (map[int]int, []int) {
	count := map[int]int{}
	var order []int
	n := st.Layers + st.DraftLayers
	for i := range max(n, 1) {
		w := p.windows[i%len(p.windows)]
		if _, ok := count[w]; !ok {
			order = append(order, w)
		}
		count[w]++
	}
	return count, order
}

// vswaStage sizes one stage's window pools: adjust_window_sizes_for_vswa,
// equal shares of the estimated memory, floor to blocks.
func (p *planner) vswaStage(st Stage, logs bool) ([]windowGroup, map[int]int, error) {
	kv := p.res.KVCacheDType
	per := p.perLayerElements()
	count, order := p.stageWindows(st)
	bytesFor := func(layers int) (int64, int64, error) {
		e := per * int64(layers)
		scaled, err := elementBytes(kv, e)
		return sizeNoScale(kv, e), scaled, err
	}
	info := func(format string, a ...any) {
		if logs {
			p.info(format, a...)
		}
	}
	pool := st.EstimatedMaxMemory
	sorted := slices.Clone(order)
	slices.Sort(sorted)
	var required int64
	for _, w := range sorted {
		_, scaled, err := bytesFor(count[w])
		if err != nil {
			return nil, nil, err
		}
		required += satMul(int64(w), scaled)
	}
	info("Required memory per sequence: %d bytes", required)
	info("Memory bytes in pool: %d", pool)
	remap := map[int]int{} // requested window → adjusted window
	for _, w := range order {
		remap[w] = w
	}
	if required < pool {
		info("No need to adjust the window sizes, returning")
	} else {
		info("Adjusting the window sizes %s to fit the memory %d bytes.", pyList(order), pool)
		remaining := pool
		remainingLayers := 0
		for _, w := range sorted {
			remainingLayers += count[w]
		}
		var accum, prev int64
		capTokens := st.EstimatedMaxTokens
		for _, w := range sorted {
			if remaining > 0 && remainingLayers > 0 {
				_, scaled, err := bytesFor(remainingLayers)
				if err != nil {
					return nil, nil, err
				}
				take := min(remaining/max(scaled, 1), int64(w)-prev)
				remaining -= take * scaled
				accum += take
				if accum < int64(w) {
					remaining = 0
				}
				accum = min(accum, capTokens)
				if accum == capTokens {
					remaining = 0
				}
			}
			remap[w] = int(accum)
			remainingLayers -= count[w]
			prev = int64(w)
		}
	}
	// Group layers by their adjusted window, keeping first-seen order.
	var groups []windowGroup
	idx := map[int]int{}
	for _, w := range order {
		k := remap[w]
		if i, ok := idx[k]; ok {
			groups[i].layers += count[w]
			continue
		}
		idx[k] = len(groups)
		groups = append(groups, windowGroup{window: k, requested: w, layers: count[w]})
	}
	slices.SortFunc(groups, func(a, b windowGroup) int { return a.window - b.window })
	host := p.in.HostCacheSize
	info("Primary pool memory bytes: %d", pool)
	info("Secondary pool memory bytes: %d", host)
	info("Using default allocation of equal proportion of memory to each window size")
	share := 1 / float64(len(groups))
	shares := make([]string, len(groups))
	for i := range shares {
		shares[i] = pyRepr(share)
	}
	info("Derived window_size_shares: [%s]", strings.Join(shares, ", "))
	for i := range groups {
		g := &groups[i]
		var err error
		g.bytes, g.scaled, err = bytesFor(g.layers)
		if err != nil {
			return nil, nil, err
		}
		primary := float64(pool) * share / float64(max(g.bytes, 1))
		secondary := float64(host) * share / float64(max(g.bytes, 1))
		info("kv_cache_config.max_tokens is not None (%d) but we are operating on VSWA scheme. Ignoring the configuration.", st.EstimatedMaxTokens)
		g.blocks = floorInt(primary / float64(p.tpb))
		g.secondary = floorInt(secondary / float64(p.tpb))
		info("Window size = %d, primary_blocks: %d, secondary_blocks: %d", g.window, g.blocks, g.secondary)
	}
	return groups, remap, nil
}

// blocksDict renders blocks_per_window as Python prints the dict.
func blocksDict(groups []windowGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strconv.Itoa(g.window) + ": (" + strconv.FormatInt(g.blocks, 10) + ", " + strconv.FormatInt(g.secondary, 10) + ")"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// vswaPools is calculate_max_num_blocks_for_vswa on every stage, the minimum
// per window over ranks, and the window clamp.
func (p *planner) vswaPools() error {
	res := p.res
	var first []windowGroup
	var remap map[int]int
	minBlocks := map[int][2]int64{}
	for i, st := range res.Stages {
		groups, rm, err := p.vswaStage(st, i == 0)
		if err != nil {
			return err
		}
		if i == 0 {
			first, remap = groups, rm
		}
		for _, g := range groups {
			cur, ok := minBlocks[g.window]
			if !ok {
				minBlocks[g.window] = [2]int64{g.blocks, g.secondary}
				continue
			}
			minBlocks[g.window] = [2]int64{min(cur[0], g.blocks), min(cur[1], g.secondary)}
		}
	}
	original := blocksDict(first)
	for i := range first {
		b := minBlocks[first[i].window]
		first[i].blocks, first[i].secondary = b[0], b[1]
	}
	if p.tp*p.pp > 1 {
		p.info("[MPI rank=0] Original blocks_per_window: %s", original)
		p.info("[MPI rank=0] Reduced blocks_per_window: %s", blocksDict(first))
	}
	vec := make([]int, len(p.windows))
	for i, w := range p.windows {
		vec[i] = remap[w]
	}
	blocksBy := map[int]int64{}
	var order []int
	for _, g := range first {
		blocksBy[g.window] = g.blocks
		order = append(order, g.window)
	}
	adjusted, msl, err := p.clamp(vec, blocksBy, order, p.maxSeqLen)
	if err != nil {
		return err
	}
	res.MaxAttentionWindow, res.MaxSeqLen = adjusted, msl
	var bytes int64
	for _, g := range first {
		w := g.window
		if up, err := p.upperBound(g.blocks, p.maxSeqLen); err == nil && int64(w) > up {
			w = int(up)
		}
		res.Windows = append(res.Windows, WindowPool{RequestedWindow: g.requested, Window: w, Layers: g.layers,
			CellSizeBytes: g.scaled, NumBlocks: g.blocks, NumSecondaryBlocks: g.secondary})
		res.NumBlocks += g.blocks
		res.NumSecondaryBlocks += g.secondary
		bytes += satMul(satMul(g.blocks, p.tpb), g.scaled)
	}
	res.MaxTokens = satMul(res.NumBlocks, p.tpb)
	res.KVCacheBytes = bytes
	p.poolLines(bytes, res.MaxTokens)
	p.runtimeLine(msl)
	if len(res.Stages) > 1 {
		p.note("per-window pools are sized per stage and the ranks agree on the minimum blocks of each window; kv_cache_bytes is the first stage's")
	}
	return nil
}
