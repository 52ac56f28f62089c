package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

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
	if s.wl == nil || s.ctxFixed {
		// A workload without --context-length keeps the engine's own
		// (the model's): its longest request is not a context length
		// operators would serve with (see probe).
		_ = r.SetField(s.ctxKey, strconv.Itoa(L))
	}
	if s.wl == nil {
		// A workload keeps the engine's own cap: its simulation shows
		// what the traffic does with it.
		_ = r.SetField(s.capKey, strconv.Itoa(n))
	}
	return r
}

// probe plans candidate c for n requests per replica of L tokens at the
// engine's defaults (request). A workload whose context length is the
// engine's default (the model's) falls back, when that plan is refused,
// to the longest context the refused plan's KV pool holds, in whole 1,024
// tokens, when that holds the longest request, else to the power of two
// that does (vLLM refuses a max_model_len whose one request its pool
// cannot hold). The request returned is the one planned.
func (s *search) probe(ctx context.Context, c candidate, n, L int) (plan.Request, *plan.Report, error) {
	req := s.request(c, n, L)
	rep, err := s.run(ctx, req)
	if err == nil || rep == nil || errors.Is(err, plan.ErrInvalid) || s.wl == nil || s.ctxFixed {
		return req, rep, err
	}
	r2 := req
	pool := rep.MaxTotalNumTokens
	if pool == 0 && rep.CellSizeBytes > 0 {
		pool = int64(float64(rep.AvailableKVBytes) / rep.CellSizeBytes)
	}
	if r2.SetField(s.ctxKey, strconv.Itoa(workloadContext(L, pool))) != nil {
		return req, rep, err
	}
	if rep2, err2 := s.run(ctx, r2); err2 == nil && rep2 != nil {
		return r2, rep2, nil
	}
	return req, rep, err
}

// workloadContext is the context length a workload whose longest request
// is L tokens falls back to on a pool of pool tokens: the pool in whole
// 1,024 tokens when that holds L, else the power of two that holds L.
func workloadContext(L int, pool int64) int {
	if c := pool / 1024 * 1024; c >= int64(L) && c <= math.MaxInt32 {
		return int(c)
	}
	c := 1
	for c < L {
		c *= 2
	}
	return c
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
	// Probe: the engine's own defaults for this layout.
	req, probe, err := s.probe(ctx, c, nr, L)
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
	if bd := predictionBand(rep); bd != nil {
		// A predicted budget (no readings) keeps the validation table's
		// margin: the band's low end must hold the target too.
		held = held && bd.ConcurrencyLow >= int64(n)
	}
	if s.wl != nil {
		if rep.Engine == plan.EngineVLLM {
			// vLLM's own concurrency counts max_model_len per request;
			// the workload's requests hold their blocks.
			bs := int64(max(rep.BlockSize, 1))
			out.capacity = rep.MaxTotalNumTokens / ((int64(capL) + bs - 1) / bs * bs)
		}
		held = out.capacity >= int64(n)
		if bd := predictionBand(rep); bd != nil {
			held = held && int64(float64(out.capacity)*(1-bd.RelError)) >= int64(n)
		}
	}
	// The engine may clamp the context to what its pool holds
	// (TensorRT-LLM's max_seq_len): then it does not serve L tokens.
	out.ok = err == nil && rep.ContextLength >= L && held && int64(rep.MaxRunningRequests) >= int64(n) && !overcommitted(rep)
	return out
}

