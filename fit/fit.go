// Package fit is kvcfg's inverse planner: from a target (model, concurrent
// requests, context length) it searches GPU type × GPU count × TP/PP × KV
// cache dtype for the setups that serve it, cheapest first, each with the
// exact engine flags. Every configuration it lists is the outcome of
// plan.Run on the very request its flags encode, so `kvcfg plan` with the
// same values reproduces it. Hybrid models get their pools solved for the
// target: the SWA/full token ratio of hybrid sliding-window pools and the
// mamba state slots of hybrid linear-attention models.
package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/plan"
)

// DefaultMaxGPUs is the largest GPU count searched when Options.MaxGPUs is 0.
const DefaultMaxGPUs = 8

// MaxGPUsLimit bounds Options.MaxGPUs.
const MaxGPUsLimit = 64

// ErrInvalid is wrapped by every Options problem.
var ErrInvalid = errors.New("fit: invalid options")

// Options is a fit request.
type Options struct {
	// Base carries the model (Model or Config), the engine and any fixed
	// flag (mem_fraction_static, weights_memory, disable_radix_cache, ...).
	// The search sets gpu, tp_size, pp_size, kv_cache_dtype, the context
	// length and the request cap itself; hybrid knobs
	// (swa_full_tokens_ratio, max_mamba_cache_size) are solved unless Base
	// fixes them.
	Base plan.Request `json:"base"`
	// Concurrency is the number of requests that must be resident at once.
	Concurrency int `json:"concurrency"`
	// ContextLength is the length (prompt + output tokens) of each request.
	ContextLength int `json:"context_length"`
	// GPUs are the GPU types to try (`kvcfg gpus` names); empty means every
	// catalog GPU.
	GPUs []string `json:"gpus,omitempty"`
	// KVCacheDTypes are the --kv-cache-dtype values to try; empty means
	// "auto" only (no quantized KV unless asked for).
	KVCacheDTypes []string `json:"kv_cache_dtypes,omitempty"`
	// MaxGPUs is the largest GPU count tried (DefaultMaxGPUs when 0).
	MaxGPUs int `json:"max_gpus,omitempty"`
	// All lists every feasible layout; by default only the smallest GPU
	// count per GPU type and dtype is listed, with its best TP/PP layout.
	All bool `json:"all,omitempty"`
}

// Validate reports every problem with the options at once.
func (o Options) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...)))
	}
	if o.Concurrency < 1 {
		bad("concurrency", "%d must be at least 1", o.Concurrency)
	}
	if o.ContextLength < 1 {
		bad("context_length", "%d must be at least 1", o.ContextLength)
	}
	if o.MaxGPUs < 0 || o.MaxGPUs > MaxGPUsLimit {
		bad("max_gpus", "%d must be between 1 and %d", o.MaxGPUs, MaxGPUsLimit)
	}
	for _, g := range o.GPUs {
		if _, err := gpu.Lookup(g); err != nil {
			bad("gpus", "%v", err)
		}
	}
	for _, d := range o.KVCacheDTypes {
		if strings.TrimSpace(d) == "" {
			bad("kv_cache_dtypes", "empty dtype")
		} else if err := o.Base.CheckKVCacheDType(d); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrInvalid, err))
		}
	}
	if err := o.Base.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalid, err))
	}
	return errors.Join(errs...)
}

// Target echoes what was asked for.
type Target struct {
	Model         string   `json:"model"`
	Engine        string   `json:"engine"`
	Concurrency   int      `json:"concurrency"`
	ContextLength int      `json:"context_length"`
	GPUs          []string `json:"gpus"`
	KVCacheDTypes []string `json:"kv_cache_dtypes"`
	MaxGPUs       int      `json:"max_gpus"`
}

