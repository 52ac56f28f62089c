package model

import (
	"fmt"
	"math"
)

// counts is a parameter tally kept in float64 (exact below 2^53, and free of
// overflow for absurd configs).
type counts struct {
	total, active, quant float64
}

func (c *counts) add(o counts) {
	c.total += o.total
	c.active += o.active
	c.quant += o.quant
}

// linear is a quantizable matrix used by every token.
func linear(n float64) counts { return counts{n, n, n} }

// plain is a non-quantizable tensor used by every token (norms, router).
func plain(n float64) counts { return counts{n, n, 0} }

// moeShape is the expert layout of a MoE model.
type moeShape struct {
	experts, topK      float64
	expertInter        float64
	sharedInter        float64 // total intermediate of always-on shared experts
	firstDense         int     // first_k_dense_replace
	freq               int     // moe_layer_freq as an int
	freqList           []int   // moe_layer_freq as a per-layer list (MiMo)
	sparseStep         int     // decoder_sparse_step (Qwen MoE)
	mlpOnly            map[int]bool
	interleaveStep     int // Llama-4 interleave_moe_layer_step
	denseInter         float64
	nemotronMoEChars   bool
	hasExpertsPerLayer bool
}

// estimateParams fills Spec.Params from the config (weights only, no
// buffers). Vision encoders are not counted.
func (p *parser) estimateParams() {
	s, t := p.s, p.text
	h := float64(s.HiddenSize)
	vocabI := p.size(t, "vocab_size", "padded_vocab_size")
	vocab := float64(vocabI)

	embed := vocab * h
	if !p.tiedEmbeddings() {
		embed *= 2
	}

	mul, inter := p.mlpShape(h)
	lc := layerCounter{
		p:        p,
		h:        h,
		mul:      mul,
		inter:    inter,
		m:        p.moe(inter),
		skipAttn: p.quantSkipsAttention(),
	}
	lc.pattern, _ = t.str("hybrid_override_pattern")

	var sum counts
	for i, kind := range s.LayerKinds {
		sum.add(lc.count(i, kind))
	}
	sum.add(plain(h)) // final norm

	mtp := lc.mtp(vocab)

	s.FFN = FFNShape{
		VocabSize: vocabI, Intermediate: int(inter), Gated: mul == 3,
		Experts: int(lc.m.experts), TopK: int(lc.m.topK),
		ExpertIntermediate: int(lc.m.expertInter), SharedIntermediate: int(lc.m.sharedInter),
	}
	if lc.m.experts == 0 {
		s.FFN.ExpertIntermediate, s.FFN.SharedIntermediate = 0, 0
	}
	s.Params = Params{
		Total:       round(sum.total + embed),
		Embedding:   round(embed),
		Active:      round(sum.active + embed),
		Quantizable: round(sum.quant),
		MTP:         round(mtp.total),
	}
	if p.fam == famDeepseekV4 {
		// DeepSeek-V4 ships its routed experts as FP4 (two values per int8,
		// a UE8M0 scale per 32), the rest of the linears as FP8.
		n := 0.0
		for i := range s.LayerKinds {
			if lc.m.isMoE(i) {
				n++
			}
		}
		s.Params.FP4Experts = round(n * lc.m.experts * mul * h * lc.m.expertInter)
	}
}

// tiedEmbeddings reports whether the output head shares the input
// embedding: tie_word_embeddings in the text config, then in the root
// config, then the model type's default.
func (p *parser) tiedEmbeddings() bool {
	t := p.text
	tied, ok := t.bool("tie_word_embeddings")
	if !ok {
		tied, ok = p.root.bool("tie_word_embeddings")
	}
	if !ok {
		tied = tiedByDefault[p.s.ModelType] || tiedByDefault[p.topModelType]
	}
	return tied
}

// mlpShape returns the MLP's matrix count per hidden-by-intermediate
// product (3 when gated, 2 when not) and the dense intermediate size
// (Falcon's default is 4*hidden).
func (p *parser) mlpShape(h float64) (mul, inter float64) {
	s, t := p.s, p.text
	mul = 3.0
	if nonGatedMLP[s.ModelType] || nonGatedMLP[p.topModelType] {
		mul = 2
	}
	interI := p.size(t, "intermediate_size", "ffn_hidden_size", "n_inner")
	hasInter := t.has("intermediate_size") || t.has("ffn_hidden_size") || t.has("n_inner")
	inter = float64(interI)
	if !hasInter && (p.fam == famFalcon || s.ModelType == "falcon") {
		inter = 4 * h
	}
	return mul, inter
}

