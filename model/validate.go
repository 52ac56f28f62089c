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
	var errs []error
	bad := func(field string, sentinel error, format string, args ...any) {
		if k, ok := configKeys[field]; ok {
			field = k
		}
		errs = append(errs, &FieldError{File: s.Name, Field: field, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)})
	}
	inRange := func(field string, v, lo, hi int) bool {
		if v < lo || v > hi {
			if v < lo && lo == 1 && v == 0 {
				bad(field, ErrRange, "0 (must be at least 1)")
			} else {
				bad(field, ErrRange, "%d (must be in %d..%d)", v, lo, hi)
			}
			return false
		}
		return true
	}

	layersOK := inRange("num_layers", s.NumLayers, 1, maxLayers)
	inRange("hidden_size", s.HiddenSize, 0, maxDim)
	if layersOK && len(s.LayerKinds) != s.NumLayers {
		bad("layer_kinds", ErrRange, "%d entries for %d layers", len(s.LayerKinds), s.NumLayers)
	}
	for i, k := range s.LayerKinds {
		switch k {
		case FullAttention, SlidingAttention, LinearAttention, NoCache:
		default:
			bad(fmt.Sprintf("layer_kinds[%d]", i), ErrRange, "unknown layer kind %q", k)
		}
	}
	nFull, nSWA, nLinear := s.CountLayers(FullAttention), s.CountLayers(SlidingAttention), s.CountLayers(LinearAttention)

	if nFull+nSWA > 0 {
		headsOK := inRange("num_attention_heads", s.NumAttentionHeads, 1, maxHeads)
		kvOK := inRange("num_kv_heads", s.NumKVHeads, 1, maxHeads)
		switch s.Attention {
		case MHA:
			if headsOK && kvOK && s.NumAttentionHeads%s.NumKVHeads != 0 {
				bad("num_kv_heads", ErrRange, "%d does not divide num_attention_heads %d", s.NumKVHeads, s.NumAttentionHeads)
			}
			inRange("head_dim", s.HeadDim, 1, maxDim)
			inRange("v_head_dim", s.VHeadDim, 1, maxDim)
		case MLA, DSA:
			inRange("kv_lora_rank", s.KVLoraRank, 1, maxDim)
			inRange("qk_rope_head_dim", s.QKRopeHeadDim, 1, maxDim)
			inRange("qk_nope_head_dim", s.QKNopeHeadDim, 0, maxDim)
			inRange("v_head_dim", s.VHeadDim, 0, maxDim)
			inRange("q_lora_rank", s.QLoraRank, 0, maxDim)
			if s.Attention == DSA {
				inRange("index_head_dim", s.IndexHeadDim, 1, maxDim)
				inRange("index_topk", s.IndexTopK, 0, maxContext)
				inRange("index_n_heads", s.IndexNHeads, 0, maxHeads)
			}
		default:
			bad("attention_kind", ErrRange, "unknown attention kind %q (want mha, mla or dsa)", s.Attention)
		}
	} else if s.Attention != "" && s.Attention != MHA && s.Attention != MLA && s.Attention != DSA {
		bad("attention_kind", ErrRange, "unknown attention kind %q (want mha, mla or dsa)", s.Attention)
	}

	if nSWA > 0 {
		inRange("sliding_window", s.SlidingWindow, 1, maxContext)
		inRange("engine_sliding_window", s.EngineSlidingWindow, 0, maxContext)
	} else {
		inRange("sliding_window", s.SlidingWindow, 0, maxContext)
		if s.HybridSWAPool {
			bad("hybrid_swa_pool", ErrRange, "set but the model has no sliding-attention layer")
		}
	}
	inRange("swa_num_kv_heads", s.SWANumKVHeads, 0, maxHeads)
	inRange("swa_head_dim", s.SWAHeadDim, 0, maxDim)
	inRange("swa_v_head_dim", s.SWAVHeadDim, 0, maxDim)

	switch {
	case nLinear > 0 && s.Linear == nil:
		bad("linear_attention", ErrMissing, "%d linear-attention layers but no state description", nLinear)
	case s.Linear != nil:
		if err := s.Linear.validate(s); err != nil {
			errs = append(errs, err)
		}
	}

	inRange("context_length", s.ContextLength, 1, maxContext)
	if s.ModelDType.Size() == 0 {
		bad("model_dtype", ErrMissing, "no resolved model dtype")
	}
	inRange("num_nextn_predict_layers", s.NumNextNPredictLayers, 0, maxLayers)
	p := s.Params
	if p.Total < 0 || p.Embedding < 0 || p.Active < 0 || p.Quantizable < 0 || p.MTP < 0 {
		bad("params", ErrRange, "negative parameter count %+v (a negative vocab, intermediate or expert size)", p)
	}
	if s.Quant != nil {
		inRange("quantization.weight_bits", s.Quant.WeightBits, 0, 32)
	}
	return errors.Join(errs...)
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
