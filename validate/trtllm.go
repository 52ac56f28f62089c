package validate

import (
	"fmt"
	"math"
	"strings"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// predictTRTLLM predicts a TensorRT-LLM (PyTorch backend) run from what is
// known before launch: trtllm.PredictBudget on the catalog's CUDA total
// with the run's flags and its weights ("Memory used after loading model
// weights (inside torch)", exact: the table judges the budget, not the
// weight count); the activation, the non-torch memory, the CUDA graphs and
// the temporary pool are kvcfg's terms. Its error is that of the predicted
// pool's token count against the run's "[MemUsageChange] Allocated … (N)"
// (the bytes per token are the same on both sides; the test checks them
// against the printed GiB).
func predictTRTLLM(r Run) (Row, error) {
	row := Row{Run: r}
	s, g, err := modelAndGPU(r)
	if err != nil {
		return row, err
	}
	in := trtllm.BudgetInput{TotalBytes: g.CUDATotalBytes(), Input: trtllm.Input{
		Version: torchVersion(r.Version), FreeGPUMemoryFraction: r.FreeGPUMemoryFraction, TokensPerBlock: r.TokensPerBlock,
		MaxSeqLen: r.MaxSeqLen, MaxBatchSize: r.MaxBatchSize, MaxNumTokens: r.MaxNumTokens, KVCacheDType: r.KVCacheDType,
		TPSize: max(r.TP, 1), PPSize: max(r.PP, 1), EPSize: r.EP, DisableOverlapScheduler: r.DisableOverlapScheduler,
		DisableCUDAGraph: r.EnforceEager, WeightsBytes: int64(math.Round(r.WeightsGiB * gib)),
		Interconnect: g.Interconnect(), GPUSM: g.SM, GPUNVLinks: g.NVLinks,
	}}
	b, err := trtllm.PredictBudget(s, in)
	if err != nil {
		return row, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	row.TRTLLM = &b
	row.TotalGiB = float64(b.TotalBytes) / gib
	row.ActivationGiB = float64(b.ActivationBytes) / gib
	row.NonTorchGiB = float64(b.NonTorchBytes) / gib
	row.CUDAGraphGiB = float64(b.CUDAGraphBytes) / gib
	row.KVGiB = float64(b.KVCacheBytes) / gib
	row.KVTokens = b.KVCacheTokens
	if b.KVCacheTokens > 0 {
		row.CellBytes = float64(b.KVCacheBytes) / float64(b.KVCacheTokens)
	}
	row.Error = float64(b.KVCacheTokens)/float64(r.KVCacheTokens) - 1
	return row, nil
}

// torchVersion maps a release to the profile of its PyTorch backend: 0.20
// and 0.21 print the estimate of the 1.0 profile ("Estimated max tokens in
// KV cache", the temporary pool added back, blocks rounded up;
// docs/trtllm.md#profiles), while trtllm.ResolveProfile sizes a 0.x
// version as an engine build.
func torchVersion(v string) string {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "v")
	if strings.HasPrefix(t, "0.20") || strings.HasPrefix(t, "0.21") {
		return "1.0"
	}
	return v
}