// Configuration is one setup that serves the target.
type Configuration struct {
	Engine       string `json:"engine"`
	GPU          string `json:"gpu"`
	GPUCount     int    `json:"gpu_count"`
	TPSize       int    `json:"tp_size"`
	PPSize       int    `json:"pp_size"`
	DPSize       int    `json:"dp_size"`
	KVCacheDType string `json:"kv_cache_dtype"`
	// ResolvedKVCacheDType is the storage format the pool uses.
	ResolvedKVCacheDType string `json:"resolved_kv_cache_dtype,omitempty"`
	// MaxTotalNumTokens is the KV pool per GPU in tokens.
	MaxTotalNumTokens int64 `json:"max_total_num_tokens"`
	// MaxConcurrencyAtContextLength is what the plan of Flags reports: the
	// requests of ContextLength tokens resident at once (capped by the
	// request limit the flags set to the target).
	MaxConcurrencyAtContextLength int64 `json:"max_concurrency_at_context_length"`
	// CapacityAtContextLength is how many such requests the pools could
	// hold without the request cap.
	CapacityAtContextLength int64 `json:"capacity_at_context_length"`
	// HeadroomBytes is the KV memory per GPU beyond what the target needs:
	// the KV budget × (capacity − target) / capacity.
	HeadroomBytes int64 `json:"headroom_bytes"`
	// Flags are the engine's command-line flags for this setup.
	Flags []string `json:"flags"`
	// PlanArgs are the `kvcfg plan` arguments that reproduce the plan.
	PlanArgs []string `json:"plan_args"`
	// Request is the plan request Flags encode.
	Request plan.Request `json:"-"`
	// Report is the plan of Request.
	Report *plan.Report `json:"-"`
}

// Miss is the configuration that comes closest to an infeasible target,
// with what it can do instead.
type Miss struct {
	Configuration
	// MaxConcurrency is the largest number of requests of the target
	// context length it serves (0: not even one).
	MaxConcurrency int `json:"max_concurrency"`
	// MaxContextLength is the largest context length at which it serves the
	// target concurrency (0: none).
	MaxContextLength int `json:"max_context_length"`
	// GPUsNeeded is the smallest GPU count above the searched maximum (up
	// to MaxGPUsLimit) at which the same GPU type and dtype serve the
	// target, 0 when none does.
	GPUsNeeded int `json:"gpus_needed,omitempty"`
	// NeededLayout is that setup, when GPUsNeeded is set.
	NeededLayout *Configuration `json:"needed_layout,omitempty"`
	// Error is why it misses the target.
	Error string `json:"error"`
	// Hint says what would make the target fit.
	Hint string `json:"hint"`
}

// Skip is a combination left out of the search, with the reason. TPSize
// and PPSize are 0 when the KV dtype is ruled out on that GPU in every
// layout.
type Skip struct {
	GPU          string `json:"gpu"`
	TPSize       int    `json:"tp_size"`
	PPSize       int    `json:"pp_size"`
	KVCacheDType string `json:"kv_cache_dtype"`
	Reason       string `json:"reason"`
}

// Result is the outcome of a fit.
type Result struct {
	Target Target `json:"target"`
	// Configurations serve the target, cheapest first: by GPU count, then
	// by headroom, smallest first (the least over-provisioned setup).
	Configurations []Configuration `json:"configurations"`
	// ClosestMiss is set when no configuration serves the target.
	ClosestMiss *Miss `json:"closest_miss,omitempty"`
	// Skipped lists combinations the architecture or the engine rules out.
	Skipped []Skip `json:"skipped,omitempty"`
	// Plans is the number of plans run.
	Plans int `json:"plans"`
}

// candidate is one point of the search space.
type candidate struct {
	gpu    string
	tp, pp int
	dtype  string
}

func (c candidate) count() int { return c.tp * c.pp }

// outcome is a candidate solved for a target.
type outcome struct {
	req      plan.Request
	rep      *plan.Report
	err      error
	ok       bool
	capacity int64
}

// search holds what one fit resolves once.
type search struct {
	base  plan.Request
	spec  *model.Spec
	plans int
}

