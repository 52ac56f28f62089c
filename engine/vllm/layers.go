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
// their pipeline stage: the attention geometry the release sees
// (get_num_kv_heads, get_head_size, use_mla), each kind's bytes per token,
// one spec per layer (get_kv_cache_spec), then the drafter's copies.
func buildLayers(s *model.Spec, in layerInputs) ([]LayerSpec, error) {
	kinds, err := layerKinds(s)
	if err != nil {
		return nil, err
	}
	stages := stageOf(len(kinds), in.pp)
	shape, err := attentionShape(s, in, kinds)
	if err != nil {
		return nil, err
	}
	b := layerBuilder{s: s, in: in, mla: shape.mla, uniformWindow: uniformWindow(s, in.rules)}
	if b.tok, err = tokenBytesOf(s, in, shape); err != nil {
		return nil, err
	}
	var out []LayerSpec
	for i, k := range kinds {
		if out, err = b.appendLayer(out, i, k, stages[i]); err != nil {
			return nil, err
		}
	}
	return appendDrafters(out, in, b.uniformWindow)
}

// layerKinds is the model's kind of every layer (all full attention when the
// config names none), checked against its layer count.
func layerKinds(s *model.Spec) ([]model.LayerKind, error) {
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
	return kinds, nil
}

// attnShape is a model's attention geometry as the release sees it: the
// total KV heads, the K and V head sizes, and whether it serves the model
// with MLA.
type attnShape struct {
	hkv, dk, dv int
	mla         bool
}

// attentionShape is ModelConfig's get_total_num_kv_heads and get_head_size
// (the legacy head size for a latent-attention model served without MLA),
// refusing what the release does not serve.
func attentionShape(s *model.Spec, in layerInputs, kinds []model.LayerKind) (attnShape, error) {
	sh := attnShape{hkv: s.NumKVHeads, dk: s.HeadDim, dv: s.VHeadDim, mla: engineMLA(s, in.rules)}
	if sh.hkv <= 0 {
		sh.hkv = s.NumAttentionHeads
	}
	if sh.dk <= 0 && s.NumAttentionHeads > 0 {
		sh.dk = s.HiddenSize / s.NumAttentionHeads
	}
	if sh.dv <= 0 {
		sh.dv = sh.dk
	}
	if (s.Attention == model.MLA || s.Attention == model.DSA) && !sh.mla {
		if !in.rules.v0 {
			return sh, fmt.Errorf("%w: vLLM %s does not serve %s (model_type %s) with MLA; kvcfg sizes it from 0.11 on (or on the V0 engine)", ErrUnsupportedModel, in.rules.rel, s.Name, s.ModelType)
		}
		// Full per-head K and V with the release's head size.
		sh.dk = legacyHeadSize(s, in.rules)
		sh.dv = sh.dk
	}
	if in.rules.v0 && s.Attention == model.DSA {
		return sh, fmt.Errorf("%w: DeepSeek sparse attention (DSA) needs the V1 engine; use --vllm-version 0.11 or latest", ErrUnsupportedModel)
	}
	hasAttention := slices.ContainsFunc(kinds, func(k model.LayerKind) bool {
		return k == model.FullAttention || k == model.SlidingAttention
	})
	if hasAttention && !sh.mla && (sh.hkv <= 0 || sh.dk <= 0) {
		return sh, fmt.Errorf("%w: model has no KV heads or head dim", ErrUnsupportedModel)
	}
	return sh, nil
}

// layerTokens are the bytes one token takes in one layer on one rank, per
// kind of layer.
type layerTokens struct {
	full, swa, mla, indexer int64
}

// tokenBytesOf is each layer kind's bytes per token: full attention
// (FullAttentionSpec), sliding (SlidingWindowSpec, with the model's own
// sliding-layer heads where it has them), the MLA latent row (MLAAttentionSpec)
// and DSA's indexer keys.
func tokenBytesOf(s *model.Spec, in layerInputs, sh attnShape) (layerTokens, error) {
	t := layerTokens{full: in.cache.tokenBytes(kvHeadsPerRank(sh.hkv, in.tp), sh.dk, sh.dv)}
	t.swa = slidingTokenBytes(s, in, sh, t.full)
	if !sh.mla {
		return t, nil
	}
	if s.KVLoraRank <= 0 {
		return t, fmt.Errorf("%w: MLA model without kv_lora_rank", ErrUnsupportedModel)
	}
	if in.cache.DSMLA {
		t.mla = DSMLATokenBytes
	} else {
		// One latent row, never sharded across TP; no separate V.
		t.mla = v0MLATokenBytes(int64(s.KVLoraRank+s.QKRopeHeadDim)*int64(in.cache.Format.ElementBits)/8, in.rules)
	}
	if s.Attention == model.DSA {
		d := s.IndexHeadDim
		if d <= 0 {
			d = 128
		}
		// fp8 keys plus one fp32 scale per 128 values, stored as uint8.
		t.indexer = int64(d + d/128*4)
	}
	return t, nil
}

// slidingTokenBytes is a sliding layer's bytes per token: full's unless
// the model gives its sliding layers their own KV heads or head sizes
// (SlidingWindowSpec's head_size_v arrived with swaHeadSizeV).
func slidingTokenBytes(s *model.Spec, in layerInputs, sh attnShape, full int64) int64 {
	if s.SWANumKVHeads <= 0 && s.SWAHeadDim <= 0 && s.SWAVHeadDim <= 0 {
		return full
	}
	h := sh.hkv
	if s.SWANumKVHeads > 0 {
		h = s.SWANumKVHeads
	}
	sk, sv := sh.dk, sh.dv
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
	return in.cache.tokenBytes(kvHeadsPerRank(h, in.tp), sk, sv)
}

