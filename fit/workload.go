package fit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
	"github.com/kvcfg/kvcfg/units"
)

// Criteria are what the simulation of the workload on a layout must show
// for the layout to serve it (docs/fit.md#serving-a-workload). Every
// request must complete and none may be unservable; the zero value asks,
// beyond that, for no retraction or preemption and a KV pool that never
// keeps a waiting request out.
type Criteria struct {
	// MaxRetractions is the most retractions (SGLang) or preemptions
	// (vLLM) allowed, over all replicas (default 0).
	MaxRetractions int64 `json:"max_retractions,omitempty"`
	// MaxKVBlockedShare is the largest share of the simulation's steps in
	// which the KV pool kept the head of the waiting queue out (default
	// 0: never).
	MaxKVBlockedShare float64 `json:"max_kv_blocked_share,omitempty"`
	// AllowKVPoolBinding accepts a simulation whose binding limit is the
	// KV pool (default false: binding_limit must not be kv_pool).
	AllowKVPoolBinding bool `json:"allow_kv_pool_binding,omitempty"`
}

// validate reports the problems with the criteria.
func (c Criteria) validate() []error {
	var errs []error
	if c.MaxRetractions < 0 {
		errs = append(errs, fmt.Errorf("%w: criteria.max_retractions: %d must not be negative", ErrInvalid, c.MaxRetractions))
	}
	if v := c.MaxKVBlockedShare; math.IsNaN(v) || v < 0 || v > 1 {
		errs = append(errs, fmt.Errorf("%w: criteria.max_kv_blocked_share: %v must be between 0 and 1", ErrInvalid, v))
	}
	return errs
}

// WorkloadTarget describes a workload target (Result.Target.Workload):
// the workload and the demand the search sizes for.
type WorkloadTarget struct {
	// Requests is the number of requests of the workload.
	Requests int64 `json:"requests"`
	// MaxRequestTokens and MeanRequestTokens are the longest and the mean
	// request (prompt + output tokens).
	MaxRequestTokens  int `json:"max_request_tokens"`
	MeanRequestTokens int `json:"mean_request_tokens"`
	// PeakRunning and PeakKVTokens are the simulation of the workload on
	// an unbounded KV pool without a request cap on Reference: the
	// concurrency the search sizes for (Target.Concurrency).
	PeakRunning  int   `json:"peak_running"`
	PeakKVTokens int64 `json:"peak_kv_tokens"`
	// Reference is the layout whose time model that simulation used.
	Reference string `json:"reference"`
	// Criteria are what each layout's simulation must show.
	Criteria Criteria `json:"criteria"`
	// Simulations is the number of simulations run.
	Simulations int `json:"simulations"`
}

// Simulated is the simulation of the workload on a configuration (over
// all DP replicas, each given its round-robin share of the requests).
type Simulated struct {
	RequestsCompleted  int64 `json:"requests_completed"`
	UnservableRequests int64 `json:"unservable_requests"`
	// PeakRunning is the most requests running at once (the sum of the
	// replicas' peaks).
	PeakRunning int `json:"peak_running"`
	// Retractions (SGLang) or Preemptions (vLLM): only the engine's key
	// is present.
	Retractions      *int64  `json:"retractions,omitempty"`
	Preemptions      *int64  `json:"preemptions,omitempty"`
	RecomputedTokens int64   `json:"recomputed_tokens"`
	PrefixHitRate    float64 `json:"prefix_hit_rate"`
	PeakKVTokens     int64   `json:"peak_kv_tokens"`
	PoolTokens       int64   `json:"pool_tokens"`
	BindingLimit     string  `json:"binding_limit"`
	// KVBlockedShare is the share of steps in which the KV pool kept the
	// head of the waiting queue out.
	KVBlockedShare float64 `json:"kv_blocked_share"`
	// ComputeLoadEst is the largest replica's simulate compute_load_est:
	// above 1 its GPUs cannot keep up with its share of the arrivals
	// whatever the pool (BindingLimit is then compute).
	ComputeLoadEst float64 `json:"compute_load_est"`
	// Failed names the criterion the simulation misses ("" when it
	// serves).
	Failed string `json:"failed,omitempty"`
}

