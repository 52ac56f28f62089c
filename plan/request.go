// Package plan is kvcfg's one entry point for planning a KV cache: the CLI
// (`kvcfg plan`, `compare`, `fit`) and the HTTP API both fill a Request and
// call Run, which resolves the model, the GPU and the memory readings and
// hands them to the engine's configurator.
package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/units"
)

// Engines.
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"
)

// DefaultGPU is the GPU planned for when the request names none.
const DefaultGPU = "H100-80GB"

// ErrInfeasible reports a plan the engine could not start with (the model
// does not fit, the SWA pool cannot hold a request, ...). Run returns it
// wrapped together with the engine-equivalent error, and the partial Report.
var ErrInfeasible = errors.New("plan: infeasible")

// ErrInvalid is wrapped by every FieldError.
var ErrInvalid = errors.New("plan: invalid request")

// FieldError is a problem with one Request field.
type FieldError struct {
	// Field is the snake_case request key ("tp_size", "gpu").
	Field string
	// Err describes the problem.
	Err error
}

// Error implements error.
func (e *FieldError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "plan: ")
	// A package error already prefixed with the field's name ("gpu:
	// unknown GPU", "model: ...") is not prefixed twice.
	if e.Field != "" && !strings.HasPrefix(msg, e.Field+": ") {
		msg = e.Field + ": " + msg
	}
	return "plan: " + msg
}

// Unwrap returns the wrapped error.
func (e *FieldError) Unwrap() error { return e.Err }

