package vllm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/model"
)

// layerInputs are the settings BuildLayers needs.
type layerInputs struct {
	rules       rules
	draftLayers int
	cache       CacheDType
	blockSize   int
	tp, pp      int
	notes       *[]string
}

// stageOf splits n layers over pp stages as vLLM's get_pp_indices does:
// n//pp each, the remainder going one by one to the stages before the last,
// starting from the second to last.
func stageOf(n, pp int) []int {
	if pp <= 1 {
		return make([]int, n)
	}
	per := make([]int, pp)
	for i := range per {
		per[i] = n / pp
	}
	for i := 2; i < n%pp+2; i++ {
		per[pp-i]++
	}
	out := make([]int, 0, n)
	for st, c := range per {
		for range c {
			out = append(out, st)
		}
	}
	return out
}

// kvHeadsPerRank is vLLM's get_num_kv_heads: max(1, total // tp).
func kvHeadsPerRank(total, tp int) int { return max(1, total/max(tp, 1)) }

// engineMLA reports whether the release serves model s with MLA
// (ModelConfig.use_mla / is_deepseek_mla): from 0.7.1 for deepseek_v2 and
// deepseek_v3, deepseek_mtp from 0.8.0, kimi_k2 from 0.10.0, and every
// latent-attention model kvcfg reads from 0.11 on.
func engineMLA(s *model.Spec, r rules) bool {
	if s.Attention != model.MLA && s.Attention != model.DSA {
		return false
	}
	if r.rel.atLeast(0, 11, 0) {
		return true
	}
	switch strings.ToLower(s.ModelType) {
	case "deepseek_v2", "deepseek_v3":
		return r.rel.atLeast(0, 7, 1)
	case "deepseek_mtp":
		return r.rel.atLeast(0, 8, 0)
	case "kimi_k2":
		return r.rel.atLeast(0, 10, 0)
	}
	return false
}

// legacyHeadSize is get_head_size for a latent-attention model that the
// release does not serve with MLA: DeepSeek-V2 (and V3 from 0.6.6) padded
// to 256 in 0.6.x, qk_nope + qk_rope in 0.7.0, else hidden / heads.
func legacyHeadSize(s *model.Spec, r rules) int {
	switch strings.ToLower(s.ModelType) {
	case "deepseek_v2", "deepseek_v3":
		if !r.rel.atLeast(0, 7, 0) {
			return 256
		}
		if s.QKNopeHeadDim+s.QKRopeHeadDim > 0 {
			return s.QKNopeHeadDim + s.QKRopeHeadDim
		}
	}
	if s.NumAttentionHeads > 0 {
		return s.HiddenSize / s.NumAttentionHeads
	}
	return 0
}

// v0MLATokenBytes is one MLA token of one layer in the V0 cache engine:
// 0.7.2 and 0.7.3 align the latent row to 256 bytes (VLLM_CUDA_MEM_ALIGN_KV_CACHE).
func v0MLATokenBytes(latent int64, r rules) int64 {
	if r.v0 && r.rel.atLeast(0, 7, 2) && !r.rel.atLeast(0, 8, 0) {
		return (latent + 255) / 256 * 256
	}
	return latent
}

// isChunkedLocal reports whether the model's "sliding" layers are Llama-4
// chunked local attention (attention_chunk_size).
func isChunkedLocal(s *model.Spec) bool {
	return strings.HasPrefix(strings.ToLower(s.ModelType), "llama4")
}

