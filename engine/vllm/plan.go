package vllm

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// Result is what a vLLM launch would size and log. On a startup refusal
// Plan returns the Result filled up to the refusal together with the error.
type Result struct {
	// Profile is the version profile used; ProfileNote says why when the
	// requested version was not a profile name.
	Profile     Profile `json:"vllm_version"`
	ProfileNote string  `json:"profile_note,omitempty"`
	// Engine is "V1", or "V0" for the V0 engine (0.6, 0.7, and 0.8 to 0.10
	// when V1 falls back).
	Engine string `json:"engine"`
	// AttentionBackend is the attention backend the V1 engine selects on
	// CUDA ("FLASH_ATTN", "FLASHMLA", ...); empty for V0 and other platforms.
	AttentionBackend string `json:"attention_backend,omitempty"`
	// KVCacheDType is the resolved cache dtype.
	KVCacheDType CacheDType `json:"kv_cache_dtype"`
	// BlockSize is the attention block size in tokens (after Mamba
	// inflation): the smallest group's, which vLLM sets as
	// cache_config.block_size after initialisation.
	BlockSize int `json:"block_size"`
	// SchedulerBlockSize and HashBlockSize are set (latest) when the KV
	// cache groups have different block sizes: the scheduler and prefix-
	// cache hits align on their LCM, block hashes are computed on their GCD
	// (resolve_kv_cache_block_sizes).
	SchedulerBlockSize int `json:"scheduler_block_size,omitempty"`
	HashBlockSize      int `json:"hash_block_size,omitempty"`
	// MaxModelLen is the effective max_model_len (after auto-fit).
	MaxModelLen int `json:"max_model_len"`
	// MaxNumSeqs and MaxNumBatchedTokens are the effective scheduler limits.
	MaxNumSeqs          int `json:"max_num_seqs"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// TensorParallelSize and PipelineParallelSize are the effective sizes.
	TensorParallelSize   int `json:"tensor_parallel_size"`
	PipelineParallelSize int `json:"pipeline_parallel_size"`
	// GPUMemoryUtilization is the effective utilization (0 when a KV budget
	// was given directly).
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	// BytesPerToken is the KV bytes of one token over all layers on one TP
	// rank (every pipeline stage summed), state layers excluded.
	BytesPerToken int64 `json:"bytes_per_token"`
	// Memory is the budget per GPU.
	Memory MemoryReport `json:"memory"`
	// Groups are the KV cache groups (V1 profiles).
	Groups []Group `json:"groups,omitempty"`
	// GroupSize is the number of shared KV tensors (layers per group).
	GroupSize int `json:"group_size,omitempty"`
	// PageBytes is the page of one layer and block (V1), or the V0 cache
	// block of all layers.
	PageBytes int64 `json:"page_bytes"`
	// NumGPUBlocks is "# GPU blocks" / num_gpu_blocks.
	NumGPUBlocks int64 `json:"num_gpu_blocks"`
	// NumCPUBlocks is V0's "# CPU blocks" (swap space).
	NumCPUBlocks int64 `json:"num_cpu_blocks,omitempty"`
	// KVCacheSizeTokens is the number the version logs as "GPU KV cache
	// size" (V0: blocks × block size).
	KVCacheSizeTokens int64 `json:"kv_cache_size_tokens"`
	// MaxConcurrency is the logged "Maximum concurrency" for max_model_len.
	MaxConcurrency float64 `json:"max_concurrency"`
	// BlocksPerRequest is the blocks one request of max_model_len tokens
	// needs across groups.
	BlocksPerRequest int64 `json:"blocks_per_request"`
	// TokenCapacity is kvcfg's group-aware token capacity:
	// num_blocks / blocks_per_request × max_model_len.
	TokenCapacity int64 `json:"token_capacity"`
	// NeededBytes is the KV memory one request of max_model_len needs
	// (the admission check's figure).
	NeededBytes int64 `json:"needed_bytes,omitempty"`
	// EstimatedMaxModelLen is the binary-searched maximum model length of
	// the refusal message (0 when not refused or V0).
	EstimatedMaxModelLen int `json:"estimated_max_model_len,omitempty"`
	// LogLines are the lines vLLM prints, in order, up to a refusal.
	LogLines []string `json:"log_lines"`
	// Notes are kvcfg's remarks (estimates, misleading log figures).
	Notes []string `json:"notes,omitempty"`
	// Error is vLLM's refusal message, if it would refuse to start.
	Error string `json:"error,omitempty"`
}

// MemoryReport is the budget of one GPU.
type MemoryReport struct {
	// TotalBytes is the device's memory.
	TotalBytes int64 `json:"total_bytes,omitempty"`
	// RequestedBytes is total × gpu_memory_utilization (rounded up by the
	// latest profile).
	RequestedBytes int64 `json:"requested_bytes,omitempty"`
	// WeightsBytes, ActivationBytes, NonTorchBytes and CUDAGraphBytes are
	// the non-KV figures subtracted from RequestedBytes.
	WeightsBytes    int64 `json:"weights_bytes,omitempty"`
	ActivationBytes int64 `json:"activation_bytes,omitempty"`
	NonTorchBytes   int64 `json:"non_torch_bytes,omitempty"`
	CUDAGraphBytes  int64 `json:"cudagraph_bytes,omitempty"`
	// AvailableKVBytes is the KV budget ("Available KV cache memory").
	AvailableKVBytes int64 `json:"available_kv_bytes"`
	// Source is "profile" (computed from the figures), "kv_cache_memory_bytes"
	// or "measured".
	Source string `json:"source"`
	// Estimated lists the figures kvcfg estimated.
	Estimated []string `json:"estimated,omitempty"`
	// ActivationTerms are the parts of an estimated activation peak
	// (EstimateStage), each with the vLLM source that allocates it.
	ActivationTerms []Term `json:"activation_terms,omitempty"`
}

// conservingMemoryURL ends vLLM's memory messages.
const conservingMemoryURL = "https://docs.vllm.ai/en/latest/configuration/conserving_memory/"

// Plan sizes vLLM's KV cache for model s launched with c. A startup refusal
// returns the Result filled up to the refusal and an *engine.Refusal naming
// the flag and value that get the launch started.
func Plan(s *model.Spec, c Input) (*Result, error) {
	res, err := plan(s, c)
	if res != nil && errors.Is(err, ErrRefused) {
		err = withFix(res, err)
	}
	return res, err
}

// plan is Plan without the fix: LLMEngine start-up in order — the release's
// rules, max_model_len, the V1 oracle, the TP check, the scheduler limits,
// the cache dtype and attention backend, the layers' specs, the memory
// profile, then the V0 or V1 cache sizing.
func plan(s *model.Spec, c Input) (*Result, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidConfig)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	prof, rel, note, _ := resolve(c.Version)
	r := rulesFor(prof, rel)
	res := newResult(prof, note, r)
	if err := checkArchitecture(s, prof, rel); err != nil {
		return nil, err
	}
	tp, pp := max(c.TensorParallelSize, 1), max(c.PipelineParallelSize, 1)
	res.TensorParallelSize, res.PipelineParallelSize = tp, pp
	sm := c.GPUSM
	if sm == 0 {
		sm = 90 // an unknown CUDA device is taken for a Hopper
	}

	L, autoFit, err := maxModelLen(s, c, r, prof)
	if err != nil {
		return nil, err
	}
	res.MaxModelLen = L
	if s.ContextLength > 0 && L > s.ContextLength {
		return res, longerThanModel(res, L, s.ContextLength)
	}
	r = v1OrV0(res, s, c, r, sm)
	if err := checkTensorParallel(s, tp, engineMLA(s, r)); err != nil {
		var te *TPError
		if errors.As(err, &te) {
			res.Error = te.Message
		}
		return res, err
	}

	res.MaxNumSeqs, res.MaxNumBatchedTokens = schedulerDefaults(r, c, L)
	if s.Compressed != nil {
		return planDSV4(res, s, c, r, autoFit)
	}
	cache, err := resolveCacheDType(c.KVCacheDType, s, prof, r)
	if err != nil {
		return nil, err
	}
	res.KVCacheDType = cache
	block, err := attentionBlock(res, s, c, r, cache, sm, tp)
	if err != nil {
		if msg, ok := refusalMessage(err); ok {
			res.Error = msg
			return res, err
		}
		return nil, err
	}
	layers, err := planLayers(res, s, c, r, block, sm)
	if err != nil {
		return nil, err
	}

	// A KV connector may turn the hybrid KV cache manager off.
	hmaOff := !r.v0 && hybridManagerOff(res, r, c)
	if err := budget(res, s, c, r, tp, pp); err != nil {
		return res, err
	}
	avail := res.Memory.AvailableKVBytes
	if r.v0 {
		return res, planV0(res, layers, c, pp, avail, r.v0Label)
	}
	return planV1(res, layers, c, r, pp, avail, autoFit, hmaOff)
}

// newResult is the Result plan starts from: the profile (and why), and the
// engine the profile runs.
func newResult(prof Profile, note string, r rules) *Result {
	res := &Result{Profile: prof, ProfileNote: note, Engine: "V1"}
	if r.v0 {
		res.Engine = "V0"
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	return res
}

// checkArchitecture refuses a model the release does not register:
// DeepseekV3ForCausalLM before 0.6.6, and the newer cache kinds
// (checkNewPoolKinds).
func checkArchitecture(s *model.Spec, prof Profile, rel release) error {
	if s.Architecture == "DeepseekV3ForCausalLM" && !rel.atLeast(0, 6, 6) {
		return fmt.Errorf("%w: vLLM %s does not register DeepseekV3ForCausalLM (\"Model architectures ['DeepseekV3ForCausalLM'] are not supported for now.\"); it runs from 0.6.6", ErrUnsupportedModel, rel)
	}
	return checkNewPoolKinds(s, prof, rel)
}

// maxModelLen is ModelConfig's max_model_len: the flag, the model's context
// length when unset, and -1 for auto-fit where the release has it.
func maxModelLen(s *model.Spec, c Input, r rules, prof Profile) (L int, autoFit bool, err error) {
	L = c.MaxModelLen
	switch {
	case L == -1:
		if !r.autoFit {
			return 0, false, fmt.Errorf("%w: max_model_len -1 (auto-fit) is not supported by vLLM %s", ErrInvalidConfig, prof)
		}
		autoFit = true
		L = s.ContextLength
	case L == 0:
		L = s.ContextLength
	}
	if L <= 0 {
		return 0, false, fmt.Errorf("%w: the model's context length is unknown; set max_model_len", ErrInvalidConfig)
	}
	return L, autoFit, nil
}

// longerThanModel is _get_and_verify_max_len's refusal of a max_model_len L
// beyond the model's context length n.
func longerThanModel(res *Result, L, n int) error {
	ns := strconv.Itoa(n)
	return fix(refuse(res, fmt.Sprintf("User-specified max_model_len (%d) is greater than the derived max_model_len (%d). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.", L, n)),
		"--max-model-len", ns, "set --max-model-len "+ns+" or lower (the model's context length)")
}

// v1OrV0 is the 0.8 to 0.10 oracle: where the V1 engine lacks a feature of
// the launch, the release falls back to V0, and the rules become V0's.
func v1OrV0(res *Result, s *model.Spec, c Input, r rules, sm int) rules {
	if !r.v1Oracle {
		return r
	}
	feature, line := v1Fallback(s, c, r, sm)
	if feature == "" {
		return r
	}
	res.Engine = "V0"
	if line != "" {
		res.LogLines = append(res.LogLines, line)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("vLLM %s runs this launch on the V0 engine (%s)", r.rel, feature))
	return r.v0Fallback()
}

// attentionBlock is the attention block size after the backend is chosen:
// the flag (16 by default), or the V1 backend's own page on CUDA, or
// FlashMLA's 64 tokens on V0 (0.8 on, Hopper).
func attentionBlock(res *Result, s *model.Spec, c Input, r rules, cache CacheDType, sm, tp int) (int, error) {
	block := c.BlockSize
	if block == 0 {
		block = 16
	}
	cuda := c.Platform == "" || c.Platform == "cuda"
	switch {
	case cuda && !r.v0:
		a, err := attentionSetup(s, c, r, cache, sm, tp)
		if err != nil {
			return 0, err
		}
		res.AttentionBackend = a.backend.name
		if a.block > 0 {
			block = a.block
		}
		if a.line != "" {
			res.LogLines = append(res.LogLines, a.line)
		}
		if a.note != "" {
			res.Notes = append(res.Notes, a.note)
		}
	case cuda && r.v0 && c.BlockSize != 64 && engineMLA(s, r) && r.rel.atLeast(0, 8, 0) && sm/10 == 9:
		// The platform forces FlashMLA's page on V0 too.
		block = 64
		res.Notes = append(res.Notes, "the FlashMLA attention backend uses 64-token KV blocks")
	}
	return block, nil
}

// planLayers builds the layers' specs, sums their bytes per token and, for
// Mamba hybrids, grows the attention block until one attention page holds a
// Mamba state (then pads the Mamba page to match); it sets res.BlockSize.
func planLayers(res *Result, s *model.Spec, c Input, r rules, block, sm int) ([]LayerSpec, error) {
	var notes []string
	layers, err := buildLayers(s, layerInputs{rules: r, cache: res.KVCacheDType, blockSize: block,
		tp: res.TensorParallelSize, pp: res.PipelineParallelSize, notes: &notes, draftLayers: c.DraftLayers})
	if err != nil {
		return nil, err
	}
	res.Notes = append(res.Notes, notes...)
	for _, l := range layers {
		if l.Kind != Mamba {
			res.BytesPerToken += l.TokenBytes
		}
	}
	if !r.v0 {
		align := hybridAlignment(s, c, r, res.AttentionBackend, block, sm, res.KVCacheDType)
		block = inflateForMamba(layers, block, align, &res.LogLines)
	}
	res.BlockSize = block
	return layers, nil
}

// refuse records vLLM's refusal message on the result and returns the
// refusal (Plan names its fix unless the caller does, with fix).
func refuse(res *Result, msg string) *engine.Refusal {
	res.Error = msg
	return refusal(msg)
}

// v1Fallback returns the feature for which release r's V1 engine falls back
// to V0 (EngineArgs._is_v1_supported_oracle, 0.8.0 to 0.10.x) and the line
// vLLM logs for it; "" when V1 serves the launch.
func v1Fallback(s *model.Spec, c Input, r rules, sm int) (feature, line string) {
	fallback := func(f string) (string, string) {
		return f, f + " is not supported by the V1 Engine. Falling back to V0. "
	}
	rel := r.rel
	if c.UseV0 {
		return "VLLM_USE_V1=0", ""
	}
	if sm < 80 && !rel.atLeast(0, 10, 2) {
		return fallback("Compute Capability < 8.0")
	}
	if dt := strings.ToLower(strings.TrimSpace(c.KVCacheDType)); dt != "" && dt != "auto" && !v1AcceptsKVDType(s, c, r, dt, sm) {
		return fallback("--kv-cache-dtype")
	}
	if c.DraftLayers > 0 && !rel.atLeast(0, 8, 5) {
		return fallback("Speculative Decoding")
	}
	if slices.Contains(s.LayerKinds, model.LinearAttention) && !rel.atLeast(0, 10, 2) {
		if !rel.atLeast(0, 9, 2) {
			return fallback(fmt.Sprintf("['%s']", s.Architecture))
		}
		return "Mamba", "Mamba is experimental on VLLM_USE_V1=1. Falling back to V0 Engine."
	}
	return "", ""
}

// v1AcceptsKVDType is the oracle's --kv-cache-dtype check: fp8 with
// FlashAttention 3 (Hopper) from 0.8.5, anything on SM 10.0 from 0.10.0,
// and from 0.10.2 any dtype for MLA (FlashMLA / CUTLASS MLA by default).
func v1AcceptsKVDType(s *model.Spec, c Input, r rules, dt string, sm int) bool {
	rel := r.rel
	fp8 := strings.HasPrefix(dt, "fp8")
	defaultFA := c.AttentionBackend == "" || c.AttentionBackend == BackendFlashAttn
	switch {
	case !rel.atLeast(0, 8, 5):
		return false
	case !rel.atLeast(0, 10, 0):
		return fp8 && defaultFA && sm/10 == 9
	case !rel.atLeast(0, 10, 2):
		return sm == 100 || fp8 && defaultFA && sm/10 == 9
	}
	if engineMLA(s, r) {
		switch c.AttentionBackend {
		case "", BackendFlashMLA, BackendCutlassMLA, BackendFlashInferMLA:
			return true
		}
		return !fp8
	}
	switch {
	case sm == 100:
		return true
	case defaultFA:
		return !fp8 || sm/10 == 9
	case c.AttentionBackend == BackendFlashInfer:
		return true
	case c.AttentionBackend == BackendTritonAttn:
		return sm >= 89
	}
	return false
}

// schedulerDefaults returns max_num_seqs and max_num_batched_tokens for
// `vllm serve` (EngineArgs.get_batch_defaults and its predecessors).
func schedulerDefaults(r rules, c Input, L int) (seqs, batched int) {
	seqs, batched = c.MaxNumSeqs, c.MaxNumBatchedTokens
	name := strings.ToLower(c.GPUName)
	mem := c.Memory.TotalBytes
	var dSeqs, dBatched int
	switch {
	case r.v0:
		dSeqs = 256
		dBatched = max(L, 2048)
		if L > 32768 {
			// V0 turns chunked prefill on for long contexts, with 512-token chunks.
			dBatched = 512
		}
	case r.batchDefaults == "name":
		dSeqs, dBatched = 1024, 2048
		if strings.Contains(name, "h100") || strings.Contains(name, "h200") {
			dBatched = 8192
		}
	case r.batchDefaults == "mem160" && mem >= 160*GiB:
		// "For GPUs like B200/B300 with >= 160GB memory, use the largest defaults".
		dSeqs, dBatched = 1024, 16384
	case mem >= 70*GiB && (r.batchDefaults == "mem70" || !strings.Contains(name, "a100")):
		dSeqs, dBatched = 1024, 8192
	default:
		dSeqs, dBatched = 256, 2048
	}
	if seqs == 0 {
		seqs = dSeqs
	}
	if batched == 0 {
		batched = dBatched
	}
	return seqs, batched
}

// selectorQuery builds the backend selector's view of the launch.
func selectorQuery(s *model.Spec, c Input, cache CacheDType, sm int) backendQuery {
	q := backendQuery{
		modelDType: modelCacheName(s),
		kvDType:    cache.Requested,
		blockSize:  c.BlockSize,
		mla:        s.Attention == model.MLA || s.Attention == model.DSA,
		sparse:     s.Attention == model.DSA,
		sink:       strings.HasPrefix(strings.ToLower(s.ModelType), "gpt_oss"),
		major:      sm / 10, minor: sm % 10,
		qkNope: s.QKNopeHeadDim, qkRope: s.QKRopeHeadDim, vHead: s.VHeadDim,
		indexTopK: s.IndexTopK > 0,
	}
	switch {
	case q.kvDType == "" || q.kvDType == "auto" && cache.Name == "fp8_ds_mla":
		q.kvDType = "auto"
	case q.kvDType == "auto" && cache.Name == "nvfp4":
		// resolve_kv_cache_dtype_string: "auto" follows the checkpoint's
		// kv_cache_quant_algo before the backend is chosen.
		q.kvDType = "nvfp4"
	case q.kvDType == "auto" && strings.HasPrefix(cache.Name, "fp8"):
		q.kvDType = "fp8"
	}
	if q.mla {
		q.headSize = s.KVLoraRank + s.QKRopeHeadDim
	} else {
		q.headSize = s.HeadDim
		if q.headSize <= 0 && s.NumAttentionHeads > 0 {
			q.headSize = s.HiddenSize / s.NumAttentionHeads
		}
	}
	if s.Linear != nil && slices.Contains(s.LayerKinds, model.LinearAttention) {
		q.hybridFP32 = s.Linear.Kind == "kda" || strings.EqualFold(s.Linear.ConfigSSMDType, "float32")
	}
	return q
}

// attention is the attention backend of a V1 launch and the block size it
// sets.
type attention struct {
	backend    backendSpec
	block      int    // 0: keep the default (or --block-size)
	line, note string // what vLLM logs, what kvcfg notes
}

// attentionSetup resolves the attention backend and the KV block size of a
// V1 launch on CUDA. Up to 0.17 the platform picks the MLA backend and
// forces its block size first (check_and_update_config), and from 0.13 the
// selector then validates the configuration with that block; from 0.18 the
// selector runs first with the user's --block-size (None when not given)
// and the block follows the selected backend's preference
// (update_block_size_for_backend).
func attentionSetup(s *model.Spec, c Input, r rules, cache CacheDType, sm, tp int) (attention, error) {
	q := selectorQuery(s, c, cache, sm)
	heads := max(s.NumAttentionHeads/max(tp, 1), 1)
	if r.backendBlocks {
		b, err := selectBackend(r, q, c.AttentionBackend, heads)
		if err != nil {
			if be, ok := err.(*BackendError); ok {
				be.alternatives(r, q, heads)
			}
			return attention{}, err
		}
		a := attention{backend: b}
		a.block, a.line, a.note = backendBlockSize(s, c, r, b, sm)
		return a, nil
	}
	b, err := defaultBackend(s, c, r, q, sm)
	if err != nil {
		return attention{}, err
	}
	a := attention{backend: b}
	a.block, a.line, a.note = backendBlockSize(s, c, r, b, sm)
	if !r.backendCheck {
		return a, nil
	}
	q.blockSize = max(c.BlockSize, 16)
	if a.block > 0 {
		q.blockSize = a.block
	}
	requested := c.AttentionBackend
	if requested == "" && (b.name == BackendCutlassMLA && !r.rel.atLeast(0, 15, 0) || b.name == BackendFlashInferMLA) {
		// The platform sets the MLA backend itself on Blackwell.
		requested = b.name
	}
	sel, err := selectBackend(r, q, requested, heads)
	if err != nil {
		if be, ok := err.(*BackendError); ok {
			be.alternatives(r, q, heads)
		}
		return attention{}, err
	}
	a.backend = sel
	return a, nil
}

// defaultBackend is the backend releases before 0.18 choose: the requested
// one, else for MLA the platform's (FlashMLA sparse for DSA; on Blackwell
// FlashInfer MLA from 0.15 when qk_nope_head_dim is 128, else CUTLASS MLA
// from 0.10.2; FlashMLA on Hopper; Triton MLA elsewhere), else FlashInfer
// on Blackwell and FlashAttention otherwise.
func defaultBackend(s *model.Spec, c Input, r rules, q backendQuery, sm int) (backendSpec, error) {
	if c.AttentionBackend != "" {
		b, ok := lookupBackend(c.AttentionBackend)
		if !ok {
			return backendSpec{}, fmt.Errorf("%w: attention backend %q (accepted: %s)", ErrInvalidConfig, c.AttentionBackend, strings.Join(AttentionBackends(), ", "))
		}
		return b, nil
	}
	name := BackendFlashAttn
	switch {
	case q.mla && q.sparse:
		name = BackendFlashMLASparse
	case q.mla && sm/10 == 10 && r.rel.atLeast(0, 15, 0) && q.qkNope == 128:
		name = BackendFlashInferMLA
	case q.mla && sm/10 == 10 && r.rel.atLeast(0, 10, 2):
		name = BackendCutlassMLA
	case q.mla && sm/10 == 9:
		name = BackendFlashMLA
	case q.mla:
		name = BackendTritonMLA
	case sm/10 == 10 && r.rel.atLeast(0, 9, 2):
		name = BackendFlashInfer
	}
	b, _ := lookupBackend(name)
	return b, nil
}

// backendBlockSize returns the KV block size the platform sets for the
// chosen backend (0 to keep the default), the line vLLM logs and kvcfg's
// note. From 0.18 the backend's preferred kernel block (16 when it supports
// 16, else its smallest) applies unless --block-size is given; before, the
// platform forced FlashMLA's 64 on Hopper, the sparse backend's 64 and,
// from 0.10.2, CUTLASS MLA's 128 on Blackwell, over --block-size too.
func backendBlockSize(s *model.Spec, c Input, r rules, b backendSpec, sm int) (block int, line, note string) {
	if r.backendBlocks {
		if c.BlockSize != 0 {
			return 0, "", ""
		}
		q := selectorQuery(s, c, CacheDType{Requested: c.KVCacheDType}, sm)
		p := b.preferredBlock(q)
		if p == 16 {
			return 0, "", ""
		}
		return p, fmt.Sprintf("Setting kv cache block size to %d for %s backend.", p, b.name), ""
	}
	if !b.mla {
		return 0, "", ""
	}
	cur := c.BlockSize
	fits := func(n int) bool {
		if cur == 0 {
			return false
		}
		if r.rel.atLeast(0, 13, 0) {
			return cur%n == 0
		}
		return cur == n
	}
	uses := func(name string, n int) (int, string, string) {
		return n, "", fmt.Sprintf("the %s attention backend uses %d-token KV blocks", name, n)
	}
	switch b.name {
	case BackendFlashMLASparse:
		// "TODO(Chen): remove this hacky code": always 64.
		if cur == 64 {
			return 0, "", ""
		}
		return uses("FlashMLA", 64)
	case BackendFlashInferMLA:
		if cur == 32 || fits(64) || (cur == 64 && !r.rel.atLeast(0, 13, 0)) {
			return 0, "", ""
		}
		return uses("FlashInfer MLA", 64)
	case BackendFlashMLA:
		if fits(64) || sm/10 != 9 {
			return 0, "", ""
		}
		return uses("FlashMLA", 64)
	case BackendCutlassMLA:
		if fits(128) {
			return 0, "", ""
		}
		return uses("CUTLASS MLA", 128)
	}
	return 0, "", ""
}

// hybridAlignment returns the kernel block alignment of a Mamba hybrid's
// attention block (Platform._align_hybrid_block_size from 0.18, the
// HybridAttentionMambaModelConfig constants before).
func hybridAlignment(s *model.Spec, c Input, r rules, backend string, block, sm int, cache CacheDType) int {
	mla := engineMLA(s, r)
	switch r.hybridAlign {
	case "16":
		return 16
	case "backend", "backend-mla128":
		b, ok := lookupBackend(backend)
		align := 16
		if ok {
			align = b.minKernelBlock(selectorQuery(s, c, cache, sm))
		}
		align = max(align, block)
		if mla && r.hybridAlign == "backend-mla128" {
			// TRTLLM / FlashInfer MLA decode needs the kernel blocks
			// aligned to 128 tokens.
			align = max(align, 128)
		}
		return align
	}
	switch {
	case mla && c.AttentionBackend == BackendCutlassMLA:
		return 128
	case mla:
		return 64
	case sm/10 == 10 && s.HeadDim == 256 && (c.AttentionBackend == "" || c.AttentionBackend == BackendFlashInfer):
		// FlashInfer on Blackwell cannot run head size 256 with 16-token blocks.
		return 32
	}
	return 16
}

// inflateForMamba applies vLLM's hybrid block rule and returns the
// attention block size: align × cdiv(mamba page, align × attention page
// per token), kept when the block is already larger.
func inflateForMamba(layers []LayerSpec, block, align int, logs *[]string) int {
	mi := slices.IndexFunc(layers, func(l LayerSpec) bool { return l.Kind == Mamba })
	ai := slices.IndexFunc(layers, func(l LayerSpec) bool { return l.Kind != Mamba && l.Variant == "" && l.TokenBytes > 0 })
	if mi < 0 || ai < 0 {
		return block
	}
	mambaPage := layers[mi].StateBytes
	tok := layers[ai].TokenBytes
	a := int64(max(align, 1))
	attnBlock := int(a * cdiv(mambaPage, a*tok))
	if block < attnBlock {
		block = attnBlock
		*logs = append(*logs, fmt.Sprintf("Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size.", block))
	}
	attnPage := int64(block) * tok
	if attnPage > mambaPage {
		*logs = append(*logs, fmt.Sprintf("Padding mamba page size by %.2f%% to ensure that mamba page size and attention page size are exactly equal.",
			float64(attnPage-mambaPage)/float64(mambaPage)*100))
	}
	for i := range layers {
		layers[i].BlockSize = block
		if layers[i].Kind == Mamba {
			layers[i].PagePadded = attnPage
		}
	}
	return block
}

// budget fills res.Memory with the KV budget per GPU.
func budget(res *Result, s *model.Spec, c Input, r rules, tp, pp int) error {
	m := &res.Memory
	m.TotalBytes = c.Memory.TotalBytes
	switch {
	case c.Memory.AvailableKVBytes > 0:
		m.AvailableKVBytes = c.Memory.AvailableKVBytes
		m.Source = "measured"
	case c.KVCacheMemoryBytes > 0:
		if !r.kvCacheMemoryBytes {
			return fmt.Errorf("%w: kv_cache_memory_bytes is not supported by vLLM %s", ErrInvalidConfig, res.Profile)
		}
		m.AvailableKVBytes = c.KVCacheMemoryBytes
		m.Source = "kv_cache_memory_bytes"
	default:
		m.Source = "profile"
		util := c.GPUMemoryUtilization
		if util == 0 {
			util = r.defaultUtil
		}
		res.GPUMemoryUtilization = util
		est, terms := EstimateStage(s, EstimateInput{TP: tp, PP: pp, Stage: -1,
			MaxNumBatchedTokens: res.MaxNumBatchedTokens, MaxNumSeqs: res.MaxNumSeqs, DTypeBytes: s.ModelDType.Size(), Version: c.Version, Interconnect: c.Interconnect})
		pick := func(given, estimate int64, name string) int64 {
			if given > 0 {
				return given
			}
			m.Estimated = append(m.Estimated, name)
			return estimate
		}
		m.WeightsBytes = pick(c.Memory.WeightsBytes, est.WeightsBytes, "weights")
		m.ActivationBytes = pick(c.Memory.ActivationBytes, est.ActivationBytes, "activation")
		if c.Memory.ActivationBytes == 0 {
			m.ActivationTerms = terms
		}
		m.NonTorchBytes = pick(c.Memory.NonTorchBytes, est.NonTorchBytes, "non_torch")
		if r.graphsSubtracted && !c.EnforceEager {
			m.CUDAGraphBytes = pick(c.Memory.CUDAGraphBytes, est.CUDAGraphBytes, "cudagraph")
		}
		reqF := float64(m.TotalBytes) * util
		if free := c.Memory.FreeBytes; free > 0 && float64(free) < math.Ceil(reqF) {
			u := strconv.FormatFloat(float64(int64(float64(free)/float64(m.TotalBytes)*100))/100, 'f', -1, 64)
			return fix(refuse(res, fmt.Sprintf("Free memory on device (%s/%s GiB) on startup is less than desired GPU memory utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
				gibFor(r, free), gibFor(r, m.TotalBytes), strconv.FormatFloat(util, 'f', -1, 64), gibFor(r, int64(math.Ceil(reqF))))),
				"--gpu-memory-utilization", u, "lower --gpu-memory-utilization to "+u+" or less, or free the GPU")
		}
		nonKV := m.WeightsBytes + m.ActivationBytes + m.NonTorchBytes + m.CUDAGraphBytes
		if r.ceilRequested {
			m.RequestedBytes = int64(math.Ceil(reqF))
			m.AvailableKVBytes = m.RequestedBytes - nonKV
		} else {
			m.RequestedBytes = int64(reqF)
			m.AvailableKVBytes = int64(reqF - float64(nonKV))
		}
		if len(m.Estimated) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("estimated without a GPU: %s; pass a real run's figures (weights, or its \"Available KV cache memory\" as --kv-cache-memory) to reproduce it exactly",
				strings.Join(m.Estimated, ", ")))
		}
	}
	if r.availLine {
		res.LogLines = append(res.LogLines, fmt.Sprintf("Available KV cache memory: %s GiB", gibFor(r, m.AvailableKVBytes)))
	}
	return nil
}

// planV0 is the V0 engine: one cache block of all attention layers of a
// stage, the minimum over stages, the max-seq-len check after sizing. label
// is the device word of "# GPU blocks": "GPU" up to 0.6, the platform's
// dispatch key "CUDA" in 0.7, its device type "cuda" from 0.8.
func planV0(res *Result, layers []LayerSpec, c Input, pp int, avail int64, label string) error {
	B := int64(res.BlockSize)
	var worst int64
	for st := range pp {
		var b int64
		for _, l := range layers {
			if l.Stage == st {
				b += B * l.TokenBytes
			}
		}
		worst = max(worst, b)
	}
	res.PageBytes = worst
	if worst > 0 {
		nb := int64(math.Floor(float64(avail) / float64(worst)))
		res.NumGPUBlocks = max(nb, 0)
		swap := c.SwapSpaceBytes
		if swap == 0 {
			swap = 4 * GiB
		}
		res.NumCPUBlocks = swap / worst
	}
	if c.NumGPUBlocksOverride > 0 {
		res.NumGPUBlocks = c.NumGPUBlocksOverride
	}
	L := int64(res.MaxModelLen)
	res.BlocksPerRequest = cdiv(L, B)
	res.KVCacheSizeTokens = res.NumGPUBlocks * B
	res.TokenCapacity = res.KVCacheSizeTokens
	res.MaxConcurrency = float64(res.NumGPUBlocks*B) / float64(L)
	res.NeededBytes = res.BlocksPerRequest * worst
	res.LogLines = append(res.LogLines,
		fmt.Sprintf("# %s blocks: %d, # CPU blocks: %d", label, res.NumGPUBlocks, res.NumCPUBlocks),
		fmt.Sprintf("Maximum concurrency for %d tokens per request: %.2fx", L, res.MaxConcurrency))
	if res.NumGPUBlocks <= 0 {
		return refuse(res, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
	}
	if res.KVCacheSizeTokens < L {
		return refuse(res, fmt.Sprintf("The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", L, res.KVCacheSizeTokens))
	}
	return nil
}

// admitStage is one worker's admission check: the KV memory it has for a
// request (avail less its null block) and the bytes a request of L tokens
// needs there.
type admitStage struct {
	avail int64
	need  func(L int) int64
}

// admit runs auto-fit (the longest max_model_len every stage holds, when
// autoFit) and the admission check of one max_model_len request on every
// stage, refusing as vLLM does; res.NeededBytes is the largest stage's need.
func admit(res *Result, r rules, avail int64, autoFit bool, stages []admitStage) error {
	if autoFit {
		orig := res.MaxModelLen
		fit := orig
		for _, st := range stages {
			fit = min(fit, searchMaxLen(orig, st.avail, st.need))
		}
		switch {
		case fit <= 0:
			return refuse(res, "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing `gpu_memory_utilization`.")
		case fit >= orig:
			res.LogLines = append(res.LogLines, fmt.Sprintf("Auto-fit max_model_len: full model context length %d fits in available GPU memory", orig))
		default:
			res.MaxModelLen = fit
			res.LogLines = append(res.LogLines, fmt.Sprintf("Auto-fit max_model_len: reduced from %d to %d to fit in available GPU memory (%s GiB available for KV cache)", orig, fit, gibFor(r, avail)))
		}
	}
	L := res.MaxModelLen
	seeDocs := ""
	if r.ceilRequested {
		seeDocs = " See " + conservingMemoryURL + " for more details."
	}
	for _, st := range stages {
		need := st.need(L)
		res.NeededBytes = max(res.NeededBytes, need)
		if avail <= 0 {
			return refuse(res, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."+seeDocs)
		}
		if need > st.avail {
			est := searchMaxLen(L, st.avail, st.need)
			res.EstimatedMaxModelLen = est
			estMsg := ""
			if est > 0 {
				estMsg = fmt.Sprintf("Based on the available memory, the estimated maximum model length is %d. ", est)
			}
			return refuse(res, admissionMessage(r, L, need, st.avail, est, estMsg, seeDocs))
		}
	}
	return nil
}

// planV1 is the V1 engine: groups (get_kv_cache_groups), admission (and
// auto-fit), num_blocks as the minimum over pipeline stages, and the report
// lines.
func planV1(res *Result, layers []LayerSpec, c Input, r rules, pp int, avail int64, autoFit, hmaOff bool) (*Result, error) {
	mode := c.MambaCacheMode
	if mode == "" {
		mode = r.mambaMode
	}
	if mode == "none" {
		wholeSequenceMamba(layers, res.MaxModelLen)
	}
	if !r.hybridGroups {
		if err := unifyOneType(layers, r); err != nil {
			return nil, err
		}
	}
	groups, _, err := groupLayers(layers, r, hmaOff, &res.LogLines)
	if err != nil {
		if re, ok := err.(*engine.Refusal); ok {
			res.Error = re.Message
			if hmaOff && re.Message == unifyFailed {
				hmaOffFix(re, r, c, kindsOf(layers))
			}
		}
		return res, err
	}
	enc := c.MaxNumEncoderInputTokens
	if enc == 0 {
		enc = res.MaxNumBatchedTokens
	}
	use := usage{batchedTokens: res.MaxNumBatchedTokens * maxConcurrentBatches(r, c, pp), mambaMode: mode,
		specBlocks: c.NumSpeculativeTokens, encoderTokens: enc}
	if len(groups) == 0 {
		res.NumGPUBlocks = 1
		res.Notes = append(res.Notes, "attention-free model: no KV cache")
		return res, nil
	}
	res.GroupSize = groupSize(groups)
	res.PageBytes = groups[0].PageBytes

	workers := make([][]Group, pp)
	for st := range pp {
		workers[st] = project(groups, st)
	}
	if err := admit(res, r, avail, autoFit, admitStages(layers, workers, r, avail, use)); err != nil {
		return res, err
	}
	nb := minNumBlocks(workers, avail)
	if c.NumGPUBlocksOverride > 0 {
		res.LogLines = append(res.LogLines, fmt.Sprintf("Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d", nb, c.NumGPUBlocksOverride))
		nb = c.NumGPUBlocksOverride
	}
	res.NumGPUBlocks = nb
	reportGroups(res, r, groups, nb, use.at(res.MaxModelLen))
	return res, nil
}

// wholeSequenceMamba gives Mamba layers one block of max_model_len tokens:
// without prefix caching a Mamba "block" is the whole sequence.
func wholeSequenceMamba(layers []LayerSpec, maxModelLen int) {
	for i := range layers {
		if layers[i].Kind == Mamba {
			layers[i].BlockSize = maxModelLen
		}
	}
}

// unifyOneType is the V1 engine before the hybrid allocator (0.9.2), when a
// model had one KV cache type: sliding layers next to full ones became full
// attention (unify_hybrid_kv_cache_specs, 0.8.5), anything else raised.
func unifyOneType(layers []LayerSpec, r rules) error {
	if slices.ContainsFunc(layers, func(l LayerSpec) bool { return l.Kind.fullType() }) {
		for i, l := range layers {
			if l.Kind == SlidingWindow || l.Kind == ChunkedLocalAttention {
				layers[i].Kind, layers[i].Window, layers[i].ChunkSize = FullAttention, 0, 0
			}
		}
	}
	if len(layers) > 0 && !allEqual(layers) {
		return fmt.Errorf("%w: vLLM %s supports models with one KV cache type only (its V1 engine raises NotImplementedError for %s)", ErrUnsupportedModel, r.rel, kindsOf(layers))
	}
	return nil
}

// admitStages is the admission check per non-empty worker: its KV memory
// less the null block where the rules keep one, and what a request of L
// tokens needs there (by group from 0.11's group admission, else by layer).
func admitStages(layers []LayerSpec, workers [][]Group, r rules, avail int64, use usage) []admitStage {
	var stages []admitStage
	for st, w := range workers {
		if groupSize(w) == 0 {
			continue
		}
		ca := avail
		if r.nullBlock {
			ca -= nullBytes(w)
		}
		need := func(L int) int64 { return groupsNeeded(w, use.at(L)) }
		if !r.groupAdmission {
			var sl []LayerSpec
			for _, l := range layers {
				if l.Stage == st {
					sl = append(sl, l)
				}
			}
			need = func(L int) int64 { return layersNeeded(sl, use.at(L)) }
		}
		stages = append(stages, admitStage{avail: ca, need: need})
	}
	return stages
}

// minNumBlocks is num_blocks: the minimum over the non-empty workers
// (get_kv_cache_configs), never negative.
func minNumBlocks(workers [][]Group, avail int64) int64 {
	nb := int64(-1)
	for _, w := range workers {
		if groupSize(w) == 0 {
			continue
		}
		n := numBlocks(w, avail)
		if nb < 0 || n < nb {
			nb = n
		}
	}
	return max(nb, 0)
}

// reportGroups fills the groups' blocks per request, the token capacity and
// the release's "GPU KV cache size" / "Maximum concurrency" lines for nb
// blocks and requests of u.maxModelLen tokens, with kvcfg's notes.
func reportGroups(res *Result, r rules, groups []Group, nb int64, u usage) {
	L := u.maxModelLen
	minBlock := groups[0].BlockSize
	var perReq, sumMax int64
	for i := range groups {
		g := &groups[i]
		minBlock = min(minBlock, g.BlockSize)
		mm := g.maxMemory(u)
		g.BlocksPerRequest = cdiv(mm, g.PageBytes)
		perReq += g.BlocksPerRequest
		sumMax += mm
	}
	res.Groups = groups
	res.BlocksPerRequest = perReq
	allFull := !slices.ContainsFunc(groups, func(g Group) bool { return !g.Kind.fullType() })
	switch {
	case allFull:
		// Every group holds every token: blocks per group × block size.
		res.TokenCapacity = nb / int64(len(groups)) * int64(minBlock)
	case perReq > 0:
		res.TokenCapacity = mulDiv(nb, int64(L), perReq)
	}
	if r.tokenConcurrency {
		// 0.8.0 to 0.9.1: num_blocks × block_size tokens, concurrency
		// tokens / max_model_len.
		res.KVCacheSizeTokens = nb * int64(minBlock)
		res.MaxConcurrency = float64(res.KVCacheSizeTokens) / float64(L)
		res.LogLines = append(res.LogLines,
			fmt.Sprintf("GPU KV cache size: %s tokens", commas(res.KVCacheSizeTokens)),
			fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", commas(int64(L)), res.MaxConcurrency))
	} else {
		reportLines(res, r, nb, perReq, sumMax, minBlock, int64(L))
	}
	if r.report == "combined" {
		groupBlockSizes(res, u.mambaMode)
	}
	mambaNotes(res, groups, nb)
}

// mambaNotes remarks on a Mamba hybrid: attention blocks inflated to hold a
// state page, and fewer requests holding state than max_num_seqs.
func mambaNotes(res *Result, groups []Group, nb int64) {
	if block := res.BlockSize; block > 16 && slices.ContainsFunc(groups, func(g Group) bool { return g.Kind == Mamba }) {
		res.Notes = append(res.Notes, fmt.Sprintf("attention blocks are inflated to %d tokens to hold a Mamba state page; prefix caching works in %d-token units (vllm#54458)", block, block))
	}
	var mambaBlocks int64
	for _, g := range groups {
		if g.Kind == Mamba {
			mambaBlocks += g.BlocksPerRequest
		}
	}
	if mambaBlocks > 0 {
		if seqs := nb / mambaBlocks; seqs < int64(res.MaxNumSeqs) {
			res.Notes = append(res.Notes, fmt.Sprintf("only %d requests can hold Mamba state at once; max_num_seqs %d exceeds that (vllm#49064): pass --max-num-seqs %d", seqs, res.MaxNumSeqs, seqs))
		}
	}
}

// groupBlockSizes records, when the KV cache groups have different block
// sizes (page unification grows the block of the smaller pages), the
// scheduler block (their LCM, on which prefix-cache hits align) and the hash
// block (their GCD), as resolve_kv_cache_block_sizes does; vLLM's
// cache_config.block_size becomes the smallest (EngineCore
// ._initialize_kv_caches). Mamba groups without prefix caching (mode none,
// one block of max_model_len) take no part.
func groupBlockSizes(res *Result, mode string) {
	var sizes []int
	for _, g := range res.Groups {
		if g.Kind == Mamba && mode == "none" {
			continue
		}
		if !slices.Contains(sizes, g.BlockSize) {
			sizes = append(sizes, g.BlockSize)
		}
	}
	if len(sizes) < 2 {
		return
	}
	slices.Sort(sizes)
	l, g := sizes[0], sizes[0]
	for _, b := range sizes[1:] {
		l = l / gcd(l, b) * b
		g = gcd(g, b)
	}
	res.SchedulerBlockSize, res.HashBlockSize = l, g
	res.Notes = append(res.Notes, fmt.Sprintf("the KV cache groups have block sizes %v: vLLM's block_size becomes the smallest, %d; scheduling and prefix-cache hits align on their LCM, %d tokens, block hashes on their GCD, %d", sizes, sizes[0], l, g))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// maxConcurrentBatches is the number of scheduled batches whose tokens a
// sliding-window or chunked-local layer must hold beyond its window: 1 up
// to 0.25 (max_num_batched_tokens); from 0.26 vLLM's max_concurrent_batches
// (config/vllm.py: 2 with async scheduling at PP = 1, else PP), which
// times max_num_batched_tokens is max_in_flight_tokens.
func maxConcurrentBatches(r rules, c Input, pp int) int {
	switch {
	case !r.inFlight:
		return 1
	case pp > 1 || c.NoAsyncScheduling:
		return pp
	}
	return 2
}

// reportLines is _report_kv_cache_config: "GPU KV cache size" and
// "Maximum concurrency" in the release's form (rules.report), with kvcfg's
// note when the logged size is not the group-aware capacity.
func reportLines(res *Result, r rules, nb, perReq, sumMax int64, minBlock int, L int64) {
	groups := res.Groups
	if perReq > 0 {
		res.MaxConcurrency = float64(nb) / float64(perReq)
	}
	switch r.report {
	case "combined":
		res.KVCacheSizeTokens = int64(res.MaxConcurrency * float64(L))
		res.LogLines = append(res.LogLines, fmt.Sprintf("GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx",
			commas(res.KVCacheSizeTokens), commas(L), res.MaxConcurrency))
		return
	case "concurrency":
		res.KVCacheSizeTokens = int64(res.MaxConcurrency * float64(L))
	default:
		// get_max_concurrency_for_kv_cache_config divides by the padded
		// layers' blocks: cdiv(Σ max_memory_usage_bytes, page).
		res.MaxConcurrency = 0
		if d := cdiv(sumMax, groups[0].PageBytes); d > 0 {
			res.MaxConcurrency = float64(nb) / float64(d)
		}
		res.KVCacheSizeTokens = nb / int64(len(groups)) * int64(minBlock)
	}
	res.LogLines = append(res.LogLines,
		fmt.Sprintf("GPU KV cache size: %s tokens", commas(res.KVCacheSizeTokens)),
		fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", commas(L), res.MaxConcurrency))
	if len(groups) > 1 && res.TokenCapacity != res.KVCacheSizeTokens && r.report == "floor" {
		res.Notes = append(res.Notes, fmt.Sprintf("vLLM %s logs \"GPU KV cache size\" as num_blocks // %d groups × %d; a request of %d tokens needs %d blocks across the groups, so the group-aware capacity is %d tokens (vllm#40691)",
			r.rel, len(groups), minBlock, L, perReq, res.TokenCapacity))
	}
}

// admissionMessage is check_enough_kv_cache_memory's refusal in the
// release's wording: "GB" and no estimate up to 0.8.4; from 0.8.5 an
// estimate whose sentence 0.8.5 to 0.9.1 cut off after "memory,"; the
// "models's" typo up to 0.12; the CPU-backend remark and docs link after.
func admissionMessage(r rules, L int, need, avail int64, est int, estMsg, seeDocs string) string {
	switch r.msg {
	case "gb":
		return fmt.Sprintf("To serve at least one request with the models's max seq len (%d), (%.2f GB KV cache is needed, which is larger than the available KV cache memory (%.2f GB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			L, float64(need)/float64(GiB), float64(avail)/float64(GiB))
	case "half":
		cut := ""
		if est > 0 {
			cut = " Based on the available memory,"
		}
		return fmt.Sprintf("To serve at least one request with the models's max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB).%s  Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			L, gib(need), gib(avail), cut)
	case "v011":
		// The estimate sentence is followed by a space either way, so an
		// empty one leaves two.
		est := strings.TrimSuffix(estMsg, " ")
		return fmt.Sprintf("To serve at least one request with the models's max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB). %s Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			L, gib(need), gib(avail), est)
	}
	return fmt.Sprintf("To serve at least one request with the model's max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB). %sTry increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine.%s",
		L, formatGiB(need), formatGiB(avail), estMsg, seeDocs)
}

// kindsOf lists the distinct spec kinds of layers, for messages.
func kindsOf(layers []LayerSpec) string {
	var out []string
	for _, l := range layers {
		if !slices.Contains(out, string(l.Kind)) {
			out = append(out, string(l.Kind))
		}
	}
	return strings.Join(out, " + ")
}

// mulDiv is a·b/c without overflow (saturating at MaxInt64), for
// non-negative a, b and positive c.
func mulDiv(a, b, c int64) int64 {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// gib formats bytes as vLLM 0.11 prints GiB: value / 2^30 with two decimals.
func gib(b int64) string { return strconv.FormatFloat(float64(b)/float64(GiB), 'f', 2, 64) }

// formatGiB is vLLM's newer format_gib: str(round(b / 2^30, 2)), so 4 GiB
// prints as "4.0" and 2.8877 GiB as "2.89".
func formatGiB(b int64) string {
	// Python's round() rounds exact ties to even.
	v := math.RoundToEven(float64(b)/float64(GiB)*100) / 100
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// gibFor formats bytes the way the profile's messages do.
func gibFor(r rules, b int64) string {
	if r.ceilRequested {
		return formatGiB(b)
	}
	return gib(b)
}

// commas formats n with thousands separators, as Python's f"{n:,}".
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
