package plan

import (
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// Report is the outcome of a plan. Byte counts and token counts are per
// rank (and, with DP attention, per DP worker), as the engine logs them.
//
// Its fields come in groups, each a struct type embedded in Report: the
// answer first (Outcome: does it serve the target), the inputs as resolved
// (Inputs), the KV dtype and engine settings
// (KVSettings), the pool sizes (Pools), the memory readings (Memory), the
// engine's log lines and warnings (Logs), the per-rank budget (Breakdown),
// the vLLM-only results (VLLM) and what to change when the engine would
// refuse (Fix). Every field is promoted, so rep.MaxTotalNumTokens reads the
// same as rep.Pools.MaxTotalNumTokens. The JSON form is flat: the keys
// follow the groups in this order, except the five MarshalJSON always
// writes (the optional pool sizes as null, log lines and warnings as
// arrays), which come last.
//
// WriteText and WriteMarkdown print a Report the way `kvcfg plan` does.
type Report struct {
	Outcome
	Inputs
	KVSettings
	Pools
	Memory
	Logs
	// Breakdown is the per-rank memory budget.
	Breakdown Breakdown `json:"breakdown"`
	// Budget is the KV budget by term with each term's origin, and the
	// band of a prediction (vLLM plans kvcfg computed from terms).
	Budget *Budget `json:"budget,omitempty"`
	VLLM
	TRTLLM
	Fix
}

// Outcome answers the operator's question before any number: does the
// engine start, and does it hold the target (TargetConcurrency requests of
// the context length at once)?
type Outcome struct {
	// Verdict is VerdictServes, VerdictMisses or VerdictRefuses.
	Verdict string `json:"verdict"`
	// ServesContextLength is true when the engine starts and its pools hold
	// at least one request of context_length tokens.
	ServesContextLength bool `json:"serves_context_length"`
	// TargetConcurrency is the concurrency asked for (--concurrency; 1 when
	// not given).
	TargetConcurrency int `json:"target_concurrency"`
	// Answer says the verdict in one sentence.
	Answer string `json:"answer"`
	// BoundBy names the limit that binds how many requests run at once:
	// the smallest of ConcurrencyLimits (the first of equals). Empty when
	// the engine refuses.
	BoundBy string `json:"bound_by,omitempty"`
	// ConcurrencyLimits are the engine's limits on the requests running at
	// once, per rank (DP worker), in the engine's order: SGLang's
	// max_running_requests limits (its log line's) and kv_pool; vLLM's
	// max_num_seqs, kv_blocks and mamba_groups; TensorRT-LLM's
	// max_batch_size, kv_blocks and max_seq_len (the window clamp).
	ConcurrencyLimits []ConcurrencyLimit `json:"concurrency_limits,omitempty"`
	// Lift is the flag value that raises the binding limit, re-planned;
	// set on a plan that misses its target when such a change exists.
	Lift *Lift `json:"lift,omitempty"`

	limits limitState
}

// Inputs are the request's inputs as resolved: the engine, the model, the
// GPU and the parallel layout.
type Inputs struct {
	Engine string `json:"engine"`
	Model  string `json:"model"`
	// ModelRevision is the Hub commit the model's files were read at (Hub
	// ids and HF cache snapshots; empty otherwise).
	ModelRevision string `json:"model_revision,omitempty"`
	Architecture  string `json:"architecture,omitempty"`
	GPU           string `json:"gpu"`
	GPUMemory     int64  `json:"gpu_memory_bytes"`
	Platform      string `json:"platform,omitempty"`
	TPSize        int    `json:"tp_size"`
	PPSize        int    `json:"pp_size"`
	DPSize        int    `json:"dp_size"`
	NumGPUs       int    `json:"num_gpus"`
	// KVCacheDType is the --kv-cache-dtype in the engine's own spelling
	// ("auto" when empty): another engine's name for the same storage is
	// translated (fp8_e4m3 is TensorRT-LLM's fp8) and a warning says so.
	KVCacheDType string `json:"kv_cache_dtype"`
}

// KVSettings are the KV cache's storage format and the engine settings the
// pools were sized with (given or defaulted).
type KVSettings struct {
	// ResolvedKVCacheDType is the canonical storage format the pool uses
	// ("bf16", "fp8_e4m3", "nvfp4", ...); KVCacheTorchDType its torch dtype.
	ResolvedKVCacheDType string `json:"resolved_kv_cache_dtype"`
	KVCacheTorchDType    string `json:"kv_cache_torch_dtype,omitempty"`
	// Configurator names SGLang's pool configurator (for vLLM: the
	// version's sizing rules and KV cache groups).
	Configurator string `json:"configurator,omitempty"`
	// SGLangProfile names the SGLang version profile the plan used and why
	// (the newest profile without --sglang-version); set on every SGLang
	// plan.
	SGLangProfile string `json:"sglang_profile,omitempty"`
	// NSAPrefillBackend and NSADecodeBackend are the DeepSeek
	// sparse-attention backends an SGLang plan assumes (given or SGLang's
	// default for the GPU, KV dtype and release); empty for other models.
	NSAPrefillBackend string `json:"nsa_prefill_backend,omitempty"`
	NSADecodeBackend  string `json:"nsa_decode_backend,omitempty"`
	// AttentionKind names the model's attention as operators say it (the
	// model's AttentionLabel): mha, gqa, mqa, mla, dsa or none.
	AttentionKind      string  `json:"attention_kind,omitempty"`
	MemFractionStatic  float64 `json:"mem_fraction_static"`
	PageSize           int     `json:"page_size"`
	ContextLength      int     `json:"context_length"`
	ChunkedPrefillSize int     `json:"chunked_prefill_size,omitempty"`
	CudaGraphMaxBS     int     `json:"cuda_graph_max_bs,omitempty"`
	// CellSizeBytes is the bytes one token of max_total_num_tokens costs on
	// one rank (fractional for hybrid SWA pools).
	CellSizeBytes float64 `json:"cell_size_bytes"`
	// KVLayers is the number of KV layers of the bounding rank.
	KVLayers int `json:"kv_layers,omitempty"`
}

// Pools are the sizes of the pools the engine builds and what they admit.
type Pools struct {
	AvailableKVBytes      int64 `json:"available_kv_bytes"`
	MaxTotalNumTokens     int64 `json:"max_total_num_tokens"`
	FullMaxTotalNumTokens int64 `json:"full_max_total_num_tokens,omitempty"`
	SWAMaxTotalNumTokens  int64 `json:"swa_max_total_num_tokens,omitempty"`
	MaxRunningRequests    int   `json:"max_running_requests"`
	MaxMambaCacheSize     int64 `json:"max_mamba_cache_size,omitempty"`
	// MambaStateBytesPerRequest is one state slot (all mamba layers, one rank).
	MambaStateBytesPerRequest int64 `json:"mamba_state_bytes_per_request,omitempty"`
	KSizeBytes                int64 `json:"k_size_bytes"`
	VSizeBytes                int64 `json:"v_size_bytes"`
	// IndexerBytes is the indexer cache of one rank: DeepSeek sparse
	// attention's, MiniMax-M3's lightning indexer, DeepSeek-V4's c4 indexer.
	IndexerBytes int64 `json:"indexer_bytes,omitempty"`
	// DSV4 is DeepSeek-V4's compressed sub-pools (SGLang's DSV4PoolConfigurator:
	// tokens and bytes of the full, swa, c4, c128, c4_state and c128_state
	// pools, the fixed c128-state term); nil for other models.
	DSV4 *sglang.DSV4Pools `json:"dsv4_pools,omitempty"`
	// UnifiedMemoryPool is SGLang's unified memory pool
	// (--enable-unified-memory): the shared byte buffer and its two
	// sub-pools; nil when off.
	UnifiedMemoryPool *sglang.UnifiedPool `json:"unified_memory_pool,omitempty"`
	// HostTier is the KV cache's host-memory tier (SGLang's HiCache,
	// TensorRT-LLM's host_cache_size, vLLM's kv_offloading_size); nil when
	// none is configured.
	HostTier *HostTier `json:"host_tier,omitempty"`
	// ReqToTokenBytes is the request-to-token table SGLang allocates next
	// to the pools: (max_running_requests+1) × (context_length + headroom)
	// × 4 B, the headroom 4 + draft tokens (the newest SGLang: at least the
	// decode reservation + page − 1 with speculation and pages). It is not
	// budgeted; it comes out of the reserved slack.
	ReqToTokenBytes int64 `json:"req_to_token_bytes,omitempty"`
	// MaxConcurrencyAtContextLength is how many requests of the full
	// context length can be resident at once (see Run).
	MaxConcurrencyAtContextLength int64 `json:"max_concurrency_at_context_length"`
}

// Memory is the weight memory and the free-memory readings the plan
// started from.
type Memory struct {
	// WeightsBytes is the weight memory per rank; WeightsEstimated is true
	// when it was estimated from the config rather than measured, given or
	// read from safetensors headers (WeightsSource says which).
	WeightsBytes     int64  `json:"weights_bytes"`
	WeightsEstimated bool   `json:"weights_estimated"`
	WeightsSource    string `json:"weights_source,omitempty"`
	// PreLoadFreeBytes and PostLoadFreeBytes are the free-memory readings
	// used (measured or modelled); Measured says which.
	PreLoadFreeBytes  int64 `json:"pre_load_free_bytes"`
	PostLoadFreeBytes int64 `json:"post_load_free_bytes"`
	Measured          bool  `json:"measured"`
}

// Logs are what the engine would print.
type Logs struct {
	// LogLines are the lines the engine would print while building the
	// pools.
	LogLines []string `json:"log_lines"`
	// Warnings say what the engine warns about and what to change.
	Warnings []string `json:"warnings,omitempty"`
}

// VLLM holds the vLLM-only results (empty for sglang).
type VLLM struct {
	VLLMVersion       string  `json:"vllm_version,omitempty"`
	NumGPUBlocks      int64   `json:"num_gpu_blocks,omitempty"`
	BlockSize         int     `json:"block_size,omitempty"`
	KVCacheSizeTokens int64   `json:"kv_cache_size_tokens,omitempty"`
	MaxConcurrency    float64 `json:"max_concurrency,omitempty"`
	MaxModelLen       int     `json:"max_model_len,omitempty"`
	// GPUMemoryUtilization is the gpu_memory_utilization vLLM sized the
	// budget with (the version's default when not given); 0 when the KV
	// budget was given directly (kv_cache_memory_bytes, kv_cache_memory).
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
}

// TRTLLM holds the TensorRT-LLM-only results (empty for the other engines).
type TRTLLM struct {
	// TRTLLMVersion is the version profile the plan used; TRTLLMProfile says
	// why when the requested version was not a profile name.
	TRTLLMVersion string `json:"trtllm_version,omitempty"`
	TRTLLMProfile string `json:"trtllm_profile,omitempty"`
	// TokensPerBlock, NumBlocks and MaxTokens are the paged pool: the N of
	// "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)"
	// is NumBlocks × TokensPerBlock; KVCacheBytes is its X in bytes.
	TokensPerBlock int   `json:"tokens_per_block,omitempty"`
	NumBlocks      int64 `json:"num_blocks,omitempty"`
	MaxTokens      int64 `json:"max_tokens,omitempty"`
	KVCacheBytes   int64 `json:"kv_cache_bytes,omitempty"`
	// MaxSeqLen is max_seq_len after TensorRT-LLM's window clamp.
	MaxSeqLen int `json:"max_seq_len,omitempty"`
	// FreeGPUMemoryFraction is the free_gpu_memory_fraction the budget used.
	FreeGPUMemoryFraction float64 `json:"free_gpu_memory_fraction,omitempty"`
	// EstimateBytesPerToken is the estimate's bytes per token (the
	// allocation's is cell_size_bytes).
	EstimateBytesPerToken int64 `json:"estimate_bytes_per_token,omitempty"`
	// MaxBeamWidth is the beam width each request reserves blocks for.
	MaxBeamWidth int `json:"max_beam_width,omitempty"`
	// Windows are the per-attention-window pools (several distinct windows).
	Windows []trtllm.WindowPool `json:"trtllm_windows,omitempty"`
}

// Fix is the engine-equivalent error of an infeasible plan, with the flag
// and value that fix it when one does (all empty for a plan that starts).
type Fix struct {
	// Error is the error the engine would stop with.
	Error string `json:"error,omitempty"`
	// FixFlag and FixValue are the flag to change and its new value
	// ("--tp-size", "4"); FixHint says it in words.
	FixFlag  string `json:"fix_flag,omitempty"`
	FixValue string `json:"fix_value,omitempty"`
	FixHint  string `json:"fix_hint,omitempty"`
	// FixArgs are the engine flags to add, in order, when kvcfg re-planned
	// with them and saw the target met (FixFlag and FixValue are the
	// first two); empty when no verified change exists.
	FixArgs []string `json:"fix_args,omitempty"`
}

// Breakdown is one rank's memory budget, in bytes:
//
//	total = runtime_overhead + pre_load_free
//	pre_load_free = weights + first_kernel + post_load_free
//	post_load_free = reserved + multimodal_cache + state + kv_budget
//	kv_budget + over_budget = kv_pool + unused
//
// reserved is the activation / CUDA-graph slack pre·(1 − mem_fraction_static).
// first_kernel is SGLang's first CUDA kernel when it falls after the
// pre-load reading and the weights are not a reading (one rank before
// 0.5.8, sglang.FirstKernelAfterPreLoadBytes); 0 otherwise.
// over_budget is not 0 only where the engine's pool outgrows the budget it
// was sized from (SGLang before 0.5.17 counts an fp8 DeepSeek
// sparse-attention token at fewer bytes than it allocates): those bytes
// come out of the reserve.
type Breakdown struct {
	TotalBytes           int64 `json:"total_bytes"`
	RuntimeOverheadBytes int64 `json:"runtime_overhead_bytes"`
	PreLoadFreeBytes     int64 `json:"pre_load_free_bytes"`
	WeightsBytes         int64 `json:"weights_bytes"`
	FirstKernelBytes     int64 `json:"first_kernel_bytes,omitempty"`
	PostLoadFreeBytes    int64 `json:"post_load_free_bytes"`
	ReservedBytes        int64 `json:"reserved_bytes"`
	MultimodalCacheBytes int64 `json:"multimodal_cache_bytes,omitempty"`
	StateBytes           int64 `json:"state_bytes"`
	KVBudgetBytes        int64 `json:"kv_budget_bytes"`
	KVPoolBytes          int64 `json:"kv_pool_bytes"`
	UnusedBytes          int64 `json:"unused_bytes"`
	OverBudgetBytes      int64 `json:"over_budget_bytes,omitempty"`
}
