package plan

import (
	"fmt"
	"strconv"

	"github.com/kvcfg/kvcfg/engine/sglang"
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
		BytesPerToken: h.BytesPerToken, Bytes: h.Bytes, TotalBytes: h.Bytes * int64(h.RanksPerHost), BudgetBytes: h.BudgetBytes}
	if h.SizedFrom == "hicache_size" {
		t.SizedFrom = "--hicache-size " + fmtFloat(h.SizeGB) + " (decimal GB) // bytes per token, then size // page + 1 pages"
	} else {
		t.SizedFrom = "--hicache-ratio " + fmtFloat(h.Ratio) + " × " + digits(h.DeviceTokens) + " GPU tokens, then size // page + 1 pages"
	}
	return t
}

// fmtFloat prints a flag's float value the shortest way.
func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

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
			units.FormatBytes(u.TotalBytes), o.Name, digits(f.Sized), digits(f.EntryBytes), o.Name, unit, digits(o.Sized), digits(o.EntryBytes))},
		{"unified trade", fmt.Sprintf("1 %s slot = %.1f full tokens; all full: %s tokens (%s %s), all %s: %s %s (0 tokens)",
			o.Name, u.TokensPerSlot(), digits(f.MaxSlots), "0", unit, o.Name, digits(o.MaxSlots), unit)},
	}
}

// hostTierRows show the host-memory KV tier.
func (r *Report) hostTierRows() [][2]string {
	t := r.HostTier
	if t == nil {
		return nil
	}
	v := fmt.Sprintf("%s tokens (%s blocks of %d), %s per rank, %s per node (%s B/token; %s)",
		digits(t.Tokens), digits(t.Blocks), t.BlockSize, units.FormatBytes(t.Bytes), units.FormatBytes(t.TotalBytes), digits(t.BytesPerToken), t.SizedFrom)
	rows := [][2]string{{"host KV tier " + t.Option, v}}
	if t.BudgetBytes > 0 {
		rows = append(rows, [2]string{"host RAM budget per rank", units.FormatBytes(t.BudgetBytes)})
	}
	return rows
}