// Is makes every FieldError match ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field string, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Request is one planning request. Each field is one CLI flag; JSON keys
// are the flag names in snake_case. Zero values mean "not given" (the
// engine default applies).
type Request struct {
	// Model is a catalog name, a config.json path, a model directory or a
	// Hugging Face id ("org/name[@revision]": the local HF cache, then the
	// Hub through Resolver); empty means the catalog default
	// (Llama-3.1-8B-Instruct).
	Model string `json:"model,omitempty"`
	// Config is an inline config.json (HTTP API); it wins over Model's
	// config, and Model then only names it.
	Config json.RawMessage `json:"config,omitempty"`
	// Revision is the Hugging Face Hub revision (branch, tag or commit) of
	// a Hub id in Model (default: main); a "@revision" suffix on Model wins.
	Revision string `json:"revision,omitempty"`
	// Resolver, when set, resolves Hub ids that are neither files, nor
	// directories, nor catalog names (Go callers only; the hub package's
	// Client is one): without it Model reads the local HF cache only,
	// never the network.
	Resolver catalog.Resolver `json:"-"`
	// Engine is "sglang" (default), "vllm" or "trtllm" (Engines lists them).
	Engine string `json:"engine,omitempty"`
	// Resolved, when set, is the model already resolved and parsed (Go
	// callers only; OpenModel gives it): Run uses it instead of parsing
	// Config or resolving Model, which then only name it. It must describe
	// the model Model or Config names and must not be changed while a plan
	// runs; plans only read it, so one value can serve many concurrent
	// plans. Sweep and fit set it so that a model is parsed once, not once
	// per plan.
	Resolved *catalog.Model `json:"-"`
	// NoAdvice skips the advice search (Go callers only): re-planning a
	// plan that does not serve its target until a change does (fix_args).
	// The Report's fix_flag, fix_value and fix_hint then stay as the
	// engine says them. Searches that try the layouts themselves (fit) set
	// it, and Sweep plans every row so.
	NoAdvice bool `json:"-"`

	// Concurrency is the target: how many requests of the context length
	// must fit at once for the plan to serve (default 1). It feeds the
	// verdict and the advice, not the engine.
	Concurrency int `json:"concurrency,omitempty"`

	// GPU is a catalog GPU name (`kvcfg gpus`); default H100-80GB.
	GPU string `json:"gpu,omitempty"`
	// GPUMemory overrides the GPU's total memory.
	GPUMemory units.Size `json:"gpu_memory,omitempty"`
	// Platform is "cuda" or "hip" (default: the GPU's).
	Platform string `json:"platform,omitempty"`

	TPSize            int  `json:"tp_size,omitempty"`
	PPSize            int  `json:"pp_size,omitempty"`
	DPSize            int  `json:"dp_size,omitempty"`
	EnableDPAttention bool `json:"enable_dp_attention,omitempty"`
	// EPSize is TensorRT-LLM's expert parallel size (trtllm-serve
	// --ep_size, moe_expert_parallel_size); it must divide tp_size.
	EPSize int `json:"ep_size,omitempty"`

	// DType is --dtype (every engine; TensorRT-LLM's LLM-API dtype):
	// auto, half or float16, bfloat16, float or float32. The weights and
	// the auto KV cache dtype follow it.
	DType string `json:"dtype,omitempty"`
	// Quantization is --quantization (SGLang, vLLM): fp8 quantizes an
	// unquantized checkpoint's linear layers after loading; a quantized
	// checkpoint's own method is accepted as it is.
	Quantization string `json:"quantization,omitempty"`

	KVCacheDType              string  `json:"kv_cache_dtype,omitempty"`
	MemFractionStatic         float64 `json:"mem_fraction_static,omitempty"`
	PageSize                  int     `json:"page_size,omitempty"`
	ContextLength             int     `json:"context_length,omitempty"`
	MaxTotalTokens            int64   `json:"max_total_tokens,omitempty"`
	MaxRunningRequests        int     `json:"max_running_requests,omitempty"`
	SWAFullTokensRatio        float64 `json:"swa_full_tokens_ratio,omitempty"`
	DisableHybridSWAMemory    bool    `json:"disable_hybrid_swa_memory,omitempty"`
	ChunkedPrefillSize        int     `json:"chunked_prefill_size,omitempty"`
	CudaGraphMaxBS            int     `json:"cuda_graph_max_bs,omitempty"`
	DisableRadixCache         bool    `json:"disable_radix_cache,omitempty"`
	SpeculativeAlgorithm      string  `json:"speculative_algorithm,omitempty"`
	SpeculativeNumDraftTokens int     `json:"speculative_num_draft_tokens,omitempty"`
	SpeculativeDraftNumLayers int     `json:"speculative_draft_num_layers,omitempty"`
	MambaFullMemoryRatio      float64 `json:"mamba_full_memory_ratio,omitempty"`
	MaxMambaCacheSize         int     `json:"max_mamba_cache_size,omitempty"`
	MambaSSMDType             string  `json:"mamba_ssm_dtype,omitempty"`
	// DSV4CompressStateDType is SGLANG_DSV4_COMPRESS_STATE_DTYPE (DeepSeek-V4).
	DSV4CompressStateDType string `json:"dsv4_compress_state_dtype,omitempty"`
	// MambaRadixCacheStrategy is SGLang's --mamba-radix-cache-strategy
	// (--mamba-scheduler-strategy before): no_buffer (default),
	// extra_buffer or extra_buffer_lazy; MambaSkipDecodeLock is the newest
	// SGLang's SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK. Both set the Mamba state
	// slots each running request holds.
	MambaRadixCacheStrategy string `json:"mamba_radix_cache_strategy,omitempty"`
	MambaSkipDecodeLock     bool   `json:"mamba_skip_decode_lock,omitempty"`
	// AttentionBackend is --attention-backend (SGLang's and vLLM's flag):
	// it overrides the engine's default backend choice, which decides the
	// page (block) size and, on ROCm, SGLang's ×0.85 aiter rule.
	AttentionBackend string `json:"attention_backend,omitempty"`
	// NSAPrefillBackend and NSADecodeBackend are SGLang's
	// --nsa-prefill-backend and --nsa-decode-backend: a DeepSeek
	// sparse-attention model's backends, which pick its KV row (trtllm, or
	// tilelang/aiter on ROCm: 576 bytes for fp8; else 656).
	NSAPrefillBackend string `json:"nsa_prefill_backend,omitempty"`
	NSADecodeBackend  string `json:"nsa_decode_backend,omitempty"`
	// DSAPrefillBackend and DSADecodeBackend are the same two settings
	// under SGLang's newer names (--dsa-prefill-backend and
	// --dsa-decode-backend, PR #30514): aliases of NSAPrefillBackend and
	// NSADecodeBackend; both spellings with different values are an error.
	DSAPrefillBackend string `json:"dsa_prefill_backend,omitempty"`
	DSADecodeBackend  string `json:"dsa_decode_backend,omitempty"`
	// EnableUnifiedMemory is --enable-unified-memory (SGLang's unified
	// memory pool); DisaggregationMode is --disaggregation-mode.
	EnableUnifiedMemory bool   `json:"enable_unified_memory,omitempty"`
	DisaggregationMode  string `json:"disaggregation_mode,omitempty"`
	// The HiCache host tier: --enable-hierarchical-cache, --hicache-ratio
	// (default 2.0), --hicache-size (decimal GB), --hicache-mem-layout.
	EnableHierarchicalCache bool    `json:"enable_hierarchical_cache,omitempty"`
	HiCacheRatio            float64 `json:"hicache_ratio,omitempty"`
	HiCacheSize             float64 `json:"hicache_size,omitempty"`
	HiCacheMemLayout        string  `json:"hicache_mem_layout,omitempty"`
	// NNodes is --nnodes: the hosts the server's ranks spread over.
	NNodes int `json:"nnodes,omitempty"`
	// HostMemory is the host's free RAM (what psutil reports available),
	// which a host KV tier must fit.
	HostMemory units.Size `json:"host_memory,omitempty"`
	// KVOffloadingSize is vLLM's --kv-offloading-size: the CPU offload
	// buffer in GiB, summed over the TP ranks.
	KVOffloadingSize float64 `json:"kv_offloading_size,omitempty"`
	// SGLangVersion is --sglang-version: the SGLang release whose sizing
	// rules to follow ("0.4.6", "0.5.2", "latest"); "" is the default
	// profile. The report's sglang_profile names the profile used and why.
	SGLangVersion string `json:"sglang_version,omitempty"`

	// PreLoadFreeMemory and PostLoadFreeMemory are what the engine logged
	// as free memory before and after loading weights (measured mode).
	PreLoadFreeMemory  units.Size `json:"pre_load_free_memory,omitempty"`
	PostLoadFreeMemory units.Size `json:"post_load_free_memory,omitempty"`
	// WeightsMemory replaces the weight estimate (bytes per rank).
	WeightsMemory units.Size `json:"weights_memory,omitempty"`

	// vLLM names. TensorParallelSize and PipelineParallelSize are aliases
	// of TPSize and PPSize.
	TensorParallelSize   int     `json:"tensor_parallel_size,omitempty"`
	PipelineParallelSize int     `json:"pipeline_parallel_size,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	BlockSize            int     `json:"block_size,omitempty"`
	// MaxModelLen is --max-model-len; -1 auto-fits it to memory (vLLM
	// latest; invalid for sglang).
	MaxModelLen         int        `json:"max_model_len,omitempty"`
	MaxNumSeqs          int        `json:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens int        `json:"max_num_batched_tokens,omitempty"`
	KVCacheMemoryBytes  units.Size `json:"kv_cache_memory_bytes,omitempty"`
	VLLMVersion         string     `json:"vllm_version,omitempty"`
	// KVCacheMemory is the "Available KV cache memory" a vLLM run logged
	// (measured mode): it replaces vLLM's whole budget computation, and
	// wins over kv_cache_memory_bytes.
	KVCacheMemory units.Size `json:"kv_cache_memory,omitempty"`
	// EnforceEager is vLLM's --enforce-eager and SGLang's
	// --disable-cuda-graph (a flag alias): no CUDA graphs,
	// so nothing is set aside for them.
	EnforceEager bool `json:"enforce_eager,omitempty"`
	// NumGPUBlocksOverride is vLLM's --num-gpu-blocks-override.
	NumGPUBlocksOverride int64 `json:"num_gpu_blocks_override,omitempty"`
	// KVTransferConfig is vLLM's --kv-transfer-config: its JSON
	// ({"kv_connector":"NixlConnector","kv_role":"kv_both"}) or just the
	// connector's name. Up to vLLM 0.21 any connector, from 0.22 one
	// without hybrid support, turns the hybrid KV cache manager off.
	KVTransferConfig string `json:"kv_transfer_config,omitempty"`
	// DisableHybridKVCacheManager is vLLM's
	// --disable-hybrid-kv-cache-manager: sliding-window and chunked layers
	// are cached as full attention.
	DisableHybridKVCacheManager bool `json:"disable_hybrid_kv_cache_manager,omitempty"`
	// NoAsyncScheduling is vLLM's --no-async-scheduling (from 0.26 it
	// halves the in-flight tokens sliding-window layers pay for at PP 1).
	NoAsyncScheduling bool `json:"no_async_scheduling,omitempty"`

	// TensorRT-LLM names (KvCacheConfig keys and trtllm-serve arguments).
	// TRTLLMVersion is --trtllm-version (0.x engine builds, 1.0, 1.1,
	// latest, or a version number).
	TRTLLMVersion string `json:"trtllm_version,omitempty"`
	// FreeGPUMemoryFraction is kv_cache_config.free_gpu_memory_fraction
	// (default 0.9 of the memory free after loading).
	FreeGPUMemoryFraction float64 `json:"free_gpu_memory_fraction,omitempty"`
	// TokensPerBlock is kv_cache_config.tokens_per_block (32 PyTorch, 64
	// engine builds).
	TokensPerBlock int `json:"tokens_per_block,omitempty"`
	// MaxTokens is kv_cache_config.max_tokens, a cap in tokens.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxGPUTotalBytes is kv_cache_config.max_gpu_total_bytes.
	MaxGPUTotalBytes units.Size `json:"max_gpu_total_bytes,omitempty"`
	// MaxSeqLen is --max_seq_len (default: the model's context length, or
	// context_length when given).
	MaxSeqLen    int `json:"max_seq_len,omitempty"`
	MaxBatchSize int `json:"max_batch_size,omitempty"`
	MaxNumTokens int `json:"max_num_tokens,omitempty"`
	MaxBeamWidth int `json:"max_beam_width,omitempty"`
	// MaxInputLen is an engine build's max_input_len (0.x).
	MaxInputLen int `json:"max_input_len,omitempty"`
	// MaxAttentionWindow is kv_cache_config.max_attention_window, a
	// per-layer pattern; several distinct windows give one pool each.
	MaxAttentionWindow []int `json:"max_attention_window,omitempty"`
	// HostCacheSize is kv_cache_config.host_cache_size (host blocks).
	HostCacheSize           units.Size `json:"host_cache_size,omitempty"`
	EnableChunkedPrefill    bool       `json:"enable_chunked_prefill,omitempty"`
	DisableOverlapScheduler bool       `json:"disable_overlap_scheduler,omitempty"`
	// MaxDraftLen is speculative_config.max_draft_len.
	MaxDraftLen int `json:"max_draft_len,omitempty"`
	// FreeMemoryAfterLoad is an engine build's "available" free memory of
	// "Memory usage when calculating max tokens in paged kv cache" (measured
	// mode for 0.x; the PyTorch backend's reading is kv_cache_memory).
	FreeMemoryAfterLoad units.Size `json:"free_memory_after_load,omitempty"`
}

