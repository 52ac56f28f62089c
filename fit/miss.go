package fit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// miss describes the closest miss: how far it is from the target, the
// largest concurrency at the target context and the largest context at
// the target concurrency (both found by bisection over the same solver),
// and what would serve the target.
func (s *search) miss(ctx context.Context, sc scored, o Options, maxGPUs int) (*Miss, error) {
	c, out := sc.c, sc.out
	n, L := o.Concurrency, o.ContextLength
	lo, atN, err := s.maxConcurrency(ctx, c, n, L)
	if err != nil {
		return nil, err
	}
	clo, atC, err := s.maxContext(ctx, c, n, L)
	if err != nil {
		return nil, err
	}
	shown := out
	if lo > 0 {
		shown = atN
	}
	m := &Miss{MaxConcurrency: lo, MaxContextLength: clo, score: sc}
	if clo > 0 && atC.rep != nil {
		m.MaxContextFlags = EngineFlags(atC.req)
	}
	if shown.rep != nil {
		m.Configuration = s.configuration(c, shown, max(lo, 1))
		m.Configuration.MaxConcurrencyAtContextLength = min(m.Configuration.MaxConcurrencyAtContextLength, int64(lo))
	} else {
		m.Configuration = Configuration{Engine: s.base.Engine, GPU: c.gpu, GPUCount: c.count(), TPSize: c.tp, PPSize: c.pp, DPSize: c.dp,
			KVCacheDType: c.dtype, Flags: EngineFlags(shown.req), PlanArgs: PlanArgs(shown.req), Request: shown.req}
	}
	// lbl is the request length capacities are counted in: a workload's
	// mean request, else the target context.
	lbl := L
	if s.wl != nil {
		lbl = min(L, s.wl.meanTokens)
	}
	// The shortfall describes the flags shown (the smallest memory share
	// that holds MaxConcurrency requests), not the search's last try.
	s.shortfall(ctx, m, c, shown, n, L, lbl)
	if err := s.beyond(ctx, m, c, n, L, maxGPUs); err != nil {
		return nil, err
	}
	s.hint(ctx, m, sc, o, maxGPUs, lbl)
	return m, nil
}

// maxConcurrency bisects for the largest n' < n such that candidate c
// serves n' requests of L tokens, and returns it with its outcome.
func (s *search) maxConcurrency(ctx context.Context, c candidate, n, L int) (int, outcome, error) {
	return largest(ctx, n-1, func(mid int) outcome { return s.solve(ctx, c, mid, L) })
}

// maxContext bisects for the largest context L' < L at which candidate c
// serves n requests (0 for a workload: its context is its longest
// request), and returns it with its outcome.
func (s *search) maxContext(ctx context.Context, c candidate, n, L int) (int, outcome, error) {
	hi := L - 1
	if s.wl != nil {
		hi = 0 // a workload's context is its longest request
	}
	return largest(ctx, hi, func(mid int) outcome { return s.solve(ctx, c, n, mid) })
}

// largest bisects [0, hi] for the largest value whose outcome is ok (0,
// with a zero outcome, when none above 0 is), and returns it with its
// outcome.
func largest(ctx context.Context, hi int, try func(int) outcome) (int, outcome, error) {
	lo := 0
	var at outcome
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if err := ctx.Err(); err != nil {
			return 0, outcome{}, err
		}
		if o := try(mid); o.ok {
			lo, at = mid, o
		} else {
			hi = mid - 1
		}
	}
	return lo, at, nil
}

// shortfall sets m's Error and Shortfall: why the outcome out of
// candidate c misses n requests of L tokens (capacities counted in
// requests of lbl tokens).
func (s *search) shortfall(ctx context.Context, m *Miss, c candidate, out outcome, n, L, lbl int) {
	total := out.capacity * int64(c.dp)
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
}

// hint sets m's Hint: what the miss's layout can serve instead (m's
// MaxConcurrency and MaxContextLength), and the remedies that would serve
// the target.
func (s *search) hint(ctx context.Context, m *Miss, sc scored, o Options, maxGPUs, lbl int) {
	n, L := o.Concurrency, o.ContextLength
	lo, clo := m.MaxConcurrency, m.MaxContextLength
	var can []string
	if lo > 0 {
		can = append(can, fmt.Sprintf("serve %s concurrent requests of %s tokens", units.Group(int64(lo)), units.Group(int64(lbl))))
	}
	if clo > 0 {
		can = append(can, fmt.Sprintf("serve %s concurrent requests of up to %s tokens", units.Group(int64(n)), units.Group(int64(clo))))
	}
	fixes := s.remedies(ctx, m, sc, o, maxGPUs, lbl)
	if len(can) == 0 {
		fixes = append(fixes, "a quantized checkpoint")
		m.Hint = fmt.Sprintf("the model does not serve one request of %s tokens on %s; for the target: %s", units.Group(int64(L)), describe(m.Configuration), strings.Join(fixes, ", "))
	} else {
		m.Hint = fmt.Sprintf("%s can %s", describe(m.Configuration), strings.Join(can, " or "))
		if len(fixes) > 0 {
			m.Hint += "; for the full target: " + strings.Join(fixes, ", ")
		}
	}
}

// remedies lists, in words, what would serve the target the miss m (of
// the scored candidate sc) misses: more GPUs, the memory share left to
// the search, a quantized KV cache, a GPU with more memory.
func (s *search) remedies(ctx context.Context, m *Miss, sc scored, o Options, maxGPUs, lbl int) []string {
	c, out := sc.c, sc.out
	n, L := o.Concurrency, o.ContextLength
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
	return fixes
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
		if l, ok := largest[o.Platform]; ok && o.MemoryMiB*10 >= l*11 && !o.Unified {
			more = append(more, o)
		}
	}
	slices.SortStableFunc(more, func(a, b gpu.GPU) int { return cmp.Compare(a.MemoryMiB, b.MemoryMiB) })
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
			if e := m.estimate; e == nil || s.estimateBefore(cc, need*r, *e) {
				est := cc
				est.dp = need
				m.estimate, m.estimateCapacity = &est, capR
			}
			if need == 1 && r > maxGPUs && (best == nil || r <= best.GPUCount || best.deepPP) {
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
				if best != nil && dp*r > best.GPUCount && !best.deepPP {
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

// estimateBefore reports whether need GPUs as replicas of layout cc make
// a better estimate than e: a layout operators run before deep pipeline
// parallelism, then fewer GPUs, then fewer stages.
func (s *search) estimateBefore(cc candidate, need int, e candidate) bool {
	if a, b := s.deepPP(cc.tp, cc.pp), s.deepPP(e.tp, e.pp); a != b {
		return b
	}
	return need < e.count() || (need == e.count() && cc.pp < e.pp)
}

// capacityAtMax is how many requests of L tokens one replica of layout c
// holds with the memory share at the engine's safe maximum (the user's
// share when fixed), and whether it starts.
func (s *search) capacityAtMax(ctx context.Context, c candidate, L int) (int64, bool) {
	req, probe, err := s.probe(ctx, c, 1, L)
	if probe == nil || errors.Is(err, plan.ErrInvalid) {
		return 0, false
	}
	if k := plan.KnobsOf(probe); k.Share != "" && !s.fixed(k.Share) && k.SafeMax > k.Current {
		setShare(&req, k.Share, k.SafeMax)
	}
	out := s.solveAt(ctx, req, probe, 1, L)
	return out.capacity, out.rep != nil && out.err == nil
}
