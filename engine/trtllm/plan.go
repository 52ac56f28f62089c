package trtllm

import (
	"errors"
	"fmt"
	"math"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// planner carries one Plan call.
type planner struct {
	in  Input
	s   *model.Spec
	r   rules
	res *Result

	frac      float64 // the fraction the profile computes with
	tpb       int64
	tp, pp    int
	tpKV      int64
	beam      int
	maxBatch  int
	maxTokens int // max_num_tokens
	maxSeqLen int
	draft     int // draft layers on the last stage
	draftLen  int // max_draft_len
	extraKV   int // get_num_extra_kv_tokens
	windows   []int
	vswa      bool
	b         budget
}

// Plan sizes TensorRT-LLM's KV cache for the launch described by in. On a
// refusal it returns the Result filled up to the refusal and an error
// wrapping ErrRefused (an *engine.Refusal whose Flag is the option key to
// change).
func Plan(spec *model.Spec, in Input) (*Result, error) {
	if spec == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidInput)
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	prof, note, _ := ResolveProfile(in.Version)
	if err := checkModel(spec, prof); err != nil {
		return nil, err
	}
	p := &planner{in: in, s: spec, r: prof.rules(), res: &Result{Profile: prof, ProfileNote: note}}
	if note != "" {
		p.note(note)
	}
	err := p.run()
	if err != nil {
		var re *engine.Refusal
		if errors.As(err, &re) {
			p.res.Error = re.Message
			return p.res, err
		}
		return nil, err
	}
	return p.res, nil
}

// checkModel rejects shapes whose cache manager kvcfg does not model under
// profile p and dimensions far outside any real model.
func checkModel(s *model.Spec, p Profile) error {
	if s == nil {
		return fmt.Errorf("%w: no model", ErrInvalidInput)
	}
	for _, d := range []int{s.NumLayers, s.NumAttentionHeads, s.NumKVHeads, s.HeadDim, s.HiddenSize / 1024, s.KVLoraRank, s.QKRopeHeadDim} {
		if d < 0 || d > maxCount {
			return fmt.Errorf("%w: model %s has out-of-range dimensions", ErrInvalidInput, s.Name)
		}
	}
	switch {
	case s.Compressed != nil:
		return fmt.Errorf("%w: %s uses DeepSeek-V4 compressed attention; TensorRT-LLM (profile %s) sizes it with KV cache manager V2, on by default for the DeepSeek family since 2026 main (use_kv_cache_manager_v2: per-layer-group pools, the sliding window as a fixed CacheCost intercept, a byte quota from max_gpu_total_bytes); kvcfg models the V1 KVCacheManager only, so it has no TensorRT-LLM figure for this model: plan it with --engine sglang or --engine vllm", ErrUnsupportedModel, s.Name, p)
	case s.SparseIndex != nil:
		return fmt.Errorf("%w: %s uses MiniMax-M3 sparse attention; TensorRT-LLM keeps its lightning-indexer K cache in a separate pool, which kvcfg does not model", ErrUnsupportedModel, s.Name)
	case s.Attention == model.DSA:
		return fmt.Errorf("%w: %s uses DeepSeek sparse attention; TensorRT-LLM sizes it with the DSA cache manager (indexer K cache, 64-token blocks), which kvcfg does not model", ErrUnsupportedModel, s.Name)
	case s.Linear != nil || s.CountLayers(model.LinearAttention) > 0:
		return fmt.Errorf("%w: %s has Mamba / linear-attention layers; TensorRT-LLM sizes it with a hybrid Mamba cache manager (per-request state as a fixed cost), which kvcfg does not model", ErrUnsupportedModel, s.Name)
	case attentionLayers(s) == 0:
		return fmt.Errorf("%w: %s has no attention layers, so TensorRT-LLM builds no KV cache", ErrUnsupportedModel, s.Name)
	case !isMLA(s) && (s.NumKVHeads == 0 && s.NumAttentionHeads == 0):
		return fmt.Errorf("%w: %s has no KV heads", ErrUnsupportedModel, s.Name)
	}
	if _, hd := mhaDims(s); !isMLA(s) && hd <= 0 {
		return fmt.Errorf("%w: %s has no head dim", ErrUnsupportedModel, s.Name)
	}
	return nil
}

