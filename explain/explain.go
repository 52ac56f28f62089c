// Package explain reads an inference engine's KV-cache error or warning
// (a pasted log line or exception text from SGLang, vLLM or TensorRT-LLM), says what it
// means and which knob to turn, with a value taken from the numbers in the
// message. Advise goes further when the launch flags are known: it plans
// the launch and searches the knob's value that makes it start.
package explain

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/plan"
)

// ErrUnrecognized reports text that matches no known engine message.
var ErrUnrecognized = errors.New("explain: unrecognized message")

// Engines.
const (
	SGLang = "sglang"
	VLLM   = "vllm"
	// Any marks a message both engines print.
	Any = "any"
)

// Explanation is what an engine message means and what to change.
type Explanation struct {
	// Engine is "sglang", "vllm" or "any" (a message both print).
	Engine string `json:"engine"`
	// Kind names the message ("no_kv_memory", "max_seq_len_too_long", ...).
	Kind string `json:"kind"`
	// Match is the part of the input that was recognised.
	Match string `json:"match"`
	// Meaning says what happened, in the engine's own terms.
	Meaning string `json:"meaning"`
	// Knob is the flag (or environment variable) to change.
	Knob string `json:"knob"`
	// Value is a value of Knob that follows from the message's numbers, ""
	// when the message does not carry enough to compute one.
	Value string `json:"value,omitempty"`
	// Advice says what to do, with the numbers.
	Advice string `json:"advice"`
	// Alternatives are other knobs that also help.
	Alternatives []string `json:"alternatives,omitempty"`
	// Numbers are the figures read from the message.
	Numbers map[string]float64 `json:"numbers,omitempty"`
	// Readings are the memory measurements elsewhere in the pasted log
	// (SGLang's "avail mem" before and after loading weights, vLLM's
	// "Available KV cache memory"); Advise plans with them.
	Readings *Readings `json:"readings,omitempty"`
}

// rule recognises one message.
type rule struct {
	engine, kind string
	re           *regexp.Regexp
	names        []string // one per capture group
	build        func(e *Explanation, n map[string]float64, s []string)
}

// num matches a number as engines print it ("16,384", "0.835", "-3").
const num = `(-?[\d][\d,]*(?:\.\d+)?|-?\.\d+)`

// rules are compiled on first use: a process that never explains (kvcfg
// plan) pays nothing for them.
var rules = sync.OnceValue(func() []rule { return append(builtinRules(), trtllmRules()...) })

