package explain

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// ErrNoInput reports empty input: nothing was pasted or piped.
var ErrNoInput = errors.New("explain: no input: paste the engine's error or log line as the argument, or pipe the log on standard input")

// Readings are the memory measurements a pasted log carries. With them a
// plan reproduces the run exactly instead of modelling its memory.
type Readings struct {
	// PreLoadFreeMemory and PostLoadFreeMemory are SGLang's "Load weight
	// begin. avail mem=X GB" and "Load weight end. ... avail mem=Y GB"
	// (SGLang's GB are GiB: it divides by 1 << 30).
	PreLoadFreeMemory  units.Size `json:"pre_load_free_memory,omitempty"`
	PostLoadFreeMemory units.Size `json:"post_load_free_memory,omitempty"`
	// KVCacheMemory is vLLM's "Available KV cache memory: X GiB", or the
	// TensorRT-LLM PyTorch backend's "available KV cache memory when
	// calculating max tokens: X GiB".
	KVCacheMemory units.Size `json:"kv_cache_memory,omitempty"`
	// FreeMemoryAfterLoad is the "available" of a TensorRT-LLM engine
	// build's "Memory usage when calculating max tokens in paged kv cache".
	FreeMemoryAfterLoad units.Size `json:"free_memory_after_load,omitempty"`
	// NumGPUBlocks is vLLM's "# GPU blocks: N" (V0 engines; the device
	// word varies: "# CUDA blocks").
	NumGPUBlocks int64 `json:"num_gpu_blocks,omitempty"`
	// Engine is the engine whose log lines gave the readings ("" when none).
	Engine string `json:"engine,omitempty"`
}

// readingRes are the reading patterns, compiled on first use.
var readingRes = sync.OnceValue(func() [6]*regexp.Regexp {
	return [6]*regexp.Regexp{
		regexp.MustCompile(`Load weight begin\. avail mem=([0-9.]+) GB`),
		regexp.MustCompile(`Load weight end\..*?avail mem=([0-9.]+) GB`),
		regexp.MustCompile(`Available KV cache memory: ([0-9.]+) GiB`),
		regexp.MustCompile(`available KV cache memory when calculating max tokens: ([0-9.]+) GiB`),
		regexp.MustCompile(`Memory usage when calculating max tokens in paged kv cache: total: [0-9.]+ GiB, available: ([0-9.]+) GiB`),
		regexp.MustCompile(`# \w+ blocks: ([0-9]+), # CPU blocks`),
	}
})

// ReadMeasurements returns the memory readings in a pasted log: the last
// of each kind wins (a log of several starts describes the last one).
func ReadMeasurements(text string) Readings {
	var r Readings
	re := readingRes()
	reSGLangBegin, reSGLangEnd, reVLLMAvail, reTRTTorch, reTRTEngine := re[0], re[1], re[2], re[3], re[4]
	last := func(re *regexp.Regexp) (units.Size, bool) {
		m := re.FindAllStringSubmatch(text, -1)
		if len(m) == 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(m[len(m)-1][1], 64)
		if err != nil || v <= 0 {
			return 0, false
		}
		return units.Size(v * (1 << 30)), true
	}
	if v, ok := last(reSGLangBegin); ok {
		r.PreLoadFreeMemory, r.Engine = v, SGLang
	}
	if v, ok := last(reSGLangEnd); ok {
		r.PostLoadFreeMemory, r.Engine = v, SGLang
	}
	if v, ok := last(reVLLMAvail); ok {
		r.KVCacheMemory, r.Engine = v, VLLM
	}
	if v, ok := last(reTRTTorch); ok {
		r.KVCacheMemory, r.Engine = v, TRTLLM
	}
	if v, ok := last(reTRTEngine); ok {
		r.FreeMemoryAfterLoad, r.Engine = v, TRTLLM
	}
	if m := re[5].FindAllStringSubmatch(text, -1); len(m) > 0 {
		if n, err := strconv.ParseInt(m[len(m)-1][1], 10, 64); err == nil && n > 0 {
			r.NumGPUBlocks, r.Engine = n, VLLM
		}
	}
	return r
}

// Empty reports whether no reading was found.
func (r Readings) Empty() bool { return r.Engine == "" }

// Apply sets the readings on req where req gives none, when req plans the
// engine that printed them (req.Engine "" counts as the readings'
// engine). It returns the request keys it set.
func (r Readings) Apply(req *plan.Request) []string {
	if r.Empty() {
		return nil
	}
	eng := strings.ToLower(req.Engine)
	if eng == "" {
		eng = plan.EngineSGLang
	}
	if eng != r.Engine {
		return nil
	}
	var set []string
	put := func(dst *units.Size, v units.Size, key string) {
		if v > 0 && *dst == 0 {
			*dst = v
			set = append(set, key)
		}
	}
	// SGLang needs both readings: one alone is not a measured run.
	if r.PreLoadFreeMemory > 0 && r.PostLoadFreeMemory > 0 && req.PreLoadFreeMemory == 0 && req.PostLoadFreeMemory == 0 {
		put(&req.PreLoadFreeMemory, r.PreLoadFreeMemory, "pre_load_free_memory")
		put(&req.PostLoadFreeMemory, r.PostLoadFreeMemory, "post_load_free_memory")
	}
	put(&req.KVCacheMemory, r.KVCacheMemory, "kv_cache_memory")
	put(&req.FreeMemoryAfterLoad, r.FreeMemoryAfterLoad, "free_memory_after_load")
	if r.NumGPUBlocks > 0 && req.NumGPUBlocksOverride == 0 {
		req.NumGPUBlocksOverride = r.NumGPUBlocks
		set = append(set, "num_gpu_blocks_override")
	}
	return set
}
