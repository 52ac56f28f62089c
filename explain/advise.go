package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// Advice is what planning the launch says about an explained message.
type Advice struct {
	// Reproduced is true when the plan of the given flags fails the way the
	// message says (or, for a warning, is feasible).
	Reproduced bool `json:"reproduced"`
	// PlanError is the plan's error with the given flags, "" when feasible.
	// When Value is set it is only the error's first sentence (what
	// failed): the engine's own suggestion would be a second value.
	PlanError string `json:"plan_error,omitempty"`
	// Flag and Value are the change that makes the launch plan, "" when no
	// value of the knob does.
	Flag  string `json:"flag,omitempty"`
	Value string `json:"value,omitempty"`
	// Note says what the planned change gives (tokens, requests) or why no
	// value works.
	Note string `json:"note"`
	// Measured lists the request keys set from the log's readings
	// (Explanation.Readings), so the plan reproduces the run.
	Measured []string `json:"measured,omitempty"`
	// FromMessage lists the launch settings the message itself states
	// (Explanation.Launch) that the plan used, as "key=value": the
	// message's numbers stand where the flags give none.
	FromMessage []string `json:"from_message,omitempty"`
	// Assumed says what the plan took without being told: the model's full
	// context length when neither the flags nor the message gave one, the
	// default model or GPU.
	Assumed []string `json:"assumed,omitempty"`
	// LaunchConcurrency is how many requests of the context length the
	// launch as planned, before any change, holds at once (0 when it
	// fails).
	LaunchConcurrency int64 `json:"launch_concurrency"`
	// TargetConcurrency is how many requests of the context length the
	// searched value must hold at once (--concurrency; 1 when not given).
	TargetConcurrency int `json:"target_concurrency"`
	// Report is the plan with the change applied (or with the given flags
	// when no change works).
	Report *plan.Report `json:"report,omitempty"`
}

// Advise plans req (the launch the message came from, with the message's
// own settings and the log's readings where req gives none) and searches
// the value of the explanation's knob that makes it start and hold
// req.Concurrency requests (at least one) of its context length: the
// smallest memory fraction or utilization, the largest context length or
// request cap, the smallest SWA ratio; when no value of the knob does, a
// larger TP size. req.Engine is set from the message when empty.
//
// An answer names one value: when the plan finds one, Advise sets e's
// Knob, Value and Advice to it; when the plan shows that no value of the
// knob works, it clears e's Value and says so in e's Advice.
func Advise(ctx context.Context, e *Explanation, req plan.Request) (*Advice, error) {
	if e == nil {
		return nil, errors.New("explain: nil explanation")
	}
	if req.Engine == "" && e.Engine != Any {
		req.Engine = e.Engine
	}
	a := &Advice{TargetConcurrency: max(req.Concurrency, 1)}
	if e.Readings != nil {
		a.Measured = e.Readings.Apply(&req)
	}
	rep, err := a.planLaunch(ctx, e, &req)
	if err != nil && !errors.Is(err, plan.ErrInfeasible) {
		return nil, err
	}
	a.Report = rep
	if err != nil {
		a.PlanError = err.Error()
	} else if rep != nil {
		a.LaunchConcurrency = rep.MaxConcurrencyAtContextLength
	}
	a.Reproduced = (err != nil) == isError(e.Kind)
	a.Assumed = assumed(req, rep)
	good := holds(ctx, a.TargetConcurrency)
	req = req.Normalized()
	// The knob's request key, from the flag table: the engines' names for
	// one setting (--max-model-len, --context-length) land on one case.
	knob, _ := plan.LookupFlag(e.Knob)
	key := knob.Key
	if knob.Role == "context" && fromMessage(a.FromMessage, key) {
		// The context itself was read from the message (one longer than
		// the model's, which every engine refuses): the launch reproduced
		// it, and the search starts from the engine's default context.
		_ = req.SetField(key, "0")
	}
	if key == "tp_size" && adviseTP(a, req, good) {
		a.settle(e, req, rep)
		return a, nil
	}
	if err == nil && isError(e.Kind) && rep.MaxConcurrencyAtContextLength >= int64(a.TargetConcurrency) {
		a.Note = "kvcfg plans this launch as feasible: its memory model differs from the machine (pass the engine's measured free memory, --pre-load-free-memory and --post-load-free-memory, or --weights-memory, for exact numbers)"
		return a, nil
	}
	s := stepFor(key, e, req, rep)
	if s == nil {
		a.Note = "no plan-based value for " + e.Knob + "; " + e.Advice
		return a, nil
	}
	v, rp, ok := s.search(req, good)
	if !ok {
		a.miss(ctx, e, s, req, rep)
		return a, nil
	}
	if had, ok := fields(req)[key]; ok && strings.Trim(string(had), `"`) == s.format(v) {
		// The launch's own value already works: no change to name, and
		// the engine's advice stands.
		a.Note = fmt.Sprintf("the launch's %s %s %s", s.flag, s.format(v), a.note(rp))
		return a, nil
	}
	a.Flag, a.Value, a.Report = s.flag, s.format(v), rp
	a.Note = a.note(rp)
	a.settle(e, req, rep)
	return a, nil
}

