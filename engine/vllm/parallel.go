package vllm

import (
	"fmt"

	"github.com/kvcfg/kvcfg/model"
)

// TPError is vLLM's refusal of a tensor-parallel size that does not split
// the model's attention heads: ModelConfig.verify_with_parallel_config
// raises on the query heads, the model's attention layer asserts on the KV
// heads. ValidSizes are the sizes that work, so a fix can name them. It
// unwraps to ErrRefused; Plan wraps it in an *engine.Refusal naming the fix.
type TPError struct {
	// TensorParallelSize is the refused size.
	TensorParallelSize int `json:"tensor_parallel_size"`
	// AttentionHeads and KVHeads are the model's totals (KVHeads 0 when the
	// KV heads were not the problem or do not shard, as with MLA).
	AttentionHeads int `json:"attention_heads"`
	KVHeads        int `json:"kv_heads,omitempty"`
	// ValidSizes lists the tensor-parallel sizes up to the head count that
	// vLLM accepts for this model, ascending.
	ValidSizes []int `json:"valid_sizes"`
	// Message is vLLM's wording.
	Message string `json:"message"`
}

func (e *TPError) Error() string { return "vllm: " + e.Message }

// Unwrap returns ErrRefused.
func (e *TPError) Unwrap() error { return ErrRefused }

// Sizes returns ValidSizes, so callers can ask any engine's refusal for
// the sizes that work through one interface.
func (e *TPError) Sizes() []int { return e.ValidSizes }

// Nearest returns the valid size closest to the refused one (the larger on
// a tie), or 0 when there is none.
func (e *TPError) Nearest() int {
	best := 0
	for _, t := range e.ValidSizes {
		d, bd := t-e.TensorParallelSize, best-e.TensorParallelSize
		if d < 0 {
			d = -d
		}
		if bd < 0 {
			bd = -bd
		}
		if best == 0 || d <= bd {
			best = t
		}
	}
	return best
}

// splitsKV reports whether tp shards (or replicates) kv heads evenly: the
// heads divide over the ranks, or each head is replicated on tp/kv ranks.
func splitsKV(kv, tp int) bool {
	if kv <= 0 {
		return true
	}
	if kv >= tp {
		return kv%tp == 0
	}
	return tp%kv == 0
}

// tpSizes lists the sizes in 1..heads that split heads and kv.
func tpSizes(heads, kv int) []int {
	var out []int
	for t := 1; t <= heads && t <= 1024; t++ {
		if heads%t == 0 && splitsKV(kv, t) {
			out = append(out, t)
		}
	}
	return out
}

// checkTensorParallel applies vLLM's head divisibility rules to model s at
// tensor-parallel size tp; mla skips the KV-head rule (the latent is not
// sharded).
func checkTensorParallel(s *model.Spec, tp int, mla bool) error {
	heads := s.NumAttentionHeads
	if tp <= 1 || heads <= 0 {
		return nil
	}
	kv := s.NumKVHeads
	if kv <= 0 || mla {
		kv = 0
	}
	if heads%tp != 0 {
		return &TPError{TensorParallelSize: tp, AttentionHeads: heads, ValidSizes: tpSizes(heads, kv),
			Message: fmt.Sprintf("Total number of attention heads (%d) must be divisible by tensor parallel size (%d).", heads, tp)}
	}
	if !splitsKV(kv, tp) {
		// The attention layer's bare assertion (llama.py and the models
		// built like it); vLLM prints only the failing line.
		cond := "self.total_num_kv_heads % tp_size == 0"
		if kv < tp {
			cond = "tp_size % self.total_num_kv_heads == 0"
		}
		return &TPError{TensorParallelSize: tp, AttentionHeads: heads, KVHeads: kv, ValidSizes: tpSizes(heads, kv),
			Message: fmt.Sprintf("AssertionError: assert %s (%d KV heads, tensor parallel size %d)", cond, kv, tp)}
	}
	return nil
}