// Normalized returns a copy with aliases merged, the engine lowered and
// the KV cache dtype in the engine's own spelling (EngineKVCacheDType:
// fp8_e4m3 becomes TensorRT-LLM's fp8); defaults are not filled in.
func (r Request) Normalized() Request {
	r.Engine = strings.ToLower(strings.TrimSpace(r.Engine))
	if r.Engine == "" {
		r.Engine = EngineSGLang
	}
	if r.KVCacheDType != "" {
		r.KVCacheDType = engineKVDType(&r, r.KVCacheDType)
	}
	if r.TPSize == 0 {
		r.TPSize = r.TensorParallelSize
	}
	if r.PPSize == 0 {
		r.PPSize = r.PipelineParallelSize
	}
	if r.NSAPrefillBackend == "" {
		r.NSAPrefillBackend = r.DSAPrefillBackend
	}
	if r.NSADecodeBackend == "" {
		r.NSADecodeBackend = r.DSADecodeBackend
	}
	r.Platform = strings.ToLower(strings.TrimSpace(r.Platform))
	return r
}

// Validate reports every problem with the request's own values at once
// (model, GPU and dtype names are checked by Run).
func (r Request) Validate() error { return errors.Join(r.validate(true)...) }

// validate lists the request's problems; withEngine adds those of inputs
// the engine does not take (a comparison checks them per column).
func (r Request) validate(withEngine bool) []error {
	r = r.Normalized()
	return r.check(withEngine)
}