// planLaunch sets the message's own settings (e.Launch) on req where req
// gives none of the same setting and req plans the message's engine, and
// plans it. A setting kvcfg refuses as input (a context length over the
// model's) is dropped: the launch is then planned as the flags give it.
func (a *Advice) planLaunch(ctx context.Context, e *Explanation, req *plan.Request) (*plan.Report, error) {
	base := *req
	if e.Engine == strings.ToLower(req.Normalized().Engine) {
		have := fields(*req)
		keys := make([]string, 0, len(e.Launch))
		for k := range e.Launch {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == engine.KVCacheTokens || givenIn(have, k) || req.SetField(k, e.Launch[k]) != nil {
				continue
			}
			a.FromMessage = append(a.FromMessage, k+"="+e.Launch[k])
		}
	}
	refineKVMemory(ctx, e, req, a.FromMessage)
	rep, err := plan.Run(ctx, *req)
	if a.pinBlocks(e, req, rep, err) {
		rep, err = plan.Run(ctx, *req)
	}
	if len(a.FromMessage) > 0 && errors.Is(err, plan.ErrInvalid) {
		*req, a.FromMessage = base, nil
		rep, err = plan.Run(ctx, *req)
	}
	return rep, err
}

// pinBlocks sets the pool size the message reports in tokens (vLLM V0's
// "maximum number of tokens that can be stored in KV cache") on a vLLM
// req as whole blocks of the block size rep planned, when req gives no
// block count; it reports whether it did.
func (a *Advice) pinBlocks(e *Explanation, req *plan.Request, rep *plan.Report, err error) bool {
	tokens, _ := strconv.ParseInt(e.Launch[engine.KVCacheTokens], 10, 64)
	if tokens <= 0 || err != nil && !errors.Is(err, plan.ErrInfeasible) || rep == nil || rep.BlockSize <= 0 ||
		rep.Engine != plan.EngineVLLM || req.NumGPUBlocksOverride != 0 || e.Engine != plan.EngineVLLM {
		return false
	}
	req.NumGPUBlocksOverride = tokens / int64(rep.BlockSize)
	a.FromMessage = append(a.FromMessage, fmt.Sprintf("num_gpu_blocks_override=%d (%d tokens)", req.NumGPUBlocksOverride, tokens))
	return true
}