// Run searches the configurations that serve the target.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	base := o.Base.Normalized()
	m, err := plan.OpenModel(base)
	if err != nil {
		return nil, err
	}
	spec := m.Spec
	if spec.ContextLength > 0 && o.ContextLength > spec.ContextLength {
		return nil, fmt.Errorf("%w: context_length: %d exceeds the model's context length %d", ErrInvalid, o.ContextLength, spec.ContextLength)
	}
	// Every plan of the search reads the one parsed model, and none looks
	// for a TP size that fits: the search tries the layouts itself (the
	// closest miss gets its plan's own advice back, see miss).
	base.Resolved, base.NoAdvice = m, true
	if m.Source == catalog.SourceCatalog {
		base.Model = m.Name // the canonical id, as the printed flags give it
	}
	// The search owns these fields.
	base.GPU, base.TPSize, base.PPSize, base.DPSize = "", 0, 0, 0
	base.TensorParallelSize, base.PipelineParallelSize = 0, 0
	base.KVCacheDType, base.ContextLength, base.MaxModelLen = "", 0, 0
	base.MaxRunningRequests, base.MaxNumSeqs = 0, 0
	s := &search{base: base, spec: spec}

	gpus := o.GPUs
	if len(gpus) == 0 {
		if o.Base.GPU != "" {
			gpus = []string{o.Base.GPU}
		} else {
			gpus = gpu.Names()
		}
	}
	names := make([]string, 0, len(gpus))
	for _, g := range gpus {
		gg, _ := gpu.Lookup(g) // validated
		if !slices.Contains(names, gg.Name) {
			names = append(names, gg.Name)
		}
	}
	dtypes := o.KVCacheDTypes
	if len(dtypes) == 0 {
		dtypes = []string{"auto"}
		if o.Base.KVCacheDType != "" {
			dtypes = []string{o.Base.KVCacheDType}
		}
	}
	maxGPUs := o.MaxGPUs
	if maxGPUs == 0 {
		maxGPUs = DefaultMaxGPUs
	}
	res := &Result{Target: Target{
		Model: spec.Name, Engine: base.Engine, Concurrency: o.Concurrency, ContextLength: o.ContextLength,
		GPUs: names, KVCacheDTypes: dtypes, MaxGPUs: maxGPUs,
	}}

	var best *struct {
		c   candidate
		out outcome
	}
	var all []Configuration
	for _, g := range names {
	dtypeLoop:
		for _, d := range dtypes {
			found := false
			for count := 1; count <= maxGPUs && !(found && !o.All); count++ {
				var atCount []Configuration
				for _, tp := range divisors(count) {
					c := candidate{gpu: g, tp: tp, pp: count / tp, dtype: d}
					if reason := layoutReason(spec, base.Engine, c.tp, c.pp); reason != "" {
						res.Skipped = append(res.Skipped, skip(c, reason))
						continue
					}
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					out := s.solve(ctx, c, o.Concurrency, o.ContextLength)
					if errors.Is(out.err, plan.ErrInvalid) {
						var fe *plan.FieldError
						if errors.As(out.err, &fe) && fe.Field == "kv_cache_dtype" {
							// The dtype does not run on this GPU in any layout.
							res.Skipped = append(res.Skipped, Skip{GPU: g, KVCacheDType: d, Reason: out.err.Error()})
							continue dtypeLoop
						}
						res.Skipped = append(res.Skipped, skip(c, out.err.Error()))
						continue
					}
					if out.ok {
						atCount = append(atCount, s.configuration(c, out, o.Concurrency))
						continue
					}
					if best == nil || closer(c, out, best.c, best.out) {
						best = &struct {
							c   candidate
							out outcome
						}{c, out}
					}
				}
				if len(atCount) == 0 {
					continue
				}
				found = true
				if o.All {
					all = append(all, atCount...)
					continue
				}
				// The best layout at the smallest count: most headroom,
				// then the fewest pipeline stages.
				slices.SortStableFunc(atCount, func(a, b Configuration) int {
					if a.HeadroomBytes != b.HeadroomBytes {
						return cmpInt64(b.HeadroomBytes, a.HeadroomBytes)
					}
					return a.PPSize - b.PPSize
				})
				all = append(all, atCount[0])
			}
		}
	}
	slices.SortStableFunc(all, func(a, b Configuration) int {
		if a.GPUCount != b.GPUCount {
			return a.GPUCount - b.GPUCount
		}
		return cmpInt64(a.HeadroomBytes, b.HeadroomBytes)
	})
	res.Configurations = all
	if res.Configurations == nil {
		res.Configurations = []Configuration{}
	}
	if len(all) == 0 && best != nil {
		m, err := s.miss(ctx, best.c, best.out, o.Concurrency, o.ContextLength, maxGPUs)
		if err != nil {
			return nil, err
		}
		res.ClosestMiss = m
	}
	res.Plans = s.plans
	return res, nil
}

