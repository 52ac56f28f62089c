package explain

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/plan"
)

// Advice is what planning the launch says about an explained message.
type Advice struct {
	// Reproduced is true when the plan of the given flags fails the way the
	// message says (or, for a warning, is feasible).
	Reproduced bool `json:"reproduced"`
	// PlanError is the plan's error with the given flags, "" when feasible.
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
	// Report is the plan with the change applied (or with the given flags
	// when no change works).
	Report *plan.Report `json:"report,omitempty"`
}

// Advise plans req (the launch the message came from) and searches the
// value of the explanation's knob that makes it start and hold at least
// one request of its context length: the smallest memory fraction or
// utilization, the largest context length or request cap, the smallest
// SWA ratio. req.Engine is set from the message when empty.
func Advise(ctx context.Context, e *Explanation, req plan.Request) (*Advice, error) {
	if e == nil {
		return nil, errors.New("explain: nil explanation")
	}
	if req.Engine == "" && e.Engine != Any {
		req.Engine = e.Engine
	}
	var measured []string
	if e.Readings != nil {
		measured = e.Readings.Apply(&req)
	}
	rep, err := plan.Run(ctx, req)
	if err != nil && !errors.Is(err, plan.ErrInfeasible) {
		return nil, err
	}
	a := &Advice{Report: rep, Measured: measured}
	if err != nil {
		a.PlanError = err.Error()
	}
	a.Reproduced = (err != nil) == isError(e.Kind)
	// A probe plans without the advice search, whose fix a refused probe
	// would throw away; one that may be the answer but misses its target
	// is planned again with it, for the report returned.
	good := func(r plan.Request) (*plan.Report, bool) {
		wantAdvice := !r.NoAdvice
		r.NoAdvice = true
		rp, err := plan.Run(ctx, r)
		ok := err == nil && rp != nil && rp.MaxConcurrencyAtContextLength >= 1
		if ok && wantAdvice && rp.Verdict != plan.VerdictServes {
			r.NoAdvice = false
			rp, _ = plan.Run(ctx, r)
		}
		return rp, ok
	}
	req = req.Normalized()
	var s *step
	// The knob's request key, from the flag table: the engines' names for
	// one setting (--max-model-len, --context-length) land on one case.
	key := plan.KeyOfFlag(e.Knob)
	switch key {
	case "mem_fraction_static", "gpu_memory_utilization", "swa_full_tokens_ratio":
		s = &step{flag: e.Knob, lo: 300, hi: 990, min: true, scale: 1000,
			set: func(r *plan.Request, v int) { _ = r.SetField(key, strconv.FormatFloat(float64(v)/1000, 'f', 3, 64)) }}
		if key == "swa_full_tokens_ratio" {
			s.lo, s.hi = 1, 1000
		}
		if e.Kind == "free_memory_below_utilization" {
			s = nil // bounded by free memory, not by the plan: the message's value stands
		}
	case "max_model_len", "context_length":
		cur := max(req.MaxModelLen, req.ContextLength, rep.ContextLength)
		if cur > 0 {
			s = &step{flag: e.Knob, lo: 1, hi: cur, set: func(r *plan.Request, v int) {
				if r.Engine == plan.EngineVLLM {
					r.MaxModelLen = v
				} else {
					r.ContextLength = v
				}
			}}
		}
	case "max_running_requests":
		cur := max(req.MaxRunningRequests, 1)
		s = &step{flag: e.Knob, lo: 1, hi: cur, set: func(r *plan.Request, v int) { r.MaxRunningRequests = v }}
	case "tp_size":
		for t := max(req.TPSize, 1) * 2; t <= 64; t *= 2 {
			r := req
			r.TPSize, r.TensorParallelSize = t, 0
			if rp, ok := good(r); ok {
				a.Flag, a.Value, a.Report = "--tp-size", strconv.Itoa(t), rp
				a.Note = note(rp)
				return a, nil
			}
		}
	}
	if err == nil && isError(e.Kind) {
		a.Note = "kvcfg plans this launch as feasible: its memory model differs from the machine (pass the engine's measured free memory, --pre-load-free-memory and --post-load-free-memory, or --weights-memory, for exact numbers)"
		return a, nil
	}
	if s == nil {
		a.Note = "no plan-based value for " + e.Knob + "; " + e.Advice
		return a, nil
	}
	v, rp, ok := s.search(req, good)
	if !ok {
		a.Note = fmt.Sprintf("no value of %s makes this launch plan; %s", s.flag, e.Advice)
		return a, nil
	}
	a.Flag, a.Report = s.flag, rp
	if s.scale == 1000 {
		a.Value = strconv.FormatFloat(float64(v)/1000, 'f', 3, 64)
	} else {
		a.Value = strconv.Itoa(v)
	}
	a.Note = note(rp)
	return a, nil
}

func note(r *plan.Report) string {
	reqs := "requests"
	if r.MaxConcurrencyAtContextLength == 1 {
		reqs = "request"
	}
	return fmt.Sprintf("plans to %d tokens per GPU, %d %s of %d tokens at once", r.MaxTotalNumTokens, r.MaxConcurrencyAtContextLength, reqs, r.ContextLength)
}

// isError reports whether the kind is an engine error (as opposed to a
// warning the engine starts with).
func isError(kind string) bool {
	switch kind {
	case "mamba_capped", "max_running_reduced", "max_total_tokens_too_large", "memory_unbalanced":
		return false
	}
	for _, p := range trtllm.Patterns() {
		if p.Name == kind {
			return p.Severity == trtllm.Fatal
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
