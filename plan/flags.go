package plan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// The one flag table: every planning input once, with its kvcfg flag name
// and aliases, the Request JSON key it sets, its help text, which engines
// take it and how each engine spells it. The CLI binds its flags from it
// (`plan`, `compare`, `fit`, `explain`), `compare` and `fit` print each
// engine's flags from it, errors name flags through it, and
// `GET /api/v1/flags` serves it.

// FlagKind is the type of a flag's value.
type FlagKind string

// Flag kinds.
const (
	KindString FlagKind = "string"
	KindInt    FlagKind = "int"
	KindFloat  FlagKind = "float"
	KindBool   FlagKind = "bool"
	// KindSize is a byte size: "80GiB", "81559MiB" or bytes.
	KindSize FlagKind = "size"
	// KindInts is a list of integers ("128,131072").
	KindInts FlagKind = "ints"
)

// Alias is another name kvcfg accepts for a flag.
type Alias struct {
	// Name is the flag ("--tp").
	Name string `json:"name"`
	// Note says whose name it is ("vLLM's name"), "" when nobody's.
	Note string `json:"note,omitempty"`
}

// Flag is one planning input.
type Flag struct {
	// Key is the Request JSON key the flag sets ("tp_size").
	Key string `json:"key"`
	// Name is kvcfg's flag ("--tp-size").
	Name string `json:"name"`
	// Aliases are other flag names that set the same key.
	Aliases []Alias `json:"aliases,omitempty"`
	// KeyAliases are other Request keys for the same setting
	// ("tensor_parallel_size"); giving two that differ is an error.
	KeyAliases []string `json:"key_aliases,omitempty"`
	// Kind is the value's type.
	Kind FlagKind `json:"kind"`
	// Help is the flag's help text.
	Help string `json:"help"`
	// Engines lists the engines that take the input; any other engine
	// refuses it.
	Engines []string `json:"engines"`
	// Spelling maps an engine to its own flag or option for the input
	// ("--tensor-parallel-size"; a TensorRT-LLM LLM-API option without a
	// trtllm-serve flag is its YAML path, "kv_cache_config.dtype"). An
	// input only kvcfg's model uses (measured memory, the GPU) has none.
	Spelling map[string]string `json:"spelling,omitempty"`
	// NonZero says that an explicit 0 means nothing (0 is "not given" in a
	// Request, so a 0 written out is refused rather than ignored).
	NonZero bool `json:"non_zero,omitempty"`
	// Role groups the inputs that are one setting in different engines'
	// words ("memory_share": mem_fraction_static, gpu_memory_utilization,
	// free_gpu_memory_fraction): an engine's refusal of one names its own.
	Role string `json:"role,omitempty"`
}

// EngineColumn is one engine's column of the table: its name as people
// write it and the flags it is launched with, in the order they print.
type EngineColumn struct {
	// Engine is the engine's key ("vllm").
	Engine string `json:"engine"`
	// Label is its name in prose ("vLLM").
	Label string `json:"label"`
	// Native is true when kvcfg's CLI takes the engine's spellings as its
	// own flags (SGLang's and vLLM's); TensorRT-LLM's knobs go by kvcfg's
	// kebab-case names.
	Native bool `json:"native"`
	// Keys are the request keys printed as the engine's flags, in order.
	Keys []string `json:"keys"`
}

// Engine groups.
var (
	allEngines    = []string{EngineSGLang, EngineVLLM, EngineTRTLLM}
	sglangOnly    = []string{EngineSGLang}
	vllmOnly      = []string{EngineVLLM}
	trtllmOnly    = []string{EngineTRTLLM}
	sglangVLLM    = []string{EngineSGLang, EngineVLLM}
	sglangTRTLLM  = []string{EngineSGLang, EngineTRTLLM}
	vllmTRTLLM    = []string{EngineVLLM, EngineTRTLLM}
	engineColumns = []EngineColumn{
		{Engine: EngineSGLang, Label: "SGLang", Native: true, Keys: []string{
			"tp_size", "pp_size", "dp_size", "enable_dp_attention", "dtype", "quantization", "kv_cache_dtype", "context_length",
			"mem_fraction_static", "max_running_requests", "max_total_tokens", "page_size",
			"swa_full_tokens_ratio", "disable_hybrid_swa_memory", "max_mamba_cache_size", "mamba_full_memory_ratio",
			"mamba_ssm_dtype", "chunked_prefill_size", "cuda_graph_max_bs", "enforce_eager", "disable_radix_cache",
			"speculative_algorithm", "speculative_num_draft_tokens", "attention_backend", "nsa_prefill_backend", "nsa_decode_backend",
			"enable_unified_memory", "disaggregation_mode", "enable_hierarchical_cache", "hicache_ratio", "hicache_size", "hicache_mem_layout", "nnodes"}},
		{Engine: EngineVLLM, Label: "vLLM", Native: true, Keys: []string{
			"tp_size", "pp_size", "dp_size", "dtype", "quantization", "kv_cache_dtype", "max_model_len", "gpu_memory_utilization", "max_num_seqs",
			"block_size", "max_num_batched_tokens", "kv_cache_memory_bytes", "num_gpu_blocks_override", "enforce_eager",
			"kv_transfer_config", "disable_hybrid_kv_cache_manager", "no_async_scheduling", "attention_backend", "kv_offloading_size"}},
		{Engine: EngineTRTLLM, Label: "TensorRT-LLM", Keys: []string{
			"tp_size", "pp_size", "ep_size", "enable_dp_attention", "dtype", "kv_cache_dtype", "max_seq_len", "free_gpu_memory_fraction",
			"max_batch_size", "max_num_tokens", "max_beam_width", "tokens_per_block", "max_tokens", "max_gpu_total_bytes",
			"max_attention_window", "host_cache_size", "max_input_len", "enable_chunked_prefill",
			"disable_overlap_scheduler", "max_draft_len"}},
	}
)