// setbacks are the retractions or preemptions.
func (m *Simulated) setbacks() int64 {
	switch {
	case m.Retractions != nil:
		return *m.Retractions
	case m.Preemptions != nil:
		return *m.Preemptions
	}
	return 0
}

// SetbackName is "retractions" (SGLang) or "preemptions" (vLLM).
func (m *Simulated) SetbackName() string {
	if m.Preemptions != nil {
		return "preemptions"
	}
	return "retractions"
}

// SetbackText is "1 retraction", "3 preemptions", ...
func (m *Simulated) SetbackText() string {
	n, name := m.setbacks(), m.SetbackName()
	if n == 1 {
		name = strings.TrimSuffix(name, "s")
	}
	return units.Group(n) + " " + name
}

// Setbacks is the number of retractions or preemptions.
func (m *Simulated) Setbacks() int64 { return m.setbacks() }

// maxUnboundedTokens bounds the "unbounded" pool of the demand simulation.
const maxUnboundedTokens = 1 << 24

// workload is the workload target of a search.
type workload struct {
	open     func() (simulate.Source, error)
	opts     simulate.Options
	criteria Criteria
	// requests, maxTokens, meanTokens and sumTokens describe the requests;
	// sglangContext is the context SGLang needs to serve them in full.
	requests      int64
	maxTokens     int
	sglangContext int
	context       int // the target's context length (settleTarget)
	meanTokens    int
	sumTokens     int64
	target        *WorkloadTarget
	simulations   int
}

// workloads counts the workloads o gives.
func (o Options) workloads() int {
	n := 0
	if o.Workload != nil {
		n++
	}
	if len(o.Trace) > 0 {
		n++
	}
	if o.Source != nil {
		n++
	}
	return n
}

// validateWorkload reports the problems of the workload options.
func (o Options) validateWorkload() []error {
	var errs []error
	if o.workloads() > 1 {
		errs = append(errs, fmt.Errorf("%w: workload: give one of workload (a generator), trace (the requests) or a source, not several", ErrInvalid))
	}
	if o.Concurrency != 0 {
		errs = append(errs, fmt.Errorf("%w: concurrency: give concurrency or a workload, not both (the workload sets the concurrency)", ErrInvalid))
	}
	if o.ContextLength < 0 {
		errs = append(errs, fmt.Errorf("%w: context_length: %d must not be negative (0: the workload's longest request)", ErrInvalid, o.ContextLength))
	}
	if o.Workload != nil {
		if err := o.Workload.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: workload: %w", ErrInvalid, err))
		}
	}
	if err := o.Simulation.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: simulation: %w", ErrInvalid, err))
	}
	if e := o.Base.Normalized().Engine; e != plan.EngineSGLang && e != plan.EngineVLLM {
		errs = append(errs, fmt.Errorf("%w: engine: %s is not simulated; a workload target needs sglang or vllm", ErrInvalid, e))
	}
	return append(errs, o.Criteria.validate()...)
}

// opener returns the function that opens o's workload afresh.
func (o Options) opener() func() (simulate.Source, error) {
	switch {
	case o.Source != nil:
		return o.Source
	case o.Workload != nil:
		return o.Workload.Source
	}
	reqs := o.Trace
	return func() (simulate.Source, error) { return &simulate.SliceSource{Reqs: reqs}, nil }
}

// scanWorkload reads the workload once: its size and lengths.
func scanWorkload(ctx context.Context, o Options) (*workload, error) {
	w := &workload{open: o.opener(), opts: o.Simulation, criteria: o.Criteria}
	w.opts.TimeseriesEvery = 0
	src, err := w.open()
	if err != nil {
		return nil, fmt.Errorf("%w: workload: %w", ErrInvalid, err)
	}
	defer closeSource(src)
	for {
		if w.requests&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		n := max(r.PromptTokens, len(r.PromptIDs)) + r.OutputTokens
		w.requests++
		w.maxTokens = max(w.maxTokens, n)
		w.sglangContext = max(w.sglangContext, simulate.SGLangContextLength(n-r.OutputTokens, r.OutputTokens))
		w.sumTokens += int64(n)
	}
	if w.requests == 0 {
		return nil, fmt.Errorf("%w: workload: no requests", ErrInvalid)
	}
	w.meanTokens = int((w.sumTokens + w.requests - 1) / w.requests)
	return w, nil
}

