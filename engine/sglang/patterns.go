package sglang

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// Patterns returns the SGLang messages about KV cache sizing and admission
// that explain recognises, most specific first. Each pattern's advice names
// the knob as a kvcfg request key.
func Patterns() []engine.Pattern {
	return []engine.Pattern{
		engine.NewPattern(engineName, "no_kv_memory", engine.Fatal, `Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=`+engine.Number+`\.?\s*Raise --mem-fraction-static above `+engine.Number+`\s*\(minimum viable = 1 - available/pre = `+engine.Number+`\)`,
			[]string{"mem_fraction_static", "suggested", "minimum_viable"}, adviseNoKVMemory).WithLaunch(map[string]string{"mem_fraction_static": "mem_fraction_static"}),
		engine.NewPattern(engineName, "not_enough_memory", engine.Fatal, `Not enough memory\. Please try to increase --mem-fraction-static\.?(?:\s*Current value: mem_fraction_static=`+engine.Number+`)?`,
			[]string{"mem_fraction_static"}, adviseNotEnoughMemory).WithLaunch(map[string]string{"mem_fraction_static": "mem_fraction_static"}),
		engine.NewPattern(engineName, "swa_pool_too_small", engine.Fatal, `SWA pool \(`+engine.Number+` tokens\) cannot hold even one request: the prefill admission floor is sliding_window_size \(`+engine.Number+`\) \+ page_size \(`+engine.Number+`\)`,
			[]string{"swa_tokens", "sliding_window_size", "page_size"}, adviseSWAPoolTooSmall).WithLaunch(map[string]string{"page_size": "page_size"}),
		engine.NewPattern(engineName, "dsv4_swa_floor", engine.Fatal, `DSV4 SWA pool \(`+engine.Number+` tokens\)[^.]*?minimum=`+engine.Number+`[^;]*?(?:; with full=`+engine.Number+` tokens)?[^0-9]*at least `+engine.Number,
			[]string{"swa_tokens", "minimum", "full_tokens", "min_ratio"}, adviseDSV4SWAFloor),
		engine.NewPattern(engineName, "dsv4_compress_state_dtype", engine.Fatal, `Unsupported SGLANG_DSV4_COMPRESS_STATE_DTYPE=`,
			nil, adviseDSV4StateDType),
		engine.NewPattern(engineName, "unified_memory_unsupported", engine.Fatal, `--enable-unified-memory (?:with PD disaggregation (?:currently supports only MLA|does not support hybrid-SWA)|only supports hybrid Mamba and hybrid sliding-window-attention models)|Speculative decoding with --enable-unified-memory is only supported for hybrid-Mamba targets|unified memory pool does not support MLA-(?:hybrid-Mamba|SWA hybrid) yet`,
			nil, adviseUnifiedUnsupported),
		engine.NewPattern(engineName, "hicache_host_memory", engine.Fatal, `Not enough host memory available\. Requesting `+engine.Number+` GB but only have `+engine.Number+` GB free`,
			[]string{"requested_gb", "free_gb"}, adviseHiCacheHostMemory),
		engine.NewPattern(engineName, "hicache_needs_radix", engine.Fatal, `enable-hierarchical-cache and disable-radix-cache are mutually exclusive`,
			nil, adviseHiCacheNeedsRadix),
		engine.NewPattern(engineName, "minimax_model_dtype", engine.Fatal, `'KVCacheConfigurator' object has no attribute 'model_dtype'`,
			nil, adviseMiniMaxModelDType),
		engine.NewPattern(engineName, "swa_chunk_cap", engine.Fatal, `SWA pool cap \(`+engine.Number+` tokens, `+engine.Number+` GiB\) leaves no room for the full KV pool within the available `+engine.Number+` GiB`,
			[]string{"swa_tokens", "swa_gib", "available_gib"}, adviseSWAChunkCap),
		engine.NewPattern(engineName, "mamba_state_too_small", engine.Fatal, `Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache\. Computed max_mamba_cache_size=`+engine.Number+` \(total_rest_memory=`+engine.Number+` GB, mamba_cache_per_req=`+engine.Number+` MB\)`,
			[]string{"max_mamba_cache_size", "total_rest_gib", "mamba_cache_per_req_mib"}, adviseMambaStateTooSmall),
		engine.NewPattern(engineName, "mamba_no_requests", engine.Fatal, `Hybrid \(mamba/linear-attention\) state cache is too small to serve any requests`,
			nil, adviseMambaNoRequests),
		engine.NewPattern(engineName, "mamba_capped", engine.Warning, `max_running_requests is capped to `+engine.Number+` by the mamba state cache \(max_mamba_cache_size=`+engine.Number+`, `+engine.Number+` state slots per request\)`,
			[]string{"max_running_requests", "max_mamba_cache_size", "slots_per_request"}, adviseMambaCapped),
		engine.NewPattern(engineName, "concurrency_reduced", engine.Warning, `max_running_requests reduced from the requested `+engine.Number+` to `+engine.Number+` \(per dp worker\), bound by ([a-z_]+)(?: \(max_mamba_cache_size=`+engine.Number+` per shard / `+engine.Number+` slots per request\))?`,
			[]string{"requested", "max_running_requests", "", "max_mamba_cache_size", "slots_per_request"}, adviseConcurrencyReduced).WithLaunch(map[string]string{"requested": "max_running_requests"}),
		engine.NewPattern(engineName, "max_running_reduced", engine.Warning, `max_running_requests was reduced from the requested `+engine.Number+` to `+engine.Number,
			[]string{"requested", "max_running_requests"}, adviseMaxRunningReduced).WithLaunch(map[string]string{"requested": "max_running_requests"}),
		engine.NewPattern(engineName, "max_total_tokens_too_large", engine.Warning, `max_total_tokens=`+engine.Number+` is larger than the profiled value `+engine.Number,
			[]string{"max_total_tokens", "profiled"}, adviseMaxTotalTokensTooLarge).WithLaunch(map[string]string{"max_total_tokens": "max_total_tokens"}),
		engine.NewPattern(engineName, "context_length_too_long", engine.Fatal, `User-specified context_length \(`+engine.Number+`\) is greater than the derived context_length \(`+engine.Number+`\)`,
			[]string{"context_length", "derived"}, adviseContextLengthTooLong).WithLaunch(map[string]string{"context_length": "context_length"}),
		engine.NewPattern(engineName, "kv_dtype_deprecated", engine.Fatal, `--kv-cache-dtype=fp4_e2m1 is deprecated`,
			nil, adviseKVDTypeDeprecated),
		engine.NewPattern(engineName, "kv_dtype_needs_fp4_torch", engine.Fatal, `--kv-cache-dtype=(\S+) requires torch\.float4_e2m1fn_x2 support`,
			[]string{""}, adviseKVDTypeNeedsFP4Torch),
		engine.NewPattern(engineName, "kv_dtype_unsupported", engine.Fatal, `Unsupported kv_cache_dtype: ([^\s.]+)`,
			[]string{""}, adviseKVDTypeUnsupported),
		engine.NewPattern(engineName, "pool_too_small", engine.Fatal, `Memory pool size is too small|max_running_request is zero`,
			nil, advisePoolTooSmall),
		engine.NewPattern(engineName, "memory_unbalanced", engine.Warning, `The memory capacity is unbalanced`,
			nil, adviseMemoryUnbalanced),
	}
}

