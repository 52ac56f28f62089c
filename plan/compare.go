package plan

import (
	"context"
	"errors"
	"slices"
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

// Compare runs req on every engine × dtype × TP size. It takes every
// planning input: each column plans the inputs its engine takes (an
// engine-specific flag only affects its engine; the context length is
// carried over into vLLM's max_model_len and TensorRT-LLM's max_seq_len),
// and an input no compared engine takes is an error. A column whose engine
// refuses (or rejects the dtype) records the error and the columns go on;
// Compare fails only when the shared request is invalid, the context ends,
// or every column failed (then with the first error).
func Compare(ctx context.Context, req CompareRequest) (*Comparison, error) {
	engines, dtypes, tps, err := compareAxes(req)
	if err != nil {
		return nil, err
	}
	if err := checkShared(req.Request, engines, tps); err != nil {
		return nil, err
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
				col, err := compareColumn(ctx, req.Request, eng, dt, tp, out)
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return nil, err
				}
				if err == nil {
					ok++
				} else if first == nil {
					first = err
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

// compareAxes are the engines, KV cache dtypes and TP sizes req compares,
// normalized, with every problem of them.
func compareAxes(req CompareRequest) (engines, dtypes []string, tps []int, err error) {
	engines = slices.Clone(req.Engines)
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
		if !knownEngine(e) {
			errs = append(errs, fieldErr("engines", "unknown engine %q (accepted: %s)", e, strings.Join(Engines(), ", ")))
		}
	}
	dtypes = slices.Clone(req.KVCacheDTypes)
	if len(dtypes) == 0 {
		dtypes = strings.Split(req.KVCacheDType, ",")
	}
	for i, d := range dtypes {
		dtypes[i] = strings.TrimSpace(d)
		if dtypes[i] == "" {
			dtypes[i] = "auto"
		}
	}
	tps = req.TPSizes
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
	return engines, dtypes, tps, errors.Join(errs...)
}

// checkShared checks the shared request base: valid in itself (at the
// largest TP size, so that DP attention's tp ≥ dp holds where any column
// can hold it), and every input taken by some compared engine.
func checkShared(base Request, engines []string, tps []int) error {
	check := base
	check.Engine, check.KVCacheDType = "", ""
	check.TPSize, check.TensorParallelSize = slices.Max(tps), 0
	errs := check.validate(false)
	for _, f := range flagTable {
		if v, _ := base.FieldString(f.Key); v == "" || f.Key == "engine" || f.Key == "kv_cache_dtype" || f.Key == "tp_size" {
			continue
		}
		if !slices.ContainsFunc(engines, f.Accepts) {
			errs = append(errs, fieldErr(f.Key, "%s is a %s flag and no compared engine takes it: add its engine to --engine, or leave it out", f.Name, ownerLabels(f)))
		}
	}
	return errors.Join(errs...)
}

// compareColumn plans base for engine eng with KV cache dtype dt at TP size
// tp: the column, and the plan's error (the column says it in words). The
// first report names the comparison's model and GPU in out.
func compareColumn(ctx context.Context, base Request, eng, dt string, tp int, out *Comparison) (CompareColumn, error) {
	r := base.ForEngine(eng)
	r.KVCacheDType = dt
	r.TPSize, r.TensorParallelSize = tp, 0
	col := CompareColumn{Engine: eng, KVCacheDType: dt, TPSize: tp, Flags: EngineArgs(r, false)}
	rep, err := Run(ctx, r)
	if rep != nil {
		fillColumn(&col, rep)
		if out.Model == "" {
			out.Model, out.GPU = rep.Model, rep.GPU
		}
	}
	if err != nil {
		col.Error = err.Error()
		if rep != nil && rep.Error != "" {
			col.Error = rep.Error
		}
	}
	return col, err
}

// knownEngine reports whether name is a registered engine.
func knownEngine(name string) bool { _, ok := engines[name]; return ok }

// ownerLabels names the engines that take f ("vLLM", "SGLang/TensorRT-LLM").
func ownerLabels(f Flag) string {
	names := make([]string, len(f.Engines))
	for i, e := range f.Engines {
		names[i] = EngineLabel(e)
	}
	return strings.Join(names, "/")
}

func fillColumn(col *CompareColumn, rep *Report) {
	col.Report = rep
	col.ResolvedKVCacheDType = rep.ResolvedKVCacheDType
	col.BytesPerToken = rep.CellSizeBytes
	col.ContextLength = rep.ContextLength
	col.AvailableKVBytes = rep.AvailableKVBytes
	col.TokenCapacity = rep.MaxTotalNumTokens
	switch rep.Engine {
	case EngineVLLM:
		col.Tokens = rep.KVCacheSizeTokens
		col.MaxConcurrency = rep.MaxConcurrency
		col.ContextLength = rep.MaxModelLen
	default:
		col.Tokens = rep.MaxTotalNumTokens
		col.MaxConcurrency = float64(rep.MaxConcurrencyAtContextLength)
	}
}
