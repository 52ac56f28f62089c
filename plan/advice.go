package plan

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/units"
)

// Verdicts (Report.Verdict): the answer to "will it serve my target?".
const (
	// VerdictServes: the engine starts and holds the target concurrency of
	// requests at the context length at once.
	VerdictServes = "serves"
	// VerdictMisses: the engine starts, but its pools cannot hold the
	// target (not even one request of the context length when
	// serves_context_length is false).
	VerdictMisses = "misses_target"
	// VerdictRefuses: the engine would refuse to start.
	VerdictRefuses = "refuses"
)

// maxAdviceGPUs bounds the tensor-parallel sizes advice proposes: one
// node of eight GPUs, or two for a model whose weights alone need more.
const maxAdviceGPUs = 16

// judge sets rep's verdict for req's target: req.Concurrency requests (1
// when not given) of the plan's context length. refused says the engine
// would not start.
func judge(rep *Report, req *Request, refused bool) {
	n := max(req.Concurrency, 1)
	rep.TargetConcurrency = n
	rep.ServesContextLength = !refused && rep.MaxConcurrencyAtContextLength >= 1
	switch {
	case refused:
		rep.Verdict = VerdictRefuses
		rep.Answer = "Refuses to start: " + rep.Error
	case rep.MaxConcurrencyAtContextLength >= int64(n):
		rep.Verdict = VerdictServes
		// Appended rather than Sprintf'd: the common answer, on every
		// plan request the server answers (one allocation, not five).
		var b [128]byte
		a := append(b[:0], "Serves: "...)
		a = units.AppendGroup(a, rep.MaxConcurrencyAtContextLength)
		a = append(a, " requests of "...)
		a = units.AppendGroup(a, int64(rep.ContextLength))
		a = append(a, " tokens fit at once (target "...)
		a = strconv.AppendInt(a, int64(n), 10)
		rep.Answer = string(append(a, ")."...))
	case rep.MaxConcurrencyAtContextLength == 0:
		rep.Verdict = VerdictMisses
		ctx := group3(int64(rep.ContextLength))
		rep.Answer = fmt.Sprintf("Starts, but cannot hold one request of %s tokens: the KV pool holds %s tokens per GPU.", ctx, group3(rep.MaxTotalNumTokens))
		if rep.MaxTotalNumTokens >= int64(rep.ContextLength) && rep.ContextLength > 0 {
			// The tokens would fit; a cap or a state pool binds.
			rep.Answer = fmt.Sprintf("Starts, but cannot hold one request of %s tokens (max running requests %d).", ctx, rep.MaxRunningRequests)
		}
	default:
		rep.Verdict = VerdictMisses
		rep.Answer = fmt.Sprintf("Starts, but holds %s requests of %s tokens at once, not %d.", group3(rep.MaxConcurrencyAtContextLength), group3(int64(rep.ContextLength)), n)
	}
}

// knobs are the settings advice may change for an engine, as request
// keys ("" when the engine has no such setting).
type knobs struct {
	// share is the memory share key and shareMax the engine's safe
	// maximum; the search starts above the share the plan used (current).
	share    string
	shareMax float64
	current  float64
	// requestCap is the running-request cap key.
	requestCap string
	// fp8 is the engine's fp8 KV dtype string.
	fp8 string
	// engine is the engine the knobs are for (its flag spellings).
	engine string
}

// flag spells key as the engine's flag (plan/flags.go: the engine's own
// spelling where kvcfg takes it, else kvcfg's name).
func (k knobs) flag(key string) string { return FlagFor(k.engine, key) }

// change is one request field set to a value.
type change struct{ key, value string }