// buildLayers turns a model into per-layer specs on one TP rank, tagged with
// their pipeline stage.
func buildLayers(s *model.Spec, in layerInputs) ([]LayerSpec, error) {
	n := s.NumLayers
	kinds := s.LayerKinds
	if len(kinds) == 0 {
		kinds = make([]model.LayerKind, n)
		for i := range kinds {
			kinds[i] = model.FullAttention
		}
	}
	if n == 0 {
		n = len(kinds)
	}
	if len(kinds) != n {
		return nil, fmt.Errorf("%w: %d layer kinds for %d layers", ErrUnsupportedModel, len(kinds), n)
	}
	stages := stageOf(n, in.pp)
	hkvTotal := s.NumKVHeads
	if hkvTotal <= 0 {
		hkvTotal = s.NumAttentionHeads
	}
	dk := s.HeadDim
	if dk <= 0 && s.NumAttentionHeads > 0 {
		dk = s.HiddenSize / s.NumAttentionHeads
	}
	dv := s.VHeadDim
	if dv <= 0 {
		dv = dk
	}
	mla := engineMLA(s, in.rules)
	if (s.Attention == model.MLA || s.Attention == model.DSA) && !mla {
		if !in.rules.v0 {
			return nil, fmt.Errorf("%w: vLLM %s does not serve %s (model_type %s) with MLA; kvcfg sizes it from 0.11 on (or on the V0 engine)", ErrUnsupportedModel, in.rules.rel, s.Name, s.ModelType)
		}
		// Full per-head K and V with the release's head size.
		hkvTotal = s.NumKVHeads
		if hkvTotal <= 0 {
			hkvTotal = s.NumAttentionHeads
		}
		dk = legacyHeadSize(s, in.rules)
		dv = dk
	}
	if in.rules.v0 && s.Attention == model.DSA {
		return nil, fmt.Errorf("%w: DeepSeek sparse attention (DSA) needs the V1 engine; use --vllm-version 0.11 or latest", ErrUnsupportedModel)
	}
	hasAttention := slices.ContainsFunc(kinds, func(k model.LayerKind) bool {
		return k == model.FullAttention || k == model.SlidingAttention
	})
	if hasAttention && !mla && (hkvTotal <= 0 || dk <= 0) {
		return nil, fmt.Errorf("%w: model has no KV heads or head dim", ErrUnsupportedModel)
	}

	fullTok := in.cache.tokenBytes(kvHeadsPerRank(hkvTotal, in.tp), dk, dv)
	var mlaTok, indexerTok int64
	if mla {
		if s.KVLoraRank <= 0 {
			return nil, fmt.Errorf("%w: MLA model without kv_lora_rank", ErrUnsupportedModel)
		}
		if in.cache.DSMLA {
			mlaTok = DSMLATokenBytes
		} else {
			// One latent row, never sharded across TP; no separate V.
			mlaTok = v0MLATokenBytes(int64(s.KVLoraRank+s.QKRopeHeadDim)*int64(in.cache.Format.ElementBits)/8, in.rules)
		}
		if s.Attention == model.DSA {
			d := s.IndexHeadDim
			if d <= 0 {
				d = 128
			}
			// fp8 keys plus one fp32 scale per 128 values, stored as uint8.
			indexerTok = int64(d + d/128*4)
		}
	}
	swaTok := fullTok
	if s.SWANumKVHeads > 0 || s.SWAHeadDim > 0 || s.SWAVHeadDim > 0 {
		h := hkvTotal
		if s.SWANumKVHeads > 0 {
			h = s.SWANumKVHeads
		}
		sk, sv := dk, dv
		if s.SWAHeadDim > 0 {
			sk = s.SWAHeadDim
		}
		if s.SWAVHeadDim > 0 {
			sv = s.SWAVHeadDim
		} else if s.SWAHeadDim > 0 {
			sv = sk
		}
		if !in.rules.swaHeadSizeV {
			sv = sk // SlidingWindowSpec had no head_size_v yet
		}
		swaTok = in.cache.tokenBytes(kvHeadsPerRank(h, in.tp), sk, sv)
	}

	var mambaBytes int64
	var out []LayerSpec
	uniformWindow := 0
	if s.UniformSlidingWindow > 0 && in.rules.swaSpec {
		// CacheConfig.sliding_window: every layer without a window of its
		// own slides, however long the window.
		uniformWindow = s.UniformSlidingWindow
	}
	for i, k := range kinds {
		base := LayerSpec{Name: fmt.Sprintf("layers.%d.attn", i), Stage: stages[i], BlockSize: in.blockSize}
		switch k {
		case model.NoCache:
			// An MLP-only block: no KV cache, no state.
			continue
		case model.LinearAttention:
			if in.rules.v0 {
				return nil, fmt.Errorf("%w: %s has Mamba / linear-attention layers, which the 0.6 (V0) profile does not size; use --vllm-version 0.11 or latest", ErrUnsupportedModel, s.Name)
			}
			if mambaBytes == 0 {
				b, err := mambaStateBytes(s, in)
				if err != nil {
					return nil, err
				}
				mambaBytes = b
			}
			base.Name = fmt.Sprintf("layers.%d.mixer", i)
			base.Kind = Mamba
			base.StateBytes = mambaBytes
			// Mamba's "block" is the whole sequence; the page does not depend on it.
			base.BlockSize = in.blockSize
			out = append(out, base)
			continue
		case model.SlidingAttention:
			if s.SlidingWindow <= 0 {
				return nil, fmt.Errorf("%w: sliding layer %d without a window", ErrUnsupportedModel, i)
			}
			base.TokenBytes = swaTok
			switch {
			case in.rules.v0 || !in.rules.swaSpec || (isChunkedLocal(s) && !in.rules.hybridGroups):
				// V0 (and V1 before SlidingWindowSpec, or before chunked
				// local attention had a spec) sizes every layer for the
				// full context.
				base.Kind = FullAttention
				if in.rules.v0 {
					base.Window = s.SlidingWindow
				}
			case isChunkedLocal(s):
				base.Kind = ChunkedLocalAttention
				base.ChunkSize = s.SlidingWindow
			default:
				base.Kind = SlidingWindow
				base.Window = s.SlidingWindow
			}
			if mla {
				base.TokenBytes = mlaTok
			}
		default:
			switch {
			case mla:
				base.Kind = MLAAttention
				base.TokenBytes = mlaTok
			case uniformWindow > 0:
				base.Kind = SlidingWindow
				base.Window = uniformWindow
				base.TokenBytes = fullTok
			default:
				base.Kind = FullAttention
				base.TokenBytes = fullTok
			}
		}
		out = append(out, base)
		if indexerTok > 0 {
			idx := base
			idx.Name = fmt.Sprintf("layers.%d.indexer", i)
			idx.Kind = MLAAttention
			idx.TokenBytes = indexerTok
			idx.Variant = "indexer"
			idx.Window, idx.ChunkSize = 0, 0
			out = append(out, idx)
		}
	}
	// Speculative drafter layers: copies of the target's full-attention
	// layer (with its indexer), on the last stage.
	var proto []LayerSpec
	for i := len(out) - 1; i >= 0 && len(proto) == 0; i-- {
		if out[i].Kind == FullAttention || (out[i].Kind == MLAAttention && out[i].Variant == "") || (out[i].Kind == SlidingWindow && uniformWindow > 0) {
			proto = append(proto, out[i])
			if i+1 < len(out) && out[i+1].Variant == "indexer" {
				proto = append(proto, out[i+1])
			}
		}
	}
	if in.draftLayers > 0 && len(proto) == 0 {
		return nil, fmt.Errorf("%w: a speculative drafter needs a full-attention layer to copy", ErrUnsupportedModel)
	}
	for d := range in.draftLayers {
		for _, p := range proto {
			p.Name = fmt.Sprintf("drafter.%d.%s", d, strings.TrimPrefix(p.Name[strings.LastIndex(p.Name, "."):], "."))
			p.Stage = max(in.pp-1, 0)
			out = append(out, p)
		}
	}
	return out, nil
}

