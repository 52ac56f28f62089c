package trtllm

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Defaults of the knobs (LLM API and trtllm-serve).
const (
	// DefaultFreeGPUMemoryFraction is KvCacheConfig.free_gpu_memory_fraction.
	DefaultFreeGPUMemoryFraction = 0.9
	// DefaultTokensPerBlock is tokens_per_block on the PyTorch backend.
	DefaultTokensPerBlock = 32
	// DefaultEngineTokensPerBlock is tokens_per_block of trtllm-build.
	DefaultEngineTokensPerBlock = 64
	// DefaultMaxBatchSize is max_batch_size.
	DefaultMaxBatchSize = 2048
	// DefaultMaxNumTokens is max_num_tokens.
	DefaultMaxNumTokens = 8192
	// DefaultCUDAGraphMaxBatchSize is cuda_graph_config.max_batch_size.
	DefaultCUDAGraphMaxBatchSize = 128
	// DefaultEngineMaxInputLen is trtllm-build's max_input_len.
	DefaultEngineMaxInputLen = 1024
)

// The speculative decoding modes whose draft layers share the target's KV
// pool (one-model MTP and EAGLE3).
const (
	SpecMTP    = "mtp"
	SpecEagle3 = "eagle3"
)

// limits keep the arithmetic far from overflow; real values are far below.
const (
	maxCount = 1 << 20 // layers, heads, ranks, batch sizes
	maxLen   = 1 << 31 // sequence lengths and token counts
	maxBytes = 1 << 56 // byte figures (64 PiB)
)

