package trtllm

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// Parts are the non-KV figures of one rank's modelled budget.
type Parts struct {
	// WeightsBytes is the weights on the most loaded rank.
	WeightsBytes int64 `json:"weights_bytes"`
	// ActivationBytes is the torch peak increase of the profiling forward at
	// max_num_tokens.
	ActivationBytes int64 `json:"activation_bytes"`
	// NonTorchBytes is the CUDA context, libraries and NCCL buffers.
	NonTorchBytes int64 `json:"non_torch_bytes"`
	// CUDAGraphBytes is the captured CUDA graphs (PyTorch profiles).
	CUDAGraphBytes int64 `json:"cudagraph_bytes"`
}

// Estimate returns kvcfg's estimates of the non-KV memory one rank holds
// when TensorRT-LLM measures its KV budget, for model s with tp × pp ranks
// and max_num_tokens tokens in the profiling forward:
//
//   - weights: the weights package's per-rank estimate from the config's
//     parameter counts (0 when the config has none);
//   - activation: the dry run's forward of max_num_tokens tokens from the
//     model's shapes (dryRunActivation): 0.88 GiB for gpt-oss-120b at 8192
//     tokens, where its 1.1.0rc3 log measured 0.85 GiB;
//   - non-torch: the gpu package's runtime overhead (CUDA context and
//     libraries, plus NCCL buffers with more than one rank);
//   - CUDA graphs: 25 MiB per decoder layer on the rank (PyTorch backend;
//     engine builds run without them by default).
//
// They are estimates; a real run's reading (Input.KVCacheMemory or
// Input.FreeMemoryAfterLoad) reproduces it exactly.
func Estimate(s *model.Spec, tp, pp, maxNumTokens int, engine bool) Parts {
	tp, pp = max(tp, 1), max(pp, 1)
	var m Parts
	if s == nil {
		return m
	}
	if w, err := weights.PerRank(s, weights.Layout{TP: tp, PP: pp}); err == nil {
		m.WeightsBytes = w
	}
	m.ActivationBytes = dryRunActivation(s, tp, maxNumTokens)
	m.NonTorchBytes = gpu.RuntimeOverheadMiB(tp*pp) << 20
	if !engine {
		m.CUDAGraphBytes = int64((s.NumLayers+pp-1)/pp) * 25 << 20
	}
	return m
}

// budget is the memory side of a plan, per GPU.
type budget struct {
	total int64 // device memory (0 when unknown)
	parts Parts
	// avail is the KV budget in bytes: a PyTorch log's "available KV cache
	// memory …" (after the fraction) or an engine build's free memory after
	// load (before it).
	avail float64
	// freeStart is the free memory before the estimation dry run (0 when
	// unknown).
	freeStart float64
	// freeAlloc is the free memory when the final pool is created.
	freeAlloc float64
	measured  bool
	estimated []string
}

// makeBudget resolves the budget: a reading, or the modelled figures.
func makeBudget(in Input, s *model.Spec, r rules, frac float64, tp, pp, maxNumTokens int) (budget, error) {
	b := budget{total: in.GPUMemoryBytes}
	switch {
	case r.engine && in.FreeMemoryAfterLoad > 0:
		b.avail, b.measured = float64(in.FreeMemoryAfterLoad), true
	case !r.engine && in.KVCacheMemory > 0:
		b.avail, b.measured = float64(in.KVCacheMemory), true
		b.freeAlloc = b.avail / frac
	default:
		if in.GPUMemoryBytes <= 0 {
			return b, fmt.Errorf("%w: gpu_memory_bytes is needed to model the budget", ErrInvalidInput)
		}
		est := Estimate(s, tp, pp, maxNumTokens, r.engine)
		pick := func(given, estimate int64, name string) int64 {
			if given > 0 {
				return given
			}
			b.estimated = append(b.estimated, name)
			return estimate
		}
		b.parts.WeightsBytes = pick(in.WeightsBytes, est.WeightsBytes, "weights")
		if b.parts.WeightsBytes == 0 {
			return b, fmt.Errorf("%w: the weights of %s cannot be estimated from its config; pass weights_bytes", ErrInvalidInput, s.Name)
		}
		b.parts.ActivationBytes = pick(in.ActivationBytes, est.ActivationBytes, "activation")
		b.parts.NonTorchBytes = pick(in.NonTorchBytes, est.NonTorchBytes, "non_torch")
		if !r.engine {
			b.parts.CUDAGraphBytes = pick(in.CUDAGraphBytes, est.CUDAGraphBytes, "cudagraph")
		}
		p := b.parts
		free := float64(b.total - p.WeightsBytes - p.ActivationBytes - p.NonTorchBytes - p.CUDAGraphBytes)
		if r.engine {
			b.avail = free
		} else {
			b.avail = free * frac
			// Activations are released before the final pool is created;
			// before the dry run the CUDA graphs do not exist yet.
			b.freeAlloc = float64(b.total - p.WeightsBytes - p.NonTorchBytes - p.CUDAGraphBytes)
			b.freeStart = float64(b.total - p.WeightsBytes - p.NonTorchBytes)
		}
	}
	if in.FreeMemoryAtAllocation > 0 {
		b.freeAlloc = float64(in.FreeMemoryAtAllocation)
	}
	return b, nil
}

// estimatedNote says which budget parts kvcfg estimated.
func (b budget) estimatedNote() string {
	if len(b.estimated) == 0 {
		return ""
	}
	return fmt.Sprintf("estimated without a GPU: %s; pass a real run's reading (kv_cache_memory, or free_memory_after_load for engine builds) to reproduce it exactly",
		strings.Join(b.estimated, ", "))
}

// dryRunActivation is the torch peak of the PyTorch backend's estimation
// dry run (py_executor_creator / KvCacheCreator: one forward of
// max_num_tokens tokens in context requests), from the model's shapes in
// its dtype: a dense layer's MLP outputs per TP rank (gate/up and the
// activation's output) and four hidden-state-sized tensors (residual,
// normed input, attention or MLP output, the layer's output); for a MoE
// layer the fused-MoE kernel's workspace over the routed rows instead of
// the dense MLP: the permuted input, the first expert GEMM's output and
// the second's (tokens × top_k × (H + 2I/tp + H); CUTLASS MoE
// getWorkspaceSize). Logits are computed for the last token of each dry-run
// request only, a few rows, and are left out.
func dryRunActivation(s *model.Spec, tp, maxNumTokens int) int64 {
	tokens := int64(max(maxNumTokens, 0))
	b := int64(max(s.ModelDType.Size(), 2))
	h := int64(max(s.HiddenSize, 0))
	f := s.FFN
	tp64 := int64(max(tp, 1))
	mats := int64(2)
	if f.Gated {
		mats = 3
	}
	mlp := mats * int64(f.Intermediate) / tp64
	if f.Experts > 0 && f.TopK > 0 {
		mlp = mats*int64(f.SharedIntermediate)/tp64 + int64(f.TopK)*(2*int64(f.ExpertIntermediate)/tp64+2*h)
	}
	return satMul(tokens, satMul(mlp+4*h, b))
}