// sp builds a spelling map from engine, flag pairs.
// vllmProfileNames lists vLLM's version profiles (vllm.Profiles), the one
// list the flag help and the docs print.
func vllmProfileNames() []string {
	var out []string
	for _, p := range vllm.Profiles() {
		out = append(out, string(p))
	}
	return out
}

// vllmUtilDefaults is "default 0.92; 0.9 with --vllm-version 0.6, ... or
// 0.11": the latest profile's default and the profiles that differ.
func vllmUtilDefaults() string {
	def := vllm.DefaultGPUMemoryUtilization(vllm.Latest)
	byUtil := map[float64][]string{}
	var utils []float64
	for _, p := range vllm.Profiles() {
		u := vllm.DefaultGPUMemoryUtilization(p)
		if u == def {
			continue
		}
		if byUtil[u] == nil {
			utils = append(utils, u)
		}
		byUtil[u] = append(byUtil[u], string(p))
	}
	out := fmt.Sprintf("default %v", def)
	for _, u := range utils {
		out += fmt.Sprintf("; %v with --vllm-version %s", u, orList(byUtil[u]))
	}
	return out
}

// orList writes "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func sp(pairs ...string) map[string]string {
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// flagTable is the table, in the order the flags are registered.
var flagTable = []Flag{
	{Key: "model", Name: "--model", Aliases: []Alias{{"--model-path", "SGLang's name"}}, Kind: KindString, Engines: allEngines,
		Help: "model: catalog name (kvcfg models), config.json path, model directory or Hugging Face id org/name (default " + catalog.Default + ")"},
	{Key: "revision", Name: "--revision", Kind: KindString, Engines: allEngines,
		Help: "Hugging Face Hub revision of --model: branch, tag or commit (default main)"},
	{Key: "engine", Name: "--engine", Kind: KindString, Engines: allEngines,
		Help: "inference engine: sglang (default), vllm or trtllm"},

	{Key: "concurrency", Name: "--concurrency", Kind: KindInt, Engines: allEngines, NonZero: true,
		Help: "target: requests of the context length that must fit at once (default 1)"},

	{Key: "gpu", Name: "--gpu", Kind: KindString, Engines: allEngines,
		Help: "GPU name (kvcfg gpus; default " + DefaultGPU + ")"},
	{Key: "gpu_memory", Name: "--gpu-memory", Kind: KindSize, Engines: allEngines, NonZero: true,
		Help: "total GPU memory, overriding the GPU's (80GiB, 80GB, 81559MiB or bytes)"},
	{Key: "host_memory", Name: "--host-memory", Kind: KindSize, Engines: allEngines, NonZero: true,
		Help: "free host RAM per node (what psutil or free -b report available), checked against a host KV tier (HiCache, --host-cache-size, --kv-offloading-size)"},
	{Key: "platform", Name: "--platform", Kind: KindString, Engines: allEngines,
		Help: "platform: cuda or hip (default: the GPU's)"},

	{Key: "tp_size", Name: "--tp-size", Aliases: []Alias{{"--tp", ""}, {"--tensor-parallel-size", "vLLM's name"}}, KeyAliases: []string{"tensor_parallel_size"},
		Kind: KindInt, Engines: allEngines, NonZero: true, Help: "tensor parallel size (default 1)",
		Spelling: sp(EngineSGLang, "--tp-size", EngineVLLM, "--tensor-parallel-size", EngineTRTLLM, "--tp_size")},
	{Key: "pp_size", Name: "--pp-size", Aliases: []Alias{{"--pipeline-parallel-size", "vLLM's name"}}, KeyAliases: []string{"pipeline_parallel_size"},
		Kind: KindInt, Engines: allEngines, NonZero: true, Help: "pipeline parallel size (default 1)",
		Spelling: sp(EngineSGLang, "--pp-size", EngineVLLM, "--pipeline-parallel-size", EngineTRTLLM, "--pp_size")},
	{Key: "dp_size", Name: "--dp-size", Aliases: []Alias{{"--data-parallel-size", "vLLM's name"}}, Kind: KindInt, Engines: allEngines, NonZero: true, Help: "data parallel size (default 1)",
		Spelling: sp(EngineSGLang, "--dp-size", EngineVLLM, "--data-parallel-size")},
	{Key: "ep_size", Name: "--ep-size", Kind: KindInt, Engines: trtllmOnly, NonZero: true,
		Help:     "expert parallel size of the MoE layers (moe_expert_parallel_size; must divide tp_size; default 1)",
		Spelling: sp(EngineTRTLLM, "--ep_size")},
	{Key: "enable_dp_attention", Name: "--enable-dp-attention", Kind: KindBool, Engines: sglangTRTLLM,
		Help:     "data-parallel attention (attention TP = tp / dp)",
		Spelling: sp(EngineSGLang, "--enable-dp-attention", EngineTRTLLM, "enable_attention_dp")},

	{Key: "dtype", Name: "--dtype", Kind: KindString, Engines: allEngines,
		Help:     "model dtype: auto (the config's; float32 checkpoints run in float16, Gemma in bfloat16), half or float16, bfloat16, float or float32; the weights and the auto KV cache dtype follow it",
		Spelling: sp(EngineSGLang, "--dtype", EngineVLLM, "--dtype", EngineTRTLLM, "dtype")},
	{Key: "quantization", Name: "--quantization", Kind: KindString, Engines: sglangVLLM,
		Help:     "weight quantization: fp8 quantizes an unquantized checkpoint's linear layers to one byte a weight after loading (embeddings, LM head, norms and routers stay at --dtype); a quantized checkpoint's own method is accepted as it is",
		Spelling: sp(EngineSGLang, "--quantization", EngineVLLM, "--quantization")},
	{Key: "kv_cache_dtype", Name: "--kv-cache-dtype", Kind: KindString, Engines: allEngines,
		Help:     "KV cache dtype: auto, bf16, fp8_e4m3, fp8_e5m2, mxfp8, nvfp4, fp4_mx_block16, ...; any engine's spelling (fp8 = fp8_e4m3) plans as the engine's own",
		Spelling: sp(EngineSGLang, "--kv-cache-dtype", EngineVLLM, "--kv-cache-dtype", EngineTRTLLM, "kv_cache_config.dtype")},
	{Key: "mem_fraction_static", Name: "--mem-fraction-static", Kind: KindFloat, Engines: sglangOnly, NonZero: true, Role: "memory_share",
		Help:     "fraction of GPU memory for weights and KV cache (default: SGLang's heuristic)",
		Spelling: sp(EngineSGLang, "--mem-fraction-static")},
	{Key: "page_size", Name: "--page-size", Kind: KindInt, Engines: sglangOnly, NonZero: true, Role: "block",
		Help:     "tokens per KV page (default 1, or what the attention backend forces)",
		Spelling: sp(EngineSGLang, "--page-size")},
	{Key: "context_length", Name: "--context-length", Kind: KindInt, Engines: allEngines, NonZero: true, Role: "context",
		Help:     "context length (default: the model's)",
		Spelling: sp(EngineSGLang, "--context-length")},
	{Key: "max_total_tokens", Name: "--max-total-tokens", Kind: KindInt, Engines: sglangOnly, NonZero: true, Role: "token_cap",
		Help:     "upper bound on the KV pool's tokens",
		Spelling: sp(EngineSGLang, "--max-total-tokens")},
	{Key: "max_running_requests", Name: "--max-running-requests", Kind: KindInt, Engines: sglangOnly, NonZero: true, Role: "request_cap",
		Help:     "maximum running requests",
		Spelling: sp(EngineSGLang, "--max-running-requests")},
	{Key: "swa_full_tokens_ratio", Name: "--swa-full-tokens-ratio", Kind: KindFloat, Engines: sglangOnly, NonZero: true,
		Help:     "SWA pool tokens / full pool tokens for hybrid sliding-window models (default 0.8)",
		Spelling: sp(EngineSGLang, "--swa-full-tokens-ratio")},
	{Key: "disable_hybrid_swa_memory", Name: "--disable-hybrid-swa-memory", Kind: KindBool, Engines: sglangOnly,
		Help:     "use one full-size pool for sliding-window models",
		Spelling: sp(EngineSGLang, "--disable-hybrid-swa-memory")},
	{Key: "chunked_prefill_size", Name: "--chunked-prefill-size", Kind: KindInt, Engines: sglangOnly, Role: "batched_tokens",
		Help:     "chunked prefill size (default by GPU memory; -1 disables)",
		Spelling: sp(EngineSGLang, "--chunked-prefill-size")},
	{Key: "cuda_graph_max_bs", Name: "--cuda-graph-max-bs", Kind: KindInt, Engines: sglangOnly, NonZero: true,
		Help:     "largest CUDA-graph batch size (default by GPU memory)",
		Spelling: sp(EngineSGLang, "--cuda-graph-max-bs")},
	{Key: "disable_radix_cache", Name: "--disable-radix-cache", Aliases: []Alias{{"--no-enable-prefix-caching", "vLLM's name"}}, Kind: KindBool, Engines: sglangVLLM,
		Help:     "disable the radix (prefix) cache",
		Spelling: sp(EngineSGLang, "--disable-radix-cache", EngineVLLM, "--no-enable-prefix-caching")},
	{Key: "speculative_algorithm", Name: "--speculative-algorithm", Kind: KindString, Engines: allEngines,
		Help:     "speculative decoding: EAGLE, EAGLE3, NEXTN (SGLang's alias of EAGLE), STANDALONE, DFLASH or NGRAM; MTP with --engine trtllm",
		Spelling: sp(EngineSGLang, "--speculative-algorithm")},
	{Key: "speculative_num_draft_tokens", Name: "--speculative-num-draft-tokens", Kind: KindInt, Engines: sglangOnly, NonZero: true,
		Help:     "draft tokens per step (default 4)",
		Spelling: sp(EngineSGLang, "--speculative-num-draft-tokens")},
	{Key: "speculative_draft_num_layers", Name: "--speculative-draft-num-layers", Kind: KindInt, Engines: allEngines, NonZero: true,
		Help: "layers of the draft model (default: the checkpoint's MTP layers, else 1)"},
	{Key: "mamba_full_memory_ratio", Name: "--mamba-full-memory-ratio", Kind: KindFloat, Engines: sglangOnly, NonZero: true,
		Help:     "mamba state memory / KV memory for hybrid linear-attention models (default 0.9)",
		Spelling: sp(EngineSGLang, "--mamba-full-memory-ratio")},
	{Key: "max_mamba_cache_size", Name: "--max-mamba-cache-size", Kind: KindInt, Engines: sglangOnly, NonZero: true,
		Help:     "number of mamba state slots",
		Spelling: sp(EngineSGLang, "--max-mamba-cache-size")},
	{Key: "mamba_ssm_dtype", Name: "--mamba-ssm-dtype", Kind: KindString, Engines: sglangOnly,
		Help:     "mamba SSM state dtype: float32 or bfloat16 (default: the config's, else float32)",
		Spelling: sp(EngineSGLang, "--mamba-ssm-dtype")},
	{Key: "dsv4_compress_state_dtype", Name: "--dsv4-compress-state-dtype", Kind: KindString, Engines: sglangOnly,
		Help: "DeepSeek-V4 compress-state dtype, SGLang's environment variable SGLANG_DSV4_COMPRESS_STATE_DTYPE: float32 (default) or bf16"},
	{Key: "mamba_radix_cache_strategy", Name: "--mamba-radix-cache-strategy", Aliases: []Alias{{"--mamba-scheduler-strategy", "older SGLang's name"}}, Kind: KindString, Engines: sglangOnly,
		Help:     "SGLang: Mamba radix-cache strategy: no_buffer (default), extra_buffer or extra_buffer_lazy (state slots per running request: 3, 5, 4 with the overlap scheduler)",
		Spelling: sp(EngineSGLang, "--mamba-radix-cache-strategy")},
	{Key: "mamba_skip_decode_lock", Name: "--mamba-skip-decode-lock", Kind: KindBool, Engines: sglangOnly,
		Help: "SGLang: the run sets SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK=1 (newest SGLang: one Mamba state slot per running request less with an extra buffer)"},
	{Key: "attention_backend", Name: "--attention-backend", Kind: KindString, Engines: sglangVLLM,
		Help:     "attention backend, overriding the engine's default choice (SGLang: aiter, triton, fa3, flashinfer, flashmla, trtllm_mha, ...; vLLM: FLASH_ATTN, FLASHINFER, ...); it sets the page size and, on ROCm, SGLang's aiter ×0.85 rule",
		Spelling: sp(EngineSGLang, "--attention-backend", EngineVLLM, "--attention-backend")},
	{Key: "nsa_prefill_backend", Name: "--nsa-prefill-backend", Aliases: []Alias{{"--dsa-prefill-backend", "SGLang's name from PR #30514 (2026-07)"}}, KeyAliases: []string{"dsa_prefill_backend"}, Kind: KindString, Engines: sglangOnly,
		Help:     "SGLang: DeepSeek sparse-attention prefill backend (flashmla_sparse, flashmla_kv, flashmla_auto, fa3, tilelang, aiter, trtllm, ...; default by GPU, KV dtype and release); trtllm on either side, or tilelang/aiter on ROCm, keeps an fp8 KV row at 576 bytes, other backends store the 656-byte row",
		Spelling: sp(EngineSGLang, "--nsa-prefill-backend")},
	{Key: "nsa_decode_backend", Name: "--nsa-decode-backend", Aliases: []Alias{{"--dsa-decode-backend", "SGLang's name from PR #30514 (2026-07)"}}, KeyAliases: []string{"dsa_decode_backend"}, Kind: KindString, Engines: sglangOnly,
		Help:     "SGLang: DeepSeek sparse-attention decode backend (same values and row rule as --nsa-prefill-backend)",
		Spelling: sp(EngineSGLang, "--nsa-decode-backend")},
	{Key: "enable_unified_memory", Name: "--enable-unified-memory", Kind: KindBool, Engines: sglangOnly,
		Help:     "SGLang: one byte buffer for full-attention KV and Mamba state (hybrid Mamba) or full and SWA KV (hybrid SWA); tokens and state slots trade inside it",
		Spelling: sp(EngineSGLang, "--enable-unified-memory")},
	{Key: "disaggregation_mode", Name: "--disaggregation-mode", Kind: KindString, Engines: sglangOnly,
		Help:     "SGLang: PD disaggregation role: null (default), prefill or decode",
		Spelling: sp(EngineSGLang, "--disaggregation-mode")},
	{Key: "enable_hierarchical_cache", Name: "--enable-hierarchical-cache", Kind: KindBool, Engines: sglangOnly,
		Help:     "SGLang: HiCache, a host-memory (L2) KV tier beside the GPU pool; GPU tokens do not change",
		Spelling: sp(EngineSGLang, "--enable-hierarchical-cache")},
	{Key: "hicache_ratio", Name: "--hicache-ratio", Kind: KindFloat, Engines: sglangOnly, NonZero: true,
		Help:     "SGLang: host pool tokens as a multiple of the GPU pool's (default 2.0)",
		Spelling: sp(EngineSGLang, "--hicache-ratio")},
	{Key: "hicache_size", Name: "--hicache-size", Kind: KindFloat, Engines: sglangOnly,
		Help:     "SGLang: host pool size per rank in decimal GB (1e9 bytes); wins over --hicache-ratio when > 0",
		Spelling: sp(EngineSGLang, "--hicache-size")},
	{Key: "hicache_mem_layout", Name: "--hicache-mem-layout", Kind: KindString, Engines: sglangOnly,
		Help:     "SGLang: host pool layout: layer_first (default), page_first, page_first_direct or page_head",
		Spelling: sp(EngineSGLang, "--hicache-mem-layout")},
	{Key: "nnodes", Name: "--nnodes", Kind: KindInt, Engines: sglangOnly, NonZero: true,
		Help:     "SGLang: hosts the server's ranks spread over (default 1); HiCache splits each host's free RAM among its ranks",
		Spelling: sp(EngineSGLang, "--nnodes")},
	{Key: "sglang_version", Name: "--sglang-version", Kind: KindString, Engines: sglangOnly, Role: "version",
		Help: "SGLang: sizing rules of the release to follow (e.g. 0.4.6, 0.5.2, latest; default: the newest profile; pin a run's release, e.g. 0.5.3)"},

	{Key: "pre_load_free_memory", Name: "--pre-load-free-memory", Kind: KindSize, Engines: sglangVLLM, NonZero: true,
		Help: "free memory before weight load as the engine logged it (e.g. 78.81GiB)"},
	{Key: "post_load_free_memory", Name: "--post-load-free-memory", Kind: KindSize, Engines: sglangVLLM, NonZero: true,
		Help: "free memory after weight load as the engine logged it (e.g. 63.72GiB)"},
	{Key: "weights_memory", Name: "--weights-memory", Kind: KindSize, Engines: allEngines, NonZero: true,
		Help: "weight memory per GPU, replacing the estimate"},

	{Key: "gpu_memory_utilization", Name: "--gpu-memory-utilization", Kind: KindFloat, Engines: vllmOnly, NonZero: true, Role: "memory_share",
		Help:     "vLLM: fraction of GPU memory vLLM may use (" + vllmUtilDefaults() + ")",
		Spelling: sp(EngineVLLM, "--gpu-memory-utilization")},
	{Key: "block_size", Name: "--block-size", Kind: KindInt, Engines: vllmOnly, NonZero: true, Role: "block",
		Help:     "vLLM: tokens per KV block (default 16)",
		Spelling: sp(EngineVLLM, "--block-size")},
	{Key: "max_model_len", Name: "--max-model-len", Kind: KindInt, Engines: vllmOnly, NonZero: true, Role: "context",
		Help:     "vLLM: context length (default: the model's; -1 fits it to memory, latest only)",
		Spelling: sp(EngineVLLM, "--max-model-len")},
	{Key: "max_num_seqs", Name: "--max-num-seqs", Kind: KindInt, Engines: vllmOnly, NonZero: true, Role: "request_cap",
		Help:     "vLLM: maximum running sequences (default 1024 on GPUs of 70 GiB or more except A100, else 256)",
		Spelling: sp(EngineVLLM, "--max-num-seqs")},
	{Key: "max_num_batched_tokens", Name: "--max-num-batched-tokens", Kind: KindInt, Engines: vllmOnly, NonZero: true, Role: "batched_tokens",
		Help:     "vLLM: tokens per scheduler step",
		Spelling: sp(EngineVLLM, "--max-num-batched-tokens")},
	{Key: "kv_cache_memory_bytes", Name: "--kv-cache-memory-bytes", Kind: KindSize, Engines: vllmOnly, NonZero: true, Role: "kv_bytes",
		Help:     "vLLM: KV cache size per GPU, bypassing profiling (vLLM's flag)",
		Spelling: sp(EngineVLLM, "--kv-cache-memory-bytes")},
	{Key: "kv_cache_memory", Name: "--kv-cache-memory", Kind: KindSize, Engines: vllmTRTLLM, NonZero: true,
		Help: "vLLM and TensorRT-LLM: the KV memory a run logged (vLLM's \"Available KV cache memory\", e.g. 51.63GiB; TensorRT-LLM's \"available KV cache memory when calculating max tokens\"), replacing the budget estimate"},
	{Key: "enforce_eager", Name: "--enforce-eager", Aliases: []Alias{{"--disable-cuda-graph", "SGLang's name"}},
		Kind: KindBool, Engines: sglangVLLM,
		Help:     "no CUDA graphs: nothing set aside for them (vLLM's --enforce-eager; SGLang's --disable-cuda-graph drops the decode-graph reserve of the default mem_fraction_static)",
		Spelling: sp(EngineSGLang, "--disable-cuda-graph", EngineVLLM, "--enforce-eager")},
	{Key: "num_gpu_blocks_override", Name: "--num-gpu-blocks-override", Kind: KindInt, Engines: vllmOnly, NonZero: true, Role: "token_cap",
		Help:     "vLLM: number of KV blocks, overriding the profiled count",
		Spelling: sp(EngineVLLM, "--num-gpu-blocks-override")},
	{Key: "kv_offloading_size", Name: "--kv-offloading-size", Kind: KindFloat, Engines: vllmOnly, NonZero: true,
		Help:     "vLLM: CPU KV offload buffer in GiB, summed over the TP ranks (native backend: OffloadingConnector); GPU blocks do not change",
		Spelling: sp(EngineVLLM, "--kv-offloading-size")},
	{Key: "kv_transfer_config", Name: "--kv-transfer-config", Kind: KindString, Engines: vllmOnly,
		Help:     "vLLM: the KV connector's JSON ({\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}) or its name; up to 0.21 any connector, from 0.22 one without hybrid support (LMCacheConnectorV1, OffloadingConnector, ...), caches sliding-window layers as full attention",
		Spelling: sp(EngineVLLM, "--kv-transfer-config")},
	{Key: "disable_hybrid_kv_cache_manager", Name: "--disable-hybrid-kv-cache-manager", Kind: KindBool, Engines: vllmOnly,
		Help:     "vLLM: cache sliding-window and chunked layers as full attention (no hybrid KV cache manager)",
		Spelling: sp(EngineVLLM, "--disable-hybrid-kv-cache-manager")},
	{Key: "no_async_scheduling", Name: "--no-async-scheduling", Kind: KindBool, Engines: vllmOnly,
		Help:     "vLLM: no async scheduling; from 0.26 sliding-window layers then hold one batch in flight (PP batches) instead of two",
		Spelling: sp(EngineVLLM, "--no-async-scheduling")},
	{Key: "vllm_version", Name: "--vllm-version", Kind: KindString, Engines: vllmOnly, Role: "version",
		Help: "vLLM: sizing rules to follow: " + orList(vllmProfileNames()) + " (default); a version number such as 0.10.2 maps to its profile"},

	{Key: "trtllm_version", Name: "--trtllm-version", Kind: KindString, Engines: trtllmOnly, Role: "version",
		Help: "TensorRT-LLM: sizing rules to follow: 0.x (engine builds), 1.0, 1.1 or latest (default); a version number such as 1.1.0rc3 maps to its profile"},
	{Key: "free_gpu_memory_fraction", Name: "--free-gpu-memory-fraction", Kind: KindFloat, Engines: trtllmOnly, NonZero: true, Role: "memory_share",
		Help:     "TensorRT-LLM: share of the memory free after loading for the KV cache (default 0.9)",
		Spelling: sp(EngineTRTLLM, "--kv_cache_free_gpu_memory_fraction")},
	{Key: "tokens_per_block", Name: "--tokens-per-block", Kind: KindInt, Engines: trtllmOnly, NonZero: true, Role: "block",
		Help:     "TensorRT-LLM: tokens per KV block (default 32; 64 for engine builds)",
		Spelling: sp(EngineTRTLLM, "kv_cache_config.tokens_per_block")},
	{Key: "max_tokens", Name: "--max-tokens", Kind: KindInt, Engines: trtllmOnly, NonZero: true, Role: "token_cap",
		Help:     "TensorRT-LLM: kv_cache_config.max_tokens, a cap on the pool's tokens",
		Spelling: sp(EngineTRTLLM, "kv_cache_config.max_tokens")},
	{Key: "max_gpu_total_bytes", Name: "--max-gpu-total-bytes", Kind: KindSize, Engines: trtllmOnly, Role: "kv_bytes",
		Help:     "TensorRT-LLM: kv_cache_config.max_gpu_total_bytes, a cap on the pool's bytes",
		Spelling: sp(EngineTRTLLM, "kv_cache_config.max_gpu_total_bytes")},
	{Key: "max_seq_len", Name: "--max-seq-len", Kind: KindInt, Engines: trtllmOnly, NonZero: true, Role: "context",
		Help:     "TensorRT-LLM: max_seq_len (default: the model's context length)",
		Spelling: sp(EngineTRTLLM, "--max_seq_len")},
	{Key: "max_batch_size", Name: "--max-batch-size", Kind: KindInt, Engines: trtllmOnly, NonZero: true, Role: "request_cap",
		Help:     "TensorRT-LLM: max_batch_size (default 2048)",
		Spelling: sp(EngineTRTLLM, "--max_batch_size")},
	{Key: "max_num_tokens", Name: "--max-num-tokens", Kind: KindInt, Engines: trtllmOnly, NonZero: true, Role: "batched_tokens",
		Help:     "TensorRT-LLM: max_num_tokens per iteration (default 8192)",
		Spelling: sp(EngineTRTLLM, "--max_num_tokens")},
	{Key: "max_beam_width", Name: "--max-beam-width", Kind: KindInt, Engines: trtllmOnly, NonZero: true,
		Help:     "TensorRT-LLM: max_beam_width (default 1)",
		Spelling: sp(EngineTRTLLM, "--max_beam_width")},
	{Key: "max_input_len", Name: "--max-input-len", Kind: KindInt, Engines: trtllmOnly, NonZero: true,
		Help:     "TensorRT-LLM: an engine build's max_input_len (0.x; default 1024)",
		Spelling: sp(EngineTRTLLM, "max_input_len")},
	{Key: "max_attention_window", Name: "--max-attention-window", Kind: KindInts, Engines: trtllmOnly,
		Help:     "TensorRT-LLM: per-layer attention windows, repeated over the layers (e.g. 128,131072)",
		Spelling: sp(EngineTRTLLM, "kv_cache_config.max_attention_window")},
	{Key: "host_cache_size", Name: "--host-cache-size", Kind: KindSize, Engines: trtllmOnly,
		Help:     "TensorRT-LLM: host (secondary) KV cache size",
		Spelling: sp(EngineTRTLLM, "kv_cache_config.host_cache_size")},
	{Key: "enable_chunked_prefill", Name: "--enable-chunked-prefill", Kind: KindBool, Engines: trtllmOnly,
		Help:     "TensorRT-LLM: enable_chunked_prefill",
		Spelling: sp(EngineTRTLLM, "enable_chunked_prefill")},
	{Key: "disable_overlap_scheduler", Name: "--disable-overlap-scheduler", Kind: KindBool, Engines: trtllmOnly,
		Help:     "TensorRT-LLM: disable_overlap_scheduler",
		Spelling: sp(EngineTRTLLM, "disable_overlap_scheduler")},
	{Key: "max_draft_len", Name: "--max-draft-len", Kind: KindInt, Engines: trtllmOnly,
		Help:     "TensorRT-LLM: speculative_config.max_draft_len",
		Spelling: sp(EngineTRTLLM, "speculative_config.max_draft_len")},
	{Key: "free_memory_after_load", Name: "--free-memory-after-load", Kind: KindSize, Engines: trtllmOnly, NonZero: true,
		Help: "TensorRT-LLM 0.x: the free memory of \"Memory usage when calculating max tokens in paged kv cache\" a run logged"},
}

