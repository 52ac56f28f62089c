package model

import (
	"fmt"
	"strings"
)

// maxLayers bounds num_hidden_layers before per-layer slices are built.
const maxLayers = 100000

// readLayers fills LayerKinds, the sliding window, the hybrid-pool flag and
// the linear-attention description (docs/sglang.md#model-sliding-window, docs/sglang.md#model-linear-attention, docs/sglang.md#mamba-state).
func (p *parser) readLayers() {
	s, t := p.s, p.text
	n := s.NumLayers
	if n <= 0 || n > maxLayers {
		return // Validate reports it
	}
	kinds := make([]LayerKind, n)
	for i := range kinds {
		kinds[i] = FullAttention
	}
	s.LayerKinds = kinds

	// The configured window: sliding_window_size, sliding_window, window_size.
	if w, _, ok := t.firstInt("sliding_window_size", "sliding_window", "window_size"); ok {
		p.window = w
	}

	switch p.fam {
	case famMamba2:
		for i := range kinds {
			kinds[i] = LinearAttention
		}
		p.readMamba2(t, "mamba2")
	case famNemotronH:
		p.nemotronLayers(kinds)
	case famQwen3Next:
		p.qwen3NextLayers(kinds)
	case famKimiLinear:
		p.kimiLinearLayers(kinds)
	case famLlama4:
		p.llama4Layers(kinds)
	case famDeepseekV4:
		p.compressedLayers()
		return
	case famMiniMaxM3:
		p.sparseIndexLayers()
	case famMiMo:
		if !p.mimoLayers(kinds) {
			return
		}
	default:
		if t.has("layer_types") {
			p.layerTypes(kinds)
			break
		}
		p.patternLayers(kinds)
	}
	nSliding := s.CountLayers(SlidingAttention)
	if nSliding > 0 {
		if p.window <= 0 {
			p.r.fail(t.field("sliding_window"), fmt.Errorf("%w: the config has sliding-attention layers but no positive window", ErrMissing))
			return
		}
		s.SlidingWindow = p.window
		s.EngineSlidingWindow = p.window
		switch p.fam {
		case famGptOss, famGemma2, famGemma3:
			s.EngineSlidingWindow = p.window - 1
		}
	}
	s.HybridSWAPool = hybridSWAArchs[s.Architecture] && nSliding > 0
}

// llama4Layers maps Llama 4's chunked attention: with a positive
// attention_chunk_size, every fourth layer is full and the others slide over
// a window of one chunk.
func (p *parser) llama4Layers(kinds []LayerKind) {
	if w, ok := p.text.int("attention_chunk_size"); ok && w > 0 {
		p.window = w
		for i := range kinds {
			if (i+1)%4 != 0 {
				kinds[i] = SlidingAttention
			}
		}
	}
}

// mimoLayers maps MiMo's hybrid_layer_pattern (0 full, 1 sliding). It
// reports false when the pattern is wrong, after recording the failure;
// readLayers then stops.
func (p *parser) mimoLayers(kinds []LayerKind) bool {
	t := p.text
	pat, ok := t.ints("hybrid_layer_pattern")
	if !ok {
		return true
	}
	if len(pat) != len(kinds) {
		p.r.fail(t.field("hybrid_layer_pattern"), fmt.Errorf("%w: %d entries for %d layers", ErrRange, len(pat), len(kinds)))
		return false
	}
	for i, v := range pat {
		switch v {
		case 0:
		case 1:
			kinds[i] = SlidingAttention
		default:
			p.r.fail(fmt.Sprintf("%s[%d]", t.field("hybrid_layer_pattern"), i), fmt.Errorf("%w: %d (want 0 full or 1 sliding)", ErrRange, v))
			return false
		}
	}
	return true
}

