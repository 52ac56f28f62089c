package vllm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Input is a vLLM launch as kvcfg sees it: vLLM's own flags (same names,
// snake_case) plus the memory figures that vLLM measures at startup. Zero
// values take vLLM's defaults or kvcfg's estimates.
type Input struct {
	// Version is --vllm-version: "latest" (default), a profile name ("0.6",
	// "0.7", "0.8", "0.11", "0.13", "0.18") or any version number, mapped to
	// its profile (see ResolveProfile).
	Version string `json:"vllm_version,omitempty"`
	// AttentionBackend is --attention-backend (VLLM_ATTENTION_BACKEND before
	// 0.11): one of AttentionBackends(); empty takes vLLM's default
	// selection for the release and GPU.
	AttentionBackend string `json:"attention_backend,omitempty"`
	// UseV0 is VLLM_USE_V1=0: the V0 engine on 0.8 to 0.10 (earlier
	// releases always run V0, later ones have no V0).
	UseV0 bool `json:"use_v0,omitempty"`
	// Platform is the GPU's software stack, "cuda" (default) or "hip"; the
	// attention backends are modelled for CUDA only.
	Platform string `json:"platform,omitempty"`
	// KVCacheDType is --kv-cache-dtype ("auto" when empty).
	KVCacheDType string `json:"kv_cache_dtype,omitempty"`
	// BlockSize is --block-size (16 when 0).
	BlockSize int `json:"block_size,omitempty"`
	// MaxModelLen is --max-model-len: 0 takes the model's context length,
	// -1 auto-fits it to memory (latest profile).
	MaxModelLen int `json:"max_model_len,omitempty"`
	// MaxNumSeqs is --max-num-seqs (0: vLLM's default for the GPU: 1024 on
	// ≥ 70 GiB devices other than A100, else 256).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// MaxNumBatchedTokens is --max-num-batched-tokens (0: vLLM's default
	// for the GPU: 8192 on ≥ 70 GiB devices other than A100, else 2048, for
	// `vllm serve`).
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// TensorParallelSize and PipelineParallelSize are --tensor-parallel-size
	// and --pipeline-parallel-size (1 when 0).
	TensorParallelSize   int `json:"tensor_parallel_size,omitempty"`
	PipelineParallelSize int `json:"pipeline_parallel_size,omitempty"`
	// GPUMemoryUtilization is --gpu-memory-utilization, the fraction of the
	// device's total memory this instance may use for weights, activations
	// and KV together (profile default when 0).
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	// KVCacheMemoryBytes is vLLM's --kv-cache-memory-bytes: the KV budget per
	// GPU, ignoring gpu_memory_utilization.
	KVCacheMemoryBytes int64 `json:"kv_cache_memory_bytes,omitempty"`
	// NumGPUBlocksOverride is --num-gpu-blocks-override.
	NumGPUBlocksOverride int64 `json:"num_gpu_blocks_override,omitempty"`
	// EnforceEager is --enforce-eager: no CUDA graphs, nothing subtracted
	// for them.
	EnforceEager bool `json:"enforce_eager,omitempty"`
	// DisableHybridKVCacheManager is --disable-hybrid-kv-cache-manager:
	// every sliding-window or chunked layer of a hybrid model is cached as
	// full attention.
	DisableHybridKVCacheManager bool `json:"disable_hybrid_kv_cache_manager,omitempty"`
	// KVConnector is the kv_connector of --kv-transfer-config
	// ("NixlConnector", "LMCacheConnectorV1", "MultiConnector", ...);
	// empty when no connector is set. Up to 0.21 any connector turns the
	// hybrid KV cache manager off; from 0.22 only one that does not support
	// it (see ConnectorSupportsHMA).
	KVConnector string `json:"kv_connector,omitempty"`
	// KVConnectorChildren are a MultiConnector's connectors
	// (kv_connector_extra_config.connectors[].kv_connector).
	KVConnectorChildren []string `json:"kv_connector_children,omitempty"`
	// NoAsyncScheduling is --no-async-scheduling: from 0.26 sliding-window
	// and chunked layers then pay for PP batches in flight instead of two.
	NoAsyncScheduling bool `json:"no_async_scheduling,omitempty"`
	// MambaCacheMode is --mamba-cache-mode (none, align, all); empty takes
	// the profile's default.
	MambaCacheMode string `json:"mamba_cache_mode,omitempty"`
	// DraftLayers is the number of attention layers a speculative drafter
	// adds to the KV cache (EAGLE / EAGLE3: 1 on most models; MTP: the
	// checkpoint's num_nextn_predict_layers). They copy the target's full
	// attention layer and sit on the last pipeline stage.
	DraftLayers int `json:"draft_layers,omitempty"`
	// FP4IndexerCache is vLLM's attention_config.use_fp4_indexer_cache:
	// DeepSeek-V4's indexer K cache in MXFP4 (68 bytes per slot instead of
	// fp8's 132).
	FP4IndexerCache bool `json:"use_fp4_indexer_cache,omitempty"`
	// NumSpeculativeTokens adds speculative state blocks for Mamba layers.
	NumSpeculativeTokens int `json:"num_speculative_tokens,omitempty"`
	// MaxNumEncoderInputTokens sizes cross-attention layers (defaults to
	// max_num_batched_tokens).
	MaxNumEncoderInputTokens int `json:"max_num_encoder_input_tokens,omitempty"`
	// GPUName is the device's name; vLLM's scheduler defaults treat A100s
	// as small GPUs whatever their memory.
	GPUName string `json:"gpu_name,omitempty"`
	// GPUSM is the device's compute capability as 80, 90, 100, 103, 120
	// (gpu.GPU.SM); it picks the attention backend. 0 (unknown) is taken
	// for a Hopper (90).
	GPUSM int `json:"gpu_sm,omitempty"`
	// Interconnect is how the node's GPUs are wired (gpu.GPU.Interconnect:
	// "nvswitch", "nvlink", "pcie", "xgmi"); it sizes the non-torch
	// increase at TP >= 2 before launch. "" takes the NVSwitch figure.
	Interconnect string `json:"interconnect,omitempty"`
	// SwapSpaceBytes is the V0 CPU swap space per GPU (4 GiB when 0).
	SwapSpaceBytes int64 `json:"swap_space_bytes,omitempty"`

	// Memory holds the device and profiled figures.
	Memory Memory `json:"memory"`
}