// check is validate of a normalized request: every problem, in the
// order of the request's groups of fields.
func (r *Request) check(withEngine bool) []error {
	var p problems
	_, known := engines[r.Engine]
	if !known {
		p.add("engine", "unknown engine %q (accepted: %s)", r.Engine, strings.Join(Engines(), ", "))
	}
	r.checkConflicts(&p)
	if known && withEngine {
		p = append(p, r.engineErrors()...)
	}
	r.checkParallel(&p)
	r.checkFractions(&p)
	r.checkCounts(&p)
	r.checkChoices(&p, withEngine)
	if r.PreLoadFreeMemory > 0 && r.PostLoadFreeMemory > 0 && r.PostLoadFreeMemory > r.PreLoadFreeMemory {
		p.add("post_load_free_memory", "%s exceeds pre_load_free_memory %s (free memory cannot grow while loading weights)", r.PostLoadFreeMemory, r.PreLoadFreeMemory)
	}
	// A request with a parsed Spec had its Config parsed already.
	if len(r.Config) > 0 && r.Resolved == nil && !json.Valid(r.Config) {
		p.add("config", "not valid JSON")
	}
	return p
}

// problems collects a request's input errors (FieldError values).
type problems []error

// add appends the FieldError of field with the message format and args.
func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, fieldErr(field, format, args...))
}

