package plan

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/model"
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
		a = rep.appendBandText(a)
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
		rep.Answer = fmt.Sprintf("Starts, but holds %s%s requests of %s tokens at once, not %d.", group3(rep.MaxConcurrencyAtContextLength), rep.bandText(), group3(int64(rep.ContextLength)), n)
	}
	if ob := rep.Breakdown.OverBudgetBytes; ob > 0 && !refused && rep.Breakdown.KVBudgetBytes > 0 {
		rep.Answer += fmt.Sprintf(" But the KV pool takes %s (%.1f %%) more than its budget, out of the reserve for activations and CUDA graphs: it can run out of memory under load (see the warnings).",
			units.FormatBytes(ob), 100*float64(ob)/float64(rep.Breakdown.KVBudgetBytes))
	}
	if bd := rep.bandOf(); bd != nil && !refused && bd.ConcurrencyLow < int64(n) && int64(n) <= bd.ConcurrencyHigh {
		rep.warn(fmt.Sprintf("the target of %d requests sits inside the prediction's band (%s–%s requests, ±%.2f %% of the KV memory): a real run may hold fewer; give a run's readings, or keep a margin (kvcfg fit does)",
			n, group3(bd.ConcurrencyLow), group3(bd.ConcurrencyHigh), 100*bd.RelError))
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

// fp8Helps reports whether the engine's fp8 KV cache is a change for a
// plan whose resolved KV dtype is resolved: the engine has one, and the
// cache is not fp8 or fp4 already.
func (k knobs) fp8Helps(resolved string) bool {
	return k.fp8 != "" && !strings.HasPrefix(strings.ToLower(resolved), "fp8") && !strings.Contains(resolved, "fp4")
}

// change is one request field set to a value.
type change struct{ key, value string }

// adviceSearches counts the advice searches run (advise calls that
// search), so that tests see where they run: for the plan a caller gets
// back (Run, Compare), never for each plan of a sweep.
var adviceSearches atomic.Int64

// advise searches the smallest change that makes req serve its target and
// sets rep's fix to it, but only after re-planning with the change and
// seeing the target met. When no change in reach meets it, the hint says
// what is missing. m is the resolved model; rep has been judged.
func advise(ctx context.Context, req Request, m *catalog.Model, rep *Report, planErr error) {
	e, ok := engines[req.Engine]
	if !ok || rep.Verdict == VerdictServes {
		return
	}
	adviceSearches.Add(1)
	a := newAdviser(ctx, req, m, rep, planErr, e)
	if !a.search() {
		a.nothingInReach()
	}
}

// adviser is one advice search: the plan that misses its target, the
// target, and the settings the search may change.
type adviser struct {
	ctx context.Context
	// req is the request advised, with its model resolved and advice off
	// (the plans the search runs do not search themselves).
	req  Request
	spec *model.Spec
	// rep is the plan advised; found and nothingInReach set its fix.
	rep *Report
	k   knobs
	// n requests of L tokens is the target: the plan's context, but never
	// beyond the model's own context length (no engine serves more; asking
	// for it is the error).
	n, L int
	// base is the engine's own fix (the model's length) for a context
	// beyond the model's, its first complaint: it goes under every change
	// tried.
	base []change
	// tpSizes names the TP sizes that split the heads, when the plan was
	// refused for its TP size ("" otherwise).
	tpSizes string
	// fp8 says the search may try the engine's fp8 KV cache (the plan's is
	// not fp8 or fp4 already).
	fp8 bool
}

// newAdviser sets up the search for rep, a plan of req with model m by
// engine e that does not serve; planErr is the plan's error.
func newAdviser(ctx context.Context, req Request, m *catalog.Model, rep *Report, planErr error, e engine) adviser {
	req.Resolved, req.NoAdvice = m, true
	a := adviser{ctx: ctx, req: req, spec: m.Spec, rep: rep, n: rep.TargetConcurrency, L: rep.ContextLength}
	if c := m.Spec.ContextLength; a.L <= 0 || (c > 0 && a.L > c) {
		a.L = c
	}
	a.k = e.knobs(req, rep)
	a.k.engine = req.Engine
	if rep.ContextLength > a.L && rep.FixValue == strconv.Itoa(a.L) {
		if key := keyOfFlag(rep.FixFlag); key == "context_length" || key == "max_model_len" {
			a.base = []change{{key, rep.FixValue}}
		}
	}
	// A tensor-parallel refusal (either engine's TPError) knows every size
	// that works; the verified fix picks one and names the others.
	var tp interface{ Sizes() []int }
	if errors.As(planErr, &tp) && len(tp.Sizes()) > 0 {
		a.tpSizes = "TP sizes that split the heads: " + joinInts(tp.Sizes())
	}
	a.fp8 = a.k.fp8Helps(rep.ResolvedKVCacheDType)
	return a
}

// search tries, in order, the engine's own fix, the running-request cap,
// the memory share, an fp8 KV cache (alone, then with the share) and more
// GPUs, and reports whether one served (rep's fix is then set to it).
func (a *adviser) search() bool {
	if a.engineFix() || a.requestCap() || a.share() {
		return true
	}
	if a.fp8 {
		c := change{"kv_cache_dtype", a.k.fp8}
		if a.tryFound(c) || a.share(c) {
			return true
		}
	}
	return a.moreGPUs()
}

// try re-plans the request with the base changes and ch, and reports
// whether that plan serves the target (its report is nil when the changes
// do not apply or the context ended).
func (a *adviser) try(ch ...change) (*Report, bool) {
	if a.ctx.Err() != nil {
		return nil, false
	}
	r := a.req
	for _, c := range append(a.base[:len(a.base):len(a.base)], ch...) {
		if r.SetField(c.key, c.value) != nil {
			return nil, false
		}
	}
	rp, err := planValid(a.ctx, &r, runOpts{})
	if rp == nil {
		return nil, false
	}
	judge(rp, &r, err != nil)
	return rp, rp.Verdict == VerdictServes && rp.ContextLength >= a.L
}

// tryFound is try that sets the fix to ch when it serves.
func (a *adviser) tryFound(ch ...change) bool {
	rp, ok := a.try(ch...)
	if ok {
		a.found(rp, ch...)
	}
	return ok
}

// found sets rep's fix to the base changes and ch, whose plan rp serves.
func (a *adviser) found(rp *Report, ch ...change) {
	rep := a.rep
	ch = append(a.base[:len(a.base):len(a.base)], ch...)
	rep.FixArgs = rep.FixArgs[:0]
	words := make([]string, 0, len(ch))
	verb := "set "
	for _, c := range ch {
		f := a.k.flag(c.key)
		if d, ok := dropFix(a.req, f); ok && d == c {
			// Nothing to add: the flag goes.
			words, verb = append(words, f), "drop "
			continue
		}
		rep.FixArgs = append(rep.FixArgs, f, c.value)
		words = append(words, f+" "+c.value)
	}
	rep.FixFlag, rep.FixValue = a.k.flag(ch[0].key), ch[0].value
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
	if a.tpSizes != "" && strings.Contains(rep.FixFlag, "-size") {
		rep.FixHint += "; " + a.tpSizes
	}
}

// engineFix tries the engine's own fix, when it names a value of a
// request field (or is the base change alone).
func (a *adviser) engineFix() bool {
	if len(a.base) > 0 {
		return a.tryFound()
	}
	if a.rep.FixFlag != "" && a.rep.FixValue != "" {
		key := keyOfFlag(a.rep.FixFlag)
		return key != "" && a.tryFound(change{key, a.rep.FixValue})
	}
	// The engine's fix drops a switch or setting the launch gave (vLLM's
	// --disable-hybrid-kv-cache-manager, --kv-transfer-config).
	if c, ok := dropFix(a.req, a.rep.FixFlag); ok {
		return a.tryFound(c)
	}
	return false
}

// requestCap tries the running-request cap at the target, when the pools
// hold the target but the cap does not.
func (a *adviser) requestCap() bool {
	rep := a.rep
	if a.k.requestCap == "" || rep.Verdict != VerdictMisses || rep.MaxRunningRequests >= a.n || Capacity(rep, a.spec, a.L) < int64(a.n) {
		return false
	}
	return a.tryFound(change{a.k.requestCap, strconv.Itoa(a.n)})
}

// share searches the smallest memory share (to 0.001) above the plan's
// that serves with the changes extra, up to the engine's safe maximum.
func (a *adviser) share(extra ...change) bool {
	k := a.k
	if k.share == "" || k.current >= k.shareMax {
		return false
	}
	lo, hi := int(k.current*1000)+1, int(k.shareMax*1000)
	at := func(v int) change { return change{k.share, strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)} }
	rp, ok := a.try(append(extra, at(hi))...)
	if !ok {
		return false
	}
	best, bestRep := hi, rp
	for lo < hi {
		mid := lo + (hi-lo)/2
		if r, ok := a.try(append(extra, at(mid))...); ok {
			best, bestRep, hi = mid, r, mid
		} else {
			lo = mid + 1
		}
	}
	a.found(bestRep, append(extra, at(best))...)
	return true
}