// attentionLayers is ModelConfig.get_num_attention_layers: the decoder
// layers (sliding layers included; every layer is full attention to the V1
// manager unless max_attention_window says otherwise).
func attentionLayers(s *model.Spec) int {
	if len(s.LayerKinds) == 0 {
		return s.NumLayers
	}
	return s.CountLayers(model.FullAttention) + s.CountLayers(model.SlidingAttention)
}

func (p *planner) info(format string, a ...any) {
	p.res.LogLines = append(p.res.LogLines, fmt.Sprintf(format, a...))
}

func (p *planner) warn(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	p.res.LogLines = append(p.res.LogLines, line)
	p.res.Warnings = append(p.res.Warnings, line)
}

func (p *planner) note(s string) { p.res.Notes = append(p.res.Notes, s) }

// run is one launch in the order the LLM API takes it: the scheduler and
// cache settings, max_seq_len, the fraction and TP checks, the cache dtype,
// the draft settings, each pipeline stage's costs, the attention windows,
// the memory budget, then the engine-build or PyTorch flow and admission.
func (p *planner) run() error {
	p.settings()
	if err := p.resolveMaxSeqLen(); err != nil {
		return err
	}
	if err := p.checkFraction(); err != nil {
		return err
	}
	if err := checkTensorParallel(p.s, p.tp, p.in.EnableAttentionDP, p.r.engine); err != nil {
		return err
	}
	kv, warning, err := ResolveKVDType(p.in.KVCacheDType, p.s, p.res.Profile)
	if err != nil {
		return err
	}
	p.res.KVCacheDType = kv
	if warning != "" {
		p.warn("%s", warning)
	}
	p.speculative()
	if err := p.stageCosts(kv); err != nil {
		return err
	}
	p.attentionWindows()
	if err := p.memory(); err != nil {
		return err
	}
	if p.r.engine {
		err = p.engineFlow()
	} else {
		err = p.torchFlow()
	}
	if err != nil {
		return err
	}
	return p.admission()
}

// settings resolves the launch's defaults: free_gpu_memory_fraction,
// tokens_per_block, the parallel sizes, beam width, max_batch_size and
// max_num_tokens.
func (p *planner) settings() {
	in, r, res := p.in, p.r, p.res
	fracIn := in.FreeGPUMemoryFraction
	if fracIn == 0 {
		fracIn = DefaultFreeGPUMemoryFraction
	}
	p.frac = fractionValue(fracIn, r)
	res.FreeGPUMemoryFraction = fracIn
	p.tpb = int64(in.TokensPerBlock)
	if p.tpb == 0 {
		p.tpb = int64(r.defaultTPB)
	}
	res.TokensPerBlock = int(p.tpb)
	p.tp, p.pp = max(in.TPSize, 1), max(in.PPSize, 1)
	p.tpKV = tpForKV(p.tp, in.EnableAttentionDP)
	res.TPSize, res.PPSize, res.AttentionDP = p.tp, p.pp, in.EnableAttentionDP
	if in.EPSize > 1 {
		res.EPSize = in.EPSize
	}
	p.beam = max(in.MaxBeamWidth, 1)
	p.maxBatch = in.MaxBatchSize
	if p.maxBatch == 0 {
		p.maxBatch = DefaultMaxBatchSize
	}
	p.maxTokens = in.MaxNumTokens
	if p.maxTokens == 0 {
		p.maxTokens = DefaultMaxNumTokens
	}
	res.MaxBatchSize, res.MaxNumTokens, res.MaxBeamWidth = p.maxBatch, p.maxTokens, p.beam
}