// adviseNoKVMemory reads SGLang's no_kv_memory message.
// See docs/sglang.md#profile-kv-budget.
func adviseNoKVMemory(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("After the weights loaded, the free memory was smaller than the activation and CUDA-graph reserve SGLang keeps, pre-load free × (1 − mem_fraction_static) = pre × %.3f, so nothing was left for the KV cache. The static budget (weights + KV) must be at least %.4f of the pre-load free memory just to hold what is already loaded.", 1-n["mem_fraction_static"], n["minimum_viable"])
	a.Knob = "mem_fraction_static"
	s := n["suggested"]
	switch {
	case s < 0.95:
		v := math.Min(0.95, ceil3(s+0.03))
		a.Value = fmt3(v)
		a.Text = fmt.Sprintf("Raise --mem-fraction-static above %.3f; %s leaves about %.0f%% of the pre-load free memory for the KV cache. Every 0.01 above %.3f adds 1%% of it to the KV pool but takes it from the activation reserve, so stay at or below about 0.95.", s, a.Value, (v-n["minimum_viable"])*100, s)
	default:
		a.Value = ""
		a.Knob = "tp_size"
		a.Text = fmt.Sprintf("The weights alone need %.1f%% of the free memory: no --mem-fraction-static leaves room for activations and KV. Shard the model over more GPUs (--tp-size or --pp-size), use a larger GPU or a quantized checkpoint.", n["minimum_viable"]*100)
	}
	a.Alternatives = []string{"--tp-size / --pp-size (weights per GPU shrink)", "a quantized checkpoint (FP8/FP4 weights)", "stop other processes using the GPU"}
	return a
}

