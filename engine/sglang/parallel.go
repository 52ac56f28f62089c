package sglang

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// ErrTensorParallel reports an attention tensor-parallel size that does not
// split the model's attention heads; SGLang's attention layers assert on it
// while the model loads.
var ErrTensorParallel = errors.New("sglang: attention heads do not split over the tensor-parallel size")

// TPError is SGLang's refusal of an attention tensor-parallel size (tp_size
// / dp_size with DP attention) that does not split the query heads, or
// whose KV heads and size do not divide one another. ValidSizes are the
// attention TP sizes that work. It wraps ErrTensorParallel.
type TPError struct {
	// AttentionTPSize is the refused attention TP size.
	AttentionTPSize int `json:"attention_tp_size"`
	// AttentionHeads and KVHeads are the model's totals (KVHeads 0 when the
	// query heads were the problem or the model uses MLA).
	AttentionHeads int `json:"attention_heads"`
	KVHeads        int `json:"kv_heads,omitempty"`
	// ValidSizes lists the attention TP sizes up to the head count that
	// split the heads, ascending.
	ValidSizes []int `json:"valid_sizes"`
	// Message is the assertion SGLang fails, with the figures.
	Message string `json:"message"`
}

func (e *TPError) Error() string { return "sglang: " + e.Message }

// Unwrap returns ErrTensorParallel.
func (e *TPError) Unwrap() error { return ErrTensorParallel }

// Sizes returns ValidSizes, so callers can ask any engine's refusal for
// the sizes that work through one interface.
func (e *TPError) Sizes() []int { return e.ValidSizes }

// Nearest returns the valid size closest to the refused one (the larger on
// a tie), 0 when there is none.
func (e *TPError) Nearest() int {
	best := 0
	for _, t := range e.ValidSizes {
		if best == 0 || absInt(t-e.AttentionTPSize) <= absInt(best-e.AttentionTPSize) {
			best = t
		}
	}
	return best
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// kvSplits reports whether kv heads shard over tp ranks (kv ≥ tp) or
// replicate evenly (kv < tp).
func kvSplits(kv, tp int) bool {
	switch {
	case kv <= 0:
		return true
	case kv >= tp:
		return kv%tp == 0
	default:
		return tp%kv == 0
	}
}

// checkTensorParallel applies the head assertions of SGLang's attention
// layers (models/llama.py and its kind: total_num_heads % attn_tp_size,
// then the KV heads; deepseek_v2.py: num_heads % attn_tp_size for MLA) to
// the attention TP size, returning an *engine.Refusal naming --tp-size.
func checkTensorParallel(in *Input) error {
	s, p := in.Spec, in.Parallel
	if s == nil || p.TP < 1 || p.DP < 1 {
		return nil
	}
	tp, heads := p.AttnTP(), s.NumAttentionHeads
	if tp <= 1 || heads <= 0 {
		return nil
	}
	kv := s.NumKVHeads
	if s.Attention == model.MLA || s.Attention == model.DSA {
		kv = 0 // the latent cache is not sharded
	}
	if heads%tp == 0 && kvSplits(kv, tp) {
		return nil
	}
	k := tpKey{heads: heads, kv: kv, tp: tp, attnDP: p.AttnDP()}
	r, ok := tpRefusals.Load(k)
	if !ok {
		r = newTPRefusal(k)
		tpRefusals.Store(k, r)
	}
	// Each caller gets its own copies: a refusal is the caller's to keep.
	fe := *r
	e := *fe.Err.(*TPError)
	e.ValidSizes = slices.Clone(e.ValidSizes)
	fe.Err = &e
	return &fe
}

// tpKey is what SGLang's TP refusal depends on: the heads, the attention
// TP size and the attention DP size (the flag's value is their product).
type tpKey struct{ heads, kv, tp, attnDP int }

// tpRefusals holds the refusals built so far by tpKey, at most 4096 of
// them: a sweep refuses the same few layouts again and
// again, and formatting each refusal anew was a sixth of its time.
var tpRefusals = engine.NewMemo[tpKey, *engine.Refusal](4096)

// newTPRefusal builds the refusal of k, whose heads do not split.
func newTPRefusal(k tpKey) *engine.Refusal {
	heads, kv, tp := k.heads, k.kv, k.tp
	var msg string
	kvHeads := 0 // the error's KVHeads: set when the KV heads do not split
	if heads%tp != 0 {
		msg = fmt.Sprintf("AssertionError: assert self.total_num_heads %% attn_tp_size == 0 (%d attention heads, attention TP size %d)", heads, tp)
	} else {
		kvHeads = kv
		cond := "self.total_num_kv_heads % attn_tp_size == 0"
		if kv < tp {
			cond = "attn_tp_size % self.total_num_kv_heads == 0"
		}
		msg = fmt.Sprintf("AssertionError: assert %s (%d KV heads, attention TP size %d)", cond, kv, tp)
	}
	var valid []int
	for t := 1; t <= heads && t <= 1024; t++ {
		if heads%t == 0 && kvSplits(kv, t) {
			valid = append(valid, t)
		}
	}
	e := &TPError{AttentionTPSize: tp, AttentionHeads: heads, KVHeads: kvHeads, ValidSizes: valid, Message: msg}
	fe := refusal(engine.Refusal{Err: e, Flag: "--tp-size"})
	if n := e.Nearest(); n > 0 {
		fe.Value = strconv.Itoa(n * k.attnDP)
		sizes := make([]string, len(valid))
		for i, v := range valid {
			sizes[i] = strconv.Itoa(v)
		}
		fe.Hint = fmt.Sprintf("the attention heads do not split over attention TP %d; use --tp-size %s; attention TP sizes that work: %s",
			tp, fe.Value, strings.Join(sizes, ", "))
	}
	return fe
}
