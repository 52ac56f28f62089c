package model

import "slices"

// Summary is the flat, display-oriented view of a Spec that `kvcfg inspect`
// and the HTTP API print. Fields that do not apply to the model are null in
// JSON (nil pointers), unlike Spec, whose zero values mean "not applicable".
//
// The fields mirror Spec's (same JSON keys where both have one); the counts
// num_full_attention_layers, num_swa_layers, num_linear_attention_layers and
// num_no_cache_layers sum to num_layers.
type Summary struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture"`
	ModelType    string `json:"model_type"`
	NumLayers    int    `json:"num_layers"`
	HiddenSize   *int   `json:"hidden_size"`
	// AttentionKind is mha, mla or dsa; null for a model without attention layers.
	AttentionKind *AttentionKind `json:"attention_kind"`
	// Attention is AttentionLabel: mha, gqa, mqa, mla, dsa or none.
	Attention string `json:"attention"`
	// KVBytesPerToken is KVBytesPerToken in the model dtype (0: none).
	KVBytesPerToken   int64 `json:"kv_bytes_per_token"`
	NumAttentionHeads *int  `json:"num_attention_heads"`
	NumKVHeads        *int  `json:"num_kv_heads"`
	HeadDim           *int  `json:"head_dim"`
	VHeadDim          *int  `json:"v_head_dim"`
	KVLoraRank        *int  `json:"kv_lora_rank"`
	QKRopeHeadDim     *int  `json:"qk_rope_head_dim"`
	QKNopeHeadDim     *int  `json:"qk_nope_head_dim"`
	IndexHeadDim      *int  `json:"index_head_dim"`
	IndexTopK         *int  `json:"index_topk"`
	// SlidingWindow is the configured window; EngineSlidingWindow the one
	// SGLang's model code reports. Null without sliding layers.
	SlidingWindow       *int `json:"sliding_window"`
	EngineSlidingWindow *int `json:"engine_sliding_window"`
	SWANumKVHeads       *int `json:"swa_num_kv_heads"`
	SWAHeadDim          *int `json:"swa_head_dim"`
	SWAVHeadDim         *int `json:"swa_v_head_dim"`

	NumFullAttentionLayers   int  `json:"num_full_attention_layers"`
	NumSWALayers             int  `json:"num_swa_layers"`
	NumLinearAttentionLayers int  `json:"num_linear_attention_layers"`
	NumNoCacheLayers         int  `json:"num_no_cache_layers"`
	HybridSWAPool            bool `json:"hybrid_swa_pool"`
	// LinearAttention describes the state layers; null without any.
	LinearAttention *LinearSpec `json:"linear_attention"`

	ContextLength int     `json:"context_length"`
	ConfigDType   *string `json:"config_dtype"`
	ModelDType    string  `json:"model_dtype"`
	// Quantization is the checkpoint's quantization_config; null if none.
	Quantization          *QuantSpec `json:"quantization"`
	NumNextNPredictLayers int        `json:"num_nextn_predict_layers"`
	Multimodal            bool       `json:"multimodal"`
	Params                Params     `json:"params"`
	Warnings              []string   `json:"warnings"`
}

// Summary builds the display view of s.
func (s *Spec) Summary() Summary {
	nFull, nSWA := s.CountLayers(FullAttention), s.CountLayers(SlidingAttention)
	sum := Summary{
		Name:                     s.Name,
		Attention:                s.AttentionLabel(),
		KVBytesPerToken:          s.KVBytesPerToken(s.ModelDType.Size()),
		Architecture:             s.Architecture,
		ModelType:                s.ModelType,
		NumLayers:                s.NumLayers,
		HiddenSize:               positive(s.HiddenSize),
		NumFullAttentionLayers:   nFull,
		NumSWALayers:             nSWA,
		NumLinearAttentionLayers: s.CountLayers(LinearAttention),
		NumNoCacheLayers:         s.CountLayers(NoCache),
		HybridSWAPool:            s.HybridSWAPool,
		LinearAttention:          s.Linear,
		ContextLength:            s.ContextLength,
		ConfigDType:              nonEmpty(s.ConfigDType),
		ModelDType:               s.ModelDType.String(),
		Quantization:             s.Quant,
		NumNextNPredictLayers:    s.NumNextNPredictLayers,
		Multimodal:               s.Multimodal,
		Params:                   s.Params,
		Warnings:                 append([]string{}, s.Warnings...),
	}
	if nFull+nSWA > 0 {
		kind := s.Attention
		sum.AttentionKind = &kind
		sum.NumAttentionHeads = positive(s.NumAttentionHeads)
		sum.NumKVHeads = positive(s.NumKVHeads)
		sum.HeadDim = positive(s.HeadDim)
		sum.VHeadDim = positive(s.VHeadDim)
		if s.Attention == MLA || s.Attention == DSA {
			sum.KVLoraRank = positive(s.KVLoraRank)
			sum.QKRopeHeadDim = positive(s.QKRopeHeadDim)
			sum.QKNopeHeadDim = positive(s.QKNopeHeadDim)
		}
		if s.Attention == DSA {
			sum.IndexHeadDim = positive(s.IndexHeadDim)
			sum.IndexTopK = positive(s.IndexTopK)
		}
	}
	if nSWA > 0 {
		sum.SlidingWindow = positive(s.SlidingWindow)
		sum.EngineSlidingWindow = positive(s.EngineSlidingWindow)
		sum.SWANumKVHeads = positive(s.SWAKVHeads())
		sum.SWAHeadDim = positive(s.SWAKDim())
		sum.SWAVHeadDim = positive(s.SWAVDim())
	}
	return sum
}

