package plan

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// MaxCompareColumns bounds a comparison (engines × dtypes × TP sizes).
const MaxCompareColumns = 32

// CompareRequest plans one request side by side on several engines, and on
// several KV cache dtypes and tensor-parallel sizes when lists are given.
// The embedded Request carries everything else (model, GPU, context length,
// measured figures, engine-specific flags); its Engine, KVCacheDType and
// TPSize are replaced by the lists.
type CompareRequest struct {
	Request
	// Engines lists the engines (default: the request's engine field, which
	// may be a comma-separated list, else sglang and vllm).
	Engines []string `json:"engines,omitempty"`
	// KVCacheDTypes lists --kv-cache-dtype values (default: the request's
	// kv_cache_dtype, which may be a comma-separated list, else auto).
	KVCacheDTypes []string `json:"kv_cache_dtypes,omitempty"`
	// TPSizes lists tensor-parallel sizes (default: the request's tp_size).
	TPSizes []int `json:"tp_sizes,omitempty"`
}

// Comparison is the side-by-side result: one column per engine, dtype and
// TP size, in the order TP size, dtype, engine.
type Comparison struct {
	Model string `json:"model"`
	GPU   string `json:"gpu"`
	// Columns are the plans.
	Columns []CompareColumn `json:"columns"`
}

// CompareColumn is one engine's plan for one dtype and TP size, reduced to
// the figures that compare across engines, with the full report attached.
type CompareColumn struct {
	Engine       string `json:"engine"`
	KVCacheDType string `json:"kv_cache_dtype"`
	TPSize       int    `json:"tp_size"`
	// ResolvedKVCacheDType is the storage the engine really uses.
	ResolvedKVCacheDType string `json:"resolved_kv_cache_dtype,omitempty"`
	// BytesPerToken is the KV bytes of one token on one rank, all layers.
	BytesPerToken float64 `json:"bytes_per_token"`
	// Tokens is the engine's own token capacity figure: SGLang's
	// max_total_num_tokens, vLLM's logged "GPU KV cache size".
	Tokens int64 `json:"tokens"`
	// TokenCapacity is the group-aware capacity (equal to Tokens for
	// SGLang; kvcfg's corrected figure for vLLM hybrids).
	TokenCapacity int64 `json:"token_capacity"`
	// ContextLength is the context (max_model_len) the concurrency is for.
	ContextLength int `json:"context_length"`
	// MaxConcurrency is how many requests of ContextLength tokens fit: vLLM's
	// logged "Maximum concurrency", SGLang's max_concurrency_at_context_length.
	MaxConcurrency float64 `json:"max_concurrency"`
	// AvailableKVBytes is the KV budget per rank.
	AvailableKVBytes int64 `json:"available_kv_bytes"`
	// Flags are the command-line flags that give this engine this plan.
	Flags []string `json:"flags"`
	// Error is the engine's refusal or the input problem, if any.
	Error string `json:"error,omitempty"`
	// Report is the full plan (nil when the input was rejected).
	Report *Report `json:"report,omitempty"`
}