// Input is a TensorRT-LLM launch as kvcfg sees it: the model, the knobs as
// trtllm-serve / the LLM API spell them (snake_case keys of KvCacheConfig and
// the runtime arguments), and the memory per GPU — either a real run's
// reading or the figures of a modelled budget. Zero values take TensorRT-LLM's
// defaults or kvcfg's estimates.
type Input struct {
	// Version is --trtllm-version: "0.x", "1.0", "1.1", "latest" (default)
	// or a version number mapped by ResolveProfile.
	Version string `json:"trtllm_version,omitempty"`

	// FreeGPUMemoryFraction is kv_cache_config.free_gpu_memory_fraction
	// (--kv_cache_free_gpu_memory_fraction); 0 takes 0.9.
	FreeGPUMemoryFraction float64 `json:"free_gpu_memory_fraction,omitempty"`
	// TokensPerBlock is kv_cache_config.tokens_per_block; 0 takes 32 (PyTorch)
	// or 64 (engine builds).
	TokensPerBlock int `json:"tokens_per_block,omitempty"`
	// MaxTokens is kv_cache_config.max_tokens, a cap in tokens (0 = unset).
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxGPUTotalBytes is kv_cache_config.max_gpu_total_bytes (0 = unset).
	MaxGPUTotalBytes int64 `json:"max_gpu_total_bytes,omitempty"`
	// MaxSeqLen is --max_seq_len; 0 infers it from the config.
	MaxSeqLen int `json:"max_seq_len,omitempty"`
	// MaxBatchSize is --max_batch_size; 0 takes 2048.
	MaxBatchSize int `json:"max_batch_size,omitempty"`
	// MaxNumTokens is --max_num_tokens; 0 takes 8192.
	MaxNumTokens int `json:"max_num_tokens,omitempty"`
	// MaxBeamWidth is --max_beam_width; 0 takes 1.
	MaxBeamWidth int `json:"max_beam_width,omitempty"`
	// MaxInputLen is an engine build's max_input_len (0.x only); 0 takes 1024.
	MaxInputLen int `json:"max_input_len,omitempty"`
	// KVCacheDType is kv_cache_config.dtype: auto (default), fp8 or nvfp4;
	// auto follows the checkpoint's kv_cache_quant_algo.
	KVCacheDType string `json:"kv_cache_dtype,omitempty"`
	// MaxAttentionWindow is kv_cache_config.max_attention_window, a per-layer
	// pattern repeated over the layers; several distinct windows give one pool
	// per window (VSWA). Empty means every layer attends max_seq_len.
	MaxAttentionWindow []int `json:"max_attention_window,omitempty"`
	// HostCacheSize is kv_cache_config.host_cache_size in bytes (secondary
	// pool; it does not change the GPU pool).
	HostCacheSize int64 `json:"host_cache_size,omitempty"`
	// TPSize and PPSize are --tp_size and --pp_size (1 when 0).
	TPSize int `json:"tp_size,omitempty"`
	PPSize int `json:"pp_size,omitempty"`
	// EPSize is moe_expert_parallel_size (trtllm-serve --ep_size): the MoE
	// layers' experts are split over EPSize ranks of the TP group and each
	// expert's intermediate over tp ÷ EPSize (tensorrt_llm/mapping.py:
	// moe_tp_size = tp_size ÷ moe_ep_size); 0 or 1 keeps every expert on
	// every rank, split by TP. It must divide TPSize.
	EPSize int `json:"moe_expert_parallel_size,omitempty"`
	// EnableAttentionDP is enable_attention_dp: attention runs data parallel,
	// so every rank holds all KV heads.
	EnableAttentionDP bool `json:"enable_attention_dp,omitempty"`
	// SpeculativeMode is speculative_config.decoding_type for one-model
	// drafts that share the KV pool: "mtp" or "eagle3" ("" = none).
	SpeculativeMode string `json:"speculative_decoding_mode,omitempty"`
	// DraftLayers is the number of draft layers on the last pipeline stage;
	// 0 takes the mode's default (MTP: the checkpoint's
	// num_nextn_predict_layers, else 1; EAGLE3: 1). Setting it without a mode
	// means MTP.
	DraftLayers int `json:"draft_layers,omitempty"`
	// MaxDraftLen is speculative_config.max_draft_len (MTP: the draft layer
	// count; EAGLE3: 1 when 0). It adds dry-run tokens only.
	MaxDraftLen int `json:"max_draft_len,omitempty"`
	// EnableChunkedPrefill is enable_chunked_prefill; without it a prompt
	// longer than max_num_tokens is rejected.
	EnableChunkedPrefill bool `json:"enable_chunked_prefill,omitempty"`
	// DisableOverlapScheduler is disable_overlap_scheduler (dry-run tokens).
	DisableOverlapScheduler bool `json:"disable_overlap_scheduler,omitempty"`
	// DisableCUDAGraph is cuda_graph_config: null (no CUDA graphs are
	// captured, so none are charged to the modelled budget).
	DisableCUDAGraph bool `json:"disable_cuda_graph,omitempty"`
	// CUDAGraphMaxBatchSize is cuda_graph_config.max_batch_size (latest
	// profile's dry run); 0 takes 128.
	CUDAGraphMaxBatchSize int `json:"cuda_graph_max_batch_size,omitempty"`
	// PromptLen, when positive, checks one prompt of that many tokens against
	// max_num_tokens and the final max_seq_len.
	PromptLen int `json:"prompt_len,omitempty"`

	// Interconnect is how the node's GPUs are wired (gpu.GPU.Interconnect:
	// "nvswitch", "nvlink", "pcie", "xgmi"); with GPUSM it decides NCCL's
	// NVLink SHARP buffers (NVLSBufferBytes). "" charges none.
	Interconnect string `json:"interconnect,omitempty"`
	// GPUSM is the GPU's compute capability times ten (gpu.GPU.SM: 90
	// Hopper, 100 Blackwell); 0 is unknown and charges no NVLS buffers.
	GPUSM int `json:"gpu_sm,omitempty"`
	// GPUNVLinks is the number of NVLink links per GPU (gpu.GPU.NVLinks);
	// with 18 links behind NVSwitch kvcfg sizes NCCL's eagerly connected
	// buffers (NCCLEagerBytes), otherwise it charges the generic figure.
	GPUNVLinks int `json:"gpu_nvlinks,omitempty"`

	// GPUMemoryBytes is the device's total memory per GPU. It is needed for a
	// modelled budget and completes the log lines of a measured one.
	GPUMemoryBytes int64 `json:"gpu_memory_bytes,omitempty"`
	// KVCacheMemory is a PyTorch-backend log's "available KV cache memory
	// when calculating max tokens" (bytes, after the fraction); it replaces
	// the modelled budget.
	KVCacheMemory int64 `json:"kv_cache_memory,omitempty"`
	// FreeMemoryAfterLoad is an engine build's "Memory usage when
	// calculating max tokens in paged kv cache: …, available: A GiB" (bytes,
	// before the fraction); it replaces the modelled budget.
	FreeMemoryAfterLoad int64 `json:"free_memory_after_load,omitempty"`
	// FreeMemoryAtAllocation is the free device memory when the final pool is
	// created (after the estimation executor is shut down); 0 models it.
	FreeMemoryAtAllocation int64 `json:"free_memory_at_allocation,omitempty"`
	// WeightsBytes is the weights one rank loads ("Memory used after loading
	// model weights (inside torch)"); 0 is estimated from the config.
	WeightsBytes int64 `json:"weights_bytes,omitempty"`
	// ActivationBytes is the torch peak increase of the profiling forward
	// ("Memory dynamically allocated during inference"); 0 is estimated.
	ActivationBytes int64 `json:"activation_bytes,omitempty"`
	// NonTorchBytes is memory outside torch other than CUDA graphs and the
	// temporary KV pool (CUDA context, NCCL, workspaces); 0 is estimated.
	NonTorchBytes int64 `json:"non_torch_bytes,omitempty"`
	// CUDAGraphBytes is the CUDA graphs' memory (PyTorch profiles); 0 is
	// estimated.
	CUDAGraphBytes int64 `json:"cudagraph_bytes,omitempty"`
}