// adviseNotEnoughMemory reads SGLang's not_enough_memory message.
// See docs/sglang.md#errors.
func adviseNotEnoughMemory(n map[string]float64, s []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "The KV budget after weights and the activation reserve is smaller than one token of the KV pool (or the token cap rounds to zero pages), so the pool would have no tokens."
	a.Knob = "mem_fraction_static"
	if s[0] != "" {
		a.Value = fmt3(math.Min(0.95, ceil3(n["mem_fraction_static"]+0.05)))
		a.Text = fmt.Sprintf("Raise --mem-fraction-static from %s to %s or more (each 0.01 moves 1%% of the free memory from the activation reserve to the KV pool); if that is not enough, shard the model over more GPUs.", s[0], a.Value)
	} else {
		a.Text = "Raise --mem-fraction-static (by 0.05 at a time), or shard the model over more GPUs."
	}
	a.Alternatives = []string{"--tp-size / --pp-size", "--kv-cache-dtype fp8_e4m3 (halves the bytes per token)", "--max-total-tokens (if it was set too low)"}
	return a
}

// adviseSWAPoolTooSmall reads SGLang's swa_pool_too_small message.
// See docs/sglang.md#hybrid-swa-pool.
func adviseSWAPoolTooSmall(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	floor := n["sliding_window_size"] + n["page_size"]
	a.Meaning = fmt.Sprintf("The hybrid sliding-window pool got %.0f tokens, but admitting a prefill needs more than sliding_window_size + page_size = %.0f tokens in it. The SWA pool is swa_full_tokens_ratio × the full pool.", n["swa_tokens"], floor)
	a.Knob = "swa_full_tokens_ratio"
	factor := (floor + 1) / math.Max(n["swa_tokens"], 1)
	a.Text = fmt.Sprintf("The SWA pool must grow %.2f× (to more than %.0f tokens): multiply --swa-full-tokens-ratio by at least %.2f (with the default 0.8: %s). If that exceeds 1, the KV budget itself is too small: raise --mem-fraction-static or use more GPUs.", factor, floor, factor, ratioOrNone(0.8*factor))
	if v := 0.8 * factor; v <= 1 {
		a.Value = fmt3(ceil3(v))
	}
	a.Alternatives = []string{"--mem-fraction-static", "--tp-size", "--disable-hybrid-swa-memory (one full-size pool)"}
	return a
}

// adviseSWAChunkCap reads SGLang's swa_chunk_cap message.
// See docs/sglang.md#swa-chunk-cap.
func adviseSWAChunkCap(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("With --disable-radix-cache and --max-running-requests set, SGLang sizes the SWA pool to a hard cap (requests × (window + eviction interval + page) + chunked-prefill tokens): %.0f tokens = %.2f GiB, which takes the whole %.2f GiB KV budget, leaving nothing for the full-attention pool.", n["swa_tokens"], n["swa_gib"], n["available_gib"])
	a.Knob = "max_running_requests"
	f := n["available_gib"] / math.Max(n["swa_gib"], 1e-9)
	a.Text = fmt.Sprintf("The cap grows with --max-running-requests: scale it to well below %.2f× its current value (half of that leaves as much for the full pool as for the SWA pool), lower SGLANG_SWA_EVICTION_INTERVAL, or raise --mem-fraction-static.", f)
	a.Alternatives = []string{"SGLANG_SWA_EVICTION_INTERVAL (default 128)", "--mem-fraction-static", "--chunked-prefill-size"}
	return a
}

// adviseMambaStateTooSmall reads SGLang's mamba_state_too_small message.
// See docs/sglang.md#mamba-budget.
func adviseMambaStateTooSmall(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	per := n["mamba_cache_per_req_mib"]
	rest := n["total_rest_gib"]
	slots := math.Floor(rest*1024/math.Max(per, 1e-9)) - 1
	a.Meaning = fmt.Sprintf("After weights and the activation reserve, %.2f GiB is left for the linear-attention (mamba) state and the KV cache together; one state slot costs %.2f MiB, and the share given to state (mamba_full_memory_ratio/(1+ratio)) holds no slot.", rest, per)
	if slots >= 2 {
		a.Knob = "max_mamba_cache_size"
		a.Value = strconv.Itoa(int(slots / 2))
		a.Text = fmt.Sprintf("At most %.0f state slots fit in the %.2f GiB; set --max-mamba-cache-size %s (half, leaving the rest to the KV pool: each request needs 3 slots with the radix cache, 1 without), or raise --mamba-full-memory-ratio.", slots, rest, a.Value)
	} else {
		a.Knob = "mem_fraction_static"
		a.Text = fmt.Sprintf("Not even one %.2f MiB state slot fits in %.2f GiB: raise --mem-fraction-static, shard over more GPUs (--tp-size divides the state), or use --mamba-ssm-dtype bfloat16 (halves the SSM state).", per, rest)
	}
	a.Alternatives = []string{"--mamba-full-memory-ratio", "--max-running-requests", "--mamba-ssm-dtype bfloat16", "--tp-size"}
	return a
}