func closeSource(src simulate.Source) {
	if c, ok := src.(io.Closer); ok {
		_ = c.Close()
	}
}

// demand simulates the workload on an unbounded pool without a request
// cap, with the time model of the fastest layout that starts (the most
// GPUs, widest TP first, of the first GPU type searched; dp 1): its peak
// running requests are the concurrency the search sizes for, about the
// least any layout sees (a slower one keeps requests longer; dp replicas
// each get their share).
func (s *search) demand(ctx context.Context, dtype string, maxGPUs int) error {
	w := s.wl
	for _, g := range s.gpus {
		for count := maxGPUs; count >= 1; count-- {
			tps := divisors(count)
			slices.Reverse(tps)
			for _, tp := range tps {
				c := candidate{gpu: g, tp: tp, pp: count / tp, dp: 1, dtype: dtype}
				if layoutReason(s.spec, c.tp, c.pp) != "" {
					continue
				}
				req, rep, err := s.probe(ctx, c, 1, max(w.context, w.maxTokens))
				// A layout that does not start at the engine's default share
				// (an 8B model on a 24 GB card) may at its safe maximum: the
				// reference only needs a plan that starts, its pool is
				// replaced by an unbounded one below.
				if k := plan.KnobsOf(rep); err != nil && k.Share != "" && !s.fixed(k.Share) && k.SafeMax > k.Current {
					r2 := req
					if r2.SetField(k.Share, plan.FormatFloat(k.SafeMax)) == nil {
						if rep2, err2 := s.run(ctx, r2); err2 == nil && rep2 != nil {
							req, rep, err = r2, rep2, nil
						}
					}
				}
				if err != nil || rep == nil {
					if cerr := ctx.Err(); cerr != nil {
						return cerr
					}
					continue
				}
				cfg, err := simulate.ConfigFromReport(req, rep, s.spec, w.opts)
				if err != nil {
					return fmt.Errorf("%w: simulation of %s: %w", ErrInvalid, describe(Configuration{GPU: rep.GPU, TPSize: c.tp, PPSize: c.pp}), err)
				}
				unbounded := int(min(w.sumTokens+int64(w.maxTokens), maxUnboundedTokens))
				switch cfg.Engine {
				case simulate.EngineSGLang:
					ps := max(cfg.PageSize, 1)
					cfg.MaxTotalNumTokens = (unbounded/ps + 2) * ps
					cfg.MaxRunningRequests = 0
				case simulate.EngineVLLM:
					bs := max(cfg.BlockSize, 16)
					cfg.NumGPUBlocks = unbounded/bs + 2
					cfg.MaxNumSeqs = math.MaxInt32
				}
				sum, err := s.simulateOnce(ctx, cfg, 0, 1)
				if err != nil {
					return err
				}
				w.target = &WorkloadTarget{Requests: w.requests, MaxRequestTokens: w.maxTokens, MeanRequestTokens: w.meanTokens,
					PeakRunning: max(sum.PeakRunning, 1), PeakKVTokens: sum.PeakKVTokens,
					Reference: describe(Configuration{GPU: rep.GPU, TPSize: c.tp, PPSize: c.pp}), Criteria: w.criteria}
				return nil
			}
		}
	}
	// Nothing starts: the search finds the closest miss for one request.
	w.target = &WorkloadTarget{Requests: w.requests, MaxRequestTokens: w.maxTokens, MeanRequestTokens: w.meanTokens, PeakRunning: 1, Criteria: w.criteria}
	return nil
}