// overcommitted reports whether rep's pool outgrows its budget by more
// than the engine's reserve can spare (SGLang before 0.5.17 counts an fp8
// DeepSeek sparse-attention token at fewer bytes than it allocates): the
// excess comes out of the memory the share leaves to activations and CUDA
// graphs, so the share the pool really takes, the plan's plus the excess
// over the free memory before weights, must stay within the engine's safe
// maximum.
func overcommitted(rep *plan.Report) bool {
	ob := rep.Breakdown.OverBudgetBytes
	if ob <= 0 || rep.PreLoadFreeBytes <= 0 {
		return false
	}
	k := plan.KnobsOf(rep)
	return k.SafeMax > 0 && k.Current+float64(ob)/float64(rep.PreLoadFreeBytes) > k.SafeMax+1e-9
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
// SWA pool the bound. The SWA pool is also kept at least what SGLang's
// own chunk-cap sizing gives n running requests (swaFloor), and the ratio
// within (0, 1], the range SGLang accepts.
func (s *search) solveSWA(ctx context.Context, req plan.Request, probe *plan.Report, n, L int) outcome {
	page := max(probe.PageSize, 1)
	full := ceilPage(int64(L), page)
	win := ceilPage(min(int64(sglang.SlidingWindow(s.spec)+page), int64(L)), page)
	floor := s.swaFloor(probe, n)
	r := math.Ceil(float64(win)/float64(full)*1000) / 1000
	r = min(max(r, 0.001), 1)
	var out outcome
	for range 8 {
		req.SWAFullTokensRatio = r
		out = s.final(ctx, req, n, L)
		if out.rep == nil || r >= 1 {
			return out
		}
		enough := out.rep.SWAMaxTotalNumTokens >= floor
		if out.ok && enough {
			return out
		}
		fb := out.rep.FullMaxTotalNumTokens / full
		sb := out.rep.SWAMaxTotalNumTokens / win
		if out.err == nil && sb >= fb && enough {
			return out // the full pool is the bound: more ratio only shrinks it
		}
		next := r*1.02 + 0.001
		if !enough && out.rep.FullMaxTotalNumTokens > 0 {
			next = max(next, float64(floor)/float64(out.rep.FullMaxTotalNumTokens))
		}
		r = min(1, math.Ceil(next*1000)/1000)
	}
	return out
}

// swaFloor is the SWA pool n running requests need by SGLang's own
// chunk-cap sizing (sizing.ChunkCap: each request's window, eviction
// interval and pages, plus the prefill chunks in flight): below it the
// scheduler cannot hold the requests' windows and a chunk at once.
func (s *search) swaFloor(probe *plan.Report, n int) int64 {
	page := max(probe.PageSize, 1)
	draft, decode := 1, page
	if d := s.base.SpeculativeNumDraftTokens; d > 0 {
		draft, decode = d, 2*d
	}
	return sizing.ChunkCap(sizing.ChunkCapInput{SlidingWindow: sglang.SlidingWindow(s.spec), DraftTokens: draft, EvictionInterval: 128,
		PageSize: page, DecodeAlloc: decode, MaxRunningRequests: n, AttnDPSize: 1, ChunkedPrefillSize: max(probe.ChunkedPrefillSize, 0),
		OverlapSchedule: true})
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
	// `kvcfg plan` with PlanArgs judges the target: the replica's share
	// of the n requests (plan sizes one replica).
	target := out.req
	target.Concurrency = c.perReplica(n)
	cfg := Configuration{
		Engine: rep.Engine, GPU: rep.GPU, GPUCount: rep.NumGPUs, TPSize: rep.TPSize, PPSize: rep.PPSize, DPSize: rep.DPSize,
		KVCacheDType: rep.KVCacheDType, ResolvedKVCacheDType: rep.ResolvedKVCacheDType,
		MaxTotalNumTokens: rep.MaxTotalNumTokens, MaxConcurrencyAtContextLength: rep.MaxConcurrencyAtContextLength * dp,
		CapacityAtContextLength: out.capacity * dp,
		MemoryShareKey:          out.knobs.Share, MemoryShare: out.share, DefaultMemoryShare: out.def,
		Flags: EngineFlags(out.req), PlanArgs: PlanArgs(target),
		Request: out.req, Report: rep, deepPP: s.deepPP(c.tp, c.pp),
	}
	if out.capacity > 0 && rep.AvailableKVBytes > 0 {
		spare := max(out.capacity-int64(c.perReplica(n)), 0)
		cfg.HeadroomBytes = int64(float64(rep.AvailableKVBytes) * float64(spare) / float64(out.capacity))
	}
	if v, _ := out.req.FieldString(s.ctxKey); s.wl != nil && !s.ctxFixed && v != "" {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s: %s refuses the model's full context (%s tokens) at this layout; this is about the longest its KV pool holds (the workload's longest request is %s tokens)",
			strings.Join(flagOf(rep.Engine, s.ctxKey, v), " "), plan.EngineLabel(rep.Engine), units.Group(int64(s.spec.ContextLength)), units.Group(int64(s.wl.maxTokens))))
	}
	if k := out.knobs; k.Share != "" && out.share > out.def+1e-9 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s is above %s's default %s for this layout (safe up to %s): the default does not hold the target",
			strings.Join(flagOf(rep.Engine, k.Share, plan.FormatFloat(out.share)), " "), plan.EngineLabel(rep.Engine),
			plan.FormatFloat(out.def), plan.FormatFloat(k.SafeMax)))
	}
	if ob := rep.Breakdown.OverBudgetBytes; ob > 0 && rep.PreLoadFreeBytes > 0 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("the KV pool takes %s more than its budget, out of the reserve for activations and CUDA graphs "+
			"(this release counts fewer bytes a token than it allocates; the plan's warnings say which): it really uses a share of %.3f, within the safe %s",
			units.FormatBytes(ob), out.share+float64(ob)/float64(rep.PreLoadFreeBytes), plan.FormatFloat(out.knobs.SafeMax)))
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

// predictionBand is the band of a plan kvcfg predicted without readings,
// nil for one with readings or without a validated engine.
func predictionBand(rep *plan.Report) *plan.Band {
	if rep.Budget == nil {
		return nil
	}
	return rep.Budget.Band
}
