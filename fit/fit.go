// Package fit is kvcfg's inverse planner: from a target (model, concurrent
// requests, context length) it searches GPU type × GPU count × TP/PP/DP ×
// KV cache dtype for the setups that serve it, cheapest first, each with
// the exact engine flags. For each layout it also turns the memory knobs:
// the request cap is set to the target, and when the engine's default
// memory share (--mem-fraction-static, --gpu-memory-utilization,
// --kv_cache_free_gpu_memory_fraction) does not serve, the smallest share
// up to the engine's safe maximum that does. Every configuration it lists
// is the outcome of plan.Run on the very request its flags encode, so
// `kvcfg plan` with the same values reproduces it. Hybrid models get their
// pools solved for the target: the SWA/full token ratio of hybrid
// sliding-window pools and the mamba state slots of hybrid
// linear-attention models.
//
// The target may instead be a workload (a trace or a generator, package
// simulate): the search then sizes for the workload's peak running
// requests and lists the cheapest layouts whose simulation of the
// workload meets Criteria (docs/fit.md#serving-a-workload).
package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
	"github.com/kvcfg/kvcfg/units"
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
	// The search sets gpu, tp_size, pp_size, dp_size, kv_cache_dtype, the
	// context length and the request cap itself; the memory share and the
	// hybrid knobs (swa_full_tokens_ratio, max_mamba_cache_size) are
	// searched unless Base fixes them.
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
	// count per GPU type and dtype is listed, with its best TP/PP/DP
	// layout.
	All bool `json:"all,omitempty"`

	// Workload, Trace or Source (one of them) make a workload the target
	// instead of Concurrency (docs/fit.md#serving-a-workload): a layout
	// serves it when the simulation of the workload on its plan (package
	// simulate, as `kvcfg simulate` runs it) meets Criteria. The search
	// sizes for the peak running requests of the workload on an unbounded
	// pool; ContextLength defaults to its longest request. Workload
	// generates the requests, Trace lists them, Source opens them afresh
	// for each simulation (a trace file; library callers only).
	Workload *simulate.Generator             `json:"workload,omitempty"`
	Trace    []simulate.Request              `json:"trace,omitempty"`
	Source   func() (simulate.Source, error) `json:"-"`
	// Simulation are the simulation's own options (step time, roofline
	// tuning, SGLang's --max-prefill-tokens and
	// --schedule-conservativeness); its time series is never recorded.
	Simulation simulate.Options `json:"simulation,omitzero"`
	// Criteria are what a layout's simulation must show (the zero value:
	// no retraction or preemption, the KV pool never holding requests
	// back).
	Criteria Criteria `json:"criteria,omitzero"`
}

// Validate reports every problem with the options at once.
func (o Options) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...)))
	}
	if o.workloads() > 0 {
		errs = append(errs, o.validateWorkload()...)
	} else {
		if o.Concurrency < 1 {
			bad("concurrency", "%d must be at least 1 (or give a workload)", o.Concurrency)
		}
		if o.ContextLength < 1 {
			bad("context_length", "%d must be at least 1", o.ContextLength)
		}
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
	// Workload is set for a workload target: Concurrency is then its peak
	// running requests on an unbounded pool, ContextLength its longest
	// request.
	Workload *WorkloadTarget `json:"workload,omitempty"`
	// SGLangProfile names the SGLang version profile the SGLang rows are
	// sized with (their default memory share included) and why; empty when
	// SGLang is not searched.
	SGLangProfile string `json:"sglang_profile,omitempty"`
}