// layerTypes maps a transformers layer_types list.
func (p *parser) layerTypes(kinds []LayerKind) {
	t := p.text
	types, ok := t.strs("layer_types")
	if !ok {
		return
	}
	if len(types) > len(kinds) && p.fam == famStep3p5 {
		types = types[:len(kinds)] // Step3p5 lists its MTP layers too
	}
	if len(types) != len(kinds) {
		p.r.fail(t.field("layer_types"), fmt.Errorf("%w: %d entries for %d layers", ErrRange, len(types), len(kinds)))
		return
	}
	for i, typ := range types {
		switch typ {
		case "full_attention", "attention":
			kinds[i] = FullAttention
		case "sliding_attention", "chunked_attention":
			kinds[i] = SlidingAttention
		default:
			p.r.fail(fmt.Sprintf("%s[%d]", t.field("layer_types"), i), fmt.Errorf("%w: unknown layer type %q", ErrRange, typ))
			return
		}
	}
}

// patternLayers applies the family rules of models without layer_types.
func (p *parser) patternLayers(kinds []LayerKind) {
	s, t := p.s, p.text
	if p.window <= 0 {
		return
	}
	switch p.fam {
	case famGemma2:
		// Even layers slide (transformers: is_sliding = not layer_idx % 2).
		for i := range kinds {
			if i%2 == 0 {
				kinds[i] = SlidingAttention
			}
		}
		return
	case famGemma3, famCohere2:
		pat, ok := t.int("sliding_window_pattern")
		if !ok {
			if p.fam == famGemma3 {
				pat = 6
			} else {
				pat = 4
			}
		}
		if pat <= 0 {
			p.r.fail(t.field("sliding_window_pattern"), fmt.Errorf("%w: %d (want > 0)", ErrRange, pat))
			return
		}
		for i := range kinds {
			if (i+1)%pat != 0 {
				kinds[i] = SlidingAttention
			}
		}
		return
	case famQwen2:
		use, _ := t.bool("use_sliding_window")
		if !use {
			return
		}
		from, ok := t.int("max_window_layers")
		if !ok {
			from = 0
		}
		for i := range kinds {
			if i >= from {
				kinds[i] = SlidingAttention
			}
		}
		return
	}
	if use, ok := t.bool("use_sliding_window"); ok && !use {
		return
	}
	if s.ContextLength > 0 && p.window >= s.ContextLength {
		// A window as long as the context (Phi-4-mini) never slides; vLLM
		// still applies it to every layer (UniformSlidingWindow).
		s.UniformSlidingWindow = p.window
		return
	}
	for i := range kinds {
		kinds[i] = SlidingAttention
	}
}

// nemotronLayers reads hybrid_override_pattern: M mamba, * attention,
// - MLP, E MoE.
func (p *parser) nemotronLayers(kinds []LayerKind) {
	t := p.text
	pat, ok := t.str("hybrid_override_pattern")
	if !ok {
		if !t.has("hybrid_override_pattern") {
			p.need(t.field("hybrid_override_pattern"))
		}
		return
	}
	if len(pat) != len(kinds) {
		p.r.fail(t.field("hybrid_override_pattern"), fmt.Errorf("%w: %d characters for %d layers", ErrRange, len(pat), len(kinds)))
		return
	}
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case 'M':
			kinds[i] = LinearAttention
		case '*':
			kinds[i] = FullAttention
		case '-', 'E':
			kinds[i] = NoCache
		default:
			p.r.fail(t.field("hybrid_override_pattern"), fmt.Errorf("%w: character %q at %d (want M, *, - or E)", ErrRange, pat[i], i))
			return
		}
	}
	if strings.ContainsRune(pat, 'M') {
		p.readMamba2(t, "mamba2")
	}
}

// qwen3NextLayers: layer l is gated delta net iff (l+1) % full_attention_interval != 0.
func (p *parser) qwen3NextLayers(kinds []LayerKind) {
	t := p.text
	iv, ok := t.int("full_attention_interval")
	if !ok {
		if !t.has("full_attention_interval") {
			p.need(t.field("full_attention_interval"))
		}
		return
	}
	if iv <= 0 {
		p.r.fail(t.field("full_attention_interval"), fmt.Errorf("%w: %d (want > 0)", ErrRange, iv))
		return
	}
	for i := range kinds {
		if (i+1)%iv != 0 {
			kinds[i] = LinearAttention
		}
	}
	p.readGDN(t)
}

