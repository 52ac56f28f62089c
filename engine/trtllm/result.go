package trtllm

// Stage is the sizing of one pipeline stage (every TP rank of a stage is
// sized alike).
type Stage struct {
	// Index is the pipeline rank.
	Index int `json:"index"`
	// Layers is the stage's share of the target's attention layers.
	Layers int `json:"layers"`
	// DraftLayers is the one-model draft layers on this stage (last stage).
	DraftLayers int `json:"draft_layers,omitempty"`
	// EstimateBytesPerToken is get_cache_size_per_token on this stage.
	EstimateBytesPerToken int64 `json:"estimate_bytes_per_token"`
	// CellSizeBytes is get_cache_bytes_per_token on this stage: the bytes one
	// token takes in the pool on one GPU.
	CellSizeBytes int64 `json:"cell_size_bytes"`
	// EstimatedMaxMemory is the stage's "Estimated max memory in KV cache"
	// in bytes (1.1 and latest).
	EstimatedMaxMemory int64 `json:"estimated_max_memory,omitempty"`
	// EstimatedMaxTokens is the max_tokens the estimate hands to the final
	// manager (engine builds: fraction × free ÷ bytes per token).
	EstimatedMaxTokens int64 `json:"estimated_max_tokens"`
	// MaxTokens is the stage's token count before the ranks agree on the
	// minimum: min(EstimatedMaxTokens, fraction × free ÷ CellSizeBytes).
	MaxTokens float64 `json:"max_tokens"`
}

// WindowPool is one attention window's pool (max_attention_window with
// several distinct values).
type WindowPool struct {
	// RequestedWindow is the window as given (clamped to max_seq_len).
	RequestedWindow int `json:"requested_window"`
	// Window is the window after TensorRT-LLM's adjustments.
	Window int `json:"window"`
	// Layers is the number of local layers using the window on the first
	// stage.
	Layers int `json:"layers"`
	// CellSizeBytes is the bytes one token of these layers takes on one GPU.
	CellSizeBytes int64 `json:"cell_size_bytes"`
	// NumBlocks and NumSecondaryBlocks are the window's primary and host
	// blocks.
	NumBlocks          int64 `json:"num_blocks"`
	NumSecondaryBlocks int64 `json:"num_secondary_blocks,omitempty"`
}

// MemoryReport is the budget of one GPU.
type MemoryReport struct {
	// Source is "kv_cache_memory" or "free_memory_after_load" (a real run's
	// reading) or "modelled".
	Source string `json:"source"`
	// TotalBytes is the device's memory (0 when not given).
	TotalBytes int64 `json:"total_bytes,omitempty"`
	// WeightsBytes, ActivationBytes, NonTorchBytes and CUDAGraphBytes are the
	// modelled non-KV figures.
	WeightsBytes    int64 `json:"weights_bytes,omitempty"`
	ActivationBytes int64 `json:"activation_bytes,omitempty"`
	NonTorchBytes   int64 `json:"non_torch_bytes,omitempty"`
	CUDAGraphBytes  int64 `json:"cudagraph_bytes,omitempty"`
	// TemporaryKVBytes is the estimation dry run's pool.
	TemporaryKVBytes int64 `json:"temporary_kv_bytes,omitempty"`
	// PeakBytes is the profiled peak (torch + non-torch).
	PeakBytes int64 `json:"peak_bytes,omitempty"`
	// FreeAfterLoadBytes is an engine build's free memory after load.
	FreeAfterLoadBytes int64 `json:"free_after_load_bytes,omitempty"`
	// AvailableKVBytes is the PyTorch backend's "available KV cache memory
	// when calculating max tokens" (after the fraction), or for engine builds
	// fraction × free memory after load.
	AvailableKVBytes int64 `json:"available_kv_bytes"`
	// FreeAtAllocationBytes is the free memory the final pool is sized against.
	FreeAtAllocationBytes int64 `json:"free_at_allocation_bytes,omitempty"`
	// Estimated lists the figures kvcfg estimated.
	Estimated []string `json:"estimated,omitempty"`
	// ActivationTerms are the modelled activation's parts with the source
	// of each (PyTorch profiles, when the activation was not given).
	ActivationTerms []Term `json:"activation_terms,omitempty"`
	// NonTorchTerms are the modelled non-torch memory's parts (the
	// runtime, the all-reduce fusion workspaces, NCCL's NVLS buffers) with
	// the source of each (NonTorchTerms; when it was not given).
	NonTorchTerms []Term `json:"non_torch_terms,omitempty"`
}