// layerCounter counts the parameters of one decoder layer.
type layerCounter struct {
	p        *parser
	h        float64 // hidden size
	mul      float64 // MLP matrices per hidden*intermediate
	inter    float64 // dense intermediate size
	m        moeShape
	skipAttn bool   // attention weights stay unquantized
	pattern  string // hybrid_override_pattern (Nemotron-H)
}

// count returns the parameters of layer i of the given kind: its mixer,
// its two norms and its MLP (dense or MoE).
func (l *layerCounter) count(i int, kind LayerKind) counts {
	p, h := l.p, l.h
	var c counts
	mixer := counts{}
	switch kind {
	case FullAttention, SlidingAttention:
		mixer = p.attnParams(kind, h)
		if l.skipAttn {
			mixer.quant = 0
		}
	case LinearAttention:
		mixer = p.linearParams(h)
	}
	c.add(mixer)
	c.add(plain(2 * h)) // two norms
	switch p.fam {
	case famMamba2:
		return c
	case famNemotronH:
		if i < len(l.pattern) {
			switch l.pattern[i] {
			case '-':
				c.add(linear(l.mul * h * l.inter))
			case 'E':
				c.add(p.moeParams(l.m, h, l.mul))
			}
		}
		return c
	}
	if l.m.isMoE(i) {
		c.add(p.moeParams(l.m, h, l.mul))
	} else {
		c.add(linear(l.mul * h * l.m.denseInter))
	}
	return c
}

// mtp returns the parameters of the multi-token-prediction layers: each
// is a copy of the last layer as full attention, plus eh_proj and norms
// (and, for DeepSeek and GLM-4 MoE, copies of the embedding and head).
func (l *layerCounter) mtp(vocab float64) counts {
	p, s, h := l.p, l.p.s, l.h
	var mtp counts
	if n := s.NumNextNPredictLayers; n > 0 && len(s.LayerKinds) > 0 {
		last := len(s.LayerKinds) - 1
		one := l.count(last, FullAttention)
		one.add(linear(2 * h * h)) // eh_proj
		one.add(plain(2 * h))
		if p.fam == famDeepseek || p.fam == famGLM4MoE {
			one.add(plain(2 * vocab * h)) // embed_tokens and shared_head copies
		}
		mtp.total = float64(n) * one.total
	}
	return mtp
}

func round(f float64) int64 {
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Round(f))
}

// size reads the first present key of keys as a non-negative size (0 when
// absent), reporting a negative value.
func (p *parser) size(o object, keys ...string) int {
	v, key, ok := o.firstInt(keys...)
	if ok && v < 0 {
		p.r.fail(o.field(key), fmt.Errorf("%w: %d (must not be negative)", ErrRange, v))
		return 0
	}
	return v
}