// kimiLinearLayers reads linear_attn_config (layer lists are 1-based).
func (p *parser) kimiLinearLayers(kinds []LayerKind) {
	t := p.text
	lc, ok := t.obj("linear_attn_config")
	if !ok {
		if !t.has("linear_attn_config") {
			p.need(t.field("linear_attn_config"))
		}
		return
	}
	kda, ok := lc.ints("kda_layers")
	if !ok {
		if !lc.has("kda_layers") {
			p.need(lc.field("kda_layers"))
		}
		return
	}
	for _, id := range kda {
		if id < 1 || id > len(kinds) {
			p.r.fail(lc.field("kda_layers"), fmt.Errorf("%w: layer %d outside 1..%d (the list is 1-based)", ErrRange, id, len(kinds)))
			return
		}
		kinds[id-1] = LinearAttention
	}
	if full, ok := lc.ints("full_attn_layers"); ok {
		for _, id := range full {
			if id < 1 || id > len(kinds) {
				p.r.fail(lc.field("full_attn_layers"), fmt.Errorf("%w: layer %d outside 1..%d (the list is 1-based)", ErrRange, id, len(kinds)))
				return
			}
			if kinds[id-1] == LinearAttention {
				p.r.fail(lc.field("full_attn_layers"), fmt.Errorf("%w: layer %d is also in kda_layers", ErrRange, id))
				return
			}
		}
	}
	ls := &LinearSpec{Kind: "kda", LayerIDs: p.s.LayerIDs(LinearAttention)}
	ls.NumHeads = p.needInt(lc, "num_heads")
	ls.HeadDim = p.needInt(lc, "head_dim")
	ls.StateSize = ls.HeadDim
	ls.NGroups = ls.NumHeads
	ls.ConvKernel = p.needInt(lc, "short_conv_kernel_size")
	ls.IntermediateSize = ls.NumHeads * ls.HeadDim
	ls.ConfigSSMDType = p.ssmDType()
	p.s.Linear = ls
}

// readMamba2 reads Mamba2 mixer dims (NemotronH names first, then Mamba2's).
func (p *parser) readMamba2(t object, kind string) {
	ls := &LinearSpec{Kind: kind, LayerIDs: p.s.LayerIDs(LinearAttention)}
	if p.fam == famNemotronH {
		ls.NumHeads = p.needInt(t, "mamba_num_heads")
		ls.HeadDim = p.needInt(t, "mamba_head_dim")
		ls.StateSize = p.needInt(t, "ssm_state_size")
		ls.ConvKernel = p.needInt(t, "conv_kernel")
	} else {
		ls.NumHeads = p.needInt(t, "num_heads")
		ls.HeadDim = p.needInt(t, "head_dim")
		ls.StateSize = p.needInt(t, "state_size")
		ls.ConvKernel = p.needInt(t, "conv_kernel")
	}
	ls.NGroups = 1
	if g, ok := t.int("n_groups"); ok {
		ls.NGroups = g
	}
	ls.IntermediateSize = ls.NumHeads * ls.HeadDim
	ls.ConfigSSMDType = p.ssmDType()
	p.s.Linear = ls
}

// readGDN reads Qwen3-Next gated delta net dims (docs/sglang.md#mamba-state).
func (p *parser) readGDN(t object) {
	ls := &LinearSpec{Kind: "gdn", LayerIDs: p.s.LayerIDs(LinearAttention)}
	ls.NumHeads = p.needInt(t, "linear_num_value_heads")
	ls.HeadDim = p.needInt(t, "linear_value_head_dim")
	ls.StateSize = p.needInt(t, "linear_key_head_dim")
	ls.NGroups = p.needInt(t, "linear_num_key_heads")
	ls.ConvKernel = p.needInt(t, "linear_conv_kernel_dim")
	ls.IntermediateSize = ls.NumHeads * ls.HeadDim
	ls.ConfigSSMDType = p.ssmDType()
	p.s.Linear = ls
}

// needInt reads a required integer, recording it as missing when absent.
func (p *parser) needInt(o object, key string) int {
	v, ok := o.int(key)
	if !ok && !o.has(key) {
		p.need(o.field(key))
	}
	return v
}

// ssmDType is mamba_ssm_dtype of the text config or the top level.
func (p *parser) ssmDType() string {
	if v, ok := p.text.str("mamba_ssm_dtype"); ok {
		return v
	}
	v, _ := p.root.str("mamba_ssm_dtype")
	return v
}