// Flags returns the flag table, in registration order (copies: callers may
// not change the table).
func Flags() []Flag {
	out := make([]Flag, len(flagTable))
	for i, f := range flagTable {
		f.Aliases = slices.Clone(f.Aliases)
		f.KeyAliases = slices.Clone(f.KeyAliases)
		f.Engines = slices.Clone(f.Engines)
		if f.Spelling != nil {
			m := make(map[string]string, len(f.Spelling))
			for k, v := range f.Spelling {
				m[k] = v
			}
			f.Spelling = m
		}
		out[i] = f
	}
	return out
}

// CommandLineFlags returns the flag table as a command line binds it, in
// registration order: each row without Engines and Spelling (Flags has
// them), its aliases copied. It allocates three times, where Flags copies
// every row's slices and map: a CLI process binds the table once, at
// start-up.
func CommandLineFlags() []Flag {
	out := make([]Flag, len(flagTable))
	na, nk := 0, 0
	for _, f := range flagTable {
		na += len(f.Aliases)
		nk += len(f.KeyAliases)
	}
	aliases := make([]Alias, 0, na)
	keys := make([]string, 0, nk)
	for i, f := range flagTable {
		f.Engines, f.Spelling = nil, nil
		if f.Aliases != nil {
			aliases = append(aliases, f.Aliases...)
			f.Aliases = aliases[len(aliases)-len(f.Aliases) : len(aliases) : len(aliases)]
		}
		if f.KeyAliases != nil {
			keys = append(keys, f.KeyAliases...)
			f.KeyAliases = keys[len(keys)-len(f.KeyAliases) : len(keys) : len(keys)]
		}
		out[i] = f
	}
	return out
}