// checkConflicts: a setting given twice, under kvcfg's name and an
// engine's, must say the same.
func (r *Request) checkConflicts(p *problems) {
	if r.TensorParallelSize != 0 && r.TPSize != r.TensorParallelSize {
		p.add("tensor_parallel_size", "%d conflicts with tp_size %d", r.TensorParallelSize, r.TPSize)
	}
	if r.PipelineParallelSize != 0 && r.PPSize != r.PipelineParallelSize {
		p.add("pipeline_parallel_size", "%d conflicts with pp_size %d", r.PipelineParallelSize, r.PPSize)
	}
	for _, c := range []struct{ alias, key, a, v string }{
		{"dsa_prefill_backend", "nsa_prefill_backend", r.DSAPrefillBackend, r.NSAPrefillBackend},
		{"dsa_decode_backend", "nsa_decode_backend", r.DSADecodeBackend, r.NSADecodeBackend},
	} {
		if c.a != "" && !strings.EqualFold(strings.TrimSpace(c.a), strings.TrimSpace(c.v)) {
			p.add(c.alias, "%q conflicts with %s %q", c.a, c.key, c.v)
		}
	}
	// One context length, said once: --max-model-len (vLLM) and
	// --max-seq-len (TensorRT-LLM) are the engines' names for it.
	if r.ContextLength > 0 && r.MaxModelLen != 0 && r.MaxModelLen != r.ContextLength {
		p.add("max_model_len", "%d conflicts with context_length %d (the same setting): give one", r.MaxModelLen, r.ContextLength)
	}
	if r.ContextLength > 0 && r.MaxSeqLen != 0 && r.MaxSeqLen != r.ContextLength {
		p.add("max_seq_len", "%d conflicts with context_length %d (the same setting): give one", r.MaxSeqLen, r.ContextLength)
	}
}