// simulateOnce runs the workload's replica-th share (of dp round-robin
// shares) through cfg.
func (s *search) simulateOnce(ctx context.Context, cfg simulate.Config, replica, dp int) (*simulate.Summary, error) {
	src, err := s.wl.open()
	if err != nil {
		return nil, fmt.Errorf("%w: workload: %w", ErrInvalid, err)
	}
	defer closeSource(src)
	if dp > 1 {
		src = &roundRobin{src: src, k: dp, i: replica}
	}
	s.wl.simulations++
	sum, err := simulate.Run(ctx, cfg, src)
	if errors.Is(err, simulate.ErrWorkload) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return sum, err
}

// roundRobin yields the requests i, i+k, i+2k, ... of src: one of k
// data-parallel replicas' share.
type roundRobin struct {
	src  simulate.Source
	k, i int
	n    int
}

// Next implements simulate.Source.
func (r *roundRobin) Next() (simulate.Request, error) {
	for {
		q, err := r.src.Next()
		if err != nil {
			return q, err
		}
		n := r.n
		r.n++
		if n%r.k == r.i {
			return q, nil
		}
	}
}

// simulate replays the workload on the plan of out (each of c's DP
// replicas its share) and judges it against the criteria. A plan the
// simulator cannot model is an error wrapping simulate.ErrConfig.
func (s *search) simulate(ctx context.Context, c candidate, out outcome) (*Simulated, error) {
	cfg, err := simulate.ConfigFromReport(out.req, out.rep, s.spec, s.wl.opts)
	if err != nil {
		return nil, err
	}
	m := &Simulated{}
	var steps, kvBlocked, cached, prompt int64
	blocked := map[string]int64{}
	var setbacks int64
	for i := range c.dp {
		sum, err := s.simulateOnce(ctx, cfg, i, c.dp)
		if err != nil {
			return nil, err
		}
		m.RequestsCompleted += sum.RequestsCompleted
		m.UnservableRequests += sum.UnservableRequests
		m.PeakRunning += sum.PeakRunning
		m.RecomputedTokens += sum.RecomputedTokens
		m.PeakKVTokens += sum.PeakKVTokens
		m.PoolTokens += sum.PoolTokens
		steps += sum.Steps
		kvBlocked += sum.BlockedSteps[simulate.LimitKVPool]
		for k, v := range sum.BlockedSteps {
			blocked[k] += v
		}
		cached += sum.CachedPromptTokens
		prompt += sum.PromptTokens
		m.ComputeLoadEst = max(m.ComputeLoadEst, sum.ComputeLoadEst)
		if sum.Retractions != nil {
			setbacks += *sum.Retractions
			m.Retractions = &setbacks
		}
		if sum.Preemptions != nil {
			setbacks += *sum.Preemptions
			m.Preemptions = &setbacks
		}
	}
	if prompt > 0 {
		m.PrefixHitRate = float64(cached) / float64(prompt)
	}
	if steps > 0 {
		m.KVBlockedShare = float64(kvBlocked) / float64(steps)
	}
	m.BindingLimit = simulate.LimitArrivals
	var most int64
	for _, k := range []string{simulate.LimitKVPool, simulate.LimitMaxRunning, simulate.LimitTokenBudget} {
		if n := blocked[k]; n > most {
			most, m.BindingLimit = n, k
		}
	}
	if m.ComputeLoadEst > 1 {
		m.BindingLimit = simulate.LimitCompute
	}
	m.Failed = s.wl.criteria.failed(m, s.wl.requests)
	return m, nil
}

// failed names the first criterion m misses, "" when it meets them all.
func (c Criteria) failed(m *Simulated, requests int64) string {
	switch {
	case m.UnservableRequests > 0:
		return fmt.Sprintf("%s of the %s requests are unservable (longer than the KV pool or the context)", units.Group(m.UnservableRequests), units.Group(requests))
	case m.RequestsCompleted < requests:
		return fmt.Sprintf("%s of the %s requests complete", units.Group(m.RequestsCompleted), units.Group(requests))
	case m.BindingLimit == simulate.LimitCompute:
		return fmt.Sprintf("compute is the binding limit: the tokens need about %.1f times the GPU time while they arrive (est.), a larger KV pool would not help", m.ComputeLoadEst)
	case m.setbacks() > c.MaxRetractions:
		return fmt.Sprintf("%s (at most %d allowed)", m.SetbackText(), c.MaxRetractions)
	case !c.AllowKVPoolBinding && m.BindingLimit == simulate.LimitKVPool:
		return "the KV pool is the binding limit"
	case m.KVBlockedShare > c.MaxKVBlockedShare+1e-12:
		return fmt.Sprintf("the KV pool keeps waiting requests out in %.1f%% of the steps (at most %.1f%% allowed)", 100*m.KVBlockedShare, 100*c.MaxKVBlockedShare)
	}
	return ""
}