// resolveMaxSeqLen is max_seq_len: the input's, else the model's context
// length (logged as inferred by the PyTorch backend), checked and capped.
func (p *planner) resolveMaxSeqLen() error {
	in, s, r := p.in, p.s, p.r
	p.maxSeqLen = in.MaxSeqLen
	if p.maxSeqLen == 0 {
		p.maxSeqLen = s.ContextLength
		if p.maxSeqLen <= 0 {
			return fmt.Errorf("%w: the context length of %s is unknown; set max_seq_len", ErrInvalidInput, s.Name)
		}
		if !r.engine {
			p.info("max_seq_len is not specified, using inferred value %d", p.maxSeqLen)
		}
	}
	if err := checkMaxSeqLen(s, in.MaxSeqLen, r.engine); err != nil {
		return err
	}
	p.maxSeqLen = min(p.maxSeqLen, maxLen)
	p.res.RequestedMaxSeqLen, p.res.MaxSeqLen = p.maxSeqLen, p.maxSeqLen
	return nil
}

// checkFraction is KvCacheConfig's refusal of a free_gpu_memory_fraction of
// 1 or more, in the wording of the PyTorch backend or the engine build.
func (p *planner) checkFraction() error {
	fracIn, r := p.res.FreeGPUMemoryFraction, p.r
	if fracIn < 1 {
		return nil
	}
	msg := fmt.Sprintf("Invalid freeMemFraction, freeMemFraction %s must be smaller than 1.0", fractionRepr(fracIn, r))
	if r.engine {
		msg = fmt.Sprintf("Invalid freeMemFraction, freeMemFraction (%s) must be smaller than 1.0f", cFloat(float64(float32(fracIn))))
	}
	return &engine.Refusal{Engine: engineName, Err: ErrRefused, Message: msg, Flag: "free_gpu_memory_fraction", Hint: "set free_gpu_memory_fraction below 1, e.g. 0.9"}
}

// stageCosts splits the attention layers over the pipeline stages (the
// PyTorch backend's split, or an engine build's num_layers // pp_size) and
// works out both costs of each: the pool's allocation per token
// (get_cache_bytes_per_token) and the estimate's (get_cache_size_per_token).
func (p *planner) stageCosts(kv CacheDType) error {
	s, r, res := p.s, p.r, p.res
	n := attentionLayers(s)
	split := StageLayers(n, p.pp)
	if r.engine {
		split = engineStageLayers(n, p.pp)
		if p.pp > 1 && n%p.pp != 0 {
			p.note(fmt.Sprintf("engine builds split %d layers as %d per stage (num_layers // pp_size)", n, n/p.pp))
		}
	}
	if split == nil {
		return &engine.Refusal{Engine: engineName, Err: ErrRefused, Message: "pp size cannot be larger than num_hidden_layers", Flag: "pp_size",
			Hint: fmt.Sprintf("use pp_size at most %d", n)}
	}
	for i, layers := range split {
		st := Stage{Index: i, Layers: layers}
		if i == p.pp-1 {
			st.DraftLayers = p.draft
		}
		var err error
		st.CellSizeBytes, err = AllocationBytesPerToken(s, kv, p.tp, p.in.EnableAttentionDP, layers+st.DraftLayers)
		if err != nil {
			return err
		}
		estLayers := layers
		if r.draftInEstimate {
			estLayers += st.DraftLayers
		}
		st.EstimateBytesPerToken = estimateBytes(s, kv, p.tpKV, estLayers, r.nvfp4Estimate)
		if r.engine {
			st.EstimateBytesPerToken = st.CellSizeBytes
		}
		res.Stages = append(res.Stages, st)
		res.CellSizeBytes = max(res.CellSizeBytes, st.CellSizeBytes)
	}
	p.costNotes()
	return nil
}

// costNotes records the first stage's estimate cost and remarks where the
// stages differ or the estimate's cost is not the pool's.
func (p *planner) costNotes() {
	res := p.res
	res.EstimateBytesPerToken = res.Stages[0].EstimateBytesPerToken
	if p.pp > 1 && res.Stages[0].CellSizeBytes != res.Stages[p.pp-1].CellSizeBytes {
		p.note("pipeline stages hold different layer counts; the log lines shown are the first stage's")
	}
	if res.EstimateBytesPerToken != res.Stages[0].CellSizeBytes && !p.r.engine {
		p.note(fmt.Sprintf("the estimate counts %d B/token but the pool allocates %d B/token per GPU (get_cache_size_per_token floors head_dim × kv_heads ÷ TP and counts draft layers differently; get_cache_bytes_per_token ceils heads per layer)",
			res.EstimateBytesPerToken, res.Stages[0].CellSizeBytes))
	}
}