// checkParallel checks the parallel sizes and DP attention's rules.
func (r *Request) checkParallel(p *problems) {
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"tp_size", r.TPSize, 1024}, {"pp_size", r.PPSize, 1024}, {"dp_size", r.DPSize, 1024}, {"ep_size", r.EPSize, 1024}} {
		if f.v < 0 || f.v > f.max {
			p.add(f.name, "%d must be between 1 and %d", f.v, f.max)
		}
	}
	if r.EnableDPAttention && r.DPSize > 1 && r.TPSize > 0 && r.TPSize%r.DPSize != 0 {
		p.add("dp_size", "with --enable-dp-attention, tp_size %d must be a multiple of dp_size %d", r.TPSize, r.DPSize)
	}
	if r.EPSize > 1 && max(r.TPSize, 1)%r.EPSize != 0 {
		p.add("ep_size", "%d must divide tp_size %d", r.EPSize, max(r.TPSize, 1))
	}
	if r.EnableDPAttention && r.DPSize > 1 && max(r.TPSize, 1) < r.DPSize {
		p.add("dp_size", "with --enable-dp-attention, dp_size %d must not exceed tp_size %d", r.DPSize, max(r.TPSize, 1))
	}
}

// checkFractions checks the memory shares and ratios.
func (r *Request) checkFractions(p *problems) {
	frac := func(name string, v float64, allowOne bool) {
		if math.IsNaN(v) || v < 0 || v > 1 || (v == 1 && !allowOne) {
			p.add(name, "%v must be between 0 and 1", v)
		}
	}
	frac("mem_fraction_static", r.MemFractionStatic, false)
	frac("swa_full_tokens_ratio", r.SWAFullTokensRatio, true)
	frac("gpu_memory_utilization", r.GPUMemoryUtilization, true)
	if f := r.FreeGPUMemoryFraction; math.IsNaN(f) || f < 0 || f > 1 {
		p.add("free_gpu_memory_fraction", "%v must be between 0 and 1", f)
	}
	for _, w := range r.MaxAttentionWindow {
		if w <= 0 {
			p.add("max_attention_window", "%v: every window must be a positive token count", r.MaxAttentionWindow)
			break
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"hicache_ratio", r.HiCacheRatio}, {"hicache_size", r.HiCacheSize}, {"kv_offloading_size", r.KVOffloadingSize}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			p.add(f.name, "%v must not be negative", f.v)
		}
	}
	if math.IsNaN(r.MambaFullMemoryRatio) || r.MambaFullMemoryRatio < 0 || r.MambaFullMemoryRatio > 1000 {
		p.add("mamba_full_memory_ratio", "%v must be positive", r.MambaFullMemoryRatio)
	}
}

