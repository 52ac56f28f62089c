package plan

import (
	"fmt"

	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/units"
)

// HostTier is a KV cache tier in host memory next to the GPU pool, per
// rank: SGLang's HiCache host pool, TensorRT-LLM's secondary pool
// (kv_cache_config.host_cache_size), vLLM's CPU offload buffer
// (--kv-offloading-size). None of them changes the GPU pool's tokens.
type HostTier struct {
	// Option is the engine's flag that sizes it.
	Option string `json:"option"`
	// Tokens is the tier's capacity in tokens; Blocks its pages (blocks)
	// of BlockSize tokens.
	Tokens    int64 `json:"tokens"`
	Blocks    int64 `json:"blocks"`
	BlockSize int   `json:"block_size"`
	// BytesPerToken is what one token costs in host memory.
	BytesPerToken int64 `json:"bytes_per_token"`
	// Bytes is the host RAM one rank pins; TotalBytes over the ranks of
	// one node.
	Bytes      int64 `json:"bytes"`
	TotalBytes int64 `json:"total_bytes"`
	// BudgetBytes is the host RAM one rank may claim (SGLang: (free − 10
	// GiB) // ranks per host); 0 when --host-memory was not given.
	BudgetBytes int64 `json:"host_budget_bytes,omitempty"`
	// SizedFrom says how the size was reached ("hicache_ratio 2.0 × 1,000
	// GPU tokens", "hicache_size 100 GB").
	SizedFrom string `json:"sized_from"`
}

// sglangHostTier is SGLang's HiCache host pool as a HostTier.
func sglangHostTier(h *sglang.HostPool) *HostTier {
	if h == nil {
		return nil
	}
	t := &HostTier{Option: "--enable-hierarchical-cache", Tokens: h.Tokens, Blocks: h.Pages, BlockSize: h.PageSize,
		BytesPerToken: h.BytesPerToken, Bytes: h.Bytes, TotalBytes: h.NodeBytes, BudgetBytes: h.BudgetBytes}
	if h.SizedFrom == "hicache_size" {
		t.SizedFrom = "--hicache-size " + FormatFloat(h.SizeGB) + " (decimal GB) // bytes per token, then size // page + 1 pages"
	} else {
		t.SizedFrom = "--hicache-ratio " + FormatFloat(h.Ratio) + " × " + group3(h.DeviceTokens) + " GPU tokens, then size // page + 1 pages"
	}
	return t
}

// unifiedRows show SGLang's unified memory pool: the shared buffer, each
// sub-pool's sized and maximum slots, and how the two trade.
func (r *Report) unifiedRows() [][2]string {
	u := r.UnifiedMemoryPool
	if u == nil {
		return nil
	}
	f, o := u.Full, u.Other
	unit := "state slots"
	if o.Name == "swa" {
		unit = "SWA tokens"
	}
	return [][2]string{
		{"unified memory pool", fmt.Sprintf("%s shared buffer (%s hybrid): full KV %s tokens × %s B + %s %s %s × %s B",
			units.FormatBytes(u.TotalBytes), o.Name, group3(f.Sized), group3(f.EntryBytes), o.Name, unit, group3(o.Sized), group3(o.EntryBytes))},
		{"unified trade", fmt.Sprintf("1 %s slot = %.1f full tokens; all full: %s tokens (%s %s), all %s: %s %s (0 tokens)",
			o.Name, u.TokensPerSlot(), group3(f.MaxSlots), "0", unit, o.Name, group3(o.MaxSlots), unit)},
	}
}

// hostTierRows show the host-memory KV tier.
func (r *Report) hostTierRows() [][2]string {
	t := r.HostTier
	if t == nil {
		return nil
	}
	v := fmt.Sprintf("%s tokens (%s blocks of %d), %s per rank, %s per node (%s B/token; %s)",
		group3(t.Tokens), group3(t.Blocks), t.BlockSize, units.FormatBytes(t.Bytes), units.FormatBytes(t.TotalBytes), group3(t.BytesPerToken), t.SizedFrom)
	rows := [][2]string{{"host KV tier " + t.Option, v}}
	if t.BudgetBytes > 0 {
		rows = append(rows, [2]string{"host RAM budget per rank", units.FormatBytes(t.BudgetBytes)})
	}
	return rows
}

// vllmHostTier is vLLM's native CPU offload buffer (--kv-offloading-size,
// OffloadingConnector's CPUOffloadingSpec): cpu_bytes_to_use =
// size·2^30 over the whole TP×PP group, one CPU block costing a GPU block
// on every rank, so blocks = cpu_bytes_to_use // (bytes per GPU block per
// rank × world size), block_size_factor 1.
func vllmHostTier(req Request, res *vllm.Result) *HostTier {
	if req.KVOffloadingSize <= 0 || res == nil || res.BlockSize <= 0 {
		return nil
	}
	perBlock := res.BytesPerToken * int64(res.BlockSize)
	if res.GroupSize > 0 { // hybrid groups share GroupSize tensors of PageBytes per block
		perBlock = res.PageBytes * int64(res.GroupSize)
	}
	world := int64(max(res.TensorParallelSize, 1) * max(res.PipelineParallelSize, 1))
	if perBlock <= 0 {
		return nil
	}
	cpuBytes := int64(req.KVOffloadingSize * (1 << 30))
	blocks := cpuBytes / (perBlock * world)
	return &HostTier{Option: "--kv-offloading-size", Tokens: blocks * int64(res.BlockSize), Blocks: blocks, BlockSize: res.BlockSize,
		BytesPerToken: perBlock / int64(res.BlockSize), Bytes: blocks * perBlock, TotalBytes: blocks * perBlock * world,
		SizedFrom: fmt.Sprintf("cpu_bytes_to_use %s GiB over %d ranks // %s B per block per rank", FormatFloat(req.KVOffloadingSize), world, group3(perBlock))}
}

// trtllmHostTier is TensorRT-LLM's secondary (host) pool
// (kv_cache_config.host_cache_size, bytes per rank): secondary blocks =
// host_cache_size // bytes per token // tokens_per_block.
func trtllmHostTier(req Request, res *trtllm.Result) *HostTier {
	tokensPerBlock, cellBytes := res.TokensPerBlock, res.CellSizeBytes
	if req.HostCacheSize <= 0 || tokensPerBlock <= 0 {
		return nil
	}
	b := res.NumSecondaryBlocks
	return &HostTier{Option: "kv_cache_config.host_cache_size", Tokens: b * int64(tokensPerBlock), Blocks: b, BlockSize: tokensPerBlock,
		BytesPerToken: cellBytes, Bytes: int64(req.HostCacheSize), TotalBytes: int64(req.HostCacheSize) * int64(max(res.TPSize, 1)),
		SizedFrom: fmt.Sprintf("host_cache_size %s // %s B per token // %d tokens per block", units.FormatBytes(int64(req.HostCacheSize)), group3(cellBytes), tokensPerBlock)}
}

// warnHostRAM warns when a host tier does not fit the node's free RAM
// (--host-memory); SGLang refuses in that case instead (HiCache checks).
func warnHostRAM(rep *Report, req Request) {
	t := rep.HostTier
	if t == nil || req.HostMemory <= 0 || t.TotalBytes <= int64(req.HostMemory) {
		return
	}
	rep.warn(fmt.Sprintf("kvcfg: the host KV tier (%s) needs %s of host RAM on this node, more than the %s free (--host-memory); the engine would fail to pin it or swap",
		t.Option, units.FormatBytes(t.TotalBytes), units.FormatBytes(int64(req.HostMemory))))
}
