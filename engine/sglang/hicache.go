package sglang

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// ErrHostMemory reports a HiCache host pool larger than the host RAM a
// rank may claim.
var ErrHostMemory = errors.New("sglang: not enough host memory")

// hicacheReserveBytes is HICACHE_HOST_MEMORY_RESERVE_BYTES: host RAM left
// free when sizing HiCache pools (mem_cache/pool_host/base.py).
const hicacheReserveBytes = 10 << 30

// HiCache layouts (--hicache-mem-layout) whose MHA/MLA host buffers
// pool_host/mha.py and mla.py allocate; all hold the same bytes.
var hicacheLayouts = []string{"layer_first", "page_first", "page_first_direct", "page_head"}

// HostPool is the HiCache host (L2) tier of one rank
// (--enable-hierarchical-cache, docs/sglang.md#hicache): HostKVCache in
// mem_cache/pool_host/base.py. It does not change the GPU pool.
type HostPool struct {
	// Label is the pool label SGLang logs ("kv").
	Label string `json:"label"`
	// Layout is --hicache-mem-layout (layer_first by default).
	Layout string `json:"layout"`
	// SizedFrom is "hicache_size" (decimal GB) or "hicache_ratio".
	SizedFrom string  `json:"sized_from"`
	Ratio     float64 `json:"hicache_ratio,omitempty"`
	SizeGB    float64 `json:"hicache_size_gb,omitempty"`
	// BytesPerToken is get_size_per_token(): MHA head_dim·heads·layers·
	// itemsize·2, MLA (kv_lora_rank+qk_rope_head_dim)·itemsize·layers.
	BytesPerToken int64 `json:"bytes_per_token"`
	// Tokens is the host pool's size after page alignment: page_num ×
	// page_size; Pages is page_num = size // page + 1.
	Tokens   int64 `json:"tokens"`
	Pages    int64 `json:"pages"`
	PageSize int   `json:"page_size"`
	// DeviceTokens is the GPU pool it mirrors (max_total_num_tokens).
	DeviceTokens int64 `json:"device_tokens"`
	// Bytes is Tokens × BytesPerToken, the host RAM this rank pins.
	Bytes int64 `json:"bytes"`
	// BudgetBytes is the host RAM this rank may claim: (free − 10 GiB) //
	// ranks on the host; 0 when the host's free RAM was not given.
	BudgetBytes int64 `json:"host_budget_bytes,omitempty"`
	// RanksPerHost is world_size // nnodes.
	RanksPerHost int `json:"ranks_per_host"`
	// NodeBytes is the host RAM the pools of one node's ranks pin: every
	// PP stage's Tokens × its bytes per token, × TP, over the nodes.
	NodeBytes int64 `json:"node_bytes"`
}

// hostStageBytes is get_size_per_token() of one PP stage's device pool, 0
// when kvcfg does not model that pool's host mirror.
func hostStageBytes(p stagePlan) int64 {
	a := p.attn
	if p.hybrid != nil || p.dsv4 != nil || p.mamba > 0 || a.DSA || a.MiniMax != nil || a.Format.BlockSize > 0 || a.ElementSize <= 0 {
		return 0
	}
	if a.MLA {
		return int64(a.KVLoraRank+a.QKRopeHeadDim) * int64(a.ElementSize) * int64(a.Layers)
	}
	return int64(a.HeadDim) * int64(a.KVHeads) * int64(a.Layers) * int64(a.ElementSize) * 2
}