// Compare runs req on every engine × dtype × TP size. A column whose
// engine refuses (or rejects the dtype) records the error and the columns
// go on; Compare fails only when the shared request is invalid, the context
// ends, or every column failed (then with the first error).
func Compare(ctx context.Context, req CompareRequest) (*Comparison, error) {
	base := req.Request
	base.Engine = ""
	check := base
	if check.MaxModelLen == -1 {
		check.Engine = EngineVLLM // auto-fit is valid for the vLLM columns
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	engines := slices.Clone(req.Engines)
	switch {
	case len(engines) > 0:
	case strings.TrimSpace(req.Engine) != "":
		engines = strings.Split(req.Engine, ",")
	default:
		engines = []string{EngineSGLang, EngineVLLM}
	}
	var errs []error
	for i, e := range engines {
		e = strings.ToLower(strings.TrimSpace(e))
		engines[i] = e
		if e != EngineSGLang && e != EngineVLLM {
			errs = append(errs, fieldErr("engines", "unknown engine %q (accepted: sglang, vllm)", e))
		}
	}
	dtypes := slices.Clone(req.KVCacheDTypes)
	if len(dtypes) == 0 {
		dtypes = strings.Split(req.KVCacheDType, ",")
	}
	for i, d := range dtypes {
		dtypes[i] = strings.TrimSpace(d)
		if dtypes[i] == "" {
			dtypes[i] = "auto"
		}
	}
	tps := req.TPSizes
	if len(tps) == 0 {
		tps = []int{max(req.Normalized().TPSize, 1)}
	}
	for _, tp := range tps {
		if tp < 1 || tp > 1024 {
			errs = append(errs, fieldErr("tp_sizes", "%d must be between 1 and 1024", tp))
		}
	}
	if n := len(engines) * len(dtypes) * len(tps); n > MaxCompareColumns {
		errs = append(errs, fieldErr("", "%d columns (engines × kv_cache_dtypes × tp_sizes) exceed %d", n, MaxCompareColumns))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	// One context length for every engine: SGLang's --context-length is
	// vLLM's --max-model-len.
	// --max-model-len -1 (vLLM's auto-fit) has no SGLang counterpart: SGLang
	// columns then use the model's context length.
	if base.ContextLength == 0 && base.MaxModelLen > 0 {
		base.ContextLength = base.MaxModelLen
	}

	out := &Comparison{}
	var first error
	ok := 0
	for _, tp := range tps {
		for _, dt := range dtypes {
			for _, eng := range engines {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				r := base
				r.Engine, r.KVCacheDType = eng, dt
				r.TPSize, r.TensorParallelSize = tp, 0
				switch {
				case eng == EngineVLLM && r.MaxModelLen == 0:
					r.MaxModelLen = r.ContextLength
				case eng != EngineVLLM:
					r.MaxModelLen = 0
				}
				col := CompareColumn{Engine: eng, KVCacheDType: dt, TPSize: tp, Flags: engineFlags(r)}
				rep, err := Run(ctx, r)
				if rep != nil {
					fillColumn(&col, rep)
					if out.Model == "" {
						out.Model, out.GPU = rep.Model, rep.GPU
					}
				}
				if err != nil {
					if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
						return nil, err
					}
					col.Error = err.Error()
					if rep != nil && rep.Error != "" {
						col.Error = rep.Error
					}
					if first == nil {
						first = err
					}
				} else {
					ok++
				}
				out.Columns = append(out.Columns, col)
			}
		}
	}
	if ok == 0 && first != nil {
		return out, first
	}
	return out, nil
}

func fillColumn(col *CompareColumn, rep *Report) {
	col.Report = rep
	col.ResolvedKVCacheDType = rep.ResolvedKVCacheDType
	col.BytesPerToken = rep.CellSizeBytes
	col.ContextLength = rep.ContextLength
	col.AvailableKVBytes = rep.AvailableKVBytes
	col.TokenCapacity = rep.MaxTotalNumTokens
	if rep.Engine == EngineVLLM {
		col.Tokens = rep.KVCacheSizeTokens
		col.MaxConcurrency = rep.MaxConcurrency
		col.ContextLength = rep.MaxModelLen
	} else {
		col.Tokens = rep.MaxTotalNumTokens
		col.MaxConcurrency = float64(rep.MaxConcurrencyAtContextLength)
	}
}

// engineFlags are the flags to pass the engine for request r, in the
// engine's own names; defaults are left out.
func engineFlags(r Request) []string {
	var f []string
	add := func(name, v string) { f = append(f, name, v) }
	tp := max(r.TPSize, 1)
	dt := r.KVCacheDType
	if r.Engine == EngineVLLM {
		if tp > 1 {
			add("--tensor-parallel-size", strconv.Itoa(tp))
		}
		if r.PPSize > 1 {
			add("--pipeline-parallel-size", strconv.Itoa(r.PPSize))
		}
		if dt != "" && dt != "auto" {
			add("--kv-cache-dtype", dt)
		}
		if l := max(r.MaxModelLen, r.ContextLength); l > 0 {
			add("--max-model-len", strconv.Itoa(l))
		}
		if r.GPUMemoryUtilization > 0 {
			add("--gpu-memory-utilization", strconv.FormatFloat(r.GPUMemoryUtilization, 'f', -1, 64))
		}
		if r.KVCacheMemoryBytes > 0 {
			add("--kv-cache-memory-bytes", strconv.FormatInt(int64(r.KVCacheMemoryBytes), 10))
		}
		if r.BlockSize > 0 {
			add("--block-size", strconv.Itoa(r.BlockSize))
		}
		if r.MaxNumSeqs > 0 {
			add("--max-num-seqs", strconv.Itoa(r.MaxNumSeqs))
		}
		if r.MaxNumBatchedTokens > 0 {
			add("--max-num-batched-tokens", strconv.Itoa(r.MaxNumBatchedTokens))
		}
		return f
	}
	if tp > 1 {
		add("--tp-size", strconv.Itoa(tp))
	}
	if r.PPSize > 1 {
		add("--pp-size", strconv.Itoa(r.PPSize))
	}
	if dt != "" && dt != "auto" {
		add("--kv-cache-dtype", dt)
	}
	if l := max(r.ContextLength, r.MaxModelLen); l > 0 {
		add("--context-length", strconv.Itoa(l))
	}
	if r.MemFractionStatic > 0 {
		add("--mem-fraction-static", strconv.FormatFloat(r.MemFractionStatic, 'f', -1, 64))
	}
	if r.PageSize > 0 {
		add("--page-size", strconv.Itoa(r.PageSize))
	}
	if r.MaxRunningRequests > 0 {
		add("--max-running-requests", strconv.Itoa(r.MaxRunningRequests))
	}
	return f
}