// EngineColumns returns each engine's column of the table.
func EngineColumns() []EngineColumn {
	out := make([]EngineColumn, len(engineColumns))
	for i, c := range engineColumns {
		c.Keys = slices.Clone(c.Keys)
		out[i] = c
	}
	return out
}

// flagIndex maps every key, key alias and flag name (with "--") to its row.
var flagIndex = sync.OnceValue(func() map[string]int {
	m := map[string]int{}
	for i, f := range flagTable {
		m[f.Key] = i
		m[f.Name] = i
		for _, a := range f.Aliases {
			m[a.Name] = i
		}
		for _, k := range f.KeyAliases {
			m[k] = i
		}
		for _, s := range f.Spelling {
			if _, ok := m[s]; !ok {
				m[s] = i
			}
		}
	}
	return m
})

// LookupFlag returns the row of a request key ("tp_size"), a key alias
// ("tensor_parallel_size"), a kvcfg flag or alias ("--tp") or an engine's
// spelling ("--tensor-parallel-size", "kv_cache_config.dtype").
func LookupFlag(name string) (Flag, bool) {
	i, ok := flagIndex()[strings.TrimSpace(name)]
	if !ok {
		return Flag{}, false
	}
	return flagTable[i], true
}

// KeyOfFlag is the request key a flag sets, in any spelling LookupFlag
// knows ("--tensor-parallel-size" → "tp_size"), "" when none.
func KeyOfFlag(flag string) string {
	f, ok := LookupFlag(flag)
	if !ok {
		return ""
	}
	return f.Key
}