// Configuration is one setup that serves the target.
type Configuration struct {
	Engine string `json:"engine"`
	GPU    string `json:"gpu"`
	// SameAs are other GPU types whose setup is the same in every number
	// (H100-PCIe and H800 next to H100-80GB): one row stands for them all.
	SameAs   []string `json:"same_as,omitempty"`
	GPUCount int      `json:"gpu_count"`
	TPSize   int      `json:"tp_size"`
	PPSize   int      `json:"pp_size"`
	// DPSize is the number of data-parallel replicas, each of TPSize ×
	// PPSize GPUs serving its share of the requests.
	DPSize       int    `json:"dp_size"`
	KVCacheDType string `json:"kv_cache_dtype"`
	// ResolvedKVCacheDType is the storage format the pool uses.
	ResolvedKVCacheDType string `json:"resolved_kv_cache_dtype,omitempty"`
	// MaxTotalNumTokens is the KV pool per GPU in tokens.
	MaxTotalNumTokens int64 `json:"max_total_num_tokens"`
	// MaxConcurrencyAtContextLength is what the plan of Flags reports,
	// over all DP replicas: the requests of ContextLength tokens resident
	// at once (capped by the request limit the flags set to the target).
	MaxConcurrencyAtContextLength int64 `json:"max_concurrency_at_context_length"`
	// CapacityAtContextLength is how many such requests the pools could
	// hold without the request cap (over all DP replicas).
	CapacityAtContextLength int64 `json:"capacity_at_context_length"`
	// HeadroomBytes is the KV memory per GPU beyond what the target needs:
	// the KV budget × (capacity − target) / capacity.
	HeadroomBytes int64 `json:"headroom_bytes"`
	// MemoryShareKey is the engine's memory-share setting
	// (mem_fraction_static, gpu_memory_utilization,
	// free_gpu_memory_fraction), MemoryShare the value planned and
	// DefaultMemoryShare the engine's own for this layout; MemoryShare is
	// above the default only when the default does not serve the target.
	MemoryShareKey     string  `json:"memory_share_key,omitempty"`
	MemoryShare        float64 `json:"memory_share,omitempty"`
	DefaultMemoryShare float64 `json:"default_memory_share,omitempty"`
	// Notes say which knob fit turned beyond the engine's default.
	Notes []string `json:"notes,omitempty"`
	// Flags are the engine's command-line flags for this setup.
	Flags []string `json:"flags"`
	// PlanArgs are the `kvcfg plan` arguments that reproduce the plan.
	PlanArgs []string `json:"plan_args"`
	// Simulation is the simulation of the workload on this setup (a
	// workload target only).
	Simulation *Simulated `json:"simulation,omitempty"`
	// Request is the plan request Flags encode.
	Request plan.Request `json:"-"`
	// Report is the plan of Request (one replica).
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
	// Shortfall says by how much it misses: the share of the target its
	// pools hold ("holds 49 of the 60 requests (82%)").
	Shortfall string `json:"shortfall"`
	// GPUsNeeded is the smallest GPU count above the searched maximum at
	// which the same GPU type and dtype serve the target (a replica of at
	// most one node, more GPUs as data-parallel replicas), 0 when none
	// does.
	GPUsNeeded int `json:"gpus_needed,omitempty"`
	// NeededLayout is that setup, when GPUsNeeded is set.
	NeededLayout *Configuration `json:"needed_layout,omitempty"`
	// Error is why it misses the target.
	Error string `json:"error"`
	// Hint says what would make the target fit.
	Hint string `json:"hint"`
	// score is how close it comes (RunEngines compares engines' misses).
	score scored
	// estimate is the fewest GPUs that would serve the target as replicas
	// of one layout, each holding estimateCapacity requests at the safe
	// share, found even beyond MaxGPUsLimit.
	estimate         *candidate
	estimateCapacity int64
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
	// by headroom, most first (the setup with the most spare KV memory).
	// Setups that differ only by GPU type name are one row (SameAs).
	Configurations []Configuration `json:"configurations"`
	// ClosestMiss is set when no configuration serves the target: the
	// layout that comes closest to serving it.
	ClosestMiss *Miss `json:"closest_miss,omitempty"`
	// Skipped lists combinations the architecture or the engine rules out.
	Skipped []Skip `json:"skipped,omitempty"`
	// Plans is the number of plans run.
	Plans int `json:"plans"`
}

// candidate is one point of the search space: dp replicas of tp × pp
// GPUs.
type candidate struct {
	gpu        string
	tp, pp, dp int
	dtype      string
}

func (c candidate) count() int { return c.tp * c.pp * c.dp }

// perReplica is the share of n requests one replica serves.
func (c candidate) perReplica(n int) int { return (n + c.dp - 1) / c.dp }

// outcome is a candidate solved for a target.
type outcome struct {
	req plan.Request
	rep *plan.Report
	err error
	ok  bool
	// capacity is one replica's capacity at the target context.
	capacity int64
	// share is the memory share planned (key knobs.Share), def the
	// engine's default for the layout.
	knobs      plan.Knobs
	share, def float64
}

// search holds what one fit resolves once.
type search struct {
	base  plan.Request
	spec  *model.Spec
	plans int
	// ctxKey and capKey are the engine's context-length and request-cap
	// request keys; dp says whether the engine's printed flags carry
	// data-parallel replicas.
	ctxKey, capKey string
	dp             bool
	// gpus are the GPU types searched.
	gpus []string
	// wl is the workload target (nil: Concurrency is the target).
	wl *workload
}