// refineKVMemory sharpens a KV budget read from vLLM's message, which
// prints it to 0.01 GiB, with the exact figure vLLM computed from it: the
// message's "estimated maximum model length". Within the rounding (±0.005
// GiB) it sets req's kv_cache_memory to the smallest budget at which one
// request of that length plans, so that the plan reproduces vLLM's own
// estimate; outside it, or when nothing in it does, req stays as it is.
func refineKVMemory(ctx context.Context, e *Explanation, req *plan.Request, fromMessage []string) {
	est := int(e.Numbers["estimated_max_model_len"])
	gib, ok := e.Numbers["available_gib"]
	if est <= 0 || !ok || !slices.Contains(fromMessage, "kv_cache_memory="+e.Launch["kv_cache_memory"]) {
		return
	}
	const half = 0.005 * (1 << 30)
	fits := func(kv int64) bool {
		r := *req
		r.KVCacheMemory = units.Size(kv)
		r.ContextLength, r.MaxModelLen, r.MaxSeqLen = 0, est, 0
		rp, err := plan.Run(ctx, r)
		return err == nil && rp != nil && rp.MaxConcurrencyAtContextLength >= 1
	}
	lo, hi := int64(gib*(1<<30)-half), int64(gib*(1<<30)+half)
	if !fits(hi) {
		return
	}
	for hi-lo > 1<<10 { // to a KiB
		if mid := lo + (hi-lo)/2; fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi > int64(req.KVCacheMemory) {
		req.KVCacheMemory = units.Size(hi)
	}
}

// sameSetting lists the request keys that spell one setting: a message's
// value for one stands only where none of them is given.
var sameSetting = [][]string{
	{"context_length", "max_model_len", "max_seq_len"},
	{"kv_cache_memory", "kv_cache_memory_bytes"},
	{"tp_size", "tensor_parallel_size"},
}

// givenIn reports whether have (a request's JSON keys) gives key or a key
// of the same setting.
func givenIn(have map[string]json.RawMessage, key string) bool {
	if _, ok := have[key]; ok {
		return true
	}
	for _, keys := range sameSetting {
		if slices.Contains(keys, key) {
			for _, k := range keys {
				if _, ok := have[k]; ok {
					return true
				}
			}
		}
	}
	return false
}

// fields is v's JSON object: a request's given keys (zero values are
// omitted), or a report's values.
func fields(v any) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if b, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// assumed lists what the plan of req took without being told.
func assumed(req plan.Request, rep *plan.Report) []string {
	if rep == nil {
		return nil
	}
	var out []string
	if req.ContextLength == 0 && req.MaxModelLen == 0 && req.MaxSeqLen == 0 && rep.ContextLength > 0 {
		out = append(out, fmt.Sprintf("context length %d tokens, the model's full context (pass --context-length with your longest request)", rep.ContextLength))
	}
	if req.Model == "" && len(req.Config) == 0 && req.Resolved == nil {
		out = append(out, fmt.Sprintf("model %s, the default (pass --model)", rep.Model))
	}
	if req.GPU == "" && req.GPUMemory == 0 {
		out = append(out, fmt.Sprintf("GPU %s, the default (pass --gpu)", rep.GPU))
	}
	return out
}

// settle makes e name the planned value (a.Flag, a.Value) as its one
// recommendation, from the launch req planned as rep.
func (a *Advice) settle(e *Explanation, req plan.Request, rep *plan.Report) {
	e.Knob, e.Value = a.Flag, a.Value
	had := ""
	key := plan.KeyOfFlag(a.Flag)
	if v, ok := fields(req)[key]; ok {
		had = " (the launch had " + strings.Trim(string(v), `"`) + ")"
	} else if v, ok := fields(rep)[key]; ok {
		had = " (the launch had " + strings.Trim(string(v), `"`) + ", the default)"
	}
	e.Advice = fmt.Sprintf("Set %s %s%s: kvcfg %s.", a.Flag, a.Value, had, a.Note)
	if len(a.Assumed) > 0 {
		e.Advice += " Assumed: " + strings.Join(a.Assumed, "; ") + "."
	}
	if a.PlanError != "" {
		a.PlanError = firstSentence(a.PlanError)
	}
}

// miss fills a when no value of s's knob makes the launch hold the target:
// a larger TP size when one does, else the knob's value that holds fewer
// requests (a target above one), else no value at all.
func (a *Advice) miss(ctx context.Context, e *Explanation, s *step, req plan.Request, rep *plan.Report) {
	if s.scale == 1000 && adviseTP(a, req, holds(ctx, a.TargetConcurrency)) { // a memory share: more GPUs give more memory
		a.settle(e, req, rep)
		return
	}
	if a.TargetConcurrency > 1 {
		if v, rp, ok := s.search(req, holds(ctx, 1)); ok {
			a.Flag, a.Value, a.Report = s.flag, s.format(v), rp
			a.Note = a.note(rp)
			a.settle(e, req, rep)
			return
		}
	}
	a.Note = fmt.Sprintf("no value of %s makes this launch hold %d %s of %d tokens at once", s.flag, a.TargetConcurrency, plural(a.TargetConcurrency, "request"), contextOf(rep))
	e.Value = ""
	e.Advice = "kvcfg planned the launch: " + a.Note + "."
	if len(e.Alternatives) > 0 {
		e.Advice += " Change one of: " + strings.Join(e.Alternatives, "; ") + "."
	}
	if len(a.Assumed) > 0 {
		e.Advice += " Assumed: " + strings.Join(a.Assumed, "; ") + "."
	}
}

// holds is the test of a planned launch: it starts and holds target
// requests of its context length at once.
//
// A probe plans without the advice search, whose fix a refused probe would
// throw away; one that may be the answer but is not a plain "serves" is
// planned again with it, for the report returned.
func holds(ctx context.Context, target int) func(plan.Request) (*plan.Report, bool) {
	return func(r plan.Request) (*plan.Report, bool) {
		wantAdvice := !r.NoAdvice
		r.NoAdvice = true
		rp, err := plan.Run(ctx, r)
		ok := err == nil && rp != nil && rp.MaxConcurrencyAtContextLength >= int64(target)
		if ok && wantAdvice && rp.Verdict != plan.VerdictServes {
			r.NoAdvice = false
			rp, _ = plan.Run(ctx, r)
		}
		return rp, ok
	}
}

// fromMessage reports whether settings (key=value, as Advice.FromMessage
// lists them) set key.
func fromMessage(settings []string, key string) bool {
	for _, kv := range settings {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

// firstSentence is s up to its first ". " before a capital letter (what
// an engine error says failed, before what it suggests).
func firstSentence(s string) string {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && s[i+2] >= 'A' && s[i+2] <= 'Z' {
			return s[:i+1]
		}
	}
	return s
}

func contextOf(r *plan.Report) int {
	if r == nil {
		return 0
	}
	return r.ContextLength
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// stepFor is the search over the knob key of e, nil when its value is not
// searched by planning.
func stepFor(key string, e *Explanation, req plan.Request, rep *plan.Report) *step {
	switch key {
	case "mem_fraction_static", "gpu_memory_utilization", "swa_full_tokens_ratio", "free_gpu_memory_fraction":
		if e.Kind == "free_memory_below_utilization" {
			return nil // bounded by free memory, not by the plan: the message's value stands
		}
		s := &step{flag: e.Knob, lo: 300, hi: 990, min: true, scale: 1000,
			set: func(r *plan.Request, v int) { _ = r.SetField(key, strconv.FormatFloat(float64(v)/1000, 'f', 3, 64)) }}
		switch key {
		case "swa_full_tokens_ratio":
			s.lo, s.hi = 1, 1000
		case "free_gpu_memory_fraction":
			s.lo = 10
		}
		// The engine's memory share stays within what it runs with safely
		// (activations and CUDA graphs need the rest), as plan's advice
		// and fit keep it.
		if k := plan.KnobsOf(rep); k.Share == key && k.SafeMax > 0 {
			s.hi = int(math.Round(k.SafeMax * 1000))
		}
		return s
	case "max_model_len", "context_length", "max_seq_len":
		if cur := max(req.MaxModelLen, req.ContextLength, req.MaxSeqLen, contextOf(rep)); cur > 0 {
			return &step{flag: e.Knob, lo: 1, hi: cur, set: func(r *plan.Request, v int) {
				// One context length, said once: the engine's own name.
				r.ContextLength, r.MaxModelLen, r.MaxSeqLen = 0, 0, 0
				if r.Engine == plan.EngineVLLM {
					r.MaxModelLen = v
				} else {
					r.ContextLength = v
				}
			}}
		}
	case "max_running_requests":
		cur := max(req.MaxRunningRequests, 1)
		return &step{flag: e.Knob, lo: 1, hi: cur, set: func(r *plan.Request, v int) { r.MaxRunningRequests = v }}
	}
	return nil
}

// adviseTP doubles the TP size until the launch plans, filling a; it
// reports whether one did (up to 64).
func adviseTP(a *Advice, req plan.Request, good func(plan.Request) (*plan.Report, bool)) bool {
	for t := max(req.TPSize, 1) * 2; t <= 64; t *= 2 {
		r := req
		r.TPSize, r.TensorParallelSize = t, 0
		if rp, ok := good(r); ok {
			a.Flag, a.Value, a.Report = "--tp-size", strconv.Itoa(t), rp
			a.Note = a.note(rp)
			return true
		}
	}
	return false
}

// note says what the plan r gives, against the target concurrency.
func (a *Advice) note(r *plan.Report) string {
	n := r.MaxConcurrencyAtContextLength
	s := fmt.Sprintf("plans to %d tokens per GPU, %d %s of %d tokens at once", r.MaxTotalNumTokens, n, plural(int(n), "request"), r.ContextLength)
	switch t := int64(a.TargetConcurrency); {
	case t > 1 && n >= t:
		s += fmt.Sprintf(" (the target: %d)", t)
	case n < t:
		s += fmt.Sprintf(", fewer than the %d asked (--concurrency): for those, more GPUs (--tp-size) or a shorter context", t)
	}
	return s
}

// isError reports whether the kind is an engine error (as opposed to a
// warning the engine starts with), by its pattern's severity.
func isError(kind string) bool {
	for _, r := range rules() {
		if r.kind == kind {
			return r.severity != engine.Warning
		}
	}
	return true
}

// step is a bisection over one integer-coded knob.
type step struct {
	flag   string
	lo, hi int
	// min searches the smallest working value (memory shares); otherwise
	// the largest (lengths, request caps).
	min bool
	// scale 1000 codes thousandths (printed with three decimals).
	scale int
	set   func(*plan.Request, int)
}

// format is v as the knob's value.
func (s *step) format(v int) string {
	if s.scale == 1000 {
		return strconv.FormatFloat(float64(v)/1000, 'f', 3, 64)
	}
	return strconv.Itoa(v)
}

func (s *step) search(req plan.Request, good func(plan.Request) (*plan.Report, bool)) (int, *plan.Report, bool) {
	try := func(v int) (*plan.Report, bool) {
		r := req
		s.set(&r, v)
		return good(r)
	}
	end := s.hi
	if !s.min {
		end = s.lo
	}
	rp, ok := try(end)
	if !ok {
		return 0, nil, false
	}
	lo, hi, best, bestRep := s.lo, s.hi, end, rp
	for lo <= hi {
		mid := lo + (hi-lo)/2
		r, ok := try(mid)
		switch {
		case ok && s.min:
			best, bestRep, hi = mid, r, mid-1
		case ok:
			best, bestRep, lo = mid, r, mid+1
		case s.min:
			lo = mid + 1
		default:
			hi = mid - 1
		}
	}
	return best, bestRep, true
}
