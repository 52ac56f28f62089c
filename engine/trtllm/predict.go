package trtllm

import (
	"fmt"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// Term is one named part of a predicted figure and the TensorRT-LLM
// source that allocates it.
type Term = engine.Term

// Source files of the activation terms (NVIDIA/TensorRT-LLM, PyTorch
// backend, 1.1 to 2026 main).
const (
	srcMLP    = "tensorrt_llm/_torch/modules/gated_mlp.py GatedMLP: the fused gate_up_proj output (2I/tp) and the SwiGLU output (I/tp) per token"
	srcMoE    = "tensorrt_llm/_torch/modules/fused_moe (CUTLASS MoE getWorkspaceSize; trtllm-gen Routing::getMaxPermutedPaddedCount): the permuted input, the fc1 and fc2 outputs over all tokens × top_k expanded rows, whatever the EP size; each expert's intermediate split by moe_tp_size = tp ÷ ep (tensorrt_llm/mapping.py)"
	srcHidden = "tensorrt_llm/_torch/models/modeling_llama.py decoder layer: residual, normed input, attention or MLP output, layer output"
	srcLogits = "tensorrt_llm/_torch/pyexecutor/model_engine.py: logits of each dummy context request's last token (model dtype) and the sampler's float32 copy, beside the final hidden states"
)

// DryRunRequests is the number of dummy context requests of the estimation
// dry run (KvCacheCreator._create_dummy_context_requests): prompts of
// min(max_num_tokens, max_seq_len − 1) tokens until max_num_tokens are
// used; one request when max_seq_len is unknown.
func DryRunRequests(maxNumTokens, maxSeqLen int) int64 {
	tokens := int64(max(maxNumTokens, 1))
	inLen := tokens
	if maxSeqLen > 1 {
		inLen = min(tokens, int64(maxSeqLen-1))
	}
	return cdiv(tokens, inLen)
}

// ActivationTerms are the parts of the dry run's torch peak on one rank of
// the first pipeline stage ("Memory dynamically allocated during
// inference"), from the model's shapes in its dtype, for tokens tokens in
// requests dummy requests: a dense layer's MLP outputs per TP rank (or, for
// a MoE layer, the fused-MoE workspace over the routed rows, plus the
// shared expert's MLP) and four hidden-state-sized tensors; on a single
// stage the logits of each request's last token beside two hidden-state
// copies. The peak (peakOf) is the larger of the forward (every term but
// the logits) and the logits. With ep ranks of expert parallelism a routed
// expert's intermediate is split over moe_tp_size = tp ÷ ep ranks
// (tensorrt_llm/mapping.py), while the MoE workspace still covers every
// token's top_k rows (the CUTLASS workspace and trtllm-gen's
// getMaxPermutedPaddedCount size the expanded rows, not the rows routed to
// the rank's experts); an ep that does not divide tp counts as 1.
func ActivationTerms(s *model.Spec, tp, ep, pp, tokens int, requests int64) []Term {
	if s == nil {
		return nil
	}
	t := int64(max(tokens, 0))
	b := int64(max(s.ModelDType.Size(), 2))
	h := int64(max(s.HiddenSize, 0))
	f := s.FFN
	tp64 := int64(max(tp, 1))
	moeTP := tp64
	if ep > 1 && tp64%int64(ep) == 0 {
		moeTP = tp64 / int64(ep)
	}
	mats := int64(2)
	if f.Gated {
		mats = 3
	}
	var terms []Term
	if f.Experts > 0 && f.TopK > 0 {
		per := mats*int64(f.SharedIntermediate)/tp64 + int64(f.TopK)*(2*int64(f.ExpertIntermediate)/moeTP+2*h)
		terms = append(terms, Term{Name: "moe_workspace", Bytes: satMul(t, satMul(per, b)), Source: srcMoE})
	} else {
		terms = append(terms, Term{Name: "mlp", Bytes: satMul(t, satMul(mats*int64(f.Intermediate)/tp64, b)), Source: srcMLP})
	}
	terms = append(terms, Term{Name: "hidden_states", Bytes: satMul(t, satMul(4*h, b)), Source: srcHidden})
	if pp <= 1 && f.VocabSize > 0 {
		logits := satMul(max(requests, 1), satMul(int64(f.VocabSize), b+4)) + satMul(t, satMul(2*h, b))
		terms = append(terms, Term{Name: "logits", Bytes: logits, Source: srcLogits})
	}
	return terms
}

// peakOf is the torch peak of ActivationTerms: the forward's terms add up,
// the logits come after the last layer's intermediates are freed.
func peakOf(terms []Term) int64 {
	var fwd, logits int64
	for _, t := range terms {
		if t.Name == "logits" {
			logits = t.Bytes
			continue
		}
		fwd += t.Bytes
	}
	return max(fwd, logits)
}

// BudgetInput is a launch to predict before it runs: the knobs of Input
// (its readings are ignored), the device total CUDA reports and what the
// user knows exactly (Input.WeightsBytes; Input.ActivationBytes,
// NonTorchBytes and CUDAGraphBytes override kvcfg's terms when positive).
type BudgetInput struct {
	Input
	// TotalBytes is the device total TensorRT-LLM reads
	// (torch.cuda.mem_get_info()[1], "device total memory"); it replaces
	// Input.GPUMemoryBytes when positive.
	TotalBytes int64
}

// Budget is the predicted KV budget of one rank and its terms, as
// KvCacheCreator computes it: available = (total − peak + tmp_kv) ×
// free_gpu_memory_fraction, with peak = weights + activation + non-torch +
// CUDA graphs + the temporary pool (tmp_kv).
type Budget struct {
	// Profile is the TensorRT-LLM profile the launch resolved to.
	Profile Profile `json:"trtllm_version"`
	// FreeGPUMemoryFraction is the fraction as the engine applies it.
	FreeGPUMemoryFraction float64 `json:"free_gpu_memory_fraction"`
	// MemoryReport is the modelled budget: the terms of the peak
	// (TotalBytes … TemporaryKVBytes), PeakBytes ("Peak memory during
	// memory usage profiling"), AvailableKVBytes ("available KV cache
	// memory when calculating max tokens") and the terms kvcfg predicted
	// (Estimated).
	MemoryReport
	// KVCacheTokens and KVCacheBytes are the final pool ("[MemUsageChange]
	// Allocated X GiB for max tokens in paged KV cache (N)").
	KVCacheTokens int64 `json:"kv_cache_tokens"`
	KVCacheBytes  int64 `json:"kv_cache_bytes"`
	// MaxSeqLen is max_seq_len after the pool's clamp.
	MaxSeqLen int `json:"max_seq_len"`
}

// PredictBudget predicts TensorRT-LLM's KV budget for one launch before it
// runs: the modelled budget of Plan (the dry run's activation from the
// model's shapes, the runtime's non-torch memory, the CUDA graphs, the
// temporary pool of the dry-run size rules) on the device total, then the
// estimate, the final pool and its clamp. A launch the engine refuses
// returns the budget it reached and the refusal.
func PredictBudget(s *model.Spec, in BudgetInput) (Budget, error) {
	var b Budget
	if s == nil {
		return b, fmt.Errorf("%w: no model", ErrInvalidInput)
	}
	pin := in.Input
	if in.TotalBytes > 0 {
		pin.GPUMemoryBytes = in.TotalBytes
	}
	if pin.GPUMemoryBytes <= 0 {
		return b, fmt.Errorf("%w: no device total: give the GPU or its memory", ErrInvalidInput)
	}
	pin.KVCacheMemory, pin.FreeMemoryAfterLoad, pin.FreeMemoryAtAllocation = 0, 0, 0
	res, err := Plan(s, pin)
	if res == nil {
		return b, err
	}
	b = Budget{Profile: res.Profile, FreeGPUMemoryFraction: res.FreeGPUMemoryFraction, MemoryReport: res.Memory,
		KVCacheTokens: res.MaxTokens, KVCacheBytes: res.KVCacheBytes, MaxSeqLen: res.MaxSeqLen}
	return b, err
}
