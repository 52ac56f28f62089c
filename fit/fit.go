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
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
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
	// pool; ContextLength defaults to its longest request (SGLang: what
	// simulate.SGLangContextLength gives it, 2 more). Workload
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
	// PlanArgs are the `kvcfg plan` arguments that reproduce the plan
	// and judge it against the target (--concurrency: a replica's share).
	PlanArgs []string `json:"plan_args"`
	// Simulation is the simulation of the workload on this setup (a
	// workload target only).
	Simulation *Simulated `json:"simulation,omitempty"`
	// Request is the plan request Flags encode.
	Request plan.Request `json:"-"`
	// deepPP says the layout is deep pipeline parallelism (pipeline
	// stages narrower than a node): listed after every layout that is not.
	deepPP bool
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
	// MaxContextFlags are the engine flags that serve the target
	// concurrency at MaxContextLength (its memory share may differ from
	// Flags', which serve MaxConcurrency requests at the target context).
	MaxContextFlags []string `json:"max_context_flags,omitempty"`
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
	// ctxFixed says the user gave the context length (a workload's
	// otherwise stays the engine's default).
	ctxFixed bool
	// nodeTP is the widest tensor-parallel size within a node that the
	// model takes (search.deepPP).
	nodeTP int
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
	ctxGiven := o.ContextLength != 0
	wl, err := o.settleTarget(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	s := newSearch(base, m)
	s.ctxFixed = wl == nil || ctxGiven
	names, dtypes, maxGPUs := o.searchSpace()
	s.gpus = names
	if wl != nil {
		s.wl = wl
		if err := s.demand(ctx, dtypes[0], maxGPUs); err != nil {
			return nil, err
		}
		o.Concurrency = wl.target.PeakRunning
	}
	sw := &sweep{o: o, res: s.newResult(o, names, dtypes, maxGPUs), maxGPUs: maxGPUs}
	for _, g := range names {
		for _, d := range dtypes {
			if err := s.sweepDType(ctx, sw, g, d); err != nil {
				return nil, err
			}
		}
	}
	return s.conclude(ctx, sw)
}

