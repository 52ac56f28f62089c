package validate

import (
	"fmt"
	"math"

	"github.com/kvcfg/kvcfg/engine/sglang"
)

// predictSGLang predicts an SGLang run from what is known before launch.
// The free memory before weights is modelled (sglang.PreLoadMemoryFor
// under the run's release: the catalog's CUDA-visible total less the CUDA
// context and torch.distributed's initialisation, at one rank from 0.5.8
// the first kernel's); the weights are the run's "Load weight end ... mem
// usage" reading, exact (before 0.5.8 at one rank it holds the first
// kernel, which a measured reading needs no term for), because the table
// judges the budget, not the weight count (a user plans them from the
// checkpoint's safetensors headers). The post-load free memory is then
// pre − weights, and SGLang's own rules (the default mem_fraction_static
// for the GPU and version, rest = post − pre·(1 − mfs), the pool) give the
// predicted pool. Its error is that of the predicted token count, measured
// against the run's "#tokens": the KV memory is tokens × the same bytes
// per token on both sides (the test checks that bytes per token against
// the printed K and V sizes). Where the release counted fewer bytes a
// token than its pool allocates (an fp8 DeepSeek sparse-attention pool
// before 0.5.17), the tokens come from the counted cell and the predicted
// KV memory from the allocated one, as the engine printed them.
func predictSGLang(r Run) (Row, error) {
	row := Row{Run: r}
	if r.KVCacheTokens <= 0 || r.WeightsGiB <= 0 {
		return row, fmt.Errorf("validate: %s: an SGLang run needs kv_cache_tokens and weights_gib (the \"mem usage\" of \"Load weight end\")", r.ID)
	}
	s, g, err := modelAndGPU(r)
	if err != nil {
		return row, err
	}
	prof, _, err := sglang.ResolveProfile(r.Version)
	if err != nil {
		return row, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	pre := sglang.PreLoadMemoryFor(g, r.TP, r.PP, prof)
	weights := int64(math.Round(r.WeightsGiB * gib))
	in := sglang.Input{
		Spec: s, Parallel: sglang.Parallel{TP: max(r.TP, 1), PP: max(r.PP, 1), DP: 1}, Version: r.Version,
		Args: sglang.ServerArgs{
			KVCacheDType: r.KVCacheDType, MemFractionStatic: r.MemFractionStatic, PageSize: r.PageSize,
			ContextLength: r.ContextLength, ChunkedPrefillSize: r.ChunkedPrefillSize, CudaGraphMaxBS: r.CudaGraphMaxBS,
			DisableCudaGraph: r.EnforceEager, AttentionBackend: r.AttentionBackend,
		},
		Hardware:          sglang.Hardware{MemoryMiB: g.MemoryMiB, SM: g.SM, Platform: g.Platform, FNUZ: g.FNUZ},
		PostLoadFreeBytes: max(pre.FreeBytes-weights, 0),
	}
	c, err := sglang.New(in)
	if err != nil {
		return row, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	res, err := c.Configure(pre.FreeBytes)
	if err != nil {
		return row, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	row.PreLoad = &pre
	row.TotalGiB = float64(pre.TotalBytes) / gib
	row.MemFractionStatic = c.Derived().MemFractionStatic
	row.KVTokens, row.CellBytes = res.MaxTotalNumTokens, res.CellSize
	row.KVGiB = float64(res.MaxTotalNumTokens) * res.CellSize / gib
	if o := res.Overcommit; o != nil {
		// The pool is tokens × the allocated row, the "KV size" the run
		// printed, not tokens × the counted cell (an fp8 DSA pool before
		// 0.5.17).
		row.KVGiB = float64(o.AllocatedBytes) / gib
		row.CellBytes = float64(o.AllocatedCellBytes)
	}
	row.Error = float64(res.MaxTotalNumTokens)/float64(r.KVCacheTokens) - 1
	return row, nil
}
