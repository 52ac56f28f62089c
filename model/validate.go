package model

import (
	"errors"
	"fmt"
)

// Bounds beyond which a shape value is absurd.
const (
	maxHeads   = 1 << 16
	maxDim     = 1 << 20
	maxContext = 1 << 34
)

// configKeys maps Spec JSON keys to the config.json keys they come from,
// so a validation error names what the user wrote.
var configKeys = map[string]string{
	"num_layers":   "num_hidden_layers",
	"num_kv_heads": "num_key_value_heads",
}

// Validate checks the spec's internal consistency and reports every problem
// at once (errors.Join of FieldErrors wrapping ErrRange or ErrMissing).
// Field names are the config.json keys users write (num_hidden_layers,
// num_key_value_heads) where the Spec's JSON key differs, else the Spec's
// JSON keys.
func (s *Spec) Validate() error {
	v := &validator{s: s}
	v.layers()
	nFull, nSWA, nLinear := s.CountLayers(FullAttention), s.CountLayers(SlidingAttention), s.CountLayers(LinearAttention)
	v.attention(nFull + nSWA)
	v.slidingWindow(nSWA)
	v.linear(nLinear)
	v.rest()
	return errors.Join(v.errs...)
}

// validator collects the problems Validate finds in one spec.
type validator struct {
	s    *Spec
	errs []error
}

// bad records a FieldError for field (renamed to its config.json key where
// that differs) wrapping sentinel.
func (v *validator) bad(field string, sentinel error, format string, args ...any) {
	if k, ok := configKeys[field]; ok {
		field = k
	}
	v.errs = append(v.errs, &FieldError{File: v.s.Name, Field: field, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)})
}

// inRange records an ErrRange problem unless lo <= val <= hi, and reports
// whether val was in range.
func (v *validator) inRange(field string, val, lo, hi int) bool {
	if val < lo || val > hi {
		if val < lo && lo == 1 && val == 0 {
			v.bad(field, ErrRange, "0 (must be at least 1)")
		} else {
			v.bad(field, ErrRange, "%d (must be in %d..%d)", val, lo, hi)
		}
		return false
	}
	return true
}

// layers checks the layer count, the hidden size and the layer kinds.
func (v *validator) layers() {
	s := v.s
	layersOK := v.inRange("num_layers", s.NumLayers, 1, maxLayers)
	v.inRange("hidden_size", s.HiddenSize, 0, maxDim)
	if layersOK && len(s.LayerKinds) != s.NumLayers {
		v.bad("layer_kinds", ErrRange, "%d entries for %d layers", len(s.LayerKinds), s.NumLayers)
	}
	for i, k := range s.LayerKinds {
		switch k {
		case FullAttention, SlidingAttention, LinearAttention, NoCache:
		default:
			v.bad(fmt.Sprintf("layer_kinds[%d]", i), ErrRange, "unknown layer kind %q", k)
		}
	}
}

// attention checks the attention shape when the model has nAttn attention
// layers, and only the attention kind's name when it has none.
func (v *validator) attention(nAttn int) {
	s := v.s
	if nAttn == 0 {
		if s.Attention != "" && s.Attention != MHA && s.Attention != MLA && s.Attention != DSA {
			v.bad("attention_kind", ErrRange, "unknown attention kind %q (want mha, mla or dsa)", s.Attention)
		}
		return
	}
	headsOK := v.inRange("num_attention_heads", s.NumAttentionHeads, 1, maxHeads)
	kvOK := v.inRange("num_kv_heads", s.NumKVHeads, 1, maxHeads)
	switch s.Attention {
	case MHA:
		if headsOK && kvOK && s.NumAttentionHeads%s.NumKVHeads != 0 {
			v.bad("num_kv_heads", ErrRange, "%d does not divide num_attention_heads %d", s.NumKVHeads, s.NumAttentionHeads)
		}
		v.inRange("head_dim", s.HeadDim, 1, maxDim)
		v.inRange("v_head_dim", s.VHeadDim, 1, maxDim)
	case MLA, DSA:
		v.inRange("kv_lora_rank", s.KVLoraRank, 1, maxDim)
		v.inRange("qk_rope_head_dim", s.QKRopeHeadDim, 1, maxDim)
		v.inRange("qk_nope_head_dim", s.QKNopeHeadDim, 0, maxDim)
		v.inRange("v_head_dim", s.VHeadDim, 0, maxDim)
		v.inRange("q_lora_rank", s.QLoraRank, 0, maxDim)
		if s.Attention == DSA {
			v.inRange("index_head_dim", s.IndexHeadDim, 1, maxDim)
			v.inRange("index_topk", s.IndexTopK, 0, maxContext)
			v.inRange("index_n_heads", s.IndexNHeads, 0, maxHeads)
		}
	default:
		v.bad("attention_kind", ErrRange, "unknown attention kind %q (want mha, mla or dsa)", s.Attention)
	}
}

