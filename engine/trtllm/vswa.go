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
// equal shares of the estimated memory, floor to blocks. Only the stage
// with logs set logs its lines.
func (p *planner) vswaStage(st Stage, logs bool) ([]windowGroup, map[int]int, error) {
	z := windowSizer{kv: p.res.KVCacheDType, per: p.perLayerElements()}
	count, order := p.stageWindows(st)
	remap, err := p.adjustWindowSizes(z, st, count, order, logs)
	if err != nil {
		return nil, nil, err
	}
	groups := groupByWindow(count, order, remap)
	if err := p.equalShareBlocks(z, st, groups, logs); err != nil {
		return nil, nil, err
	}
	return groups, remap, nil
}

// windowSizer is get_size_in_bytes of one token over some layers of a
// stage: per layer elements in the cache dtype.
type windowSizer struct {
	kv  CacheDType
	per int64 // elements of one token in one layer on one rank
}

// bytes is one token of the given layers without the NVFP4 scale pool, and
// with it (the pool's real bytes).
func (z windowSizer) bytes(layers int) (plain, scaled int64, err error) {
	e := z.per * int64(layers)
	scaled, err = elementBytes(z.kv, e)
	return sizeNoScale(z.kv, e), scaled, err
}

// infoIf logs the line when on.
func (p *planner) infoIf(on bool, format string, a ...any) {
	if on {
		p.info(format, a...)
	}
}

// adjustWindowSizes is adjust_window_sizes_for_vswa: when one sequence of
// every window does not fit the stage's pool, the windows shrink, smallest
// first, to what the memory holds. It maps each requested window to its
// adjusted one.
func (p *planner) adjustWindowSizes(z windowSizer, st Stage, count map[int]int, order []int, logs bool) (map[int]int, error) {
	pool := st.EstimatedMaxMemory
	sorted := slices.Clone(order)
	slices.Sort(sorted)
	var required int64
	for _, w := range sorted {
		_, scaled, err := z.bytes(count[w])
		if err != nil {
			return nil, err
		}
		required += satMul(int64(w), scaled)
	}
	p.infoIf(logs, "Required memory per sequence: %d bytes", required)
	p.infoIf(logs, "Memory bytes in pool: %d", pool)
	remap := map[int]int{} // requested window → adjusted window
	for _, w := range order {
		remap[w] = w
	}
	if required < pool {
		p.infoIf(logs, "No need to adjust the window sizes, returning")
		return remap, nil
	}
	p.infoIf(logs, "Adjusting the window sizes %s to fit the memory %d bytes.", pyList(order), pool)
	return remap, shrinkWindows(z, remap, sorted, count, pool, st.EstimatedMaxTokens)
}

// shrinkWindows is the adjusting loop of adjust_window_sizes_for_vswa: from
// the smallest window up, the memory left buys tokens for every layer whose
// window is still larger, capped at the stage's max tokens; it records the
// adjusted windows in remap.
func shrinkWindows(z windowSizer, remap map[int]int, sorted []int, count map[int]int, pool, capTokens int64) error {
	remaining := pool
	remainingLayers := 0
	for _, w := range sorted {
		remainingLayers += count[w]
	}
	var accum, prev int64
	for _, w := range sorted {
		if remaining > 0 && remainingLayers > 0 {
			_, scaled, err := z.bytes(remainingLayers)
			if err != nil {
				return err
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
	return nil
}

// groupByWindow groups the layers by their adjusted window, keeping
// first-seen order, then sorts the groups by window.
func groupByWindow(count map[int]int, order []int, remap map[int]int) []windowGroup {
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
	return groups
}

// equalShareBlocks is the default allocation of equal proportion of memory
// to each window size: every group gets pool / groups of the primary (and
// host) memory, floored to blocks of its bytes per token.
func (p *planner) equalShareBlocks(z windowSizer, st Stage, groups []windowGroup, logs bool) error {
	pool, host := st.EstimatedMaxMemory, p.in.HostCacheSize
	p.infoIf(logs, "Primary pool memory bytes: %d", pool)
	p.infoIf(logs, "Secondary pool memory bytes: %d", host)
	p.infoIf(logs, "Using default allocation of equal proportion of memory to each window size")
	share := 1 / float64(len(groups))
	shares := make([]string, len(groups))
	for i := range shares {
		shares[i] = pyRepr(share)
	}
	p.infoIf(logs, "Derived window_size_shares: [%s]", strings.Join(shares, ", "))
	for i := range groups {
		g := &groups[i]
		var err error
		g.bytes, g.scaled, err = z.bytes(g.layers)
		if err != nil {
			return err
		}
		primary := float64(pool) * share / float64(max(g.bytes, 1))
		secondary := float64(host) * share / float64(max(g.bytes, 1))
		p.infoIf(logs, "kv_cache_config.max_tokens is not None (%d) but we are operating on VSWA scheme. Ignoring the configuration.", st.EstimatedMaxTokens)
		g.blocks = floorInt(primary / float64(p.tpb))
		g.secondary = floorInt(secondary / float64(p.tpb))
		p.infoIf(logs, "Window size = %d, primary_blocks: %d, secondary_blocks: %d", g.window, g.blocks, g.secondary)
	}
	return nil
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