// serve simulates the solved candidate; when the simulation misses and
// the memory share is the search's to choose, it tries the engine's safe
// maximum and, when that serves, the smallest share on the 0.01 grid
// that does. It returns the outcome simulated last that serves, else the
// first one's.
func (s *search) serve(ctx context.Context, c candidate, out outcome, n, L int) (outcome, *Simulated, error) {
	sim, err := s.simulate(ctx, c, out)
	if err != nil || sim.Failed == "" || sim.BindingLimit == simulate.LimitCompute {
		// More memory does not help GPUs that cannot keep up.
		return out, sim, err
	}
	k := out.knobs
	if k.Share == "" || s.fixed(k.Share) || out.share >= k.SafeMax-1e-9 {
		return out, sim, nil
	}
	sv := s.solver(ctx, c, n, L)
	if sv.at == nil || !sv.free {
		return out, sim, nil
	}
	try := func(share float64) (outcome, *Simulated, bool, error) {
		o := sv.at(share)
		if !o.ok {
			return o, nil, false, nil
		}
		m, err := s.simulate(ctx, c, o)
		if err != nil {
			return o, nil, false, err
		}
		return o, m, m.Failed == "", nil
	}
	grid := shareGrid(out.share, k.SafeMax)
	if len(grid) == 0 {
		return out, sim, nil
	}
	topO, topM, ok, err := try(grid[len(grid)-1])
	if err != nil || !ok {
		if err == nil && topM != nil && betterSim(topM, sim) {
			return topO, topM, nil
		}
		return out, sim, err
	}
	bestO, bestM := topO, topM
	lo, hi := 0, len(grid)-1
	for lo < hi {
		mid := (lo + hi) / 2
		o, m, ok, err := try(grid[mid])
		if err != nil {
			return out, sim, err
		}
		if ok {
			bestO, bestM, hi = o, m, mid
		} else {
			lo = mid + 1
		}
	}
	return bestO, bestM, nil
}

// betterSim reports whether a comes closer to the criteria than b: fewer
// unservable requests, then fewer retractions or preemptions, then the
// KV pool blocking fewer steps.
func betterSim(a, b *Simulated) bool {
	if a.UnservableRequests != b.UnservableRequests {
		return a.UnservableRequests < b.UnservableRequests
	}
	// A layout that keeps up with the arrivals before one whose GPUs do
	// not; among those that do not, the less loaded.
	if ao, bo := a.ComputeLoadEst > 1, b.ComputeLoadEst > 1; ao != bo || (ao && a.ComputeLoadEst != b.ComputeLoadEst) {
		return a.ComputeLoadEst < b.ComputeLoadEst
	}
	if a.setbacks() != b.setbacks() {
		return a.setbacks() < b.setbacks()
	}
	return a.KVBlockedShare < b.KVBlockedShare
}

// closerMiss reports whether candidate c, whose simulation is sim, is a
// closer workload miss than b: a layout operators run before deep
// pipeline parallelism, then betterSim.
func (s *search) closerMiss(c candidate, sim *Simulated, b simMiss) bool {
	if a, d := s.deepPP(c.tp, c.pp), s.deepPP(b.c.tp, b.c.pp); a != d {
		return d
	}
	return betterSim(sim, b.sim)
}

// simMiss is a layout whose plan holds the workload's demand but whose
// simulation misses a criterion.
type simMiss struct {
	c   candidate
	out outcome
	sim *Simulated
}

