package vllm

import (
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// GiB is 2^30 bytes, the unit of vLLM's memory log lines.
const GiB = int64(1) << 30

// Estimate returns the figures vLLM's profile run would measure on one rank
// for model s, as kvcfg estimates them without a GPU:
//
//   - weights: the weights package's per-rank estimate from the config's
//     parameter counts (quantization aware; 0 when the config has none);
//   - activation peak of the profile run at max_num_batched_tokens:
//     tokens × hidden × (8 + 28/tp) bytes (about 1.1 GiB for an 8B model at
//     8192 tokens on one GPU);
//   - non-torch memory: 256 MiB, plus 512 MiB of NCCL buffers with more than
//     one rank;
//   - CUDA graphs (subtracted by the latest profile, where
//     VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is on by default): 25 MiB per
//     decoder layer on the rank (a 64-layer 32B model logged 1.59 GiB).
//
// They are estimates; a real run's "Memory profiling" log figures, given in
// Memory, reproduce it exactly.
func Estimate(s *model.Spec, tp, pp, maxNumBatchedTokens int) Memory {
	tp, pp = max(tp, 1), max(pp, 1)
	var m Memory
	if s == nil {
		return m
	}
	if w, err := weights.PerRank(s, weights.Layout{TP: tp, PP: pp}); err == nil {
		m.WeightsBytes = w
	}
	m.ActivationBytes = int64(maxNumBatchedTokens) * int64(s.HiddenSize) * (8 + int64(28/tp))
	m.NonTorchBytes = 256 << 20
	if tp*pp > 1 {
		m.NonTorchBytes += 512 << 20
	}
	m.CUDAGraphBytes = int64((s.NumLayers+pp-1)/pp) * 25 << 20
	return m
}