// Memory is the budget side of a vLLM launch, per GPU. TotalBytes is needed
// unless the KV budget is given directly (KVCacheMemoryBytes or
// AvailableKVBytes). WeightsBytes, ActivationBytes and NonTorchBytes of 0 are
// estimated (see Estimate); set them from a real run's "Memory profiling"
// log to reproduce it exactly.
type Memory struct {
	// TotalBytes is the device's total memory (torch's total, per GPU).
	TotalBytes int64 `json:"total_bytes,omitempty"`
	// WeightsBytes is the model weights loaded on one rank.
	WeightsBytes int64 `json:"weights_bytes,omitempty"`
	// ActivationBytes is the torch peak increase of the profile run.
	ActivationBytes int64 `json:"activation_bytes,omitempty"`
	// NonTorchBytes is non-torch memory (NCCL, cuBLAS workspaces, ...).
	NonTorchBytes int64 `json:"non_torch_bytes,omitempty"`
	// CUDAGraphBytes is the CUDA graph estimate the latest profile subtracts
	// (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default); 0 takes
	// kvcfg's estimate unless Input.EnforceEager is set.
	CUDAGraphBytes int64 `json:"cudagraph_bytes,omitempty"`
	// FreeBytes is the free device memory at startup; when set, vLLM's
	// startup check (free ≥ total × utilization) is applied.
	FreeBytes int64 `json:"free_bytes,omitempty"`
	// AvailableKVBytes is a measured "Available KV cache memory" (or the V0
	// equivalent); it replaces the whole budget computation.
	AvailableKVBytes int64 `json:"available_kv_bytes,omitempty"`
}

// Validate reports every problem with the config at once.
func (c Input) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...))
	}
	if _, _, err := ResolveProfile(c.Version); err != nil {
		errs = append(errs, err)
	}
	if c.BlockSize < 0 {
		bad("block_size %d is negative", c.BlockSize)
	}
	if c.MaxModelLen < -1 {
		bad("max_model_len %d must be positive, 0 (model default) or -1 (auto-fit)", c.MaxModelLen)
	}
	if c.MaxNumSeqs < 0 {
		bad("max_num_seqs %d is negative", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < 0 {
		bad("max_num_batched_tokens %d is negative", c.MaxNumBatchedTokens)
	}
	if c.TensorParallelSize < 0 || c.PipelineParallelSize < 0 {
		bad("tensor_parallel_size %d and pipeline_parallel_size %d must not be negative", c.TensorParallelSize, c.PipelineParallelSize)
	}
	if c.GPUMemoryUtilization < 0 || c.GPUMemoryUtilization > 1 {
		bad("gpu_memory_utilization %g must be in (0, 1]", c.GPUMemoryUtilization)
	}
	if c.KVCacheMemoryBytes < 0 || c.NumGPUBlocksOverride < 0 || c.SwapSpaceBytes < 0 || c.NumSpeculativeTokens < 0 || c.MaxNumEncoderInputTokens < 0 || c.DraftLayers < 0 || c.DraftLayers > 64 {
		bad("byte and count settings must not be negative (draft_layers at most 64)")
	}
	if c.AttentionBackend != "" && !slices.Contains(AttentionBackends(), c.AttentionBackend) {
		bad("attention_backend %q (accepted: %s)", c.AttentionBackend, strings.Join(AttentionBackends(), ", "))
	}
	if c.Platform != "" && c.Platform != "cuda" && c.Platform != "hip" {
		bad("platform %q (accepted: cuda, hip)", c.Platform)
	}
	if c.GPUSM < 0 || c.GPUSM > 199 {
		bad("gpu_sm %d must be a compute capability × 10 such as 90", c.GPUSM)
	}
	if c.KVConnector == "" && len(c.KVConnectorChildren) > 0 {
		bad("kv_connector_children need kv_connector MultiConnector")
	}
	for _, name := range append([]string{c.KVConnector}, c.KVConnectorChildren...) {
		if strings.ContainsAny(name, " \t\n\"'{}") {
			bad("kv_connector %q is not a connector class name such as NixlConnector", name)
		}
	}
	if c.MambaCacheMode != "" && !slices.Contains([]string{"none", "align", "all"}, c.MambaCacheMode) {
		bad("mamba_cache_mode %q (accepted: none, align, all)", c.MambaCacheMode)
	}
	m := c.Memory
	if m.TotalBytes < 0 || m.WeightsBytes < 0 || m.ActivationBytes < 0 || m.NonTorchBytes < 0 || m.CUDAGraphBytes < 0 || m.AvailableKVBytes < 0 || m.FreeBytes < 0 {
		bad("memory figures must not be negative")
	}
	if m.TotalBytes == 0 && m.AvailableKVBytes == 0 && c.KVCacheMemoryBytes == 0 {
		bad("the device memory (total_bytes) is needed unless the KV budget is given (kv_cache_memory_bytes or a measured available_kv_bytes)")
	}
	return errors.Join(errs...)
}
