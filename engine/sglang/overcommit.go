package sglang

import (
	"fmt"
	"math"

	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// Overcommit is a pool larger than the budget it was sized from: the
// release counted a token at CountedCellBytes when computing
// max_total_num_tokens, and the pool allocates AllocatedCellBytes a token.
// SGLang before 0.5.17 did so for an fp8 DeepSeek sparse-attention pool on
// the non-trtllm backends: it counted kv_lora_rank + qk_rope_head_dim
// elements at one byte (576) and allocated the 656-byte FlashMLA row (512
// fp8 nope, four fp32 scales, 64 bf16 rope), PR #31992.
type Overcommit struct {
	// CountedCellBytes and AllocatedCellBytes are the bytes per token of
	// the budget and of the buffers.
	CountedCellBytes   int64 `json:"counted_cell_bytes"`
	AllocatedCellBytes int64 `json:"allocated_cell_bytes"`
	// BudgetBytes is the KV budget; AllocatedBytes what the pool takes,
	// tokens × AllocatedCellBytes; ExcessBytes the difference, taken from
	// the memory mem_fraction_static leaves to activations and graphs.
	BudgetBytes    int64 `json:"budget_bytes"`
	AllocatedBytes int64 `json:"allocated_bytes"`
	ExcessBytes    int64 `json:"excess_bytes"`
	// ExcessFraction is ExcessBytes / BudgetBytes.
	ExcessFraction float64 `json:"excess_fraction"`
	// FixedIn is the first release whose budget counts the allocated row.
	FixedIn string `json:"fixed_in"`
	// SafeMemFractionStatic is the largest mem_fraction_static (three
	// decimals) whose overcommitted pool fits the budget of the fraction in
	// use: mfs − budget·(1 − counted/allocated)/pre-load free memory.
	SafeMemFractionStatic float64 `json:"safe_mem_fraction_static"`
}

// overcommit fills res.Overcommit and its warning when stage p allocates
// more bytes a token than its configurator counted.
func (c *Configurator) overcommit(res *Result, p stagePlan, cfg sizing.PoolConfig) {
	counted := int64(p.cfgr.CellSize())
	if p.allocCell <= counted || cfg.MaxTotalNumTokens <= 0 || res.AvailableBytes <= 0 {
		return
	}
	o := &Overcommit{CountedCellBytes: counted, AllocatedCellBytes: p.allocCell, BudgetBytes: res.AvailableBytes,
		FixedIn: dsaFP8CountedFrom.String()}
	o.AllocatedBytes = cfg.MaxTotalNumTokens * p.allocCell
	o.ExcessBytes = o.AllocatedBytes - o.BudgetBytes
	if o.ExcessBytes <= 0 { // a --max-total-tokens cap kept the pool inside the budget
		return
	}
	o.ExcessFraction = float64(o.ExcessBytes) / float64(o.BudgetBytes)
	shrink := float64(o.BudgetBytes) / gib * (1 - float64(counted)/float64(p.allocCell))
	if res.PreLoadGiB > 0 {
		o.SafeMemFractionStatic = math.Floor((c.d.MemFractionStatic-shrink/res.PreLoadGiB)*1000+1e-9) / 1000
	}
	res.Overcommit = o
	res.Warnings = append(res.Warnings, o.warning(c.in.Version, cfg.MaxTotalNumTokens, c.d.MemFractionStatic))
}

func (o *Overcommit) warning(version string, tokens int64, mfs float64) string {
	return fmt.Sprintf("SGLang %s counts a DeepSeek sparse-attention fp8 token at %d B (576-byte latent) but its pool allocates %d B "+
		"(656-byte FlashMLA row): the %d-token KV pool takes %.2f GiB, %.2f GiB (%.1f %%) more than the %.2f GiB budget, "+
		"an overcommit of mem_fraction_static %.3f that can run out of memory; upgrade to SGLang %s (PR #31992) "+
		"or set --mem-fraction-static %.3f", version, o.CountedCellBytes, o.AllocatedCellBytes, tokens,
		float64(o.AllocatedBytes)/gib, float64(o.ExcessBytes)/gib, 100*o.ExcessFraction, float64(o.BudgetBytes)/gib,
		mfs, o.FixedIn, o.SafeMemFractionStatic)
}