// adviseMambaNoRequests reads SGLang's mamba_no_requests message.
// See docs/sglang.md#max-running-requests.
func adviseMambaNoRequests(_ map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "max_running_requests = max_mamba_cache_size // slots-per-request came out 0: with the radix cache each request holds 3 state slots (1 without), and the state pool has fewer."
	a.Knob = "max_mamba_cache_size"
	a.Text = "Give the state pool at least 3 slots per request you want to run (--max-mamba-cache-size 3×N), raise --mamba-full-memory-ratio, or disable the radix cache (1 slot per request)."
	a.Alternatives = []string{"--mamba-full-memory-ratio", "--disable-radix-cache", "--mem-fraction-static"}
	return a
}

// adviseMambaCapped reads SGLang's mamba_capped message.
func adviseMambaCapped(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("Only %.0f requests can run at once: the state pool has %.0f slots and each request holds %.0f.", n["max_running_requests"], n["max_mamba_cache_size"], n["slots_per_request"])
	a.Knob = "max_mamba_cache_size"
	a.Text = fmt.Sprintf("For N concurrent requests set --max-mamba-cache-size %.0f×N (a.g. %s for twice as many), or raise --mamba-full-memory-ratio; --mamba-ssm-dtype bfloat16 halves the state size.", n["slots_per_request"], strconv.Itoa(int(2*n["max_running_requests"]*n["slots_per_request"])))
	a.Value = strconv.Itoa(int(2 * n["max_running_requests"] * n["slots_per_request"]))
	a.Alternatives = []string{"--mamba-full-memory-ratio", "--mamba-ssm-dtype bfloat16"}
	return a
}

// adviseConcurrencyReduced reads the newest SGLang's concurrency report
// when it reduced a requested value (docs/sglang.md#max-running-requests):
// the binding limit names the knob.
func adviseConcurrencyReduced(n map[string]float64, s []string) engine.Advice {
	var a engine.Advice
	bound := s[2]
	a.Meaning = fmt.Sprintf("SGLang runs %.0f requests per DP worker, not the requested %.0f: the %s limit binds (SGLang lists every limit and takes the smallest).", n["max_running_requests"], n["requested"], bound)
	switch bound {
	case LimitMamba:
		a.Knob = "max_mamba_cache_size"
		if slots := n["slots_per_request"]; slots > 0 {
			a.Value = strconv.Itoa(int(n["requested"] * slots))
			a.Text = fmt.Sprintf("Each request holds %.0f Mamba state slots: set --max-mamba-cache-size %s (requested × slots, memory permitting; times the DP workers with DP attention), raise --mamba-full-memory-ratio, or halve the state with --mamba-ssm-dtype bfloat16.", slots, a.Value)
		} else {
			a.Text = "Give the Mamba state pool slots-per-request × the requested count (--max-mamba-cache-size), raise --mamba-full-memory-ratio, or halve the state with --mamba-ssm-dtype bfloat16."
		}
		a.Alternatives = []string{"--mamba-full-memory-ratio", "--mamba-ssm-dtype bfloat16"}
	default:
		a.Knob = "mem_fraction_static"
		a.Text = "The KV pool allows half its tokens as requests: give it more memory (--mem-fraction-static), fp8 KV (--kv-cache-dtype fp8_e4m3) or more GPUs, or lower --max-running-requests to what fits."
		a.Alternatives = []string{"--kv-cache-dtype fp8_e4m3", "--tp-size", "--max-running-requests"}
	}
	return a
}