// FlagFor is the flag for key an operator of engine passes to kvcfg: the
// engine's own spelling when kvcfg takes it (SGLang's and vLLM's flags),
// else kvcfg's name ("--tp-size" for an unknown key kebab-cased).
func FlagFor(engine, key string) string {
	f, ok := LookupFlag(key)
	if !ok {
		return "--" + strings.ReplaceAll(key, "_", "-")
	}
	if s := f.Spelling[engine]; s != "" && column(engine).Native {
		return s
	}
	return f.Name
}

// column returns engine's column (zero when unknown).
func column(engine string) EngineColumn {
	for _, c := range engineColumns {
		if c.Engine == engine {
			return c
		}
	}
	return EngineColumn{}
}

// EngineLabel is the engine's name in prose ("vLLM"), the key itself when
// unknown.
func EngineLabel(engine string) string {
	if c := column(engine); c.Label != "" {
		return c.Label
	}
	return engine
}

// Accepts reports whether engine takes the input key.
func (f Flag) Accepts(engine string) bool { return slices.Contains(f.Engines, engine) }

// EngineArgs are the engine's own launch flags that r encodes, in the
// engine's column order: SGLang's launch_server flags, `vllm serve`'s, or
// trtllm-serve's (an LLM-API option without a flag prints as one
// "path=value" word for --extra_llm_api_options). Zero fields are left out
// (the engine default applies) and booleans print bare. With full, the
// tensor-parallel size prints even when it is 1 and an "auto" KV cache
// dtype prints too (fit's complete launch lines); without, both are left
// out as defaults (compare's columns).
func EngineArgs(r Request, full bool) []string {
	r = r.Normalized()
	r = r.ForEngine(r.Engine) // the context length in the engine's own key
	var out []string
	for _, key := range column(r.Engine).Keys {
		f, _ := LookupFlag(key)
		name := f.Spelling[r.Engine]
		v, _ := r.FieldString(key)
		switch {
		case key == "tp_size" && v == "" && full:
			v = "1"
		case key == "tp_size" && v == "1" && !full:
			v = ""
		case key == "kv_cache_dtype" && strings.EqualFold(v, "auto") && !full:
			v = ""
		}
		switch {
		case v == "":
		case !strings.HasPrefix(name, "--"):
			if f.Kind == KindInts {
				v = "[" + v + "]"
			}
			out = append(out, name+"="+v)
		case v == "true":
			out = append(out, name)
		case strings.ContainsAny(v, "\"{} "):
			// A JSON value (--kv-transfer-config) prints single-quoted,
			// ready for a shell.
			out = append(out, name, "'"+v+"'")
		default:
			out = append(out, name, v)
		}
	}
	return out
}