// workloadMiss describes the closest miss of a workload target: the
// layout whose simulation came nearest, the criterion it missed and what
// would help.
func (s *search) workloadMiss(sm simMiss, o Options, maxGPUs int) *Miss {
	cfg := s.configuration(sm.c, sm.out, o.Concurrency)
	cfg.Simulation = sm.sim
	m := &Miss{Configuration: cfg, Error: sm.sim.Failed,
		Shortfall: "the simulation of the workload misses a criterion: " + sm.sim.Failed,
		score:     scored{c: sm.c, out: sm.out, starts: true, served: 1}}
	fixes := simFixes(sm, cfg, o, s, maxGPUs)
	m.Hint = fmt.Sprintf("%s plans the workload's peak of %s running requests but its simulation misses; for the workload: %s",
		describe(cfg), units.Group(int64(o.Concurrency)), strings.Join(fixes, ", "))
	return m
}

// simFixes lists what would serve the workload the simulated miss sm
// (listed as cfg) misses: when its GPUs cannot keep up, more of them
// (replicas); else more GPUs, a quantized KV cache, a GPU with more
// memory or looser criteria.
func simFixes(sm simMiss, cfg Configuration, o Options, s *search, maxGPUs int) []string {
	var fixes []string
	if load := sm.sim.ComputeLoadEst; sm.sim.BindingLimit == simulate.LimitCompute {
		replicas := int(math.Ceil(load)) * max(cfg.DPSize, 1)
		need := replicas * max(cfg.TPSize, 1) * max(cfg.PPSize, 1)
		fixes = append(fixes, fmt.Sprintf("about %.1f times the GPUs (at least %d replicas of %s: --max-gpus %d or more); a larger KV pool would not help",
			load, replicas, describe(Configuration{GPU: cfg.GPU, TPSize: cfg.TPSize, PPSize: cfg.PPSize}), min(max(need, maxGPUs+1), MaxGPUsLimit)))
		return append(fixes, "a faster GPU")
	}
	if cfg.GPUCount < MaxGPUsLimit && cfg.GPUCount >= maxGPUs {
		fixes = append(fixes, fmt.Sprintf("more GPUs (--max-gpus %d)", min(2*maxGPUs, MaxGPUsLimit)))
	}
	if fp8 := sm.out.knobs.FP8; fp8 != "" && !quantizedKV(o.KVCacheDTypes, s.base.KVCacheDType) {
		fixes = append(fixes, fmt.Sprintf("a quantized KV cache (--kv-cache-dtypes auto,%s)", fp8))
	}
	if bigger := largerGPUs(s.gpus, 3); len(bigger) > 0 {
		fixes = append(fixes, "a GPU with more memory ("+strings.Join(bigger, ", ")+")")
	}
	return append(fixes, "looser criteria (more retractions or KV queueing allowed)")
}

// simulateCount simulates the layouts of one GPU count whose plans hold
// the workload's demand (cfgs, with their candidates and outcomes in
// solved), cheapest first, until one serves (every one with o.All). It
// returns the configurations that serve and keeps the closest simulated
// miss in best; a plan the simulator cannot model is a skip.
func (s *search) simulateCount(ctx context.Context, cfgs []Configuration, solved []simMiss, o Options, best **simMiss, res *Result) ([]Configuration, error) {
	order := make([]int, len(cfgs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cheaper(cfgs[a], cfgs[b]) })
	var served []Configuration
	for _, i := range order {
		c := solved[i].c
		out, sim, err := s.serve(ctx, c, solved[i].out, o.Concurrency, o.ContextLength)
		if errors.Is(err, simulate.ErrConfig) {
			res.Skipped = append(res.Skipped, skip(c, err.Error()))
			continue
		}
		if err != nil {
			return nil, err
		}
		if sim.Failed != "" {
			if *best == nil || s.closerMiss(c, sim, **best) {
				*best = &simMiss{c: c, out: out, sim: sim}
			}
			continue
		}
		cfg := s.configuration(c, out, o.Concurrency)
		cfg.Simulation = sim
		served = append(served, cfg)
		if !o.All {
			break
		}
	}
	return served, nil
}