// adviseMaxRunningReduced reads SGLang's max_running_reduced message.
func adviseMaxRunningReduced(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("The KV pool holds fewer tokens than the requested %.0f requests need (SGLang caps requests at half the pool's tokens), so it runs %.0f per DP worker.", n["requested"], n["max_running_requests"])
	a.Knob = "max_running_requests"
	a.Value = fmt.Sprintf("%.0f", n["max_running_requests"])
	a.Text = fmt.Sprintf("Pass --max-running-requests %s to match, or grow the KV pool (--mem-fraction-static, --kv-cache-dtype fp8_e4m3, more GPUs) to keep %.0f.", a.Value, n["requested"])
	a.Alternatives = []string{"--mem-fraction-static", "--kv-cache-dtype fp8_e4m3", "--tp-size"}
	return a
}

// adviseMaxTotalTokensTooLarge reads SGLang's max_total_tokens_too_large message.
func adviseMaxTotalTokensTooLarge(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("--max-total-tokens only lowers the pool: the memory holds %.0f tokens, so %.0f was ignored.", n["profiled"], n["max_total_tokens"])
	a.Knob = "max_total_tokens"
	a.Value = fmt.Sprintf("%.0f", n["profiled"])
	a.Text = fmt.Sprintf("Drop --max-total-tokens or set it to %s or less; to really get more tokens raise --mem-fraction-static or use fp8 KV.", a.Value)
	return a
}

// adviseContextLengthTooLong reads SGLang's context_length_too_long message.
func adviseContextLengthTooLong(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("The model's config allows %.0f tokens (max_position_embeddings × rope scaling); %.0f is longer.", n["derived"], n["context_length"])
	a.Knob = "context_length"
	a.Value = fmt.Sprintf("%.0f", n["derived"])
	a.Text = fmt.Sprintf("Use --context-length %s or less, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 if the model really extrapolates.", a.Value)
	a.Alternatives = []string{"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"}
	return a
}

// adviseKVDTypeDeprecated reads SGLang's kv_dtype_deprecated message.
func adviseKVDTypeDeprecated(_ map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "fp4_e2m1 was renamed; the FP4 KV cache with one scale per 16 values is fp4_mx_block16."
	a.Knob, a.Value = "kv_cache_dtype", "fp4_mx_block16"
	a.Text = "Use --kv-cache-dtype fp4_mx_block16 (or nvfp4)."
	return a
}

// adviseKVDTypeNeedsFP4Torch reads SGLang's kv_dtype_needs_fp4_torch message.
func adviseKVDTypeNeedsFP4Torch(_ map[string]float64, s []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("%s stores KV as FP4, which needs torch.float4_e2m1fn_x2 (PyTorch 2.8+, CUDA 12.8+).", s[0])
	a.Knob, a.Value = "kv_cache_dtype", "fp8_e4m3"
	a.Text = "Upgrade PyTorch/CUDA, or use --kv-cache-dtype fp8_e4m3 (2× the FP4 bytes per token, half of bf16)."
	return a
}

// adviseKVDTypeUnsupported reads SGLang's kv_dtype_unsupported message.
func adviseKVDTypeUnsupported(_ map[string]float64, s []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("%q is not a --kv-cache-dtype SGLang knows.", s[0])
	a.Knob, a.Value = "kv_cache_dtype", "auto"
	a.Text = "Use one of: " + strings.Join(acceptedKVDTypes(), ", ") + "."
	return a
}

// advisePoolTooSmall reads SGLang's pool_too_small message.
func advisePoolTooSmall(_ map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "The KV pool holds too few tokens for one request (max_req_len = min(context_length, pool tokens) − 1 must be positive), or the request cap came out 0."
	a.Knob = "mem_fraction_static"
	a.Text = "Grow the KV pool: raise --mem-fraction-static, use --kv-cache-dtype fp8_e4m3 or more GPUs; or lower --context-length."
	a.Alternatives = []string{"--kv-cache-dtype fp8_e4m3", "--tp-size", "--context-length"}
	return a
}

// adviseMemoryUnbalanced reads SGLang's memory_unbalanced message.
func adviseMemoryUnbalanced(_ map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = "One TP rank has less than 90% of another's free memory before weight load; SGLang sizes every rank by the minimum, so the whole KV pool shrinks to the fullest GPU."
	a.Knob = "CUDA_VISIBLE_DEVICES"
	a.Text = "Find and stop the other processes on that GPU (nvidia-smi), or pick idle GPUs."
	return a
}

func fmt3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func ratioOrNone(r float64) string {
	if r > 1 {
		return "more than 1, so the ratio alone cannot do it"
	}
	return fmt3(ceil3(r))
}