// ParseEngineArgs reads flags as EngineArgs prints them (or kvcfg's own
// flag names) back into base's fields: the inverse used to check that
// printed flags plan to what was listed. Errors are *FieldError values.
func ParseEngineArgs(base Request, args []string) (Request, error) {
	r := base
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") && !hasVal {
			return r, fieldErr(a, "unexpected argument (want a --flag or an option=value)")
		}
		f, ok := LookupFlag(name)
		if !ok {
			return r, fieldErr(strings.TrimLeft(name, "-"), "unknown flag %s", name)
		}
		if !hasVal {
			val = "true"
			if f.Kind != KindBool && i+1 < len(args) {
				val = args[i+1]
				i++
			}
		}
		if len(val) >= 2 && strings.HasPrefix(val, "'") && strings.HasSuffix(val, "'") {
			val = val[1 : len(val)-1]
		}
		if err := r.SetField(f.Key, strings.Trim(val, "[]")); err != nil {
			return r, err
		}
	}
	return r, nil
}

// ForEngine returns a copy of r with the inputs engine does not take
// cleared, and the context length carried over into the engine's own
// key (vLLM's max_model_len, TensorRT-LLM's max_seq_len) when that is
// not set: the request a comparison plans for one engine column.
func (r Request) ForEngine(engine string) Request {
	r.Engine = engine
	ctx := r.ContextLength
	switch {
	case r.MaxModelLen > 0:
		ctx = r.MaxModelLen
	case r.MaxSeqLen > 0 && ctx == 0:
		ctx = r.MaxSeqLen
	}
	for _, f := range flagTable {
		if !f.Accepts(engine) {
			_ = clearField(&r, f.Key)
		}
	}
	switch engine {
	case EngineVLLM:
		if r.MaxModelLen == 0 && ctx > 0 {
			r.MaxModelLen = ctx
		}
		if r.MaxModelLen > 0 {
			r.ContextLength = 0
		}
	case EngineTRTLLM:
		if r.MaxSeqLen == 0 && ctx > 0 {
			r.MaxSeqLen = ctx
		}
		if r.MaxSeqLen > 0 {
			r.ContextLength = 0
		}
	default:
		if r.ContextLength == 0 && ctx > 0 {
			r.ContextLength = ctx
		}
	}
	return r
}