// settleTarget settles a workload target: it scans the workload (nil when the
// target is Concurrency), defaults ContextLength to its longest request
// (for SGLang the context that serves it in full),
// and checks the context length against the workload and the model.
func (o *Options) settleTarget(ctx context.Context, spec *model.Spec) (*workload, error) {
	var wl *workload
	if o.workloads() > 0 {
		var err error
		if wl, err = scanWorkload(ctx, *o); err != nil {
			return nil, err
		}
		switch {
		case o.ContextLength == 0:
			o.ContextLength = wl.maxTokens
			if o.Base.Engine == "" || o.Base.Engine == plan.EngineSGLang {
				// SGLang serves prompt + outputs in full only within
				// context - 2 (init_req_max_new_tokens), never more
				// than the model's context.
				o.ContextLength = wl.sglangContext
				if spec.ContextLength > 0 {
					o.ContextLength = max(min(wl.sglangContext, spec.ContextLength), wl.maxTokens)
				}
			}
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
	if wl != nil {
		wl.context = o.ContextLength
	}
	return wl, nil
}

// newSearch starts the search of base (normalized) on the parsed model m.
func newSearch(base plan.Request, m *catalog.Model) *search {
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
	s := &search{base: base, spec: m.Spec, nodeTP: nodeTP(m.Spec)}
	s.ctxKey, s.capKey = targetKeys(base.Engine)
	s.dp = !base.EnableDPAttention && len(EngineFlags(plan.Request{Engine: base.Engine, DPSize: 2})) > len(EngineFlags(plan.Request{Engine: base.Engine}))
	return s
}

// searchSpace returns what the search spans: the GPU types (catalog names, each
// once), the KV cache dtypes and the largest GPU count.
func (o Options) searchSpace() (names, dtypes []string, maxGPUs int) {
	gpus := o.GPUs
	if len(gpus) == 0 {
		if o.Base.GPU != "" {
			gpus = []string{o.Base.GPU}
		} else {
			for _, g := range gpu.All() {
				if !g.Unified { // a unified-memory device is planned only with its memory given
					gpus = append(gpus, g.Name)
				}
			}
		}
	}
	names = make([]string, 0, len(gpus))
	for _, g := range gpus {
		gg, _ := gpu.Lookup(g) // validated
		if !slices.Contains(names, gg.Name) {
			names = append(names, gg.Name)
		}
	}
	dtypes = o.KVCacheDTypes
	if len(dtypes) == 0 {
		dtypes = []string{"auto"}
		if o.Base.KVCacheDType != "" {
			dtypes = []string{o.Base.KVCacheDType}
		}
	}
	maxGPUs = o.MaxGPUs
	if maxGPUs == 0 {
		maxGPUs = DefaultMaxGPUs
	}
	return names, dtypes, maxGPUs
}

// newResult starts the Result of the search, its Target filled in.
func (s *search) newResult(o Options, names, dtypes []string, maxGPUs int) *Result {
	res := &Result{Target: Target{
		Model: s.spec.Name, Engine: s.base.Engine, Concurrency: o.Concurrency, ContextLength: o.ContextLength,
		GPUs: names, KVCacheDTypes: dtypes, MaxGPUs: maxGPUs,
	}}
	if slices.Contains(strings.Split(s.base.Engine, ","), plan.EngineSGLang) {
		if _, note, err := sglang.ResolveProfile(s.base.SGLangVersion); err == nil {
			res.Target.SGLangProfile = note
		}
	}
	if s.wl != nil {
		res.Target.Workload = s.wl.target
	}
	return res
}

// sweep is what Run's search over GPU types, dtypes and counts gathers.
type sweep struct {
	o       Options
	res     *Result
	maxGPUs int
	// all are the configurations listed so far.
	all []Configuration
	// best is the closest miss so far, simBest the closest workload miss.
	best    *scored
	simBest *simMiss
}

// sweepDType searches GPU type g with KV dtype d: the layouts operators
// run first, from one GPU up, until the smallest count that serves (every
// count up to the maximum with Options.All); deep pipeline parallelism
// only when none of them serves (and with Options.All).
func (s *search) sweepDType(ctx context.Context, sw *sweep, g, d string) error {
	for _, deep := range []bool{false, true} {
		found, dtypeOut, err := s.sweepTier(ctx, sw, g, d, deep)
		if err != nil || dtypeOut || (found && !sw.o.All) {
			return err
		}
	}
	return nil
}

// sweepTier searches one tier of layouts (search.layouts) of GPU type g
// with KV dtype d from one GPU up; found says a count served.
func (s *search) sweepTier(ctx context.Context, sw *sweep, g, d string, deep bool) (found, dtypeOut bool, err error) {
	for count := 1; count <= sw.maxGPUs && !(found && !sw.o.All); count++ {
		atCount, solved, out, err := s.sweepCount(ctx, sw, g, d, count, deep)
		if err != nil || out {
			return found, out, err
		}
		if s.wl != nil && len(atCount) > 0 {
			if atCount, err = s.simulateCount(ctx, atCount, solved, sw.o, &sw.simBest, sw.res); err != nil {
				return found, false, err
			}
		}
		if len(atCount) == 0 {
			continue
		}
		found = true
		if sw.o.All {
			sw.all = append(sw.all, atCount...)
			continue
		}
		// The best layout at the smallest count: most headroom,
		// then the fewest pipeline stages and replicas.
		slices.SortStableFunc(atCount, cheaper)
		sw.all = append(sw.all, atCount[0])
	}
	return found, false, nil
}

// sweepCount solves every layout of count GPUs of type g with dtype d and
// returns those that serve the target (and their outcomes); it records
// skips and the closest miss in sw. dtypeOut says the dtype does not run
// on g in any layout.
func (s *search) sweepCount(ctx context.Context, sw *sweep, g, d string, count int, deep bool) (atCount []Configuration, solved []simMiss, dtypeOut bool, err error) {
	o, res := sw.o, sw.res
	for _, c := range s.layouts(g, d, count, deep) {
		if reason := layoutReason(s.spec, c.tp, c.pp); reason != "" {
			if c.dp == 1 {
				res.Skipped = append(res.Skipped, skip(c, reason))
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, false, err
		}
		out := s.solve(ctx, c, o.Concurrency, o.ContextLength)
		if errors.Is(out.err, plan.ErrInvalid) {
			var fe *plan.FieldError
			if errors.As(out.err, &fe) && fe.Field == "kv_cache_dtype" {
				// The dtype does not run on this GPU in any layout.
				res.Skipped = append(res.Skipped, Skip{GPU: g, KVCacheDType: d, Reason: out.err.Error()})
				return nil, nil, true, nil
			}
			res.Skipped = append(res.Skipped, skip(c, out.err.Error()))
			continue
		}
		if out.ok {
			atCount = append(atCount, s.configuration(c, out, o.Concurrency))
			solved = append(solved, simMiss{c: c, out: out})
			continue
		}
		if sc := s.score(c, out, o.Concurrency, o.ContextLength); sw.best == nil || sc.better(*sw.best) {
			sw.best = &sc
		}
	}
	return atCount, solved, false, nil
}

// conclude orders and collapses the configurations found and, when none
// serves the target, describes the closest miss.
func (s *search) conclude(ctx context.Context, sw *sweep) (*Result, error) {
	res := sw.res
	all := collapse(sw.all)
	slices.SortStableFunc(all, cheaper)
	res.Configurations = all
	if res.Configurations == nil {
		res.Configurations = []Configuration{}
	}
	if len(all) == 0 && sw.simBest != nil {
		res.ClosestMiss = s.workloadMiss(*sw.simBest, sw.o, sw.maxGPUs)
	} else if len(all) == 0 && sw.best != nil {
		m, err := s.miss(ctx, *sw.best, sw.o, sw.maxGPUs)
		if err != nil {
			return nil, err
		}
		res.ClosestMiss = m
	}
	res.Plans = s.plans
	if s.wl != nil {
		s.wl.target.Simulations = s.wl.simulations
	}
	return res, nil
}

// cheaper orders configurations cheapest first among the layouts
// operators run (deep pipeline parallelism last): fewer GPUs, then more
// headroom, then fewer pipeline stages, then fewer replicas.
func cheaper(a, b Configuration) int {
	if a.deepPP != b.deepPP {
		if a.deepPP {
			return 1
		}
		return -1
	}
	if a.GPUCount != b.GPUCount {
		return a.GPUCount - b.GPUCount
	}
	if a.HeadroomBytes != b.HeadroomBytes {
		return cmp.Compare(b.HeadroomBytes, a.HeadroomBytes)
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