// mambaStateBytes is one Mamba / linear-attention layer's state for one
// request on one rank: the conv state (conv_dim/tp × (kernel−1)) in the model
// dtype plus the SSM state (heads/tp × head_dim × state) in the SSM dtype.
// The shapes are the ones SGLang and vLLM share (model.LinearSpec.StateShapes); the
// dtypes follow vLLM (mamba_ssm_cache_dtype auto = the model dtype, the
// config's mamba_ssm_dtype when set, NemotronH fp16 in 0.11 and fp32 since).
func mambaStateBytes(s *model.Spec, in layerInputs) (int64, error) {
	if s.Linear == nil {
		return 0, fmt.Errorf("%w: linear-attention layers without a state description", ErrUnsupportedModel)
	}
	l := s.Linear
	convShapes, temporal, err := l.StateShapes(max(in.tp, 1))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnsupportedModel, err)
	}
	prod := func(sh []int) int64 {
		p := int64(1)
		for _, v := range sh {
			p *= int64(v)
		}
		return p
	}
	var conv int64
	for _, c := range convShapes {
		conv += prod(c)
	}
	ssm := prod(temporal)
	convBytes := int64(2)
	if s.ModelDType.Size() == 4 {
		convBytes = 4
	}
	ssmBytes := convBytes
	if l.Kind == "kda" {
		// mamba_utils.kda_state_dtype: the recurrent state is float32
		// whatever the model dtype (conv states follow the cache dtype).
		return conv*convBytes + ssm*4, nil
	}
	switch strings.ToLower(l.ConfigSSMDType) {
	case "float32", "fp32":
		ssmBytes = 4
	case "bfloat16", "float16", "bf16", "fp16":
		ssmBytes = 2
	default:
		if strings.HasPrefix(strings.ToLower(s.ModelType), "nemotron_h") {
			ssmBytes = 2
			if in.rules.nemotronSSMFP32 {
				ssmBytes = 4
			}
		}
	}
	return conv*convBytes + ssm*ssmBytes, nil
}