// Validate reports every problem with the input at once.
func (in Input) Validate() error {
	var errs []error
	p, _, err := ResolveProfile(in.Version)
	if err != nil {
		errs = append(errs, err)
	}
	errs = in.rangeErrors(errs)
	if err == nil {
		errs = in.profileErrors(errs, p)
	}
	if in.KVCacheMemory == 0 && in.FreeMemoryAfterLoad == 0 && in.GPUMemoryBytes == 0 {
		errs = append(errs, invalid("the GPU memory (gpu_memory_bytes) is needed unless a real run's reading is given (kv_cache_memory, or free_memory_after_load for engine builds)"))
	}
	return errors.Join(errs...)
}

// invalid is an ErrInvalidInput error with the formatted message.
func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInput}, a...)...)
}

// rangeErrors appends to errs the settings out of their ranges: the
// fraction, the counts, the attention windows, the byte figures and the
// speculative mode.
func (in Input) rangeErrors(errs []error) []error {
	f := in.FreeGPUMemoryFraction
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		errs = append(errs, invalid("free_gpu_memory_fraction %v must be in (0, 1)", f))
	}
	counts := []struct {
		name string
		v    int
		lim  int
	}{
		{"tokens_per_block", in.TokensPerBlock, 1 << 16},
		{"max_seq_len", in.MaxSeqLen, maxLen},
		{"max_batch_size", in.MaxBatchSize, maxCount},
		{"max_num_tokens", in.MaxNumTokens, maxLen},
		{"max_beam_width", in.MaxBeamWidth, 1024},
		{"max_input_len", in.MaxInputLen, maxLen},
		{"tp_size", in.TPSize, maxCount},
		{"pp_size", in.PPSize, maxCount},
		{"moe_expert_parallel_size", in.EPSize, maxCount},
		{"draft_layers", in.DraftLayers, 64},
		{"max_draft_len", in.MaxDraftLen, 1024},
		{"cuda_graph_max_batch_size", in.CUDAGraphMaxBatchSize, maxCount},
		{"prompt_len", in.PromptLen, maxLen},
	}
	for _, c := range counts {
		if c.v < 0 || c.v > c.lim {
			errs = append(errs, invalid("%s %d must be between 0 and %d", c.name, c.v, c.lim))
		}
	}
	if in.EPSize > 1 && max(in.TPSize, 1)%in.EPSize != 0 {
		errs = append(errs, invalid("moe_expert_parallel_size %d must divide tp_size %d", in.EPSize, max(in.TPSize, 1)))
	}
	for _, w := range in.MaxAttentionWindow {
		if w <= 0 || w > maxLen {
			errs = append(errs, invalid("max_attention_window entries must be positive token counts, got %v", in.MaxAttentionWindow))
			break
		}
	}
	if len(in.MaxAttentionWindow) > maxCount {
		errs = append(errs, invalid("max_attention_window has %d entries", len(in.MaxAttentionWindow)))
	}
	errs = in.byteErrors(errs)
	if !slices.Contains([]string{"", SpecMTP, SpecEagle3}, in.SpeculativeMode) {
		errs = append(errs, invalid("speculative_decoding_mode %q (accepted: mtp, eagle3, or empty)", in.SpeculativeMode))
	}
	return errs
}