// hostTier sizes the HiCache host pool of the rank res describes (stage
// idx of plans) and checks it against the host's free RAM.
func (c *Configurator) hostTier(res *Result, plans []stagePlan, idx int) error {
	args := c.in.Args
	if !args.EnableHierarchicalCache {
		return nil
	}
	bpt := hostStageBytes(plans[idx])
	if bpt <= 0 {
		res.Warnings = append(res.Warnings, "kvcfg: the HiCache host pool of this pool kind (hybrid, DSA, DeepSeek-V4, MiniMax sparse or block-scaled KV) is not modelled; only MHA and MLA host pools are")
		return nil
	}
	page := c.d.PageSize
	h := &HostPool{Label: "kv", Layout: args.HiCacheMemLayout, BytesPerToken: bpt, PageSize: page,
		DeviceTokens: res.MaxTotalNumTokens, RanksPerHost: c.ranksPerHost()}
	if h.Layout == "" {
		h.Layout = "layer_first"
	}
	var size int64
	if args.HiCacheSize > 0 {
		h.SizedFrom, h.SizeGB = "hicache_size", args.HiCacheSize
		own := int64(math.Floor(args.HiCacheSize * 1e9 / float64(bpt)))
		size = own
		for _, p := range plans { // sync_fixed_hicache_size: MIN over the PP group
			if b := hostStageBytes(p); b > 0 {
				size = min(size, int64(math.Floor(args.HiCacheSize*1e9/float64(b))))
			}
		}
		if size != own {
			res.Logs = append(res.Logs, fmt.Sprintf("Sync fixed-size HiCache host token capacity from %d to %d.", own, size))
		}
	} else {
		h.SizedFrom, h.Ratio = "hicache_ratio", c.hicacheRatio()
		size = int64(float64(res.MaxTotalNumTokens) * h.Ratio)
	}
	h.Pages = size/int64(page) + 1
	h.Tokens = h.Pages * int64(page)
	h.Bytes = h.Tokens * bpt
	for _, p := range plans {
		h.NodeBytes += h.Tokens * hostStageBytes(p)
	}
	h.NodeBytes = h.NodeBytes * int64(max(c.in.Parallel.TP, 1)) / int64(max(c.in.Args.NNodes, 1))
	res.HostPool = h
	if h.Tokens <= res.MaxTotalNumTokens {
		res.Warnings = append(res.Warnings, fmt.Sprintf("HiCache %s host pool (%d tokens) is smaller than the device pool (%d tokens);L2 cache effectiveness is reduced.Consider increasing --hicache-ratio (or --hicache-size) for higher L2 cache hit rate.",
			h.Label, h.Tokens, res.MaxTotalNumTokens))
	}
	if args.HostMemoryBytes > 0 {
		h.BudgetBytes = (args.HostMemoryBytes - hicacheReserveBytes) / int64(h.RanksPerHost)
		if h.Bytes > h.BudgetBytes {
			return c.hostMemoryRefusal(h)
		}
	}
	res.Logs = append(res.Logs, fmt.Sprintf("Allocating %s hierarchical KV host pool: %d tokens, %.2f GB host memory.", h.Label, h.Tokens, float64(h.Bytes)/1e9))
	return nil
}

// hicacheRatio is --hicache-ratio (2.0 when not given).
func (c *Configurator) hicacheRatio() float64 {
	if r := c.in.Args.HiCacheRatio; r > 0 {
		return r
	}
	return 2
}

// ranksPerHost is ranks_per_host(): world_size // nnodes, at least 1.
func (c *Configurator) ranksPerHost() int {
	p := c.in.Parallel
	return max(max(p.TP, 1)*max(p.PP, 1)/max(c.in.Args.NNodes, 1), 1)
}

// hostMemoryRefusal is SGLang's ValueError for a host pool over the budget,
// with the largest --hicache-ratio (or --hicache-size) that fits.
func (c *Configurator) hostMemoryRefusal(h *HostPool) error {
	err := fmt.Errorf("%w: ValueError: Not enough host memory available. Requesting %.2f GB but only have %.2f GB free. Please reduce the size of the hierarchical cache.",
		ErrHostMemory, float64(h.Bytes)/1e9, float64(h.BudgetBytes)/1e9)
	r := engine.Refusal{Err: err, Flag: "--hicache-ratio", Hint: "the host has too little free RAM for any host pool: free host memory or drop --enable-hierarchical-cache"}
	// The largest pre-alignment size whose page_num = size//page + 1 pages fit.
	fit := (h.BudgetBytes/(h.BytesPerToken*int64(h.PageSize)))*int64(h.PageSize) - 1
	if fit > 0 {
		if h.SizedFrom == "hicache_size" {
			gbFit := math.Floor(float64(fit)*float64(h.BytesPerToken)/1e7) / 100
			r.Flag, r.Value = "--hicache-size", pyFloat(gbFit)
		} else if h.DeviceTokens > 0 {
			r.Value = pyFloat(math.Floor(float64(fit)/float64(h.DeviceTokens)*100) / 100)
		}
		if r.Value != "" && r.Value != "0.0" {
			r.Hint = fmt.Sprintf("set %s %s or lower, or give the host more free RAM", r.Flag, r.Value)
		} else {
			r.Value = ""
		}
	}
	return refusal(r)
}

