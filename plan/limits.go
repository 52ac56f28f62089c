package plan

import (
	"context"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// Every engine's verdict has one shape: the limits on how many requests
// run at once, the one that binds (the smallest; ties go to the first
// listed), and, for a plan that misses its target, the flag value that
// lifts the binding limit, re-planned. SGLang's limits are the ones its
// newest release names in its log (mem_cache/concurrency_limit.py) plus
// the pools' room for requests of the context length; vLLM's are
// max_num_seqs, the KV blocks and the blocks of its Mamba groups;
// TensorRT-LLM's are max_batch_size, the KV blocks and the window clamp
// of max_seq_len.

// The limit sources kvcfg adds to SGLang's own (sglang.LimitUser, ...).
const (
	// LimitKVPool is how many requests of the context length SGLang's
	// pools hold at once.
	LimitKVPool = "kv_pool"
	// LimitMaxNumSeqs is vLLM's --max-num-seqs.
	LimitMaxNumSeqs = "max_num_seqs"
	// LimitKVBlocks is the KV blocks ÷ the blocks one request of the
	// context length needs (vLLM, TensorRT-LLM).
	LimitKVBlocks = "kv_blocks"
	// LimitMambaGroups is vLLM's KV blocks ÷ the blocks one request's Mamba
	// state takes (its Mamba groups).
	LimitMambaGroups = "mamba_groups"
	// LimitMaxBatchSize is TensorRT-LLM's max_batch_size.
	LimitMaxBatchSize = "max_batch_size"
	// LimitMaxSeqLen is TensorRT-LLM's window clamp: max_seq_len lowered
	// below the requested length to what the KV blocks hold; its value is
	// the blocks' requests of the lowered length.
	LimitMaxSeqLen = "max_seq_len"
)

// ConcurrencyLimit is one bound on how many requests run at once on one
// rank (per DP worker).
type ConcurrencyLimit struct {
	// Source names the bound.
	Source string `json:"source"`
	// Value is the requests at once it allows.
	Value int64 `json:"value"`
	// Detail says where the value comes from.
	Detail string `json:"detail,omitempty"`
	// Flag is the engine flag that raises it ("" when none does).
	Flag string `json:"flag,omitempty"`
}

// Lift is the flag change that raises the binding limit, re-planned.
type Lift struct {
	// Args are the engine flags and values to set, in order.
	Args []string `json:"args"`
	// MaxConcurrency is the re-planned requests of the context length at
	// once; BoundBy is the limit that binds then.
	MaxConcurrency int64  `json:"max_concurrency"`
	BoundBy        string `json:"bound_by,omitempty"`
	// Serves says whether the re-planned launch holds the target.
	Serves bool `json:"serves"`
	// Error is the engine's refusal of the changed launch ("" when it
	// starts).
	Error string `json:"error,omitempty"`
}

// maxReportLimits is the most limits a report lists.
const maxReportLimits = 4

// limitState is what a report keeps to list its limits without an
// allocation and to lift the binding one.
type limitState struct {
	buf [maxReportLimits]ConcurrencyLimit
	// liftKey is the request key that lifts the binding limit: a cap set
	// to the next limit times liftScale, or (liftMemory) the memory share
	// or fp8 KV; "" when nothing lifts it.
	liftKey    string
	liftNext   int64
	liftMemory bool
}

// addLimit appends l to rep's limits (dropped past maxReportLimits).
func (rep *Report) addLimit(l ConcurrencyLimit) {
	if rep.ConcurrencyLimits == nil {
		rep.ConcurrencyLimits = rep.limits.buf[:0]
	}
	if len(rep.ConcurrencyLimits) < maxReportLimits {
		rep.ConcurrencyLimits = append(rep.ConcurrencyLimits, l)
	}
}

// bind sets BoundBy to the smallest limit (the first of equals) and
// returns its index, -1 when there are none.
func (rep *Report) bind() int {
	b := -1
	for i, l := range rep.ConcurrencyLimits {
		if b < 0 || l.Value < rep.ConcurrencyLimits[b].Value {
			b = i
		}
	}
	if b >= 0 {
		rep.BoundBy = rep.ConcurrencyLimits[b].Source
	}
	return b
}

// nextLimit is the smallest limit other than those for which skip is
// true, -1 when none.
func (rep *Report) nextLimit(skip func(ConcurrencyLimit) bool) int64 {
	n := int64(-1)
	for _, l := range rep.ConcurrencyLimits {
		if !skip(l) && (n < 0 || l.Value < n) {
			n = l.Value
		}
	}
	return n
}

// setLift records that key set to next lifts the binding limit (next ≤
// bound: nothing does).
func (rep *Report) setLift(key string, next, bound int64) {
	if next > bound {
		rep.limits.liftKey, rep.limits.liftNext = key, next
	}
}

// setMemoryLift records that more KV memory lifts the binding limit.
func (rep *Report) setMemoryLift() { rep.limits.liftKey, rep.limits.liftMemory = "memory", true }

// liftChanges are the changes that may lift rep's binding limit, planned
// by e, in the order to try them.
func (rep *Report) liftChanges(e engine, req *Request) []change {
	switch {
	case rep.limits.liftKey == "":
		return nil
	case rep.limits.liftMemory:
		return memoryLifts(e.knobs(*req, rep), rep)
	}
	out := []change{{rep.limits.liftKey, strconv.FormatInt(rep.limits.liftNext, 10)}}
	if rep.limits.liftKey == "max_mamba_cache_size" && !strings.EqualFold(req.MambaSSMDType, "bfloat16") {
		out = append(out, change{"mamba_ssm_dtype", "bfloat16"}) // SGLang's other remedy
	}
	return out
}

// memoryLifts are the changes that give the KV cache more room: the
// memory share up to the engine's safe maximum, and fp8 KV.
func memoryLifts(k knobs, rep *Report) []change {
	var out []change
	if k.share != "" && k.current < k.shareMax {
		out = append(out, change{k.share, strconv.FormatFloat(k.shareMax, 'f', -1, 64)})
	}
	if k.fp8Helps(rep.ResolvedKVCacheDType) {
		out = append(out, change{"kv_cache_dtype", k.fp8})
	}
	return out
}

// sglangLimits lists SGLang's limits on rep (filled from res).
func sglangLimits(rep *Report, res *sglang.Result, attnDP int) {
	c := &res.Concurrency
	for _, l := range c.Limits() {
		cl := ConcurrencyLimit{Source: l.Source, Value: l.Value, Detail: l.Detail, Flag: FlagFor(EngineSGLang, "max_running_requests")}
		switch l.Source {
		case sglang.LimitKVCapacity:
			cl.Flag = FlagFor(EngineSGLang, "mem_fraction_static")
		case sglang.LimitMamba:
			cl.Flag = FlagFor(EngineSGLang, "max_mamba_cache_size")
		}
		rep.addLimit(cl)
	}
	if len(c.Limits()) == 0 {
		return
	}
	rep.addLimit(ConcurrencyLimit{Source: LimitKVPool, Value: sglang.Capacity(res.Pools(), rep.ContextLength),
		Detail: "requests of context_length the KV pools hold", Flag: FlagFor(EngineSGLang, "mem_fraction_static")})
	b := rep.bind()
	isCap := func(l ConcurrencyLimit) bool {
		return l.Source == sglang.LimitUser || l.Source == sglang.LimitHeuristic || l.Source == sglang.LimitReqPool
	}
	bound := rep.ConcurrencyLimits[b]
	dp := int64(attnDP)
	switch {
	case isCap(bound):
		rep.setLift("max_running_requests", rep.nextLimit(isCap)*dp, bound.Value*dp)
	case bound.Source == sglang.LimitMamba:
		next := rep.nextLimit(func(l ConcurrencyLimit) bool { return l.Source == sglang.LimitMamba })
		if next > bound.Value && res.MambaSlotRatio > 0 {
			rep.setLift("max_mamba_cache_size", next*int64(res.MambaSlotRatio)*dp, 0)
		}
	default:
		rep.setMemoryLift()
	}
}

// vllmLimits lists vLLM's limits on rep (filled from res).
func vllmLimits(rep *Report, res *vllm.Result, req *Request) {
	if res.BlocksPerRequest <= 0 || res.Error != "" {
		return
	}
	memFlag := FlagFor(EngineVLLM, "gpu_memory_utilization")
	switch {
	case req.NumGPUBlocksOverride > 0:
		memFlag = FlagFor(EngineVLLM, "num_gpu_blocks_override")
	case req.KVCacheMemoryBytes > 0:
		memFlag = FlagFor(EngineVLLM, "kv_cache_memory_bytes")
	}
	rep.addLimit(ConcurrencyLimit{Source: LimitMaxNumSeqs, Value: int64(res.MaxNumSeqs), Flag: FlagFor(EngineVLLM, "max_num_seqs")})
	rep.addLimit(ConcurrencyLimit{Source: LimitKVBlocks, Value: res.NumGPUBlocks / res.BlocksPerRequest,
		Detail: "num_gpu_blocks / blocks one request of max_model_len needs in all groups", Flag: memFlag})
	var mamba int64
	for _, g := range res.Groups {
		if g.Kind == vllm.Mamba {
			mamba += g.BlocksPerRequest
		}
	}
	if mamba > 0 {
		rep.addLimit(ConcurrencyLimit{Source: LimitMambaGroups, Value: res.NumGPUBlocks / mamba,
			Detail: "num_gpu_blocks / blocks one request's Mamba state takes", Flag: memFlag})
	}
	rep.bindCapOrMemory(LimitMaxNumSeqs, "max_num_seqs", int64(res.MaxNumSeqs))
}

// trtllmLimits lists TensorRT-LLM's limits on rep (filled from res).
func trtllmLimits(rep *Report, res *trtllm.Result) {
	if res.Error != "" || res.MaxSeqLen <= 0 {
		return
	}
	memFlag := FlagFor(EngineTRTLLM, "free_gpu_memory_fraction")
	rep.addLimit(ConcurrencyLimit{Source: LimitMaxBatchSize, Value: int64(res.MaxBatchSize), Flag: FlagFor(EngineTRTLLM, "max_batch_size")})
	blocks := int64(res.MaxConcurrency(res.MaxSeqLen))
	if res.RequestedMaxSeqLen > res.MaxSeqLen {
		// Listed before the blocks it equals, so that it names the bound.
		rep.addLimit(ConcurrencyLimit{Source: LimitMaxSeqLen, Value: blocks,
			Detail: "the window clamp lowered max_seq_len " + strconv.Itoa(res.RequestedMaxSeqLen) + " to " + strconv.Itoa(res.MaxSeqLen) + ", the tokens the KV blocks hold",
			Flag:   memFlag})
	}
	rep.addLimit(ConcurrencyLimit{Source: LimitKVBlocks, Value: blocks,
		Detail: "primary blocks / blocks one request of max_seq_len needs", Flag: memFlag})
	rep.bindCapOrMemory(LimitMaxBatchSize, "max_batch_size", int64(res.MaxBatchSize))
}

// bindCapOrMemory binds rep's limits; when the request cap (limit source,
// set by key to value) binds, raising it to the next limit lifts it, else
// more KV memory does.
func (rep *Report) bindCapOrMemory(source, key string, value int64) {
	if b := rep.bind(); rep.ConcurrencyLimits[b].Source == source {
		rep.setLift(key, rep.nextLimit(func(l ConcurrencyLimit) bool { return l.Source == source }), value)
		return
	}
	rep.setMemoryLift()
}

// liftLimit re-plans req (whose model m is resolved) with each change that
// may lift rep's binding limit and records the one that gives the most
// requests at once (the first of equals).
func liftLimit(ctx context.Context, req Request, m *catalog.Model, rep *Report) {
	req.Resolved, req.NoAdvice = m, true
	for _, c := range rep.liftChanges(engines[req.Engine], &req) {
		if ctx.Err() != nil {
			return
		}
		r := req
		if r.SetField(c.key, c.value) != nil {
			continue
		}
		rp, err := planValid(ctx, &r, runOpts{})
		if rp == nil {
			continue
		}
		judge(rp, &r, err != nil)
		if rep.Lift != nil && (rp.Error != "" || rp.MaxConcurrencyAtContextLength <= rep.Lift.MaxConcurrency) {
			continue
		}
		rep.Lift = &Lift{Args: []string{FlagFor(r.Engine, c.key), c.value}, MaxConcurrency: rp.MaxConcurrencyAtContextLength,
			BoundBy: rp.BoundBy, Serves: rp.Verdict == VerdictServes, Error: rp.Error}
	}
}

// limitsText is the verdict's limits in words: the binding limit with the
// others, and the lift with what it gives ("" when there is none).
func (rep *Report) limitsText() (bound, lift string) {
	b := -1
	for i, l := range rep.ConcurrencyLimits {
		if l.Source == rep.BoundBy && b < 0 {
			b = i
		}
	}
	if b < 0 {
		return "", ""
	}
	l := rep.ConcurrencyLimits[b]
	var sb strings.Builder
	sb.WriteString("bound by " + l.Source + ": " + group3(l.Value) + requests(l.Value) + " at once")
	first := true
	for i, o := range rep.ConcurrencyLimits {
		if i == b {
			continue
		}
		if first {
			sb.WriteString(" (other limits: ")
			first = false
		} else {
			sb.WriteString(", ")
		}
		sb.WriteString(o.Source + "=" + group3(o.Value))
	}
	if !first {
		sb.WriteString(")")
	}
	if l.Flag != "" {
		sb.WriteString("; raised by " + l.Flag)
	}
	if rep.Lift != nil {
		lift = "lift: " + strings.Join(rep.Lift.Args, " ") + " → re-planned, " + group3(rep.Lift.MaxConcurrency) + requests(rep.Lift.MaxConcurrency) + " of " +
			group3(int64(rep.ContextLength)) + " tokens at once"
		switch {
		case rep.Lift.Error != "":
			lift = "lift: " + strings.Join(rep.Lift.Args, " ") + " → the engine refuses: " + rep.Lift.Error
		case rep.Lift.BoundBy != "":
			lift += " (bound by " + rep.Lift.BoundBy + ")"
		}
	}
	return sb.String(), lift
}

// requests is " request" for 1, else " requests".
func requests(n int64) string {
	if n == 1 {
		return " request"
	}
	return " requests"
}