// uniformWindow is CacheConfig.sliding_window: with a SlidingWindowSpec,
// every layer without a window of its own slides, however long the window.
func uniformWindow(s *model.Spec, r rules) int {
	if s.UniformSlidingWindow > 0 && r.swaSpec {
		return s.UniformSlidingWindow
	}
	return 0
}

// layerBuilder is what buildLayers works out once per model for the specs
// of its layers.
type layerBuilder struct {
	s             *model.Spec
	in            layerInputs
	mla           bool
	tok           layerTokens
	uniformWindow int
	mambaBytes    int64 // one Mamba layer's state, worked out at the first one
}

// appendLayer appends layer i's spec (and its indexer's, for DSA) to out,
// as the layer's get_kv_cache_spec gives it; an MLP-only block has none.
func (b *layerBuilder) appendLayer(out []LayerSpec, i int, k model.LayerKind, stage int) ([]LayerSpec, error) {
	spec := LayerSpec{Name: fmt.Sprintf("layers.%d.attn", i), Stage: stage, BlockSize: b.in.blockSize}
	var err error
	switch k {
	case model.NoCache:
		// An MLP-only block: no KV cache, no state.
		return out, nil
	case model.LinearAttention:
		if spec, err = b.mambaLayer(spec, i); err != nil {
			return out, err
		}
		return append(out, spec), nil
	case model.SlidingAttention:
		if spec, err = b.slidingLayer(spec, i); err != nil {
			return out, err
		}
	default:
		spec = b.attentionLayer(spec)
	}
	out = append(out, spec)
	if b.tok.indexer > 0 {
		idx := spec
		idx.Name = fmt.Sprintf("layers.%d.indexer", i)
		idx.Kind = MLAAttention
		idx.TokenBytes = b.tok.indexer
		idx.Variant = "indexer"
		idx.Window, idx.ChunkSize = 0, 0
		out = append(out, idx)
	}
	return out, nil
}

// mambaLayer is a Mamba / linear-attention layer's MambaSpec: one state per
// request, whose page does not depend on the block.
func (b *layerBuilder) mambaLayer(spec LayerSpec, i int) (LayerSpec, error) {
	if b.in.rules.v0 {
		return spec, fmt.Errorf("%w: %s has Mamba / linear-attention layers, which the 0.6 (V0) profile does not size; use --vllm-version 0.11 or latest", ErrUnsupportedModel, b.s.Name)
	}
	if b.mambaBytes == 0 {
		n, err := mambaStateBytes(b.s, b.in)
		if err != nil {
			return spec, err
		}
		b.mambaBytes = n
	}
	spec.Name = fmt.Sprintf("layers.%d.mixer", i)
	spec.Kind = Mamba
	spec.StateBytes = b.mambaBytes
	// Mamba's "block" is the whole sequence; the page does not depend on it.
	spec.BlockSize = b.in.blockSize
	return spec, nil
}

// slidingLayer is a sliding layer's spec: SlidingWindowSpec, Llama-4's
// ChunkedLocalAttentionSpec, or full attention where the release has no
// spec for it.
func (b *layerBuilder) slidingLayer(spec LayerSpec, i int) (LayerSpec, error) {
	s, r := b.s, b.in.rules
	if s.SlidingWindow <= 0 {
		return spec, fmt.Errorf("%w: sliding layer %d without a window", ErrUnsupportedModel, i)
	}
	spec.TokenBytes = b.tok.swa
	switch {
	case r.v0 || !r.swaSpec || (isChunkedLocal(s) && !r.hybridGroups):
		// V0 (and V1 before SlidingWindowSpec, or before chunked
		// local attention had a spec) sizes every layer for the
		// full context.
		spec.Kind = FullAttention
		if r.v0 {
			spec.Window = s.SlidingWindow
		}
	case isChunkedLocal(s):
		spec.Kind = ChunkedLocalAttention
		spec.ChunkSize = s.SlidingWindow
	default:
		spec.Kind = SlidingWindow
		spec.Window = s.SlidingWindow
	}
	if b.mla {
		spec.TokenBytes = b.tok.mla
	}
	return spec, nil
}

// attentionLayer is a full-attention layer's spec: MLAAttentionSpec,
// SlidingWindowSpec under a uniform sliding window, else FullAttentionSpec.
func (b *layerBuilder) attentionLayer(spec LayerSpec) LayerSpec {
	switch {
	case b.mla:
		spec.Kind = MLAAttention
		spec.TokenBytes = b.tok.mla
	case b.uniformWindow > 0:
		spec.Kind = SlidingWindow
		spec.Window = b.uniformWindow
		spec.TokenBytes = b.tok.full
	default:
		spec.Kind = FullAttention
		spec.TokenBytes = b.tok.full
	}
	return spec
}

// appendDrafters appends the speculative drafter's layers: copies of the
// target's last full-attention layer (with its indexer), on the last stage.
func appendDrafters(out []LayerSpec, in layerInputs, uniformWindow int) ([]LayerSpec, error) {
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