// byteErrors appends to errs the byte figures out of range.
func (in Input) byteErrors(errs []error) []error {
	bytes := []struct {
		name string
		v    int64
	}{
		{"max_tokens", in.MaxTokens}, {"max_gpu_total_bytes", in.MaxGPUTotalBytes}, {"host_cache_size", in.HostCacheSize},
		{"gpu_memory_bytes", in.GPUMemoryBytes}, {"kv_cache_memory", in.KVCacheMemory}, {"free_memory_after_load", in.FreeMemoryAfterLoad},
		{"free_memory_at_allocation", in.FreeMemoryAtAllocation}, {"weights_bytes", in.WeightsBytes},
		{"activation_bytes", in.ActivationBytes}, {"non_torch_bytes", in.NonTorchBytes}, {"cudagraph_bytes", in.CUDAGraphBytes},
	}
	for _, b := range bytes {
		if b.v < 0 || b.v > maxBytes {
			errs = append(errs, invalid("%s %d must be between 0 and %d", b.name, b.v, int64(maxBytes)))
		}
	}
	return errs
}

// profileErrors appends to errs the settings profile p does not take: the
// other backend's memory reading, draft layers and per-window pools on
// engine builds, per-window pools under 1.0.
func (in Input) profileErrors(errs []error, p Profile) []error {
	r := p.rules()
	if r.engine && in.KVCacheMemory > 0 {
		errs = append(errs, invalid("kv_cache_memory is a PyTorch-backend reading; an engine build (0.x) logs free_memory_after_load (\"Memory usage when calculating max tokens in paged kv cache\")"))
	}
	if !r.engine && in.FreeMemoryAfterLoad > 0 {
		errs = append(errs, invalid("free_memory_after_load is an engine-build reading; a PyTorch-backend log gives kv_cache_memory (\"available KV cache memory when calculating max tokens\")"))
	}
	if r.engine && (in.SpeculativeMode != "" || in.DraftLayers > 0) {
		errs = append(errs, invalid("one-model MTP / EAGLE3 draft layers are modelled for the PyTorch profiles (1.0, 1.1, latest), not for engine builds"))
	}
	if r.engine && len(distinct(in.MaxAttentionWindow)) > 1 {
		errs = append(errs, invalid("per-window pools (several max_attention_window values) are modelled for the PyTorch profiles 1.1 and latest"))
	}
	if p == V10 && len(distinct(in.MaxAttentionWindow)) > 1 {
		errs = append(errs, invalid("per-window pools under 1.0 are not modelled (1.0 sized them from all free memory); use 1.1 or latest"))
	}
	return errs
}

// distinct returns the distinct values of v in first-seen order.
func distinct(v []int) []int {
	var out []int
	for _, x := range v {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