// attentionWindows is max_attention_window (capped at max_seq_len by the
// PyTorch backend; max_seq_len when unset), and whether it asks for
// per-window (VSWA) pools.
func (p *planner) attentionWindows() {
	in, s := p.in, p.s
	for _, w := range in.MaxAttentionWindow {
		if !p.r.engine {
			w = min(w, p.maxSeqLen)
		}
		p.windows = append(p.windows, w)
	}
	if len(p.windows) == 0 {
		p.windows = []int{p.maxSeqLen}
	}
	p.vswa = len(distinct(p.windows)) > 1
	if !p.vswa && s.CountLayers(model.SlidingAttention) > 0 && len(in.MaxAttentionWindow) == 0 {
		p.note(fmt.Sprintf("%s has sliding-window layers, but TensorRT-LLM's default KV cache manager sizes every layer for max_seq_len unless max_attention_window gives per-layer windows (e.g. [%d, %d])",
			s.Name, max(s.SlidingWindow, 1), p.maxSeqLen))
	}
}

// memory makes the memory budget and records its figures and their source.
func (p *planner) memory() error {
	var err error
	p.b, err = makeBudget(p.in, p.s, p.r, p.frac, DryRun{TP: p.tp, PP: p.pp, EP: p.in.EPSize, MaxNumTokens: p.maxTokens, MaxSeqLen: p.maxSeqLen})
	if err != nil {
		return err
	}
	m := &p.res.Memory
	m.TotalBytes = p.b.total
	m.WeightsBytes, m.ActivationBytes, m.NonTorchBytes, m.CUDAGraphBytes = p.b.parts.WeightsBytes, p.b.parts.ActivationBytes, p.b.parts.NonTorchBytes, p.b.parts.CUDAGraphBytes
	m.Estimated, m.ActivationTerms, m.NonTorchTerms = p.b.estimated, p.b.terms, p.b.ntTerms
	switch {
	case !p.b.measured:
		m.Source = "modelled"
	case p.r.engine:
		m.Source = "free_memory_after_load"
	default:
		m.Source = "kv_cache_memory"
	}
	if n := p.b.estimatedNote(); n != "" {
		p.note(n)
	}
	return nil
}

// speculative resolves the one-model draft settings.
func (p *planner) speculative() {
	in, s := p.in, p.s
	mode := in.SpeculativeMode
	if mode == "" && in.DraftLayers > 0 {
		mode = SpecMTP
	}
	switch mode {
	case SpecMTP:
		p.draft = in.DraftLayers
		if p.draft == 0 {
			p.draft = max(s.NumNextNPredictLayers, 1)
		}
		p.draftLen = p.draft
		if p.r.draftInEstimate {
			p.extraKV = p.draftLen - 1
		}
	case SpecEagle3:
		p.draft = max(in.DraftLayers, 1)
		p.draftLen = max(in.MaxDraftLen, 1)
		p.extraKV = p.draftLen - 1
	}
	if mode == SpecMTP && in.MaxDraftLen > 0 {
		p.draftLen = in.MaxDraftLen
	}
}

// admission checks the prompt of Input.PromptLen the way the LLM API and the
// executor reject requests.
func (p *planner) admission() error {
	P := p.in.PromptLen
	if P <= 0 {
		return nil
	}
	if p.r.engine {
		if !p.in.EnableChunkedPrefill && P+1 > p.res.RequestedMaxSeqLen {
			return &engine.Refusal{Engine: engineName, Err: ErrRefused,
				Message: fmt.Sprintf("The sum of prompt length (%d.0) and query length (0) max_tokens (1) should not exceed max_seq_len (%d)", P, p.res.RequestedMaxSeqLen),
				Flag:    "max_seq_len", Hint: "rebuild the engine with a larger max_seq_len or shorten the prompt"}
		}
		return nil
	}
	if !p.in.EnableChunkedPrefill && P > p.maxTokens {
		return &engine.Refusal{Engine: engineName, Err: ErrRefused,
			Message: fmt.Sprintf("The sum of prompt length (%d.0), query length (0) should not exceed max_num_tokens (%d)", P, p.maxTokens),
			Flag:    "max_num_tokens", Hint: fmt.Sprintf("set enable_chunked_prefill: true, or max_num_tokens to at least %d", P)}
	}
	if S := p.res.MaxSeqLen; P >= S {
		d := S - P
		return &engine.Refusal{Engine: engineName, Err: ErrRefused,
			Message: fmt.Sprintf("`default_max_tokens` (%d) must be greater than 0, `default_max_tokens` (%d) = max_seq_len (%d) - `splited_prompt_len` (%d) - `query_token_len` (0)", d, d, S, P),
			Flag:    "max_seq_len", Hint: fmt.Sprintf("the pool fits sequences of %d tokens; give the KV cache more room (free_gpu_memory_fraction, kv_cache_dtype fp8, more GPUs) or shorten the prompt", S)}
	}
	return nil
}