// engineErrors are the problems of inputs the request's engine does not
// take: each names the flag of that engine for the same setting.
func (r *Request) engineErrors() []error {
	var errs []error
	rv := reflect.ValueOf(r).Elem() // one view of r, no copy per flag
	for _, o := range foreignFlags()[r.Engine] {
		if rv.Field(o.field).IsZero() {
			continue
		}
		f := flagTable[o.row]
		owners := make([]string, len(f.Engines))
		for i, e := range f.Engines {
			owners[i] = EngineLabel(e)
		}
		msg := fmt.Sprintf("%s is a %s flag, not %s's", f.Name, strings.Join(owners, "/"), EngineLabel(r.Engine))
		if alt := roleFlag(f.Role, r.Engine); alt != "" {
			msg += fmt.Sprintf(": with engine %s use %s", r.Engine, alt)
		} else {
			msg += ": leave it out"
		}
		if len(f.Engines) == 1 {
			msg += fmt.Sprintf(", or pass --engine %s", f.Engines[0])
		}
		errs = append(errs, &FieldError{Field: f.Key, Err: fmt.Errorf("%s", msg)})
	}
	return errs
}

// foreign is a flag table row an engine does not take, with its request
// field's index.
type foreign struct{ row, field int }

// foreignFlags lists, per engine, the rows it does not take: computed once,
// so validating a request walks only those fields.
var foreignFlags = sync.OnceValue(func() map[string][]foreign {
	fields := requestFields()
	out := map[string][]foreign{}
	for _, e := range Engines() {
		for row, f := range flagTable {
			if i, ok := fields[f.Key]; ok && !f.Accepts(e) {
				out[e] = append(out[e], foreign{row, i})
			}
		}
	}
	return out
})

