package model

import "fmt"

// compressedLayers reads DeepSeek-V4's compress_ratios (docs/sglang.md#dsv4):
// one entry per layer (entries past num_hidden_layers belong to the MTP
// layer and are dropped, as SGLang slices them by layer range). Every layer
// keeps KV, so LayerKinds stay full attention.
func (p *parser) compressedLayers() {
	s, t := p.s, p.text
	n := s.NumLayers
	ratios, ok := t.ints("compress_ratios")
	if !ok {
		p.need(t.field("compress_ratios"))
		return
	}
	if len(ratios) < n {
		p.r.fail(t.field("compress_ratios"), fmt.Errorf("%w: %d entries for %d layers", ErrRange, len(ratios), n))
		return
	}
	ratios = append([]int(nil), ratios[:n]...)
	for i, r := range ratios {
		if r != 0 && r != 4 && r != 128 {
			p.r.fail(fmt.Sprintf("%s[%d]", t.field("compress_ratios"), i), fmt.Errorf("%w: compress ratio %d (want 0, 4 or 128)", ErrRange, r))
			return
		}
	}
	if p.window <= 0 {
		p.r.fail(t.field("sliding_window"), fmt.Errorf("%w: DeepSeek-V4 needs a positive sliding_window (the compress-state page)", ErrMissing))
		return
	}
	if s.QKRopeHeadDim, ok = t.int("qk_rope_head_dim"); !ok {
		p.need(t.field("qk_rope_head_dim"))
		return
	}
	s.QKNopeHeadDim = s.HeadDim - s.QKRopeHeadDim
	if v, ok := t.int("qk_nope_head_dim"); ok {
		s.QKNopeHeadDim = v
	}
	if s.QKNopeHeadDim <= 0 {
		p.r.fail(t.field("qk_rope_head_dim"), fmt.Errorf("%w: qk_rope_head_dim %d leaves no NoPE part of head_dim %d", ErrRange, s.QKRopeHeadDim, s.HeadDim))
		return
	}
	s.QLoraRank, _ = t.int("q_lora_rank")
	s.IndexTopK, _ = t.int("index_topk")
	s.IndexNHeads, _ = t.int("index_n_heads")
	if v, ok := t.int("index_head_dim"); ok {
		s.IndexHeadDim = v
	} else {
		p.need(t.field("index_head_dim"))
		return
	}
	s.Compressed = &CompressedSpec{Ratios: ratios, Window: p.window}
	s.SlidingWindow, s.EngineSlidingWindow = p.window, p.window
}

// sparseIndexLayers reads MiniMax-M3's sparse_attention_config
// (docs/sglang.md#minimax-sparse): sparse_attention_freq marks sparse
// layers (1) among dense ones (0), sparse_disable_index_value the sparse
// layers whose indexer keeps K only. All layers stay full attention.
func (p *parser) sparseIndexLayers() {
	s, t := p.s, p.text
	sc, ok := t.obj("sparse_attention_config")
	if !ok {
		return
	}
	if use, ok := sc.bool("use_sparse_attention"); ok && !use {
		return
	}
	dim, ok := sc.int("sparse_index_dim")
	if !ok || dim <= 0 {
		p.need(sc.field("sparse_index_dim"))
		return
	}
	freq, ok := sc.ints("sparse_attention_freq")
	if !ok {
		p.need(sc.field("sparse_attention_freq"))
		return
	}
	n := s.NumLayers
	if len(freq) != n {
		p.r.fail(sc.field("sparse_attention_freq"), fmt.Errorf("%w: %d entries for %d layers", ErrRange, len(freq), n))
		return
	}
	noValue, _ := sc.ints("sparse_disable_index_value")
	if len(noValue) != 0 && len(noValue) != n {
		p.r.fail(sc.field("sparse_disable_index_value"), fmt.Errorf("%w: %d entries for %d layers", ErrRange, len(noValue), n))
		return
	}
	si := &SparseIndexSpec{IndexDim: dim}
	for i, f := range freq {
		if f == 0 {
			si.DenseLayerIDs = append(si.DenseLayerIDs, i)
			continue
		}
		si.SparseLayerIDs = append(si.SparseLayerIDs, i)
		if len(noValue) > 0 && noValue[i] != 0 {
			si.KOnlyLayerIDs = append(si.KOnlyLayerIDs, i)
		}
	}
	s.SparseIndex = si
}