// moreGPUs tries doubling the tensor-parallel size up to maxAdviceGPUs,
// each alone and then with an fp8 KV cache (not with measured readings,
// which were taken at this layout).
func (a *adviser) moreGPUs() bool {
	rep, req := a.rep, &a.req
	if rep.Measured {
		return false
	}
	for t := max(rep.TPSize, 1) * 2; t*rep.PPSize <= maxAdviceGPUs; t *= 2 {
		if req.EnableDPAttention && req.DPSize > 1 && t%req.DPSize != 0 {
			continue
		}
		c := change{"tp_size", strconv.Itoa(t)}
		if rp, ok := a.try(c, change{"tensor_parallel_size", "0"}); ok {
			a.found(rp, c)
			return true
		}
		if a.fp8 {
			if rp, ok := a.try(c, change{"tensor_parallel_size", "0"}, change{"kv_cache_dtype", a.k.fp8}); ok {
				a.found(rp, c, change{"kv_cache_dtype", a.k.fp8})
				return true
			}
		}
	}
	return false
}

// nothingInReach says in rep's hint what no change tried could serve and
// what was tried, and drops the engine's value when it did not serve.
func (a *adviser) nothingInReach() {
	rep, k := a.rep, a.k
	rep.FixArgs = nil
	need := fmt.Sprintf("%d request(s) of %s tokens", a.n, group3(int64(a.L)))
	var what []string
	if k.share != "" && k.current < k.shareMax {
		what = append(what, fmt.Sprintf("%s up to %g", k.flag(k.share), k.shareMax))
	}
	if a.fp8 {
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
