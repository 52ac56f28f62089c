package fit

import (
	"fmt"

	"github.com/kvcfg/kvcfg/model"
)

// layouts are the candidates of count GPUs of type g with dtype d: every
// TP × PP split, and, where the engine runs replicas, dp replicas of a
// TP-only layout. deep selects the tier: the layouts operators run
// (tensor parallelism within a node, data-parallel replicas, pipeline
// stages only of whole nodes) or, with deep, deep pipeline parallelism
// (stages narrower than a node), searched only when none of the first
// serves.
func (s *search) layouts(g, d string, count int, deep bool) []candidate {
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
			if s.deepPP(tp, rest/tp) != deep {
				continue
			}
			out = append(out, candidate{gpu: g, tp: tp, pp: rest / tp, dp: dp, dtype: d})
		}
	}
	return out
}

// deepPP reports whether tp × pp is deep pipeline parallelism: pipeline
// stages narrower than the widest tensor-parallel size the model takes
// within one node. Operators split a model over a node's GPUs with
// tensor parallelism (which also shortens each step) and add replicas for
// throughput; pipeline stages go between nodes.
func (s *search) deepPP(tp, pp int) bool { return pp > 1 && tp < s.nodeTP }

// nodeTP is the widest tensor-parallel size up to a node (replicaMax
// GPUs) that the architecture shards evenly.
func nodeTP(spec *model.Spec) int {
	best := 1
	for tp := 2; tp <= replicaMax; tp++ {
		if layoutReason(spec, tp, 1) == "" {
			best = tp
		}
	}
	return best
}

func skip(c candidate, reason string) Skip {
	return Skip{GPU: c.gpu, TPSize: c.tp, PPSize: c.pp, KVCacheDType: c.dtype, Reason: reason}
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