// targetKeys are the request keys an engine takes the context length and
// the running-request cap in.
func targetKeys(engine string) (ctxKey, capKey string) {
	switch engine {
	case plan.EngineVLLM:
		return "max_model_len", "max_num_seqs"
	case plan.EngineTRTLLM:
		return "max_seq_len", "max_batch_size"
	}
	return "context_length", "max_running_requests"
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
	var wl *workload
	if o.workloads() > 0 {
		if wl, err = scanWorkload(ctx, o); err != nil {
			return nil, err
		}
		switch {
		case o.ContextLength == 0:
			o.ContextLength = wl.maxTokens
		case o.ContextLength < wl.maxTokens:
			return nil, fmt.Errorf("%w: context_length: %d is shorter than the workload's longest request (%d tokens): raise it or leave it out", ErrInvalid, o.ContextLength, wl.maxTokens)
		}
	}
	if spec.ContextLength > 0 && o.ContextLength > spec.ContextLength {
		what := "context_length: " + strconv.Itoa(o.ContextLength)
		if wl != nil && o.ContextLength == wl.maxTokens {
			what = fmt.Sprintf("workload: its longest request (%d tokens)", wl.maxTokens)
		}
		return nil, fmt.Errorf("%w: %s exceeds the model's context length %d", ErrInvalid, what, spec.ContextLength)
	}
	// Every plan of the search reads the one parsed model, and none runs
	// the advice search: the search tries the layouts itself, and the
	// closest miss names its own remedies (see miss).
	base.Resolved, base.NoAdvice = m, true
	if m.Source == catalog.SourceCatalog {
		base.Model = m.Name // the canonical id, as the printed flags give it
	}
	// The search owns these fields.
	base.GPU, base.TPSize, base.PPSize, base.DPSize = "", 0, 0, 0
	base.TensorParallelSize, base.PipelineParallelSize = 0, 0
	base.KVCacheDType, base.ContextLength, base.MaxModelLen, base.MaxSeqLen = "", 0, 0, 0
	base.MaxRunningRequests, base.MaxNumSeqs, base.MaxBatchSize = 0, 0, 0
	s := &search{base: base, spec: spec}
	s.ctxKey, s.capKey = targetKeys(base.Engine)
	s.dp = !base.EnableDPAttention && len(EngineFlags(plan.Request{Engine: base.Engine, DPSize: 2})) > len(EngineFlags(plan.Request{Engine: base.Engine}))

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
	s.gpus = names
	if wl != nil {
		s.wl = wl
		if err := s.demand(ctx, dtypes[0], maxGPUs); err != nil {
			return nil, err
		}
		o.Concurrency = wl.target.PeakRunning
	}
	res := &Result{Target: Target{
		Model: spec.Name, Engine: base.Engine, Concurrency: o.Concurrency, ContextLength: o.ContextLength,
		GPUs: names, KVCacheDTypes: dtypes, MaxGPUs: maxGPUs,
	}}
	if slices.Contains(strings.Split(base.Engine, ","), plan.EngineSGLang) {
		if p, err := sglang.ResolveProfile(base.SGLangVersion); err == nil {
			res.Target.SGLangProfile = p.Reason
		}
	}
	if wl != nil {
		res.Target.Workload = wl.target
	}

	var best *scored
	var simBest *simMiss
	var all []Configuration
	for _, g := range names {
	dtypeLoop:
		for _, d := range dtypes {
			found := false
			for count := 1; count <= maxGPUs && !(found && !o.All); count++ {
				var atCount []Configuration
				var solved []simMiss
				for _, c := range s.layouts(g, d, count) {
					if reason := layoutReason(spec, c.tp, c.pp); reason != "" {
						if c.dp == 1 {
							res.Skipped = append(res.Skipped, skip(c, reason))
						}
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
						solved = append(solved, simMiss{c: c, out: out})
						continue
					}
					if sc := s.score(c, out, o.Concurrency, o.ContextLength); best == nil || sc.better(*best) {
						best = &sc
					}
				}
				if wl != nil && len(atCount) > 0 {
					var err error
					if atCount, err = s.simulateCount(ctx, atCount, solved, o, &simBest, res); err != nil {
						return nil, err
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
				// then the fewest pipeline stages and replicas.
				slices.SortStableFunc(atCount, cheaper)
				all = append(all, atCount[0])
			}
		}
	}
	all = collapse(all)
	slices.SortStableFunc(all, cheaper)
	res.Configurations = all
	if res.Configurations == nil {
		res.Configurations = []Configuration{}
	}
	if len(all) == 0 && simBest != nil {
		res.ClosestMiss = s.workloadMiss(*simBest, o, maxGPUs)
	} else if len(all) == 0 && best != nil {
		m, err := s.miss(ctx, *best, o, maxGPUs)
		if err != nil {
			return nil, err
		}
		res.ClosestMiss = m
	}
	res.Plans = s.plans
	if wl != nil {
		wl.target.Simulations = wl.simulations
	}
	return res, nil
}

// cheaper orders configurations cheapest first: fewer GPUs, then more
// headroom, then fewer pipeline stages, then fewer replicas.
func cheaper(a, b Configuration) int {
	if a.GPUCount != b.GPUCount {
		return a.GPUCount - b.GPUCount
	}
	if a.HeadroomBytes != b.HeadroomBytes {
		return cmpInt64(b.HeadroomBytes, a.HeadroomBytes)
	}
	if a.PPSize != b.PPSize {
		return a.PPSize - b.PPSize
	}
	return a.DPSize - b.DPSize
}

// collapse merges configurations that differ only by the GPU type's name
// (the same memory and rules give the same plan): the first keeps its row
// and lists the others in SameAs.
func collapse(cs []Configuration) []Configuration {
	var out []Configuration
	for _, c := range cs {
		merged := false
		for i := range out {
			if sameButGPU(out[i], c) {
				out[i].SameAs = append(out[i].SameAs, c.GPU)
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, c)
		}
	}
	return out
}

func sameButGPU(a, b Configuration) bool {
	return a.Engine == b.Engine && a.GPUCount == b.GPUCount && a.TPSize == b.TPSize && a.PPSize == b.PPSize && a.DPSize == b.DPSize &&
		a.KVCacheDType == b.KVCacheDType && a.ResolvedKVCacheDType == b.ResolvedKVCacheDType &&
		a.MaxTotalNumTokens == b.MaxTotalNumTokens && a.MaxConcurrencyAtContextLength == b.MaxConcurrencyAtContextLength &&
		a.CapacityAtContextLength == b.CapacityAtContextLength && a.HeadroomBytes == b.HeadroomBytes &&
		slices.Equal(a.Flags, b.Flags)
}

// layouts are the candidates of count GPUs of type g with dtype d: every
// TP × PP split, and, where the engine runs replicas, dp replicas of a
// TP-only layout.
func (s *search) layouts(g, d string, count int) []candidate {
	var out []candidate
	for _, dp := range divisors(count) {
		if dp > 1 && !s.dp {
			break
		}
		rest := count / dp
		for _, tp := range divisors(rest) {
			if dp > 1 && tp != rest {
				continue // replicas are tensor-parallel only
			}
			out = append(out, candidate{gpu: g, tp: tp, pp: rest / tp, dp: dp, dtype: d})
		}
	}
	return out
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

// scored is a candidate that misses, with how close it comes.
type scored struct {
	c   candidate
	out outcome
	// starts says the engine starts; served is the share of the target
	// its pools hold (requests, or the tokens of one request when not
	// even one fits).
	starts bool
	served float64
}

// score measures how close out comes to n requests of L tokens.
func (s *search) score(c candidate, out outcome, n, L int) scored {
	sc := scored{c: c, out: out, starts: out.rep != nil && out.err == nil}
	if !sc.starts {
		return sc
	}
	if total := out.capacity * int64(c.dp); total > 0 {
		sc.served = float64(total) / float64(n)
	} else if L > 0 {
		sc.served = float64(out.rep.MaxTotalNumTokens) / float64(L) / float64(n)
	}
	return sc
}

// better reports whether a comes closer to serving than b: a layout that
// starts before one the engine refuses; then the larger share of the
// target held; then fewer GPUs, stages and replicas. Among refusals the
// layout with more GPUs is closer (its weights are split further).
func (a scored) better(b scored) bool {
	if a.starts != b.starts {
		return a.starts
	}
	if !a.starts && a.c.count() != b.c.count() {
		return a.c.count() > b.c.count()
	}
	if a.served != b.served {
		return a.served > b.served
	}
	if a.c.count() != b.c.count() {
		return a.c.count() < b.c.count()
	}
	if a.c.pp != b.c.pp {
		return a.c.pp < b.c.pp
	}
	return a.c.dp < b.c.dp
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
// it can. The engines shard query heads evenly over TP ranks and KV heads
// evenly or by replication.
func layoutReason(s *model.Spec, tp, pp int) string {
	if s.NumAttentionHeads > 0 && s.NumAttentionHeads%tp != 0 {
		return fmt.Sprintf("tp_size %d does not divide the %d attention heads", tp, s.NumAttentionHeads)
	}
	if s.Attention == model.MHA && s.NumKVHeads > 0 && s.NumKVHeads%tp != 0 && tp%s.NumKVHeads != 0 {
		return fmt.Sprintf("tp_size %d neither divides nor is a multiple of the %d KV heads", tp, s.NumKVHeads)
	}
	if s.NumLayers > 0 && pp > s.NumLayers {
		return fmt.Sprintf("pp_size %d exceeds the %d layers", pp, s.NumLayers)
	}
	return ""
}

// run is plan.Run, counted.
func (s *search) run(ctx context.Context, req plan.Request) (*plan.Report, error) {
	s.plans++
	return plan.Run(ctx, req)
}

// request builds the plan request of candidate c for n requests per
// replica of L tokens, before the memory share and hybrid knobs are set.
func (s *search) request(c candidate, n, L int) plan.Request {
	r := s.base
	r.GPU, r.TPSize, r.KVCacheDType = c.gpu, c.tp, c.dtype
	if c.pp > 1 {
		r.PPSize = c.pp
	}
	if c.dp > 1 {
		r.DPSize = c.dp
	}
	_ = r.SetField(s.ctxKey, strconv.Itoa(L))
	if s.wl == nil {
		// A workload keeps the engine's own cap: its simulation shows
		// what the traffic does with it.
		_ = r.SetField(s.capKey, strconv.Itoa(n))
	}
	return r
}

// fixed reports whether the user's base request sets key.
func (s *search) fixed(key string) bool {
	v, err := s.base.FieldString(key)
	return err == nil && v != ""
}

// setShare sets the memory share key of req to v as it prints (so the
// value planned is the value printed).
func setShare(req *plan.Request, key string, v float64) float64 {
	txt := plan.FormatFloat(v)
	_ = req.SetField(key, txt)
	f, _ := strconv.ParseFloat(txt, 64)
	return f
}

// shareStep is the grid the memory share is searched on above the
// engine's default.
const shareStep = 0.01

// solve plans candidate c for n requests of L tokens (n/dp per replica):
// it pins the memory share the engine would derive, solves the hybrid
// pools for the target and runs the final request; when that does not
// serve and the share is the search's to choose, it raises the share on
// a 0.01 grid up to the engine's safe maximum and keeps the smallest that
// serves (the safe maximum's outcome when none does). ok means the final
// plan serves the target.
func (s *search) solve(ctx context.Context, c candidate, n, L int) outcome {
	sv := s.solver(ctx, c, n, L)
	if sv.at == nil {
		return sv.probe
	}
	k := sv.knobs
	out := sv.at(k.Current)
	if out.ok || !sv.free || k.SafeMax <= k.Current {
		return out
	}
	grid := shareGrid(k.Current, k.SafeMax)
	if len(grid) == 0 {
		return out
	}
	top := sv.at(grid[len(grid)-1])
	if !top.ok {
		return top
	}
	lo, hi := 0, len(grid)-1
	best := top
	for lo < hi {
		mid := (lo + hi) / 2
		if o := sv.at(grid[mid]); o.ok {
			best, hi = o, mid
		} else {
			lo = mid + 1
		}
	}
	return best
}

// shareGrid is the 0.01 grid of memory shares above cur up to safeMax.
func shareGrid(cur, safeMax float64) []float64 {
	var grid []float64
	for i := int(math.Floor(cur/shareStep+1e-9)) + 1; float64(i)*shareStep <= safeMax+1e-9; i++ {
		grid = append(grid, float64(i)*shareStep)
	}
	return grid
}

// shareSolver plans one candidate at a chosen memory share.
type shareSolver struct {
	// probe is the outcome of the engine's defaults when the probe failed
	// (at is nil then).
	probe outcome
	knobs plan.Knobs
	// free says the memory share is the search's to choose.
	free bool
	// at plans the candidate with the memory share share (the engine's
	// own when it is not free) and judges it.
	at func(share float64) outcome
}

// solver probes candidate c for n requests of L tokens (n/dp per
// replica) at the engine's defaults and returns the solver of its memory
// share.
func (s *search) solver(ctx context.Context, c candidate, n, L int) shareSolver {
	nr := c.perReplica(n)
	req := s.request(c, nr, L)
	// Probe: the engine's own defaults for this layout.
	probe, err := s.run(ctx, req)
	if errors.Is(err, plan.ErrInvalid) || probe == nil {
		return shareSolver{probe: outcome{req: req, rep: probe, err: err}}
	}
	k := plan.KnobsOf(probe)
	free := k.Share != "" && !s.fixed(k.Share)
	at := func(share float64) outcome {
		r := req
		var v float64
		if k.Share != "" {
			v = k.Current
			if free {
				v = setShare(&r, k.Share, share)
			}
		}
		var out outcome
		if v == k.Current && !s.hybrid(probe) {
			// The probe planned exactly this request.
			out = s.judge(r, probe, err, nr, L)
		} else {
			out = s.solveAt(ctx, r, probe, nr, L)
		}
		out.knobs, out.share, out.def = k, v, k.Current
		return out
	}
	return shareSolver{knobs: k, free: free, at: at}
}

// solveAt runs req (its memory share set) for n requests of L tokens per
// replica, solving the hybrid pools first; probe is the plan of the
// engine's defaults.
func (s *search) solveAt(ctx context.Context, req plan.Request, probe *plan.Report, n, L int) outcome {
	if req.Engine == plan.EngineSGLang {
		switch {
		case s.mambaSolvable():
			return s.solveMamba(ctx, req, n, L)
		case s.swaSolvable(probe):
			return s.solveSWA(ctx, req, probe, n, L)
		}
	}
	return s.final(ctx, req, n, L)
}

// hybrid reports whether solveAt solves hybrid pools for a layout whose
// probe is probe.
func (s *search) hybrid(probe *plan.Report) bool {
	return s.base.Engine == plan.EngineSGLang && (s.mambaSolvable() || s.swaSolvable(probe))
}

// mambaSolvable reports whether the mamba state slots are the fit's to
// choose.
func (s *search) mambaSolvable() bool {
	return s.spec.Linear != nil && s.base.MaxMambaCacheSize == 0 && s.base.MambaFullMemoryRatio == 0
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

// final runs req and judges it against n requests of L tokens per
// replica.
func (s *search) final(ctx context.Context, req plan.Request, n, L int) outcome {
	rep, err := s.run(ctx, req)
	return s.judge(req, rep, err, n, L)
}

// judge measures the plan rep of req against n requests of L tokens per
// replica.
func (s *search) judge(req plan.Request, rep *plan.Report, err error, n, L int) outcome {
	out := outcome{req: req, rep: rep, err: err}
	if rep == nil {
		return out
	}
	capL := L
	if s.wl != nil {
		// A workload: n requests of its mean length (the filter before
		// the simulation), with the context its longest request needs.
		capL = min(L, s.wl.meanTokens)
	}
	out.capacity = plan.Capacity(rep, s.spec, capL)
	held := rep.MaxConcurrencyAtContextLength >= int64(n)
	if s.wl != nil {
		if rep.Engine == plan.EngineVLLM {
			// vLLM's own concurrency counts max_model_len per request;
			// the workload's requests hold their blocks.
			bs := int64(max(rep.BlockSize, 1))
			out.capacity = rep.MaxTotalNumTokens / ((int64(capL) + bs - 1) / bs * bs)
		}
		held = out.capacity >= int64(n)
	}
	// The engine may clamp the context to what its pool holds
	// (TensorRT-LLM's max_seq_len): then it does not serve L tokens.
	out.ok = err == nil && rep.ContextLength >= L && held && int64(rep.MaxRunningRequests) >= int64(n)
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

func ceilPage(n int64, page int) int64 {
	p := int64(max(page, 1))
	return (n + p - 1) / p * p
}

// configuration turns a solved outcome into a listed Configuration for n
// requests over all replicas.
func (s *search) configuration(c candidate, out outcome, n int) Configuration {
	rep := out.rep
	dp := int64(c.dp)
	cfg := Configuration{
		Engine: rep.Engine, GPU: rep.GPU, GPUCount: rep.NumGPUs, TPSize: rep.TPSize, PPSize: rep.PPSize, DPSize: rep.DPSize,
		KVCacheDType: c.dtype, ResolvedKVCacheDType: rep.ResolvedKVCacheDType,
		MaxTotalNumTokens: rep.MaxTotalNumTokens, MaxConcurrencyAtContextLength: rep.MaxConcurrencyAtContextLength * dp,
		CapacityAtContextLength: out.capacity * dp,
		MemoryShareKey:          out.knobs.Share, MemoryShare: out.share, DefaultMemoryShare: out.def,
		Flags: EngineFlags(out.req), PlanArgs: PlanArgs(out.req),
		Request: out.req, Report: rep,
	}
	if out.capacity > 0 && rep.AvailableKVBytes > 0 {
		spare := max(out.capacity-int64(c.perReplica(n)), 0)
		cfg.HeadroomBytes = int64(float64(rep.AvailableKVBytes) * float64(spare) / float64(out.capacity))
	}
	if k := out.knobs; k.Share != "" && out.share > out.def+1e-9 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s is above %s's default %s for this layout (safe up to %s): the default does not hold the target",
			strings.Join(flagOf(rep.Engine, k.Share, plan.FormatFloat(out.share)), " "), plan.EngineLabel(rep.Engine),
			plan.FormatFloat(out.def), plan.FormatFloat(k.SafeMax)))
	}
	return cfg
}

// flagOf is key = value as the engine's printed flags spell it.
func flagOf(engine, key, value string) []string {
	r := plan.Request{Engine: engine}
	without := EngineFlags(r)
	if r.SetField(key, value) != nil {
		return []string{key, value}
	}
	with := EngineFlags(r)
	var out []string
	for _, f := range with {
		if i := slices.Index(without, f); i >= 0 {
			without = slices.Delete(without, i, i+1)
			continue
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return []string{key, value}
	}
	return out
}

// miss describes the closest miss: how far it is from the target, the
// largest concurrency at the target context and the largest context at
// the target concurrency (both found by bisection over the same solver),
// and what would serve the target.
func (s *search) miss(ctx context.Context, sc scored, o Options, maxGPUs int) (*Miss, error) {
	c, out := sc.c, sc.out
	n, L := o.Concurrency, o.ContextLength
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
	if s.wl != nil {
		chi = 0 // a workload's context is its longest request
	}
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
	m := &Miss{MaxConcurrency: lo, MaxContextLength: clo, score: sc}
	if shown.rep != nil {
		m.Configuration = s.configuration(c, shown, max(lo, 1))
		m.Configuration.MaxConcurrencyAtContextLength = min(m.Configuration.MaxConcurrencyAtContextLength, int64(lo))
	} else {
		m.Configuration = Configuration{Engine: s.base.Engine, GPU: c.gpu, GPUCount: c.count(), TPSize: c.tp, PPSize: c.pp, DPSize: c.dp,
			KVCacheDType: c.dtype, Flags: EngineFlags(shown.req), PlanArgs: PlanArgs(shown.req), Request: shown.req}
	}
	total := out.capacity * int64(c.dp)
	// lbl is the request length capacities are counted in: a workload's
	// mean request, else the target context.
	lbl := L
	if s.wl != nil {
		lbl = min(L, s.wl.meanTokens)
	}
	weightsOver := false
	switch {
	case out.err != nil:
		// The engine's words, as `kvcfg plan` gives them: the advice search
		// changes the report's fix, never the error, so the plan is not
		// run again with it.
		m.Error = strings.TrimPrefix(out.err.Error(), "plan: infeasible: ")
		m.Shortfall = "the engine refuses to start at this layout"
		// Say so when the weights alone do not fit: the engine's own words
		// ("Raise --mem-fraction-static above 1.000") hide it.
		if r := out.rep; r != nil && r.WeightsBytes > 0 && r.Breakdown.TotalBytes > 0 && r.Breakdown.PostLoadFreeBytes <= 0 {
			m.Shortfall = fmt.Sprintf("the weights (%s per GPU) do not fit in the GPU's free memory (%s) at this layout",
				units.FormatBytes(r.WeightsBytes), units.FormatBytes(r.Breakdown.PreLoadFreeBytes))
			weightsOver = true
		}
	case total > 0:
		m.Error = fmt.Sprintf("holds %d requests of %d tokens, not %d", total, lbl, n)
		m.Shortfall = fmt.Sprintf("holds %s of the %s requests (%d%%)", units.Group(total), units.Group(int64(n)), percent(float64(total)/float64(n)))
	default:
		m.Error = fmt.Sprintf("holds %d requests of %d tokens, not %d", total, lbl, n)
		tokens := out.rep.MaxTotalNumTokens
		m.Shortfall = fmt.Sprintf("holds %s of the %s tokens one request needs (%d%%)", units.Group(tokens), units.Group(int64(L)), percent(float64(tokens)/float64(L)))
	}
	if out.knobs.Share != "" && out.share > 0 && !weightsOver {
		m.Shortfall += fmt.Sprintf(" with %s", strings.Join(flagOf(s.base.Engine, out.knobs.Share, plan.FormatFloat(out.share)), " "))
	}
	if err := s.beyond(ctx, m, c, n, L, maxGPUs); err != nil {
		return nil, err
	}
	var can []string
	if lo > 0 {
		can = append(can, fmt.Sprintf("serve %s concurrent requests of %s tokens", units.Group(int64(lo)), units.Group(int64(lbl))))
	}
	if clo > 0 {
		can = append(can, fmt.Sprintf("serve %s concurrent requests of up to %s tokens", units.Group(int64(n)), units.Group(int64(clo))))
	}
	var fixes []string
	switch e := m.estimate; {
	case m.NeededLayout != nil:
		fixes = append(fixes, fmt.Sprintf("allow %d GPUs (--max-gpus %d: %s)", m.GPUsNeeded, m.GPUsNeeded, describe(*m.NeededLayout)))
	case e != nil && e.count() > maxGPUs:
		// Beyond what fit searches: the scale of the target, from one
		// replica's re-planned capacity.
		why := fmt.Sprintf("beyond the %d GPUs fit searches", MaxGPUsLimit)
		if e.count() <= MaxGPUsLimit {
			why = "as separate engine instances: fit lists data-parallel replicas of tensor-parallel layouts only"
		}
		fixes = append(fixes, fmt.Sprintf("about %d GPUs as %d replicas of %s, each holding %s requests of %s tokens (%s)",
			e.count(), e.dp, describe(Configuration{GPU: e.gpu, TPSize: e.tp, PPSize: e.pp}), units.Group(m.estimateCapacity), units.Group(int64(lbl)), why))
	}
	if f := s.unpinShare(ctx, c, out, n, L); f != "" {
		fixes = append(fixes, f)
	}
	// A smaller KV cache helps only a layout that starts.
	if fp8 := out.knobs.FP8; fp8 != "" && sc.starts && !quantizedKV(o.KVCacheDTypes, s.base.KVCacheDType) {
		fixes = append(fixes, fmt.Sprintf("a quantized KV cache (--kv-cache-dtypes auto,%s)", fp8))
	}
	if bigger := largerGPUs(s.gpus, 3); len(bigger) > 0 {
		fixes = append(fixes, "a GPU with more memory ("+strings.Join(bigger, ", ")+")")
	}
	if len(can) == 0 {
		fixes = append(fixes, "a quantized checkpoint")
		m.Hint = fmt.Sprintf("the model does not serve one request of %s tokens on %s; for the target: %s", units.Group(int64(L)), describe(m.Configuration), strings.Join(fixes, ", "))
	} else {
		m.Hint = fmt.Sprintf("%s can %s", describe(m.Configuration), strings.Join(can, " or "))
		if len(fixes) > 0 {
			m.Hint += "; for the full target: " + strings.Join(fixes, ", ")
		}
	}
	return m, nil
}

// percent is f as a whole percentage, rounded down (99% never reads as
// 100%).
func percent(f float64) int { return int(math.Floor(f*100 + 1e-9)) }

// describe is a layout in words: "2× H100-80GB, tp 2" or "8 replicas of
// 1× H100-80GB (--dp-size 8)".
func describe(c Configuration) string {
	replica := max(c.TPSize, 1) * max(c.PPSize, 1)
	lay := fmt.Sprintf("tp %d", max(c.TPSize, 1))
	if c.PPSize > 1 {
		lay += fmt.Sprintf(", pp %d", c.PPSize)
	}
	if c.DPSize > 1 {
		return fmt.Sprintf("%d replicas of %d× %s, %s (dp %d)", c.DPSize, replica, c.GPU, lay, c.DPSize)
	}
	return fmt.Sprintf("%d× %s, %s", replica, c.GPU, lay)
}

// quantizedKV reports whether the dtypes searched include a quantized KV
// cache (so suggesting one repeats what was tried).
func quantizedKV(dtypes []string, base string) bool {
	if len(dtypes) == 0 {
		dtypes = []string{base}
	}
	for _, d := range dtypes {
		switch strings.ToLower(strings.TrimSpace(d)) {
		case "", "auto", "bf16", "bfloat16", "fp16", "float16", "half", "float32", "fp32":
		default:
			return true
		}
	}
	return false
}

// largerGPUs names up to k catalog GPUs with at least 10% more memory
// than the largest GPU searched of their platform, one per memory size,
// smallest first.
func largerGPUs(searched []string, k int) []string {
	largest := map[string]int64{}
	for _, g := range searched {
		if gg, err := gpu.Lookup(g); err == nil {
			largest[gg.Platform] = max(largest[gg.Platform], gg.MemoryMiB)
		}
	}
	var more []gpu.GPU
	for _, o := range gpu.All() {
		if l, ok := largest[o.Platform]; ok && o.MemoryMiB*10 >= l*11 {
			more = append(more, o)
		}
	}
	slices.SortStableFunc(more, func(a, b gpu.GPU) int { return cmpInt64(a.MemoryMiB, b.MemoryMiB) })
	var out []string
	var last int64
	for _, o := range more {
		if len(out) == k {
			break
		}
		if o.MemoryMiB != last {
			out, last = append(out, o.Name), o.MemoryMiB
		}
	}
	return out
}

// unpinShare: when the user fixed the memory share below the engine's
// safe maximum, whether the miss's layout serves the target with the
// share left to the search; the remedy in words, "" when not.
func (s *search) unpinShare(ctx context.Context, c candidate, out outcome, n, L int) string {
	k := out.knobs
	if k.Share == "" || !s.fixed(k.Share) || out.share >= k.SafeMax {
		return ""
	}
	free := *s
	_ = free.base.SetField(k.Share, "0")
	got := free.solve(ctx, c, n, L)
	s.plans = free.plans
	if !got.ok {
		return ""
	}
	return fmt.Sprintf("%s instead of %s (up to %s is safe)", strings.Join(flagOf(s.base.Engine, k.Share, plan.FormatFloat(got.share)), " "),
		strings.Join(flagOf(s.base.Engine, k.Share, plan.FormatFloat(out.share)), " "), plan.FormatFloat(k.SafeMax))
}

// replicaMax bounds the GPUs of one replica that beyond proposes: one
// node, or two for a model that does not start on one.
const replicaMax, replicaMaxLarge = 8, 16

// beyond looks for the smallest GPU count above maxGPUs (up to
// MaxGPUsLimit) at which the miss's GPU type and dtype serve the target.
// One replica spans at most a node (two when the model does not start on
// one); more GPUs than that are data-parallel replicas, never a wider
// tensor- or pipeline-parallel layout (32 GPUs of TP × PP for an 8B model
// would be absurd).
func (s *search) beyond(ctx context.Context, m *Miss, c candidate, n, L, maxGPUs int) error {
	var best *Configuration
	consider := func(cc candidate) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		out := s.solve(ctx, cc, n, L)
		if !out.ok {
			return false, nil
		}
		cfg := s.configuration(cc, out, n)
		if best == nil || cheaper(cfg, *best) < 0 {
			best = &cfg
		}
		return true, nil
	}
	started := false
	limit := replicaMax
	for r := 1; r <= limit && r <= MaxGPUsLimit; r++ {
		for _, tp := range divisors(r) {
			cc := candidate{gpu: c.gpu, tp: tp, pp: r / tp, dp: 1, dtype: c.dtype}
			if layoutReason(s.spec, cc.tp, cc.pp) != "" {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			// One replica's capacity at the engine's safe share.
			capR, starts := s.capacityAtMax(ctx, cc, L)
			started = started || starts
			if capR < 1 {
				continue
			}
			need := int((int64(n) + capR - 1) / capR) // replicas
			if e := m.estimate; e == nil || need*r < e.count() || (need*r == e.count() && cc.pp < e.pp) {
				est := cc
				est.dp = need
				m.estimate, m.estimateCapacity = &est, capR
			}
			if need == 1 && r > maxGPUs && (best == nil || r <= best.GPUCount) {
				if _, err := consider(cc); err != nil {
					return err
				}
			}
			if !s.dp || cc.pp > 1 || need < 2 {
				continue
			}
			// Replicas of this layout: as many as its capacity needs,
			// verified (the request cap per replica can shift it by one).
			for dp := need; dp <= need+2 && dp*r <= MaxGPUsLimit; dp++ {
				if dp*r <= maxGPUs {
					continue // searched already
				}
				if best != nil && dp*r > best.GPUCount {
					break
				}
				cc.dp = dp
				if ok, err := consider(cc); err != nil {
					return err
				} else if ok {
					break
				}
			}
		}
		if r == limit && !started && limit < replicaMaxLarge {
			limit = replicaMaxLarge
		}
	}
	if best != nil {
		m.GPUsNeeded, m.NeededLayout = best.GPUCount, best
	}
	return nil
}

// capacityAtMax is how many requests of L tokens one replica of layout c
// holds with the memory share at the engine's safe maximum (the user's
// share when fixed), and whether it starts.
func (s *search) capacityAtMax(ctx context.Context, c candidate, L int) (int64, bool) {
	req := s.request(c, 1, L)
	probe, err := s.run(ctx, req)
	if probe == nil || errors.Is(err, plan.ErrInvalid) {
		return 0, false
	}
	if k := plan.KnobsOf(probe); k.Share != "" && !s.fixed(k.Share) && k.SafeMax > k.Current {
		setShare(&req, k.Share, k.SafeMax)
	}
	out := s.solveAt(ctx, req, probe, 1, L)
	return out.capacity, out.rep != nil && out.err == nil
}