func positive(v int) *int {
	if v <= 0 {
		return nil
	}
	return &v
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SWAKVHeads is the total KV head count of sliding layers:
// SWANumKVHeads when set, else NumKVHeads.
func (s *Spec) SWAKVHeads() int {
	if s.SWANumKVHeads > 0 {
		return s.SWANumKVHeads
	}
	return s.NumKVHeads
}

// SWAKDim is the K head dim of sliding layers: SWAHeadDim when set, else HeadDim.
func (s *Spec) SWAKDim() int {
	if s.SWAHeadDim > 0 {
		return s.SWAHeadDim
	}
	return s.HeadDim
}

// SWAVDim is the V head dim of sliding layers: SWAVHeadDim when set, else
// VHeadDim.
func (s *Spec) SWAVDim() int {
	if s.SWAVHeadDim > 0 {
		return s.SWAVHeadDim
	}
	return s.VHeadDim
}

// KVLayers is the number of layers that keep per-token KV (full plus sliding).
func (s *Spec) KVLayers() int {
	return s.CountLayers(FullAttention) + s.CountLayers(SlidingAttention)
}

// AttentionLabel names the model's attention as operators say it: "mha"
// (as many KV heads as query heads), "gqa" (fewer, more than one), "mqa"
// (one KV head), "mla" or "dsa" for the latent kinds, and "none" for a
// model without attention layers (pure Mamba).
func (s *Spec) AttentionLabel() string {
	if len(s.LayerKinds) > 0 && !slices.ContainsFunc(s.LayerKinds, isAttention) {
		return "none"
	}
	switch {
	case s.Attention == MLA || s.Attention == DSA:
		return string(s.Attention)
	case s.NumKVHeads == 1:
		return "mqa"
	case s.NumKVHeads > 0 && s.NumAttentionHeads > s.NumKVHeads:
		return "gqa"
	}
	return "mha"
}

// isAttention reports whether a layer of kind k has a KV cache (full or
// sliding-window attention).
func isAttention(k LayerKind) bool { return k == FullAttention || k == SlidingAttention }

// KVBytesPerToken is the model's raw KV cost of one token on one GPU with
// elemBytes-byte elements: every full and sliding layer's K and V rows
// (MLA and DSA: the latent row), before any engine's page, scale or
// window rules. Linear-attention state is per request and not counted.
func (s *Spec) KVBytesPerToken(elemBytes int) int64 {
	e := int64(elemBytes)
	full, swa := int64(s.CountLayers(FullAttention)), int64(s.CountLayers(SlidingAttention))
	if len(s.LayerKinds) == 0 {
		full = int64(s.NumLayers)
	}
	if s.Attention == MLA || s.Attention == DSA {
		return (full + swa) * int64(s.KVLoraRank+s.QKRopeHeadDim) * e
	}
	vdim := s.VHeadDim
	if vdim == 0 {
		vdim = s.HeadDim
	}
	b := full * int64(s.NumKVHeads) * int64(s.HeadDim+vdim) * e
	if swa > 0 {
		b += swa * int64(s.SWAKVHeads()) * int64(s.SWAKDim()+s.SWAVDim()) * e
	}
	return b
}