// advise searches the smallest change that makes req serve its target and
// sets rep's fix to it, but only after re-planning with the change and
// seeing the target met. When no change in reach meets it, the hint says
// what is missing. m is the resolved model; rep has been judged.
func advise(ctx context.Context, req Request, m *catalog.Model, rep *Report, planErr error, o runOpts) {
	e, ok := engines[req.Engine]
	if !ok || rep.Verdict == VerdictServes {
		return
	}
	req.Resolved, req.NoAdvice = m, true
	n := rep.TargetConcurrency
	// The target context: the plan's, but never beyond the model's own
	// context length (no engine serves more; asking for it is the error).
	L := rep.ContextLength
	if c := m.Spec.ContextLength; L <= 0 || (c > 0 && L > c) {
		L = c
	}
	k := e.knobs(req, rep)
	k.engine = req.Engine
	// A context beyond the model's is the engine's first complaint: its own
	// fix (the model's length) goes under every change tried.
	var base []change
	if rep.ContextLength > L && rep.FixValue == strconv.Itoa(L) {
		if key := keyOfFlag(rep.FixFlag); key == "context_length" || key == "max_model_len" {
			base = []change{{key, rep.FixValue}}
		}
	}
	var inner runOpts
	try := func(ch ...change) (*Report, bool) {
		if ctx.Err() != nil {
			return nil, false
		}
		r := req
		for _, c := range append(base[:len(base):len(base)], ch...) {
			if r.SetField(c.key, c.value) != nil {
				return nil, false
			}
		}
		rp, err := planValid(ctx, &r, inner)
		if rp == nil {
			return nil, false
		}
		judge(rp, &r, err != nil)
		return rp, rp.Verdict == VerdictServes && rp.ContextLength >= L
	}
	// A tensor-parallel refusal (either engine's TPError) knows every size
	// that works; the verified fix picks one and names the others.
	var tp interface{ Sizes() []int }
	tpSizes := ""
	if errors.As(planErr, &tp) && len(tp.Sizes()) > 0 {
		tpSizes = "TP sizes that split the heads: " + joinInts(tp.Sizes())
	}
	found := func(rp *Report, ch ...change) {
		ch = append(base[:len(base):len(base)], ch...)
		rep.FixArgs = rep.FixArgs[:0]
		words := make([]string, 0, len(ch))
		verb := "set "
		for _, c := range ch {
			f := k.flag(c.key)
			if d, ok := dropFix(req, f); ok && d == c {
				// Nothing to add: the flag goes.
				words, verb = append(words, f), "drop "
				continue
			}
			rep.FixArgs = append(rep.FixArgs, f, c.value)
			words = append(words, f+" "+c.value)
		}
		rep.FixFlag, rep.FixValue = k.flag(ch[0].key), ch[0].value
		if len(rep.FixArgs) == 0 {
			rep.FixArgs = nil
		}
		reqs := "requests"
		if rp.MaxConcurrencyAtContextLength == 1 {
			reqs = "request"
		}
		rep.FixHint = fmt.Sprintf("%s%s: re-planned, %s %s of %s tokens then fit at once (%s tokens per GPU)",
			verb, strings.Join(words, " and "), group3(rp.MaxConcurrencyAtContextLength), reqs, group3(int64(rp.ContextLength)), group3(rp.MaxTotalNumTokens))
		if rep.Verdict == VerdictRefuses && rep.WeightsBytes > 0 && rep.Breakdown.TotalBytes > 0 && rep.Breakdown.PostLoadFreeBytes <= 0 {
			rep.FixHint = fmt.Sprintf("the weights (%s per GPU) do not fit at this layout; %s", units.FormatBytes(rep.WeightsBytes), rep.FixHint)
		}
		if tpSizes != "" && strings.Contains(rep.FixFlag, "-size") {
			rep.FixHint += "; " + tpSizes
		}
	}

	// 1. The engine's own fix, when it names a value of a request field.
	if len(base) > 0 {
		if rp, ok := try(); ok {
			found(rp)
			return
		}
	} else if rep.FixFlag != "" && rep.FixValue != "" {
		if key := keyOfFlag(rep.FixFlag); key != "" {
			if rp, ok := try(change{key, rep.FixValue}); ok {
				found(rp, change{key, rep.FixValue})
				return
			}
		}
	} else if c, ok := dropFix(req, rep.FixFlag); ok {
		// The engine's fix drops a switch or setting the launch gave
		// (vLLM's --disable-hybrid-kv-cache-manager, --kv-transfer-config).
		if rp, ok := try(c); ok {
			found(rp, c)
			return
		}
	}
	// 2. The running-request cap, when the pools hold the target.
	if k.requestCap != "" && rep.Verdict == VerdictMisses && rep.MaxRunningRequests < n && Capacity(rep, m.Spec, L) >= int64(n) {
		c := change{k.requestCap, strconv.Itoa(n)}
		if rp, ok := try(c); ok {
			found(rp, c)
			return
		}
	}
	// 3. The memory share, then 4. fp8 KV, then both.
	share := func(extra ...change) bool {
		if k.share == "" || k.current >= k.shareMax {
			return false
		}
		lo, hi := int(k.current*1000)+1, int(k.shareMax*1000)
		at := func(v int) change { return change{k.share, strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)} }
		rp, ok := try(append(extra, at(hi))...)
		if !ok {
			return false
		}
		best, bestRep := hi, rp
		for lo < hi {
			mid := lo + (hi-lo)/2
			if r, ok := try(append(extra, at(mid))...); ok {
				best, bestRep, hi = mid, r, mid
			} else {
				lo = mid + 1
			}
		}
		found(bestRep, append(extra, at(best))...)
		return true
	}
	if share() {
		return
	}
	fp8 := k.fp8 != "" && !strings.HasPrefix(strings.ToLower(rep.ResolvedKVCacheDType), "fp8") && !strings.Contains(rep.ResolvedKVCacheDType, "fp4")
	if fp8 {
		c := change{"kv_cache_dtype", k.fp8}
		if rp, ok := try(c); ok {
			found(rp, c)
			return
		}
		if share(c) {
			return
		}
	}
	// 5. More GPUs: tensor parallelism (not with measured readings, which
	// were taken at this layout).
	if !rep.Measured {
		for t := max(rep.TPSize, 1) * 2; t*rep.PPSize <= maxAdviceGPUs; t *= 2 {
			if req.EnableDPAttention && req.DPSize > 1 && t%req.DPSize != 0 {
				continue
			}
			if fits, known := o.memo.load(o.group, t); known && !fits {
				continue
			}
			c := change{"tp_size", strconv.Itoa(t)}
			rp, ok := try(c, change{"tensor_parallel_size", "0"})
			if rp != nil && ctx.Err() == nil {
				o.memo.store(o.group, t, rp.Verdict != VerdictRefuses && rp.MaxTotalNumTokens > 0)
			}
			if ok {
				found(rp, c)
				return
			}
			if fp8 {
				if rp, ok := try(c, change{"tensor_parallel_size", "0"}, change{"kv_cache_dtype", k.fp8}); ok {
					found(rp, c, change{"kv_cache_dtype", k.fp8})
					return
				}
			}
		}
	}
	// Nothing in reach: say what is missing.
	rep.FixArgs = nil
	need := fmt.Sprintf("%d request(s) of %s tokens", n, group3(int64(L)))
	var what []string
	if k.share != "" && k.current < k.shareMax {
		what = append(what, fmt.Sprintf("%s up to %g", k.flag(k.share), k.shareMax))
	}
	if fp8 {
		what = append(what, k.flag("kv_cache_dtype")+" "+k.fp8)
	}
	if !rep.Measured {
		what = append(what, fmt.Sprintf("up to %d GPUs (%s)", maxAdviceGPUs, k.flag("tp_size")))
	}
	hint := "no single change kvcfg tried serves " + need
	if len(what) > 0 {
		hint += " (tried " + strings.Join(what, ", ") + ")"
	}
	hint += ": use a GPU with more memory, a quantized checkpoint, or a shorter context"
	if rep.FixHint != "" && rep.Verdict == VerdictRefuses {
		hint = rep.FixHint + "; " + hint
	}
	rep.FixHint = hint
	if rep.FixValue != "" {
		// The engine's value did not meet the target: keep the flag, drop
		// the unverified value.
		rep.FixValue = ""
	}
}

// dropFix is the change that drops flag from req when flag is a switch or
// a string setting req gives (the zero value: false, or empty); false when
// it is not.
func dropFix(req Request, flag string) (change, bool) {
	f, ok := LookupFlag(flag)
	if !ok || flag == "" {
		return change{}, false
	}
	v, _ := req.FieldString(f.Key)
	switch {
	case v == "" || v == "false":
		return change{}, false
	case f.Kind == KindBool:
		return change{f.Key, "false"}, true
	case f.Kind == KindString:
		return change{f.Key, ""}, true
	}
	return change{}, false
}

// keyOfFlag is the request key an engine flag sets ("--tp-size" →
// tp_size), "" when none (KeyOfFlag, the flag table).
func keyOfFlag(flag string) string { return KeyOfFlag(flag) }

// group3 writes n with thousands separators (units' style).
func group3(n int64) string { return units.Group(n) }