// validateTiers checks the unified-pool and HiCache arguments.
func (a ServerArgs) validateTiers() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	switch a.DisaggregationMode {
	case "", "null", "prefill", "decode":
	default:
		bad("--disaggregation-mode %q must be null, prefill or decode", a.DisaggregationMode)
	}
	if a.HiCacheRatio < 0 || math.IsNaN(a.HiCacheRatio) || math.IsInf(a.HiCacheRatio, 0) {
		bad("--hicache-ratio %v must be positive", a.HiCacheRatio)
	}
	if a.HiCacheSize < 0 || math.IsNaN(a.HiCacheSize) || math.IsInf(a.HiCacheSize, 0) {
		bad("--hicache-size %v (GB) must not be negative", a.HiCacheSize)
	}
	if a.HiCacheMemLayout != "" && !slices.Contains(hicacheLayouts, a.HiCacheMemLayout) {
		bad("--hicache-mem-layout %q must be one of %s", a.HiCacheMemLayout, strings.Join(hicacheLayouts, ", "))
	}
	if a.HostMemoryBytes < 0 || a.NNodes < 0 {
		bad("host memory and --nnodes must not be negative")
	}
	return errors.Join(errs...)
}

// adviseHiCacheHostMemory reads HiCache's host-memory refusal
// (docs/sglang.md#hicache).
func adviseHiCacheHostMemory(n map[string]float64, _ []string) engine.Advice {
	a := engine.Advice{
		Meaning: fmt.Sprintf("The HiCache host pool of one rank needs %.2f GB (decimal) of pinned host RAM, but the rank may claim only %.2f GB: the host's available memory minus a 10 GiB reserve, split among the ranks on the node in the newest SGLang. The GPU KV pool is not affected.", n["requested_gb"], n["free_gb"]),
		Knob:    "hicache_ratio", Alternatives: []string{"hicache_size", "enable_hierarchical_cache"},
	}
	if n["requested_gb"] > 0 && n["free_gb"] > 0 {
		a.Text = fmt.Sprintf("Shrink the host pool to at most %.0f%% of its size: lower --hicache-ratio (default 2.0) by that factor, or set --hicache-size below %.2f GB per rank; or free host memory.",
			math.Floor(n["free_gb"]/n["requested_gb"]*100), n["free_gb"])
	} else {
		a.Text = "Free host memory, or drop --enable-hierarchical-cache."
	}
	return a
}

// checkHiCacheArgs is ServerArgs._handle_cache_compatibility: HiCache is
// built on the radix tree.
func (a ServerArgs) checkHiCacheArgs() error {
	if a.EnableHierarchicalCache && a.DisableRadixCache {
		return refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be used at the same time. Please use only one of them.", ErrInvalid),
			Flag: "--disable-radix-cache", Value: "false", Hint: "HiCache extends the radix cache: drop --disable-radix-cache, or --enable-hierarchical-cache",
		})
	}
	return nil
}

// adviseHiCacheNeedsRadix reads _handle_cache_compatibility's ValueError.
func adviseHiCacheNeedsRadix(map[string]float64, []string) engine.Advice {
	return engine.Advice{
		Meaning: "HiCache (--enable-hierarchical-cache) keeps evicted radix-tree prefixes in host memory, so it cannot run with the radix cache off.",
		Knob:    "disable_radix_cache", Value: "false", Alternatives: []string{"enable_hierarchical_cache"},
		Text: "Drop --disable-radix-cache to keep HiCache, or drop --enable-hierarchical-cache.",
	}
}