func builtinRules() []rule {
	return []rule{
		// SGLang docs/sglang.md#profile-kv-budget.
		{SGLang, "no_kv_memory", regexp.MustCompile(`Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=` + num + `\.?\s*Raise --mem-fraction-static above ` + num + `\s*\(minimum viable = 1 - available/pre = ` + num + `\)`),
			[]string{"mem_fraction_static", "suggested", "minimum_viable"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("After the weights loaded, the free memory was smaller than the activation and CUDA-graph reserve SGLang keeps, pre-load free × (1 − mem_fraction_static) = pre × %.3f, so nothing was left for the KV cache. The static budget (weights + KV) must be at least %.4f of the pre-load free memory just to hold what is already loaded.", 1-n["mem_fraction_static"], n["minimum_viable"])
				e.Knob = knob("mem_fraction_static")
				s := n["suggested"]
				switch {
				case s < 0.95:
					v := math.Min(0.95, ceil3(s+0.03))
					e.Value = fmt3(v)
					e.Advice = fmt.Sprintf("Raise --mem-fraction-static above %.3f; %s leaves about %.0f%% of the pre-load free memory for the KV cache. Every 0.01 above %.3f adds 1%% of it to the KV pool but takes it from the activation reserve, so stay at or below about 0.95.", s, e.Value, (v-n["minimum_viable"])*100, s)
				default:
					e.Value = ""
					e.Knob = knob("tp_size")
					e.Advice = fmt.Sprintf("The weights alone need %.1f%% of the free memory: no --mem-fraction-static leaves room for activations and KV. Shard the model over more GPUs (--tp-size or --pp-size), use a larger GPU or a quantized checkpoint.", n["minimum_viable"]*100)
				}
				e.Alternatives = []string{"--tp-size / --pp-size (weights per GPU shrink)", "a quantized checkpoint (FP8/FP4 weights)", "stop other processes using the GPU"}
			}},
		// SGLang docs/sglang.md#errors / docs/sglang.md#errors.
		{SGLang, "not_enough_memory", regexp.MustCompile(`Not enough memory\. Please try to increase --mem-fraction-static\.?(?:\s*Current value: mem_fraction_static=` + num + `)?`),
			[]string{"mem_fraction_static"},
			func(e *Explanation, n map[string]float64, s []string) {
				e.Meaning = "The KV budget after weights and the activation reserve is smaller than one token of the KV pool (or the token cap rounds to zero pages), so the pool would have no tokens."
				e.Knob = knob("mem_fraction_static")
				if s[0] != "" {
					e.Value = fmt3(math.Min(0.95, ceil3(n["mem_fraction_static"]+0.05)))
					e.Advice = fmt.Sprintf("Raise --mem-fraction-static from %s to %s or more (each 0.01 moves 1%% of the free memory from the activation reserve to the KV pool); if that is not enough, shard the model over more GPUs.", s[0], e.Value)
				} else {
					e.Advice = "Raise --mem-fraction-static (by 0.05 at a time), or shard the model over more GPUs."
				}
				e.Alternatives = []string{"--tp-size / --pp-size", "--kv-cache-dtype fp8_e4m3 (halves the bytes per token)", "--max-total-tokens (if it was set too low)"}
			}},
		// SGLang docs/sglang.md#hybrid-swa-pool.
		{SGLang, "swa_pool_too_small", regexp.MustCompile(`SWA pool \(` + num + ` tokens\) cannot hold even one request: the prefill admission floor is sliding_window_size \(` + num + `\) \+ page_size \(` + num + `\)`),
			[]string{"swa_tokens", "sliding_window_size", "page_size"},
			func(e *Explanation, n map[string]float64, _ []string) {
				floor := n["sliding_window_size"] + n["page_size"]
				e.Meaning = fmt.Sprintf("The hybrid sliding-window pool got %.0f tokens, but admitting a prefill needs more than sliding_window_size + page_size = %.0f tokens in it. The SWA pool is swa_full_tokens_ratio × the full pool.", n["swa_tokens"], floor)
				e.Knob = knob("swa_full_tokens_ratio")
				factor := (floor + 1) / math.Max(n["swa_tokens"], 1)
				e.Advice = fmt.Sprintf("The SWA pool must grow %.2f× (to more than %.0f tokens): multiply --swa-full-tokens-ratio by at least %.2f (with the default 0.8: %s). If that exceeds 1, the KV budget itself is too small: raise --mem-fraction-static or use more GPUs.", factor, floor, factor, ratioOrNone(0.8*factor))
				if v := 0.8 * factor; v <= 1 {
					e.Value = fmt3(ceil3(v))
				}
				e.Alternatives = []string{"--mem-fraction-static", "--tp-size", "--disable-hybrid-swa-memory (one full-size pool)"}
			}},
		// SGLang docs/sglang.md#swa-chunk-cap.
		{SGLang, "swa_chunk_cap", regexp.MustCompile(`SWA pool cap \(` + num + ` tokens, ` + num + ` GiB\) leaves no room for the full KV pool within the available ` + num + ` GiB`),
			[]string{"swa_tokens", "swa_gib", "available_gib"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("With --disable-radix-cache and --max-running-requests set, SGLang sizes the SWA pool to a hard cap (requests × (window + eviction interval + page) + chunked-prefill tokens): %.0f tokens = %.2f GiB, which takes the whole %.2f GiB KV budget, leaving nothing for the full-attention pool.", n["swa_tokens"], n["swa_gib"], n["available_gib"])
				e.Knob = knob("max_running_requests")
				f := n["available_gib"] / math.Max(n["swa_gib"], 1e-9)
				e.Advice = fmt.Sprintf("The cap grows with --max-running-requests: scale it to well below %.2f× its current value (half of that leaves as much for the full pool as for the SWA pool), lower SGLANG_SWA_EVICTION_INTERVAL, or raise --mem-fraction-static.", f)
				e.Alternatives = []string{"SGLANG_SWA_EVICTION_INTERVAL (default 128)", "--mem-fraction-static", "--chunked-prefill-size"}
			}},
		// SGLang docs/sglang.md#mamba-budget.
		{SGLang, "mamba_state_too_small", regexp.MustCompile(`Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache\. Computed max_mamba_cache_size=` + num + ` \(total_rest_memory=` + num + ` GB, mamba_cache_per_req=` + num + ` MB\)`),
			[]string{"max_mamba_cache_size", "total_rest_gib", "mamba_cache_per_req_mib"},
			func(e *Explanation, n map[string]float64, _ []string) {
				per := n["mamba_cache_per_req_mib"]
				rest := n["total_rest_gib"]
				slots := math.Floor(rest*1024/math.Max(per, 1e-9)) - 1
				e.Meaning = fmt.Sprintf("After weights and the activation reserve, %.2f GiB is left for the linear-attention (mamba) state and the KV cache together; one state slot costs %.2f MiB, and the share given to state (mamba_full_memory_ratio/(1+ratio)) holds no slot.", rest, per)
				if slots >= 2 {
					e.Knob = knob("max_mamba_cache_size")
					e.Value = strconv.Itoa(int(slots / 2))
					e.Advice = fmt.Sprintf("At most %.0f state slots fit in the %.2f GiB; set --max-mamba-cache-size %s (half, leaving the rest to the KV pool: each request needs 3 slots with the radix cache, 1 without), or raise --mamba-full-memory-ratio.", slots, rest, e.Value)
				} else {
					e.Knob = knob("mem_fraction_static")
					e.Advice = fmt.Sprintf("Not even one %.2f MiB state slot fits in %.2f GiB: raise --mem-fraction-static, shard over more GPUs (--tp-size divides the state), or use --mamba-ssm-dtype bfloat16 (halves the SSM state).", per, rest)
				}
				e.Alternatives = []string{"--mamba-full-memory-ratio", "--max-running-requests", "--mamba-ssm-dtype bfloat16", "--tp-size"}
			}},
		// SGLang docs/sglang.md#max-running-requests.
		{SGLang, "mamba_no_requests", regexp.MustCompile(`Hybrid \(mamba/linear-attention\) state cache is too small to serve any requests`),
			nil,
			func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = "max_running_requests = max_mamba_cache_size // slots-per-request came out 0: with the radix cache each request holds 3 state slots (1 without), and the state pool has fewer."
				e.Knob = knob("max_mamba_cache_size")
				e.Advice = "Give the state pool at least 3 slots per request you want to run (--max-mamba-cache-size 3×N), raise --mamba-full-memory-ratio, or disable the radix cache (1 slot per request)."
				e.Alternatives = []string{"--mamba-full-memory-ratio", "--disable-radix-cache", "--mem-fraction-static"}
			}},
		{SGLang, "mamba_capped", regexp.MustCompile(`max_running_requests is capped to ` + num + ` by the mamba state cache \(max_mamba_cache_size=` + num + `, ` + num + ` state slots per request\)`),
			[]string{"max_running_requests", "max_mamba_cache_size", "slots_per_request"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("Only %.0f requests can run at once: the state pool has %.0f slots and each request holds %.0f.", n["max_running_requests"], n["max_mamba_cache_size"], n["slots_per_request"])
				e.Knob = knob("max_mamba_cache_size")
				e.Advice = fmt.Sprintf("For N concurrent requests set --max-mamba-cache-size %.0f×N (e.g. %s for twice as many), or raise --mamba-full-memory-ratio; --mamba-ssm-dtype bfloat16 halves the state size.", n["slots_per_request"], strconv.Itoa(int(2*n["max_running_requests"]*n["slots_per_request"])))
				e.Value = strconv.Itoa(int(2 * n["max_running_requests"] * n["slots_per_request"]))
				e.Alternatives = []string{"--mamba-full-memory-ratio", "--mamba-ssm-dtype bfloat16"}
			}},
		{SGLang, "max_running_reduced", regexp.MustCompile(`max_running_requests was reduced from the requested ` + num + ` to ` + num),
			[]string{"requested", "max_running_requests"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("The KV pool holds fewer tokens than the requested %.0f requests need (SGLang caps requests at half the pool's tokens), so it runs %.0f per DP worker.", n["requested"], n["max_running_requests"])
				e.Knob = knob("max_running_requests")
				e.Value = fmt.Sprintf("%.0f", n["max_running_requests"])
				e.Advice = fmt.Sprintf("Pass --max-running-requests %s to match, or grow the KV pool (--mem-fraction-static, --kv-cache-dtype fp8_e4m3, more GPUs) to keep %.0f.", e.Value, n["requested"])
				e.Alternatives = []string{"--mem-fraction-static", "--kv-cache-dtype fp8_e4m3", "--tp-size"}
			}},
		{SGLang, "max_total_tokens_too_large", regexp.MustCompile(`max_total_tokens=` + num + ` is larger than the profiled value ` + num),
			[]string{"max_total_tokens", "profiled"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("--max-total-tokens only lowers the pool: the memory holds %.0f tokens, so %.0f was ignored.", n["profiled"], n["max_total_tokens"])
				e.Knob = knob("max_total_tokens")
				e.Value = fmt.Sprintf("%.0f", n["profiled"])
				e.Advice = fmt.Sprintf("Drop --max-total-tokens or set it to %s or less; to really get more tokens raise --mem-fraction-static or use fp8 KV.", e.Value)
			}},
		{SGLang, "context_length_too_long", regexp.MustCompile(`User-specified context_length \(` + num + `\) is greater than the derived context_length \(` + num + `\)`),
			[]string{"context_length", "derived"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("The model's config allows %.0f tokens (max_position_embeddings × rope scaling); %.0f is longer.", n["derived"], n["context_length"])
				e.Knob = knob("context_length")
				e.Value = fmt.Sprintf("%.0f", n["derived"])
				e.Advice = fmt.Sprintf("Use --context-length %s or less, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 if the model really extrapolates.", e.Value)
				e.Alternatives = []string{"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"}
			}},
		{SGLang, "kv_dtype_deprecated", regexp.MustCompile(`--kv-cache-dtype=fp4_e2m1 is deprecated`),
			nil,
			func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = "fp4_e2m1 was renamed; the FP4 KV cache with one scale per 16 values is fp4_mx_block16."
				e.Knob, e.Value = knob("kv_cache_dtype"), "fp4_mx_block16"
				e.Advice = "Use --kv-cache-dtype fp4_mx_block16 (or nvfp4)."
			}},
		{SGLang, "kv_dtype_needs_fp4_torch", regexp.MustCompile(`--kv-cache-dtype=(\S+) requires torch\.float4_e2m1fn_x2 support`),
			[]string{""},
			func(e *Explanation, _ map[string]float64, s []string) {
				e.Meaning = fmt.Sprintf("%s stores KV as FP4, which needs torch.float4_e2m1fn_x2 (PyTorch 2.8+, CUDA 12.8+).", s[0])
				e.Knob, e.Value = knob("kv_cache_dtype"), "fp8_e4m3"
				e.Advice = "Upgrade PyTorch/CUDA, or use --kv-cache-dtype fp8_e4m3 (2× the FP4 bytes per token, half of bf16)."
			}},
		{SGLang, "kv_dtype_unsupported", regexp.MustCompile(`Unsupported kv_cache_dtype: ([^\s.]+)`),
			[]string{""},
			func(e *Explanation, _ map[string]float64, s []string) {
				e.Meaning = fmt.Sprintf("%q is not a --kv-cache-dtype SGLang knows.", s[0])
				e.Knob, e.Value = knob("kv_cache_dtype"), "auto"
				e.Advice = "Use one of: " + strings.Join(sglang.AcceptedKVDTypes(), ", ") + "."
			}},
		{SGLang, "pool_too_small", regexp.MustCompile(`Memory pool size is too small|max_running_request is zero`),
			nil,
			func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = "The KV pool holds too few tokens for one request (max_req_len = min(context_length, pool tokens) − 1 must be positive), or the request cap came out 0."
				e.Knob = knob("mem_fraction_static")
				e.Advice = "Grow the KV pool: raise --mem-fraction-static, use --kv-cache-dtype fp8_e4m3 or more GPUs; or lower --context-length."
				e.Alternatives = []string{"--kv-cache-dtype fp8_e4m3", "--tp-size", "--context-length"}
			}},
		{SGLang, "memory_unbalanced", regexp.MustCompile(`The memory capacity is unbalanced`),
			nil,
			func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = "One TP rank has less than 90% of another's free memory before weight load; SGLang sizes every rank by the minimum, so the whole KV pool shrinks to the fullest GPU."
				e.Knob = "CUDA_VISIBLE_DEVICES"
				e.Advice = "Find and stop the other processes on that GPU (nvidia-smi), or pick idle GPUs."
			}},

		// Both engines: an allocation beyond what the engine kept free.
		{Any, "cuda_out_of_memory", regexp.MustCompile(`(?:CUDA|HIP) out of memory\. Tried to allocate ` + num + ` (GiB|MiB|KiB)`),
			[]string{"tried", ""},
			func(e *Explanation, n map[string]float64, s []string) {
				e.Meaning = fmt.Sprintf("A %s %s allocation at run time (activations, CUDA graphs, sampling buffers) found no free memory: the engine's static pools (weights + KV cache) left too little outside them.", s[0], s[1])
				e.Knob = knob("mem_fraction_static")
				e.Advice = "SGLang: lower --mem-fraction-static by 0.02-0.05 (the reserve outside the pools grows by that share of the free memory) or lower --chunked-prefill-size / --cuda-graph-max-bs. vLLM: lower --gpu-memory-utilization or --max-num-batched-tokens."
				e.Alternatives = []string{"--gpu-memory-utilization (vLLM)", "--chunked-prefill-size", "--cuda-graph-max-bs", "--max-num-batched-tokens (vLLM)"}
			}},

		// vLLM (docs/vllm.md#memory-budget).
		{VLLM, "max_seq_len_too_long", regexp.MustCompile(`To serve at least one request with the models?'?s'? max seq len \(` + num + `\),?\s*\(?` + num + ` GiB KV cache is needed, which is larger than the available KV cache memory \(` + num + ` GiB\)\.?(?:\s*Based on the available memory, the estimated maximum model length is ` + num + `)?`),
			[]string{"max_model_len", "needed_gib", "available_gib", "estimated_max_model_len"},
			func(e *Explanation, n map[string]float64, s []string) {
				e.Meaning = fmt.Sprintf("vLLM refuses to start unless one request of max_model_len (%.0f tokens) fits in the KV cache: it needs %.2f GiB, the budget left under --gpu-memory-utilization after weights, activations and graphs is %.2f GiB.", n["max_model_len"], n["needed_gib"], n["available_gib"])
				e.Knob = knob("max_model_len")
				if s[3] != "" {
					e.Value = fmt.Sprintf("%.0f", n["estimated_max_model_len"])
				} else if n["needed_gib"] > 0 {
					e.Value = fmt.Sprintf("%.0f", math.Floor(n["max_model_len"]*n["available_gib"]/n["needed_gib"]))
				}
				e.Advice = fmt.Sprintf("Set --max-model-len %s or less, or give the KV cache %.2f GiB more per GPU: raise --gpu-memory-utilization by %.2f GiB ÷ the GPU's total memory (or shard over more GPUs, or use --kv-cache-dtype fp8).", e.Value, n["needed_gib"]-n["available_gib"], n["needed_gib"]-n["available_gib"])
				e.Alternatives = []string{"--gpu-memory-utilization", "--kv-cache-dtype fp8", "--tensor-parallel-size", "--max-model-len -1 (auto-fit)"}
			}},
		{VLLM, "free_memory_below_utilization", regexp.MustCompile(`Free memory on device(?: [^\s(]+)? \(` + num + `(?:-` + num + `)?/` + num + ` GiB\) on startup is less than desired GPU memory utilization \(` + num + `, ` + num + ` GiB\)`),
			[]string{"free_gib", "free_gib_max", "total_gib", "gpu_memory_utilization", "requested_gib"},
			func(e *Explanation, n map[string]float64, _ []string) {
				free, total := n["free_gib"], n["total_gib"]
				e.Meaning = fmt.Sprintf("--gpu-memory-utilization is a share of the GPU's total memory: %.2f × %.2f GiB = %.2f GiB, but only %.2f GiB was free at startup (another process, or a previous engine still releasing memory).", n["gpu_memory_utilization"], total, n["requested_gib"], free)
				e.Knob = knob("gpu_memory_utilization")
				if total > 0 {
					e.Value = fmt.Sprintf("%.2f", math.Floor(free/total*100)/100)
				}
				e.Advice = fmt.Sprintf("Lower --gpu-memory-utilization to %s or less (the KV cache shrinks by the same share), or free the GPU: stop the other process and retry.", e.Value)
				e.Alternatives = []string{"stop other GPU processes (nvidia-smi)", "--kv-cache-memory-bytes"}
			}},
		{VLLM, "no_cache_blocks", regexp.MustCompile("No available memory for the cache blocks"),
			nil,
			func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = "Weights, activation peak, non-torch memory and CUDA graphs already use all of total × gpu_memory_utilization: the KV budget is zero or negative."
				e.Knob = knob("gpu_memory_utilization")
				e.Advice = "Raise --gpu-memory-utilization, shard over more GPUs (--tensor-parallel-size), lower --max-num-batched-tokens (smaller activation peak) or use a quantized checkpoint."
				e.Alternatives = []string{"--tensor-parallel-size", "--max-num-batched-tokens", "--enforce-eager (no CUDA graphs)"}
			}},
		{VLLM, "kv_smaller_than_max_seq_len", regexp.MustCompile(`The model'?s max seq len \(` + num + `\) is larger than the maximum number of tokens that can be stored in KV cache \(` + num + `\)`),
			[]string{"max_model_len", "kv_tokens"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("The KV cache holds %.0f tokens, fewer than one request of max_model_len %.0f.", n["kv_tokens"], n["max_model_len"])
				e.Knob = knob("max_model_len")
				e.Value = fmt.Sprintf("%.0f", n["kv_tokens"])
				e.Advice = fmt.Sprintf("Set --max-model-len %s or less, or raise --gpu-memory-utilization.", e.Value)
				e.Alternatives = []string{"--gpu-memory-utilization", "--kv-cache-dtype fp8"}
			}},
		{VLLM, "max_model_len_too_long", regexp.MustCompile(`User-specified max_model_len \(` + num + `\) is greater than the derived max_model_len \(` + num),
			[]string{"max_model_len", "derived"},
			func(e *Explanation, n map[string]float64, _ []string) {
				e.Meaning = fmt.Sprintf("The model's config allows %.0f tokens; %.0f is longer.", n["derived"], n["max_model_len"])
				e.Knob = knob("max_model_len")
				e.Value = fmt.Sprintf("%.0f", n["derived"])
				e.Advice = fmt.Sprintf("Use --max-model-len %s or less, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 if the model really extrapolates.", e.Value)
				e.Alternatives = []string{"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"}
			}},
		{VLLM, "auto_fit_failed", regexp.MustCompile(`Cannot auto-fit max_model_len`),
			nil,
			func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = "With --max-model-len -1 vLLM searches the longest context that fits; not even one token's KV fits in the budget."
				e.Knob = knob("gpu_memory_utilization")
				e.Advice = "Raise --gpu-memory-utilization or shard over more GPUs (--tensor-parallel-size)."
				e.Alternatives = []string{"--tensor-parallel-size"}
			}},
	}
}