// Result is what a TensorRT-LLM launch would size and log. On a refusal Plan
// returns the Result filled up to the refusal together with the error.
type Result struct {
	// Profile is the version profile used; ProfileNote says why when the
	// requested version was not a profile name.
	Profile     Profile `json:"trtllm_version"`
	ProfileNote string  `json:"profile_note,omitempty"`
	// KVCacheDType is the resolved cache dtype.
	KVCacheDType CacheDType `json:"kv_cache_dtype"`
	// TokensPerBlock is tokens_per_block.
	TokensPerBlock int `json:"tokens_per_block"`
	// FreeGPUMemoryFraction is the effective fraction.
	FreeGPUMemoryFraction float64 `json:"free_gpu_memory_fraction"`
	// TPSize, PPSize, EPSize and AttentionDP are the parallel layout
	// (EPSize is moe_expert_parallel_size, 0 when not set above 1).
	TPSize      int  `json:"tp_size"`
	PPSize      int  `json:"pp_size"`
	EPSize      int  `json:"moe_expert_parallel_size,omitempty"`
	AttentionDP bool `json:"enable_attention_dp,omitempty"`
	// MaxBatchSize, MaxNumTokens and MaxBeamWidth are the effective runtime
	// limits.
	MaxBatchSize int `json:"max_batch_size"`
	MaxNumTokens int `json:"max_num_tokens"`
	MaxBeamWidth int `json:"max_beam_width"`
	// Stages are the pipeline stages.
	Stages []Stage `json:"stages"`
	// EstimateBytesPerToken is the estimate cost of the first stage (the one
	// whose log lines are shown).
	EstimateBytesPerToken int64 `json:"estimate_bytes_per_token"`
	// CellSizeBytes is the allocation cost per token on the most loaded GPU.
	CellSizeBytes int64 `json:"cell_size_bytes"`
	// EstimatedMaxTokens is the smallest stage estimate.
	EstimatedMaxTokens int64 `json:"estimated_max_tokens"`
	// NumBlocks is the primary pool's blocks (summed over window pools).
	NumBlocks int64 `json:"num_blocks"`
	// NumSecondaryBlocks is the host pool's blocks (host_cache_size).
	NumSecondaryBlocks int64 `json:"num_secondary_blocks,omitempty"`
	// MaxTokens is NumBlocks × TokensPerBlock, the N of "[MemUsageChange]
	// Allocated X GiB for max tokens in paged KV cache (N)".
	MaxTokens int64 `json:"max_tokens"`
	// KVCacheBytes is the pool's bytes on the most loaded GPU (the X of the
	// same line, in bytes).
	KVCacheBytes int64 `json:"kv_cache_bytes"`
	// MaxSeqLen is max_seq_len after the window clamp; RequestedMaxSeqLen is
	// the value before it.
	MaxSeqLen          int `json:"max_seq_len"`
	RequestedMaxSeqLen int `json:"requested_max_seq_len"`
	// MaxAttentionWindow is the per-layer window pattern after the clamp.
	MaxAttentionWindow []int `json:"max_attention_window"`
	// Windows are the per-window pools (several distinct windows only).
	Windows []WindowPool `json:"windows,omitempty"`
	// DryRunTokens is the estimation dry run's pool (PyTorch profiles).
	DryRunTokens int64 `json:"dry_run_tokens,omitempty"`
	// Memory is the budget per GPU.
	Memory MemoryReport `json:"memory"`
	// LogLines are the lines TensorRT-LLM prints, in order, up to a refusal.
	LogLines []string `json:"log_lines"`
	// Warnings are the warning lines among LogLines.
	Warnings []string `json:"warnings,omitempty"`
	// Notes are kvcfg's remarks (estimates, lines it cannot reproduce).
	Notes []string `json:"notes,omitempty"`
	// Error is TensorRT-LLM's refusal message, if it would refuse.
	Error string `json:"error,omitempty"`
}

// MaxConcurrency returns how many requests of contextLen tokens the pool
// holds at once: primary blocks ÷ (blocks one request needs × beam width),
// the smallest over window pools, where a request needs
// ceil(min(contextLen, window) / tokens_per_block) blocks of a pool. It is 0
// for a non-positive length or an empty result.
func (r *Result) MaxConcurrency(contextLen int) float64 {
	if r == nil || contextLen <= 0 || r.TokensPerBlock <= 0 {
		return 0
	}
	beam := float64(max(r.MaxBeamWidth, 1))
	tpb := int64(r.TokensPerBlock)
	if len(r.Windows) == 0 {
		return float64(r.NumBlocks) / (float64(cdiv(int64(contextLen), tpb)) * beam)
	}
	c := -1.0
	for _, w := range r.Windows {
		need := cdiv(int64(min(contextLen, w.Window)), tpb)
		if need <= 0 {
			continue
		}
		v := float64(w.NumBlocks) / (float64(need) * beam)
		if c < 0 || v < c {
			c = v
		}
	}
	return max(c, 0)
}