// checkCounts checks the token counts, sizes and limits: none negative
// (-1 where an engine reads it as "off" or "auto"), none absurd.
func (r *Request) checkCounts(p *problems) {
	nonNeg := []struct {
		name string
		v    int64
	}{
		{"concurrency", int64(r.Concurrency)}, {"page_size", int64(r.PageSize)}, {"context_length", int64(r.ContextLength)}, {"max_total_tokens", r.MaxTotalTokens},
		{"max_running_requests", int64(r.MaxRunningRequests)}, {"cuda_graph_max_bs", int64(r.CudaGraphMaxBS)},
		{"speculative_num_draft_tokens", int64(r.SpeculativeNumDraftTokens)}, {"speculative_draft_num_layers", int64(r.SpeculativeDraftNumLayers)},
		{"max_mamba_cache_size", int64(r.MaxMambaCacheSize)}, {"block_size", int64(r.BlockSize)},
		{"max_num_seqs", int64(r.MaxNumSeqs)}, {"max_num_batched_tokens", int64(r.MaxNumBatchedTokens)},
		{"gpu_memory", int64(r.GPUMemory)}, {"pre_load_free_memory", int64(r.PreLoadFreeMemory)},
		{"post_load_free_memory", int64(r.PostLoadFreeMemory)}, {"weights_memory", int64(r.WeightsMemory)},
		{"kv_cache_memory_bytes", int64(r.KVCacheMemoryBytes)}, {"kv_cache_memory", int64(r.KVCacheMemory)},
		{"num_gpu_blocks_override", r.NumGPUBlocksOverride},
		{"tokens_per_block", int64(r.TokensPerBlock)}, {"max_tokens", r.MaxTokens}, {"max_gpu_total_bytes", int64(r.MaxGPUTotalBytes)},
		{"max_seq_len", int64(r.MaxSeqLen)}, {"max_batch_size", int64(r.MaxBatchSize)}, {"max_num_tokens", int64(r.MaxNumTokens)},
		{"max_beam_width", int64(r.MaxBeamWidth)}, {"max_input_len", int64(r.MaxInputLen)}, {"host_cache_size", int64(r.HostCacheSize)},
		{"max_draft_len", int64(r.MaxDraftLen)}, {"free_memory_after_load", int64(r.FreeMemoryAfterLoad)},
		{"nnodes", int64(r.NNodes)}, {"host_memory", int64(r.HostMemory)},
	}
	for _, f := range nonNeg {
		if f.v < 0 {
			p.add(f.name, "%d must not be negative", f.v)
		}
	}
	if r.MaxModelLen < -1 {
		p.add("max_model_len", "%d must not be negative (-1 auto-fits it with engine vllm)", r.MaxModelLen)
	}
	if r.PageSize > 1<<20 {
		p.add("page_size", "%d is too large", r.PageSize)
	}
	if r.ChunkedPrefillSize < -1 {
		p.add("chunked_prefill_size", "%d (use -1 to disable chunked prefill)", r.ChunkedPrefillSize)
	}
}

// checkChoices checks the names of versions, platforms, dtypes and
// algorithms; withEngine adds what the request's engine does not take.
func (r *Request) checkChoices(p *problems, withEngine bool) {
	if r.KVTransferConfig != "" {
		if _, _, err := ParseKVTransferConfig(r.KVTransferConfig); err != nil {
			*p = append(*p, &FieldError{Field: "kv_transfer_config", Err: err})
		}
	}
	if r.SGLangVersion != "" && r.Engine == EngineSGLang {
		if _, _, err := sglang.ResolveProfile(r.SGLangVersion); err != nil {
			*p = append(*p, &FieldError{Field: "sglang_version", Err: err})
		}
	}
	switch r.Platform {
	case "", "cuda", "hip":
	default:
		p.add("platform", "unknown platform %q (accepted: cuda, hip)", r.Platform)
	}
	if _, err := loadDType(r.DType); err != nil {
		p.add("dtype", "%v", err)
	}
	switch strings.ToLower(r.MambaSSMDType) {
	case "", "float32", "bfloat16":
	default:
		p.add("mamba_ssm_dtype", "%q (accepted: float32, bfloat16)", r.MambaSSMDType)
	}
	switch alg := strings.ToUpper(strings.TrimSpace(r.SpeculativeAlgorithm)); alg {
	case "", "NONE", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "DFLASH", "NGRAM":
		// NEXTN is SGLang's alias of EAGLE (server_args rewrites it).
	case "MTP":
		// TensorRT-LLM's one-model MTP (decoding_type MTP); SGLang's argument
		// parser has no MTP choice. A comparison checks it per column.
		if withEngine && r.Engine != EngineTRTLLM {
			p.add("speculative_algorithm", "%q is TensorRT-LLM's name, accepted with --engine trtllm; with engine %s use EAGLE (or NEXTN, SGLang's alias), which runs the checkpoint's MTP layers", r.SpeculativeAlgorithm, r.Engine)
		}
	default:
		p.add("speculative_algorithm", "%q (accepted: EAGLE, EAGLE3, NEXTN, STANDALONE, DFLASH, NGRAM; MTP with --engine trtllm)", r.SpeculativeAlgorithm)
	}
}