// poolLines are the C++ allocatePools lines.
func (p *planner) poolLines(bytes, tokens int64) {
	p.info("Number of tokens per block: %d.", p.tpb)
	p.info("[MemUsageChange] Allocated %s GiB for max tokens in paged KV cache (%d).", gib2(float64(bytes)), tokens)
}

// runtimeLine is the PyTorch executor's limits line.
func (p *planner) runtimeLine(maxSeqLen int) {
	if p.r.runtimeLine {
		p.info("max_seq_len=%d, max_num_requests=%d, max_num_tokens=%d, max_batch_size=%d", maxSeqLen, p.maxBatch, p.maxTokens, p.maxBatch)
	}
}

// upperBound is get_max_atten_window_upper_bound (no sink tokens).
func (p *planner) upperBound(blocks int64, maxSeqLen int) (int64, error) {
	mbps := blocks / int64(p.beam)
	if mbps <= 0 {
		return 0, &engine.Refusal{Engine: engineName, Err: ErrRefused, Message: "Impossible to fit in any sequence in kvCache", Flag: "free_gpu_memory_fraction",
			Hint: "the pool has no room for one sequence; raise free_gpu_memory_fraction, use kv_cache_dtype fp8, or add GPUs"}
	}
	upper := mbps * p.tpb
	if int64(maxSeqLen) > upper && p.beam > 1 {
		upper -= p.tpb
	}
	if upper <= 0 {
		return 0, &engine.Refusal{Engine: engineName, Err: ErrRefused, Message: "Impossibe to fit in any sequence in kvCache", Flag: "free_gpu_memory_fraction",
			Hint: "the pool has no room for one beam-search sequence; give it more memory or lower max_beam_width"}
	}
	return upper, nil
}

// clamp is _validate_and_adjust_attention_windows: every window larger than
// the upper bound of its pool is lowered to it, and max_seq_len becomes the
// largest adjusted window. blocks maps a window to its primary blocks.
func (p *planner) clamp(vec []int, blocks map[int]int64, order []int, maxSeqLen int) ([]int, int, error) {
	adj := map[int]int{}
	for _, w := range order {
		upper, err := p.upperBound(blocks[w], maxSeqLen)
		if err != nil {
			return vec, maxSeqLen, err
		}
		if int64(w) > upper {
			p.warn("Attention window size %d exceeds upper bound %d for available blocks. Reducing to %d.", w, upper, upper)
			adj[w] = int(upper)
		}
	}
	if len(adj) == 0 {
		return vec, maxSeqLen, nil
	}
	out := make([]int, len(vec))
	top := 0
	for i, w := range vec {
		out[i] = w
		if a, ok := adj[w]; ok {
			out[i] = a
		}
		top = max(top, out[i])
	}
	p.warn("Adjusted max_attention_window_vec to %s", pyList(out))
	for _, w := range order {
		if a, ok := adj[w]; ok {
			p.warn("Adjusted window size %d to %d in blocks_per_window", w, a)
		}
	}
	p.warn("Adjusted max_seq_len to %d", top)
	return out, top, nil
}

// blocksFor rounds a token count to blocks as the profile does.
func (p *planner) blocksFor(tokens float64) int64 {
	if p.r.ceilBlocks {
		return ceilInt(tokens / float64(p.tpb))
	}
	return floorInt(math.Floor(tokens) / float64(p.tpb))
}