func skip(c candidate, reason string) Skip {
	return Skip{GPU: c.gpu, TPSize: c.tp, PPSize: c.pp, KVCacheDType: c.dtype, Reason: reason}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// closer reports whether candidate a misses the target by less than b:
// more capacity, then fewer GPUs.
func closer(a candidate, ao outcome, b candidate, bo outcome) bool {
	if ao.capacity != bo.capacity {
		return ao.capacity > bo.capacity
	}
	if a.count() != b.count() {
		return a.count() < b.count()
	}
	return a.pp < b.pp
}

// divisors returns the divisors of n in ascending order: the TP sizes of
// an n-GPU layout (pp = n / tp).
func divisors(n int) []int {
	var out []int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// layoutReason says why an architecture cannot run with tp × pp, "" when
// it can. Both engines shard query heads evenly over TP ranks and KV heads
// evenly or by replication.
func layoutReason(s *model.Spec, engine string, tp, pp int) string {
	if s.NumAttentionHeads > 0 && s.NumAttentionHeads%tp != 0 {
		return fmt.Sprintf("tp_size %d does not divide the %d attention heads", tp, s.NumAttentionHeads)
	}
	if s.Attention == model.MHA && s.NumKVHeads > 0 && s.NumKVHeads%tp != 0 && tp%s.NumKVHeads != 0 {
		return fmt.Sprintf("tp_size %d neither divides nor is a multiple of the %d KV heads", tp, s.NumKVHeads)
	}
	if s.NumLayers > 0 && pp > s.NumLayers {
		return fmt.Sprintf("pp_size %d exceeds the %d layers", pp, s.NumLayers)
	}
	_ = engine
	return ""
}

// run is plan.Run, counted.
func (s *search) run(ctx context.Context, req plan.Request) (*plan.Report, error) {
	s.plans++
	return plan.Run(ctx, req)
}

// request builds the plan request of candidate c for n requests of L
// tokens, before hybrid knobs are solved.
func (s *search) request(c candidate, n, L int) plan.Request {
	r := s.base
	r.GPU, r.TPSize, r.KVCacheDType = c.gpu, c.tp, c.dtype
	if c.pp > 1 {
		r.PPSize = c.pp
	}
	switch r.Engine {
	case plan.EngineVLLM:
		r.MaxModelLen, r.MaxNumSeqs = L, n
	case plan.EngineTRTLLM:
		r.ContextLength, r.MaxBatchSize = L, n
	default:
		r.ContextLength, r.MaxRunningRequests = L, n
	}
	return r
}

// solve plans candidate c for n requests of L tokens: it pins the memory
// fraction the engine would derive, solves the hybrid pools for the target
// and runs the final request. ok means the final plan serves the target.
func (s *search) solve(ctx context.Context, c candidate, n, L int) outcome {
	req := s.request(c, n, L)
	vllmEngine := req.Engine == plan.EngineVLLM
	// Probe: the engine's own defaults for this layout.
	rep, err := s.run(ctx, req)
	if errors.Is(err, plan.ErrInvalid) || rep == nil {
		return outcome{req: req, rep: rep, err: err}
	}
	if vllmEngine {
		if req.GPUMemoryUtilization == 0 {
			req.GPUMemoryUtilization = rep.GPUMemoryUtilization // the version's default
		}
	} else if req.Engine == plan.EngineSGLang && req.MemFractionStatic == 0 && rep.MemFractionStatic > 0 {
		req.MemFractionStatic = rep.MemFractionStatic
	}
	if req.Engine == plan.EngineSGLang {
		switch {
		case s.spec.Linear != nil && s.base.MaxMambaCacheSize == 0 && s.base.MambaFullMemoryRatio == 0:
			return s.solveMamba(ctx, req, n, L)
		case s.swaSolvable(rep):
			return s.solveSWA(ctx, req, rep, n, L)
		}
	}
	if err != nil {
		// Pinning the derived memory fraction changes nothing: the final
		// plan would fail the same way.
		return outcome{req: req, rep: rep, err: err, capacity: plan.Capacity(rep, s.spec, L)}
	}
	return s.final(ctx, req, n, L)
}

// swaSolvable reports whether the SWA/full token ratio is the fit's to
// choose: a hybrid SWA pool with full-attention layers (the probe shows
// the split, or failed before sizing it) and no ratio fixed by the user.
func (s *search) swaSolvable(probe *plan.Report) bool {
	if !s.spec.HybridSWAPool || s.base.DisableHybridSWAMemory || s.base.SWAFullTokensRatio != 0 {
		return false
	}
	if s.spec.CountLayers(model.FullAttention) == 0 {
		return false
	}
	return probe.FullMaxTotalNumTokens > 0 || probe.MaxTotalNumTokens == 0
}

// final runs req and judges it against the target.
func (s *search) final(ctx context.Context, req plan.Request, n, L int) outcome {
	rep, err := s.run(ctx, req)
	out := outcome{req: req, rep: rep, err: err}
	if rep == nil {
		return out
	}
	out.capacity = plan.Capacity(rep, s.spec, L)
	out.ok = err == nil && rep.MaxConcurrencyAtContextLength >= int64(n) && int64(rep.MaxRunningRequests) >= int64(n)
	return out
}

// solveMamba sizes the mamba state pool to exactly the target: n requests
// need n × slot-ratio state slots (3 with the radix cache, 1 without), and
// the rest of the budget goes to the KV pool.
func (s *search) solveMamba(ctx context.Context, req plan.Request, n, L int) outcome {
	ratios := []int{3, 1}
	if s.base.DisableRadixCache || s.spec.Linear.Kind == "kda" {
		ratios = []int{1, 3}
	}
	var first outcome
	for i, k := range ratios {
		r := req
		r.MaxMambaCacheSize = n * k
		out := s.final(ctx, r, n, L)
		if out.ok {
			return out
		}
		if i == 0 {
			first = out
		}
	}
	return first
}

// solveSWA picks --swa-full-tokens-ratio so that the full pool and the
// sliding-window pool run out together: a request keeps ⌈L⌉ tokens in the
// full pool and ⌈min(window + page, L)⌉ (pages) in the SWA pool, so the
// ratio is their quotient, nudged up until rounding no longer makes the
// SWA pool the bound.
func (s *search) solveSWA(ctx context.Context, req plan.Request, probe *plan.Report, n, L int) outcome {
	page := max(probe.PageSize, 1)
	full := ceilPage(int64(L), page)
	win := ceilPage(min(int64(sglang.SlidingWindow(s.spec)+page), int64(L)), page)
	r := math.Ceil(float64(win)/float64(full)*1000) / 1000
	r = min(max(r, 0.001), 1)
	var out outcome
	for range 8 {
		req.SWAFullTokensRatio = r
		out = s.final(ctx, req, n, L)
		if out.ok || out.rep == nil || r >= 1 {
			return out
		}
		fb := out.rep.FullMaxTotalNumTokens / full
		sb := out.rep.SWAMaxTotalNumTokens / win
		if out.err == nil && sb >= fb {
			return out // the full pool is the bound: more ratio only shrinks it
		}
		r = min(1, math.Ceil((r*1.02+0.001)*1000)/1000)
	}
	return out
}

func isHybridSWA(rep *plan.Report) bool {
	return rep.FullMaxTotalNumTokens > 0 || rep.SWAMaxTotalNumTokens > 0
}

func ceilPage(n int64, page int) int64 {
	p := int64(max(page, 1))
	return (n + p - 1) / p * p
}

// configuration turns a feasible outcome into a listed Configuration.
func (s *search) configuration(c candidate, out outcome, n int) Configuration {
	rep := out.rep
	cfg := Configuration{
		Engine: rep.Engine, GPU: rep.GPU, GPUCount: rep.NumGPUs, TPSize: rep.TPSize, PPSize: rep.PPSize, DPSize: rep.DPSize,
		KVCacheDType: c.dtype, ResolvedKVCacheDType: rep.ResolvedKVCacheDType,
		MaxTotalNumTokens: rep.MaxTotalNumTokens, MaxConcurrencyAtContextLength: rep.MaxConcurrencyAtContextLength,
		CapacityAtContextLength: out.capacity,
		Flags:                   EngineFlags(out.req), PlanArgs: PlanArgs(out.req),
		Request: out.req, Report: rep,
	}
	if out.capacity > 0 && rep.AvailableKVBytes > 0 {
		spare := max(out.capacity-int64(n), 0)
		cfg.HeadroomBytes = int64(float64(rep.AvailableKVBytes) * float64(spare) / float64(out.capacity))
	}
	return cfg
}

// miss describes the closest miss: the largest concurrency at the target
// context and the largest context at the target concurrency, both found by
// bisection over the same solver.
func (s *search) miss(ctx context.Context, c candidate, out outcome, n, L, maxGPUs int) (*Miss, error) {
	ok := func(nn, ll int) (outcome, error) {
		if err := ctx.Err(); err != nil {
			return outcome{}, err
		}
		return s.solve(ctx, c, nn, ll), nil
	}
	// Largest n' < n with n' requests of L tokens.
	lo, hi := 0, n-1
	var atN outcome
	for lo < hi {
		mid := (lo + hi + 1) / 2
		o, err := ok(mid, L)
		if err != nil {
			return nil, err
		}
		if o.ok {
			lo, atN = mid, o
		} else {
			hi = mid - 1
		}
	}
	// Largest context L' < L with n requests.
	clo, chi := 0, L-1
	for clo < chi {
		mid := (clo + chi + 1) / 2
		o, err := ok(n, mid)
		if err != nil {
			return nil, err
		}
		if o.ok {
			clo = mid
		} else {
			chi = mid - 1
		}
	}
	shown := out
	if lo > 0 {
		shown = atN
	}
	m := &Miss{MaxConcurrency: lo, MaxContextLength: clo}
	if shown.rep != nil {
		m.Configuration = s.configuration(c, shown, max(lo, 1))
		m.Configuration.MaxConcurrencyAtContextLength = min(m.Configuration.MaxConcurrencyAtContextLength, int64(lo))
	} else {
		m.Configuration = Configuration{Engine: s.base.Engine, GPU: c.gpu, GPUCount: c.count(), TPSize: c.tp, PPSize: c.pp, DPSize: 1,
			KVCacheDType: c.dtype, Flags: EngineFlags(shown.req), PlanArgs: PlanArgs(shown.req), Request: shown.req}
	}
	switch {
	case out.err != nil:
		err := out.err
		if errors.Is(err, plan.ErrInfeasible) {
			// The plan as `kvcfg plan` runs it: with its TP advice.
			r := out.req
			r.NoAdvice = false
			if _, e := plan.Run(ctx, r); e != nil {
				err = e
			}
		}
		m.Error = strings.TrimPrefix(err.Error(), "plan: infeasible: ")
	default:
		m.Error = fmt.Sprintf("holds %d requests of %d tokens, not %d", out.capacity, L, n)
	}
	if err := s.beyond(ctx, m, c, n, L, maxGPUs); err != nil {
		return nil, err
	}
	var hints []string
	if lo > 0 {
		hints = append(hints, fmt.Sprintf("serve %d concurrent requests of %d tokens", lo, L))
	}
	if clo > 0 {
		hints = append(hints, fmt.Sprintf("serve %d concurrent requests of up to %d tokens", n, clo))
	}
	more := fmt.Sprintf("allow more GPUs (--max-gpus above %d)", maxGPUs)
	if m.NeededLayout != nil {
		more = fmt.Sprintf("allow %d GPUs (--max-gpus %d: %d× %s, tp %d, pp %d)", m.GPUsNeeded, m.GPUsNeeded, m.GPUsNeeded, c.gpu, m.NeededLayout.TPSize, m.NeededLayout.PPSize)
	}
	if len(hints) == 0 {
		m.Hint = fmt.Sprintf("the model does not run on %d× %s: %s, larger GPUs, a quantized KV cache (--kv-cache-dtypes fp8_e4m3) or a quantized checkpoint", c.count(), c.gpu, more)
	} else {
		m.Hint = fmt.Sprintf("%d× %s can %s; for the full target %s, larger GPUs or a quantized KV cache", c.count(), c.gpu, strings.Join(hints, " or "), more)
	}
	return m, nil
}

// beyond looks for the smallest GPU count above maxGPUs (up to
// MaxGPUsLimit) at which the miss's GPU type and dtype serve the target.
func (s *search) beyond(ctx context.Context, m *Miss, c candidate, n, L, maxGPUs int) error {
	for count := maxGPUs + 1; count <= MaxGPUsLimit; count++ {
		var found []Configuration
		for _, tp := range divisors(count) {
			cc := candidate{gpu: c.gpu, tp: tp, pp: count / tp, dtype: c.dtype}
			if layoutReason(s.spec, s.base.Engine, cc.tp, cc.pp) != "" {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if out := s.solve(ctx, cc, n, L); out.ok {
				found = append(found, s.configuration(cc, out, n))
			}
		}
		if len(found) > 0 {
			best := slices.MaxFunc(found, func(a, b Configuration) int {
				if a.HeadroomBytes != b.HeadroomBytes {
					return cmpInt64(a.HeadroomBytes, b.HeadroomBytes)
				}
				return b.PPSize - a.PPSize
			})
			m.GPUsNeeded, m.NeededLayout = count, &best
			return nil
		}
	}
	return nil
}