// Explain recognises an engine message in text (a log line, an exception,
// or a whole log: the first known message wins) and explains it.
func Explain(text string) (*Explanation, error) {
	t := strings.Join(strings.Fields(text), " ") // engines wrap long messages
	if t == "" {
		return nil, ErrNoInput
	}
	best, bestAt := -1, len(t)+1
	var bestLoc []int
	for i, r := range rules() {
		loc := r.re.FindStringSubmatchIndex(t)
		if loc != nil && loc[0] < bestAt {
			best, bestAt, bestLoc = i, loc[0], loc
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("%w: no SGLang, vLLM or TensorRT-LLM KV-cache message found (run `kvcfg explain --list` for the known ones)", ErrUnrecognized)
	}
	r := rules()[best]
	e := &Explanation{Engine: r.engine, Kind: r.kind, Match: t[bestLoc[0]:bestLoc[1]], Numbers: map[string]float64{}}
	subs := make([]string, len(r.names))
	for i := range r.names {
		a, b := bestLoc[2+2*i], bestLoc[3+2*i]
		if a < 0 {
			continue
		}
		subs[i] = t[a:b]
		if r.names[i] == "" {
			continue
		}
		if v, err := strconv.ParseFloat(strings.ReplaceAll(subs[i], ",", ""), 64); err == nil {
			e.Numbers[r.names[i]] = v
		}
	}
	if len(e.Numbers) == 0 {
		e.Numbers = nil
	}
	r.build(e, e.Numbers, subs)
	if rd := ReadMeasurements(t); !rd.Empty() {
		e.Readings = &rd
	}
	return e, nil
}

// Known lists the kinds of message Explain recognises, as "engine/kind".
func Known() []string {
	rs := rules()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.engine + "/" + r.kind
	}
	return out
}

func ceil3(x float64) float64 { return math.Ceil(x*1000-1e-9) / 1000 }

func fmt3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func ratioOrNone(r float64) string {
	if r > 1 {
		return "more than 1, so the ratio alone cannot do it"
	}
	return fmt3(ceil3(r))
}

// knob is the flag of the request key key, from the flag table
// (plan/flags.go), so that a knob explain names is one kvcfg and the
// engine take.
func knob(key string) string {
	if f, ok := plan.LookupFlag(key); ok {
		return f.Name
	}
	return "--" + strings.ReplaceAll(key, "_", "-")
}