// roleFlag is engine's flag for the setting role ("" when none).
func roleFlag(role, engine string) string {
	if role == "" {
		return ""
	}
	for _, f := range flagTable {
		if f.Role == role && f.Accepts(engine) {
			return FlagFor(engine, f.Key)
		}
	}
	return ""
}

// ZeroErrors are the problems of inputs given explicitly as 0 where 0
// means nothing (tp_size, gpu_memory, mem_fraction_static, ...): a Request
// cannot tell 0 from "not given", so the CLI and the API, which can, pass
// the keys given as 0.
func ZeroErrors(keys []string) error {
	var errs []error
	seen := map[string]bool{}
	for _, k := range keys {
		f, ok := LookupFlag(k)
		if !ok || !f.NonZero || seen[k] {
			continue
		}
		seen[k] = true
		errs = append(errs, fieldErr(k, "0 is not a valid %s: leave it out for the default", f.Name))
	}
	return errors.Join(errs...)
}

// clearField sets the request field of key to its zero value.
func clearField(r *Request, key string) error {
	i, ok := requestFields()[key]
	if !ok {
		return fieldErr(key, "unknown request field")
	}
	f := reflect.ValueOf(r).Elem().Field(i)
	f.Set(reflect.Zero(f.Type()))
	return nil
}