// moe reads the expert layout; experts == 0 for dense models.
func (p *parser) moe(inter float64) moeShape {
	t := p.text
	m := moeShape{denseInter: inter, freq: 1, sparseStep: 1, interleaveStep: 1}
	m.experts = float64(p.size(t, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"))
	m.topK = float64(p.size(t, "num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk"))
	if t.has("moe_intermediate_size") {
		m.expertInter = float64(p.size(t, "moe_intermediate_size"))
	} else {
		m.expertInter = inter
	}
	if p.fam == famLlama4 {
		if di, ok := t.int("intermediate_size_mlp"); ok {
			m.denseInter = float64(di)
		}
		m.sharedInter = inter
		if st, ok := t.int("interleave_moe_layer_step"); ok && st > 0 {
			m.interleaveStep = st
		}
	}
	if t.has("n_shared_experts") || t.has("num_shared_experts") {
		m.sharedInter = float64(p.size(t, "n_shared_experts", "num_shared_experts")) * m.expertInter
	}
	if t.has("shared_expert_intermediate_size") || t.has("moe_shared_expert_intermediate_size") || t.has("shared_intermediate_size") {
		m.sharedInter = float64(p.size(t, "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size"))
	}
	m.firstDense, _ = t.int("first_k_dense_replace")
	if v, ok := t.get("moe_layer_freq"); ok {
		if _, isList := v.([]any); isList {
			m.freqList, _ = t.ints("moe_layer_freq")
		} else if f, ok := t.int("moe_layer_freq"); ok && f > 0 {
			m.freq = f
		}
	}
	if st, ok := t.int("decoder_sparse_step"); ok && st > 0 {
		m.sparseStep = st
	}
	if l, ok := t.ints("mlp_only_layers"); ok && len(l) > 0 {
		m.mlpOnly = make(map[int]bool, len(l))
		for _, i := range l {
			m.mlpOnly[i] = true
		}
	}
	return m
}

// isMoE reports whether layer i has routed experts.
func (m moeShape) isMoE(i int) bool {
	if m.experts <= 0 {
		return false
	}
	if m.freqList != nil {
		return i < len(m.freqList) && m.freqList[i] != 0
	}
	if i < m.firstDense || i%m.freq != 0 {
		return false
	}
	if m.mlpOnly[i] || (i+1)%m.sparseStep != 0 {
		return false
	}
	return (i+1)%m.interleaveStep == 0
}

// moeParams is one MoE block: routed experts, shared experts, router.
func (p *parser) moeParams(m moeShape, h, mul float64) counts {
	one := mul * h * m.expertInter
	c := counts{total: m.experts * one, active: m.topK * one, quant: m.experts * one}
	c.add(linear(mul * h * m.sharedInter))
	c.add(plain(h * m.experts)) // router
	return c
}

// attnParams is one attention block of the given kind.
func (p *parser) attnParams(kind LayerKind, h float64) counts {
	s, t := p.s, p.text
	heads := float64(s.NumAttentionHeads)
	switch s.Attention {
	case MLA, DSA:
		ql, kvl := float64(s.QLoraRank), float64(s.KVLoraRank)
		rope, nope, v := float64(s.QKRopeHeadDim), float64(s.QKNopeHeadDim), float64(s.VHeadDim)
		qk := nope + rope
		var c counts
		if ql > 0 {
			c.add(linear(h*ql + ql*heads*qk))
			c.add(plain(ql))
		} else {
			c.add(linear(h * heads * qk))
		}
		c.add(linear(h * (kvl + rope)))
		c.add(plain(kvl))
		c.add(linear(kvl * heads * (nope + v)))
		c.add(linear(heads * v * h))
		if s.Attention == DSA {
			ih, id := float64(s.IndexNHeads), float64(s.IndexHeadDim)
			in := ql
			if in == 0 {
				in = h
			}
			c.add(linear(in*ih*id + h*id))
			c.add(plain(h*ih + 2*id))
		}
		return c
	}
	kv, hd, vd := float64(s.NumKVHeads), float64(s.HeadDim), float64(s.VHeadDim)
	if kind == SlidingAttention {
		if v, ok := t.int("swa_num_attention_heads"); ok {
			heads = float64(v)
		}
		if s.SWANumKVHeads > 0 {
			kv = float64(s.SWANumKVHeads)
		}
		if s.SWAHeadDim > 0 {
			hd = float64(s.SWAHeadDim)
		}
		if s.SWAVHeadDim > 0 {
			vd = float64(s.SWAVHeadDim)
		}
	}
	q := h * heads * hd
	if p.fam == famQwen3Next {
		q *= 2 // gated attention: the q projection also yields the output gate
	}
	return linear(q + h*kv*hd + h*kv*vd + heads*vd*h)
}

// linearParams is one Mamba2 / GDN / KDA mixer.
func (p *parser) linearParams(h float64) counts {
	ls := p.s.Linear
	if ls == nil {
		return counts{}
	}
	nh, hd, n, g, k := float64(ls.NumHeads), float64(ls.HeadDim), float64(ls.StateSize), float64(ls.NGroups), float64(ls.ConvKernel)
	inter := float64(ls.IntermediateSize)
	switch ls.Kind {
	case "gdn":
		keyDim, valDim := g*n, nh*hd
		c := linear(h*(2*keyDim+2*valDim) + h*2*nh + valDim*h)
		c.add(plain((2*keyDim+valDim)*k + 2*nh + hd))
		return c
	case "kda":
		proj := nh * hd
		c := linear(3*h*proj + proj*h + 2*(h*hd+hd*proj) + h*nh)
		c.add(plain(3*proj*k + 3*nh + hd))
		return c
	}
	// mamba2
	c := linear(h*(2*inter+2*g*n+nh) + inter*h)
	c.add(plain((inter+2*g*n)*k + 3*nh + inter))
	return c
}