// slidingWindow checks the sliding-window fields against the number of
// sliding-attention layers.
func (v *validator) slidingWindow(nSWA int) {
	s := v.s
	if nSWA > 0 {
		v.inRange("sliding_window", s.SlidingWindow, 1, maxContext)
		v.inRange("engine_sliding_window", s.EngineSlidingWindow, 0, maxContext)
	} else {
		v.inRange("sliding_window", s.SlidingWindow, 0, maxContext)
		if s.HybridSWAPool {
			v.bad("hybrid_swa_pool", ErrRange, "set but the model has no sliding-attention layer")
		}
	}
	v.inRange("swa_num_kv_heads", s.SWANumKVHeads, 0, maxHeads)
	v.inRange("swa_head_dim", s.SWAHeadDim, 0, maxDim)
	v.inRange("swa_v_head_dim", s.SWAVHeadDim, 0, maxDim)
}

// linear checks that nLinear linear-attention layers come with a valid
// state description.
func (v *validator) linear(nLinear int) {
	s := v.s
	switch {
	case nLinear > 0 && s.Linear == nil:
		v.bad("linear_attention", ErrMissing, "%d linear-attention layers but no state description", nLinear)
	case s.Linear != nil:
		if err := s.Linear.validate(s); err != nil {
			v.errs = append(v.errs, err)
		}
	}
}

// rest checks the context length, dtype, MTP layers, parameter counts and
// quantization.
func (v *validator) rest() {
	s := v.s
	v.inRange("context_length", s.ContextLength, 1, maxContext)
	if s.ModelDType.Size() == 0 {
		v.bad("model_dtype", ErrMissing, "no resolved model dtype")
	}
	v.inRange("num_nextn_predict_layers", s.NumNextNPredictLayers, 0, maxLayers)
	p := s.Params
	if p.Total < 0 || p.Embedding < 0 || p.Active < 0 || p.Quantizable < 0 || p.MTP < 0 {
		v.bad("params", ErrRange, "negative parameter count %+v (a negative vocab, intermediate or expert size)", p)
	}
	if s.Quant != nil {
		v.inRange("quantization.weight_bits", s.Quant.WeightBits, 0, 32)
	}
}

func (l *LinearSpec) validate(s *Spec) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{File: s.Name, Field: "linear_attention." + field, Err: fmt.Errorf("%w: "+format, append([]any{ErrRange}, args...)...)})
	}
	switch l.Kind {
	case "mamba2", "gdn", "kda":
	default:
		bad("kind", "unknown state kind %q (want mamba2, gdn or kda)", l.Kind)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"num_heads", l.NumHeads}, {"head_dim", l.HeadDim}, {"state_size", l.StateSize},
		{"n_groups", l.NGroups}, {"conv_kernel", l.ConvKernel}, {"intermediate_size", l.IntermediateSize},
	} {
		if f.v < 1 || f.v > maxDim {
			bad(f.name, "%d (must be in 1..%d)", f.v, maxDim)
		}
	}
	want := s.LayerIDs(LinearAttention)
	same := len(want) == len(l.LayerIDs)
	for i := 0; same && i < len(want); i++ {
		same = want[i] == l.LayerIDs[i]
	}
	if !same {
		bad("layer_ids", "%v do not match the linear-attention layers %v", l.LayerIDs, want)
	}
	return errors.Join(errs...)
}
