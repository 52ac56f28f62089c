// Package sglang is SGLang's KV-cache subsystem as pure values.
//
// The Configurator is SGLang's KVCacheConfigurator: from a model spec, the
// KV dtype, parallelism, server arguments and the measured (or modelled)
// free memory it derives the server-args defaults, profiles the KV budget,
// sizes the pools and resolves max_running_requests — and reports what the
// engine would log. Next to it: the KV dtype rules (ResolveKV), the version
// profiles and attention-backend choice that change the defaults, and the
// pre-load free-memory model. The pure pool formulas live in
// engine/sglang/sizing; engine/sglang/pools builds package pool's pools
// from a result (pools.Config, pools.New, pools.Resize), apart from this
// package so that what imports it (plan) links neither pool nor quant.
//
// It keeps the engine contract (package engine): Plan (New, then
// Configure), ResolveProfile, AcceptedKVDTypes, MaxConcurrency and
// Patterns, and its refusals are *engine.Refusal values naming the flag
// that fixes them.
//
// The numeric domains are kept apart as SGLang does: MiB for server-args
// heuristics, GiB floats for profiling (converted once with
// int(rest·2^30)), int64 bytes for sizing.
package sglang

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
)

// Sentinel errors. Errors that a flag can fix are *engine.Refusal values
// wrapping one of these (or a sizing sentinel).
var (
	// ErrInvalid reports inputs that are inconsistent or out of range.
	ErrInvalid = errors.New("sglang: invalid input")
	// ErrNoKVMemory reports loaded weights that leave no memory for the KV
	// cache under the static memory fraction.
	ErrNoKVMemory = errors.New("sglang: no memory left for the KV cache")
	// ErrNotEnoughMemory reports a KV budget below one page of tokens.
	ErrNotEnoughMemory = errors.New("sglang: not enough memory")
	// ErrPoolTooSmall reports a pool that cannot admit one request.
	ErrPoolTooSmall = errors.New("sglang: memory pool too small")
	// ErrContextLength reports a --context-length above the model's.
	ErrContextLength = errors.New("sglang: context length too long")
)

// Parallel is the parallel layout of one server.
type Parallel struct {
	TP, PP, DP        int
	EnableDPAttention bool
	// DCP is the decode-context-parallel size (1 = off).
	DCP int
}

// AttnDP is the attention data-parallel size (1 unless DP attention is on).
func (p Parallel) AttnDP() int {
	if p.EnableDPAttention && p.DP > 1 {
		return p.DP
	}
	return 1
}

// AttnTP is the attention tensor-parallel size: tp / attn_dp.
func (p Parallel) AttnTP() int { return max(p.TP/p.AttnDP(), 1) }

// ServerArgs are the SGLang server arguments the KV configuration reads.
// Zero values mean "not given" (SGLang's None).
type ServerArgs struct {
	KVCacheDType           string
	MemFractionStatic      float64
	PageSize               int
	ContextLength          int
	MaxTotalTokens         int64
	MaxRunningRequests     int
	SWAFullTokensRatio     float64
	DisableHybridSWAMemory bool
	ChunkedPrefillSize     int // < 0 disables chunking
	MaxPrefillTokens       int
	CudaGraphMaxBS         int
	// DisableCudaGraph is --disable-cuda-graph: no decode CUDA graph, so
	// the newest profile's reserve (reserve_for_graph_mb) has no
	// cuda_graph_max_bs × 2 term; earlier profiles reserve it regardless.
	DisableCudaGraph          bool
	DisableRadixCache         bool
	DisableOverlapSchedule    bool
	SpeculativeAlgorithm      string
	SpeculativeNumDraftTokens int
	SpeculativeDraftNumLayers int
	MambaFullMemoryRatio      float64
	MaxMambaCacheSize         int
	MambaSSMDType             string
	// SWAEvictionInterval is SGLANG_SWA_EVICTION_INTERVAL (128 when 0).
	SWAEvictionInterval int
	// DSV4CompressStateDType is SGLANG_DSV4_COMPRESS_STATE_DTYPE ("" =
	// float32; bf16 halves DeepSeek-V4's compress state).
	DSV4CompressStateDType string
	// HiSparseHostToDeviceRatio is HiSparse's host_to_device_ratio (0 or 1
	// = HiSparse off): it shrinks DeepSeek-V4's c4 pool.
	HiSparseHostToDeviceRatio int
	// AttentionBackend is --attention-backend ("" = SGLang's default
	// choice for the platform and model, see DefaultAttentionBackend).
	AttentionBackend string
	// NSAPrefillBackend and NSADecodeBackend are --nsa-prefill-backend and
	// --nsa-decode-backend ("" = SGLang's default, see DefaultNSABackends):
	// for a DeepSeek sparse-attention model they pick the KV row.
	NSAPrefillBackend, NSADecodeBackend string
	// DisablePiecewiseCudaGraph is --disable-piecewise-cuda-graph: no
	// prefill CUDA-graph reserve where the profile captures them by default.
	DisablePiecewiseCudaGraph bool
	// MambaRadixCacheStrategy is --mamba-radix-cache-strategy
	// (--mamba-scheduler-strategy before): no_buffer (""), extra_buffer or
	// extra_buffer_lazy; the buffer adds state slots per request.
	MambaRadixCacheStrategy string
	// MambaSkipDecodeLock is SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK (the newest
	// SGLang): one state slot per request less.
	MambaSkipDecodeLock bool
	// EnableUnifiedMemory is --enable-unified-memory (unified.go);
	// DisaggregationMode is --disaggregation-mode ("", "null", "prefill"
	// or "decode").
	EnableUnifiedMemory bool
	DisaggregationMode  string
	// The HiCache host tier (hicache.go): --enable-hierarchical-cache,
	// --hicache-ratio (2.0 when 0), --hicache-size (decimal GB; 0 = use
	// the ratio), --hicache-mem-layout, the host's free RAM (psutil's
	// available; 0 = not checked) and --nnodes (1 when 0).
	EnableHierarchicalCache bool
	HiCacheRatio            float64
	HiCacheSize             float64
	HiCacheMemLayout        string
	HostMemoryBytes         int64
	NNodes                  int
}

// Hardware is what the configurator needs to know about the GPU.
type Hardware struct {
	// MemoryMiB is the total memory (nvidia-smi MiB); 0 = unknown.
	MemoryMiB int64
	// SM is the compute capability ×10 (90 Hopper, 100 Blackwell); 0 AMD.
	SM int
	// Platform is "cuda" or "hip".
	Platform string
	// FNUZ marks float8_e4m3fnuz hardware.
	FNUZ bool
}

// Input builds a Configurator.
type Input struct {
	Spec     *model.Spec
	Parallel Parallel
	Args     ServerArgs
	Hardware Hardware
	// PostLoadFreeBytes is the free memory after weight load (the min over
	// ranks), as get_available_gpu_memory reads it.
	PostLoadFreeBytes int64
	// PreLoadFreeBytes is the free memory before weight load, the argument
	// Plan passes to Configure (New and Reset do not read it).
	PreLoadFreeBytes int64
	// VisionLayers and VisionHidden are vision_config.num_hidden_layers and
	// hidden_size of a multimodal model (0 = absent: SGLang uses 24, 1024).
	VisionLayers, VisionHidden int
	// NoVisionConfig marks a multimodal model without a vision_config, for
	// which SGLang leaves mem_fraction_static alone.
	NoVisionConfig bool
	// KV, when set, is an already resolved KV cache dtype; New then skips
	// resolving Args.KVCacheDType itself.
	KV *KVResolution
	// Version is the SGLang release to size for ("0.4.7", "0.5.3rc0",
	// "latest"); "" = the newest profile (see ResolveProfile).
	Version string
}

// Derived are the server-args values after SGLang's defaults.
type Derived struct {
	MemFractionStatic   float64 `json:"mem_fraction_static"`
	MemFractionDerived  bool    `json:"mem_fraction_derived"`
	ChunkedPrefillSize  int     `json:"chunked_prefill_size"`
	CudaGraphMaxBS      int     `json:"cuda_graph_max_bs"`
	MaxPrefillTokens    int     `json:"max_prefill_tokens"`
	PageSize            int     `json:"page_size"`
	ContextLength       int     `json:"context_length"`
	SWAFullTokensRatio  float64 `json:"swa_full_tokens_ratio"`
	HybridSWA           bool    `json:"hybrid_swa"`
	Mambaish            bool    `json:"mambaish"`
	DisableRadixCache   bool    `json:"disable_radix_cache"`
	OverlapSchedule     bool    `json:"overlap_schedule"`
	MambaSlotRatio      int     `json:"mamba_slot_ratio,omitempty"`
	SWAWindow           int     `json:"swa_window,omitempty"`
	SpeculativeAlgo     string  `json:"speculative_algorithm,omitempty"`
	DraftLayers         int     `json:"draft_layers,omitempty"`
	DraftTokens         int     `json:"draft_tokens,omitempty"`
	MultimodalReserveMB int     `json:"multimodal_reserve_mb,omitempty"`
	// Decode is what each running request reserves for decoding and the
	// request-to-token row headroom (the newest SGLang's
	// allocation_sizing.py; before, only the headroom 4 + draft tokens).
	Decode DecodeReservation `json:"decode_reservation"`
}

// Configurator is an immutable KV cache configurator.
type Configurator struct {
	in      Input
	kv      KVResolution
	d       Derived
	state   *sizing.MambaState
	notes   []string // warnings from deriving defaults
	convDT  dtype.DType
	ssmDT   dtype.DType
	dsaFP8  bool
	attnMLA bool
	prof    Profile
	backend string
	// nsaPrefill and nsaDecode are the DSA backends (DSA models only).
	nsaPrefill, nsaDecode string
}

// New validates the input, derives SGLang's server-args defaults and
// resolves the KV cache dtype.
func New(in Input) (*Configurator, error) {
	c := new(Configurator)
	if err := c.Reset(in); err != nil {
		return nil, err
	}
	return c, nil
}

// Reset makes c the Configurator New(in) returns, reusing c's memory, so
// that a loop of plans (a sweep worker) allocates none. Results c returned
// before stay valid: they share no memory with c. After an error c must
// not be used until the next successful Reset. Reset must not run while
// another goroutine uses c.
func (c *Configurator) Reset(in Input) error {
	if err := in.validate(); err != nil {
		return err
	}
	if err := in.Args.checkHiCacheArgs(); err != nil {
		return err
	}
	if err := in.Args.checkNSABackends(); err != nil {
		return err
	}
	prof := c.prof // a sweep resolves the same version again and again
	if prof.Era == "" || prof.Version != in.Version {
		var err error
		if prof, _, err = ResolveProfile(in.Version); err != nil {
			return refusal(engine.Refusal{Err: err, Flag: "--sglang-version", Hint: "give a release such as 0.4.7 or 0.5.3, or leave it out for the newest profile"})
		}
	}
	*c = Configurator{in: in, notes: c.notes[:0], prof: prof}
	s := in.Spec
	p := in.Parallel
	if p.DCP < 1 {
		c.in.Parallel.DCP = 1
	}
	platform := strings.ToLower(in.Hardware.Platform)
	if platform == "" {
		platform = "cuda"
	}
	c.in.Hardware.Platform = platform
	c.attnMLA = s.Attention == model.MLA || s.Attention == model.DSA

	if err := c.deriveContextLength(); err != nil {
		return err
	}
	c.deriveSpeculative()
	if err := c.deriveDSV4Args(); err != nil {
		return err
	}

	// Attention backend (--attention-backend or SGLang's default choice).
	if err := c.resolveBackend(); err != nil {
		return err
	}

	c.deriveHybrid()
	if err := c.deriveKVDType(platform); err != nil {
		return err
	}
	c.derivePageSize(platform)
	c.deriveDSV4()
	c.deriveDecode()
	c.deriveMemory()
	return c.deriveMambaState()
}

// deriveContextLength sets the context length (docs/sglang.md#model-context-length).
func (c *Configurator) deriveContextLength() error {
	s, a, d := c.in.Spec, &c.in.Args, &c.d
	d.ContextLength = s.ContextLength
	if a.ContextLength > 0 {
		if a.ContextLength > s.ContextLength && s.ContextLength > 0 {
			return refusal(engine.Refusal{
				Err:  fmt.Errorf("%w: User-specified context_length (%d) is greater than the derived context_length (%d) of the model", ErrContextLength, a.ContextLength, s.ContextLength),
				Flag: "--context-length", Value: fmt.Sprint(s.ContextLength),
				Hint: fmt.Sprintf("set --context-length %d or less", s.ContextLength),
			})
		}
		d.ContextLength = a.ContextLength
	}
	if d.ContextLength <= 0 {
		d.ContextLength = 2048
	}
	return nil
}

// deriveSpeculative sets the speculative decoding algorithm, draft tokens
// and draft layers.
func (c *Configurator) deriveSpeculative() {
	s, a, d := c.in.Spec, &c.in.Args, &c.d
	d.SpeculativeAlgo = strings.ToUpper(strings.TrimSpace(a.SpeculativeAlgorithm))
	switch d.SpeculativeAlgo {
	case "NONE":
		d.SpeculativeAlgo = ""
	case "NEXTN":
		d.SpeculativeAlgo = "EAGLE" // server_args: "NEXTN shares the same implementation of EAGLE"
	}
	if d.SpeculativeAlgo != "" {
		d.DraftTokens = a.SpeculativeNumDraftTokens
		if d.DraftTokens <= 0 && d.SpeculativeAlgo != "NGRAM" {
			d.DraftTokens = 4
			c.notes = append(c.notes, "speculative_num_draft_tokens not given; assuming 4 (SGLang's EAGLE auto choice: 3 steps, top-k 1)")
		}
		switch d.SpeculativeAlgo {
		case "EAGLE", "EAGLE3", "STANDALONE", "DFLASH":
			d.DraftLayers = a.SpeculativeDraftNumLayers
			if d.DraftLayers <= 0 {
				d.DraftLayers = max(s.NumNextNPredictLayers, 1)
				c.notes = append(c.notes, fmt.Sprintf("speculative draft layers not given; assuming %d (pass --speculative-draft-num-layers with the draft model's layer count)", d.DraftLayers))
			}
		}
	}
}

// deriveHybrid sets the hybrid SWA pool, the radix cache, the overlap
// scheduler and the mamba slot ratio.
func (c *Configurator) deriveHybrid() {
	s, a, d := c.in.Spec, &c.in.Args, &c.d
	// Hybrid SWA and mambaish detection (docs/sglang.md#model-sliding-window, #model-linear-attention).
	d.Mambaish = s.Linear != nil
	d.HybridSWA = s.HybridSWAPool && !a.DisableHybridSWAMemory
	gptOSS := strings.HasPrefix(s.Architecture, "GptOss")
	if d.HybridSWA && !c.prof.hybridSWA {
		d.HybridSWA = false
		c.notes = append(c.notes, "this SGLang release has no hybrid sliding-window pool (0.4.9 added it): full-size pool")
	}
	if d.HybridSWA && gptOSS && c.backend == BackendTRTLLMMHA {
		d.HybridSWA = false
		c.notes = append(c.notes, "GPT-OSS with the trtllm_mha backend disables the hybrid SWA pool (full-size pool)")
	}
	if d.HybridSWA {
		d.SWAWindow = c.window()
	}
	d.SWAFullTokensRatio = a.SWAFullTokensRatio
	if d.SWAFullTokensRatio == 0 {
		d.SWAFullTokensRatio = 0.8
	}

	// Radix cache, overlap scheduler, mamba slot ratio (docs/sglang.md#max-running-requests, #mamba-slot-ratio).
	d.DisableRadixCache = a.DisableRadixCache
	if d.Mambaish && s.Linear.Kind == "kda" {
		d.DisableRadixCache = true
	}
	d.OverlapSchedule = !a.DisableOverlapSchedule
	if d.Mambaish && !d.DisableRadixCache && d.SpeculativeAlgo == "" && c.mambaStrategy() == MambaNoBuffer {
		d.OverlapSchedule = false
	}
	if d.Mambaish {
		d.MambaSlotRatio = c.mambaSlotRatio()
	}
}

// deriveDecode sets the decode reservation (docs/sglang.md#decode-reservation):
// the newest SGLang's allocation_sizing.py, with kvcfg's EAGLE defaults
// of 3 steps and top-k 1; older releases' row headroom is 4 + draft tokens.
func (c *Configurator) deriveDecode() {
	d := &c.d
	spec := d.SpeculativeAlgo != ""
	if c.prof.decodeReservation {
		d.Decode = DecodeReservationFor(d.PageSize, spec, 3, 1, d.DraftTokens)
		return
	}
	d.Decode = DecodeReservation{AllocLen: 1, Reserve: 2, ReqToTokenExtra: 4 + d.DraftTokens}
	if spec {
		d.Decode.AllocLen = max(3, d.DraftTokens)
		d.Decode.Reserve = 2 * d.Decode.AllocLen
	}
}

// deriveKVDType resolves the KV cache dtype (docs/sglang.md#kv-dtype,
// docs/sglang.md#model-dsa) on platform (lower case).
func (c *Configurator) deriveKVDType(platform string) error {
	in, s, a, d := &c.in, c.in.Spec, &c.in.Args, &c.d
	kvStr := a.KVCacheDType
	if s.Attention == model.DSA && (kvStr == "" || strings.EqualFold(kvStr, dtype.Auto)) {
		// _set_default_nsa_kv_cache_dtype: fp8_e4m3 when the device's
		// compute-capability major is 10 or more (SM 100, 103, 110, 120,
		// 121), not only on the data-centre Blackwell parts.
		if platform == "cuda" && in.Hardware.SM >= 100 {
			kvStr = "fp8_e4m3"
		} else {
			kvStr = "bfloat16"
		}
	}
	req := KVRequest{KVCacheDType: kvStr, ModelDType: s.ModelDType, Platform: Platform(platform), FNUZ: in.Hardware.FNUZ && platform == "hip",
		SpeculativeAlgorithm: d.SpeculativeAlgo}
	if s.Quant != nil {
		req.KVCacheQuantAlgo = s.Quant.KVCacheQuantAlgo
	}
	var kv KVResolution
	var err error
	if in.KV != nil {
		kv = *in.KV
		if kv.ElementSize <= 0 {
			return fmt.Errorf("%w: resolved KV dtype %q has no element size", ErrInvalid, kv.Format.Name)
		}
	} else {
		kv, err = resolveKV(req)
	}
	if err != nil {
		fe := refusal(engine.Refusal{Err: err, Flag: "--kv-cache-dtype", Value: "auto"})
		if !errors.Is(err, ErrUnsupportedKV) { // that error lists them already
			fe.Hint = "accepted: " + strings.Join(acceptedKVDTypes(), ", ")
		}
		return fe
	}
	if s.Attention == model.DSA {
		switch kv.Format.Name {
		case "bf16", "fp8_e4m3":
		default:
			return refusal(engine.Refusal{Err: fmt.Errorf("%w: DeepSeek sparse attention supports only bf16 or fp8_e4m3 KV cache, not %s", ErrInvalid, kv.Format.Name),
				Flag: "--kv-cache-dtype", Value: "fp8_e4m3", Hint: "set --kv-cache-dtype fp8_e4m3 or bf16"})
		}
	}
	c.kv = kv
	c.resolveNSA(platform)
	return nil
}

// derivePageSize sets the page size (docs/sglang.md#defaults-page_size,
// docs/sglang.md#model-linear-attention) on platform (lower case).
func (c *Configurator) derivePageSize(platform string) {
	s, a, d := c.in.Spec, &c.in.Args, &c.d
	d.PageSize = a.PageSize
	switch {
	case s.Attention == model.DSA && platform == "cuda":
		if d.PageSize != 0 && d.PageSize != 64 {
			c.notes = append(c.notes, fmt.Sprintf("DeepSeek sparse attention forces page_size 64 on CUDA (requested %d)", d.PageSize))
		}
		d.PageSize = 64
	case s.Attention == model.DSA:
		d.PageSize = 1
	default:
		d.PageSize = c.backendPageSize(d.PageSize)
	}
	if d.PageSize == 0 {
		d.PageSize = 1
	}
}

// deriveMemory sets the server-args memory defaults
// (docs/sglang.md#defaults-tier-table, #defaults-mem_fraction_static).
func (c *Configurator) deriveMemory() {
	in, s, a, p, d := &c.in, c.in.Spec, &c.in.Args, &c.in.Parallel, &c.d
	tier := c.prof.Tier(in.Hardware.MemoryMiB, p.TP)
	d.ChunkedPrefillSize = a.ChunkedPrefillSize
	if d.ChunkedPrefillSize == 0 {
		d.ChunkedPrefillSize = tier.ChunkedPrefillSize
	}
	d.CudaGraphMaxBS = a.CudaGraphMaxBS
	if d.CudaGraphMaxBS == 0 {
		d.CudaGraphMaxBS = tier.CudaGraphMaxBS
	}
	d.MaxPrefillTokens = a.MaxPrefillTokens
	if d.MaxPrefillTokens == 0 {
		d.MaxPrefillTokens = 16384
	}
	d.MemFractionStatic = a.MemFractionStatic
	if d.MemFractionStatic == 0 {
		d.MemFractionDerived = true
		graphBS := d.CudaGraphMaxBS
		if a.DisableCudaGraph && c.prof.Era == EraLatest && !(p.EnableDPAttention && p.DP > 1) {
			graphBS = 0 // the decode graph's term only; DP attention's padding terms read the batch size regardless
		}
		off, why := c.prefillGraphOff(in.Hardware.Platform)
		d.MemFractionStatic = c.prof.MemFraction(MemFractionInput{
			GPUMemoryMiB: in.Hardware.MemoryMiB, TPSize: p.TP, PPSize: p.PP, DPSize: p.DP,
			EnableDPAttention: p.EnableDPAttention && p.DP > 1, ChunkedPrefillSize: d.ChunkedPrefillSize,
			MaxPrefillTokens: d.MaxPrefillTokens, CudaGraphMaxBS: graphBS, SpeculativeAlgorithm: d.SpeculativeAlgo,
			MLA: c.attnMLA, DisablePrefillGraph: off, MaxTotalTokens: a.MaxTotalTokens,
		})
		if why != "" {
			c.notes = append(c.notes, fmt.Sprintf("SGLang switches the prefill CUDA graph off (%s): mem_fraction_static reserves nothing for it", why))
		}
		if s.Multimodal && !in.NoVisionConfig && c.prof.vlmAdjust {
			f := VLMMemFractionFactor(in.VisionLayers, in.VisionHidden)
			d.MemFractionStatic *= f
			c.notes = append(c.notes, fmt.Sprintf("multimodal model: mem_fraction_static scaled by %.4f for the vision tower (SGLang adjust_mem_fraction_for_vlm)", f))
		}
	}
	if s.Multimodal && !c.prof.vlmAdjust {
		// Before 0.4.9 the model runner scaled every fraction of a
		// multimodal model by 0.90, a user-supplied one included.
		d.MemFractionStatic *= 0.90
		c.notes = append(c.notes, fmt.Sprintf("multimodal model: mem_fraction_static scaled by 0.90 to %.4f (SGLang before 0.4.9)", d.MemFractionStatic))
	}
	if c.aiterScales() {
		// aiter scales the fraction, a user-supplied one included (docs/sglang.md#defaults-tier-table,
		// docs/sglang.md#defaults-hardware); other backends (triton, dcu_mla) never do.
		d.MemFractionStatic *= 0.85
		c.notes = append(c.notes, fmt.Sprintf("aiter attention with context length %d above 8192: mem_fraction_static scaled by 0.85 to %.4f", d.ContextLength, d.MemFractionStatic))
	}
	if p.EnableDPAttention && p.DP > 1 && d.ChunkedPrefillSize > 0 {
		d.ChunkedPrefillSize /= p.DP
	}
	if s.Multimodal && c.prof.mmReserve {
		d.MultimodalReserveMB = 100 // SGLANG_VLM_CACHE_SIZE_MB (docs/sglang.md#model-multimodal)
	}
}

// deriveMambaState sizes the mamba state of a hybrid model
// (docs/sglang.md#mamba-state, docs/sglang.md#mamba-budget).
func (c *Configurator) deriveMambaState() error {
	a, d := &c.in.Args, &c.d
	if d.Mambaish {
		if d.DraftTokens > 0 && a.MaxRunningRequests <= 0 {
			return refusal(engine.Refusal{
				Err:  fmt.Errorf("%w: speculative decoding with a hybrid (mamba/linear-attention) model requires --max-running-requests (SGLang asserts it to size the speculative state scratch)", ErrInvalid),
				Flag: "--max-running-requests", Hint: "set --max-running-requests, e.g. 64",
			})
		}
		if err := c.initMamba(); err != nil {
			return err
		}
	}
	return nil
}

func (in *Input) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	if in.Spec == nil {
		bad("model spec is required")
		return errors.Join(errs...)
	}
	s := in.Spec
	if s.NumLayers <= 0 {
		bad("model has %d layers", s.NumLayers)
	}
	if len(s.LayerKinds) != 0 && len(s.LayerKinds) != s.NumLayers {
		bad("model lists %d layer kinds for %d layers", len(s.LayerKinds), s.NumLayers)
	}
	p := in.Parallel
	if p.TP < 1 || p.PP < 1 || p.DP < 1 {
		bad("tp, pp and dp sizes must be ≥ 1 (got %d, %d, %d)", p.TP, p.PP, p.DP)
	}
	if p.PP > 0 && s.NumLayers > 0 && p.PP > s.NumLayers {
		bad("pp size %d exceeds the model's %d layers", p.PP, s.NumLayers)
	}
	if p.EnableDPAttention && p.DP > 1 && p.TP > 0 && p.TP%p.DP != 0 {
		bad("with DP attention, tp size %d must be a multiple of dp size %d", p.TP, p.DP)
	} else if err := checkTensorParallel(in); err != nil {
		errs = append(errs, err)
	}
	a := in.Args
	if a.MemFractionStatic < 0 || a.MemFractionStatic >= 1 || math.IsNaN(a.MemFractionStatic) {
		bad("mem_fraction_static %v must be in (0, 1)", a.MemFractionStatic)
	}
	if a.PageSize < 0 {
		bad("page_size %d must be positive", a.PageSize)
	}
	if a.ContextLength < 0 || a.MaxTotalTokens < 0 || a.MaxRunningRequests < 0 || a.MaxMambaCacheSize < 0 || a.CudaGraphMaxBS < 0 || a.MaxPrefillTokens < 0 {
		bad("context length, token and request counts must not be negative")
	}
	if a.SWAFullTokensRatio < 0 || a.SWAFullTokensRatio > 1 || math.IsNaN(a.SWAFullTokensRatio) {
		bad("swa_full_tokens_ratio %v must be in (0, 1]", a.SWAFullTokensRatio)
	}
	if err := a.validateTiers(); err != nil {
		errs = append(errs, err)
	}
	if a.MambaFullMemoryRatio < 0 || math.IsNaN(a.MambaFullMemoryRatio) || math.IsInf(a.MambaFullMemoryRatio, 0) {
		bad("mamba_full_memory_ratio %v must be positive", a.MambaFullMemoryRatio)
	}
	if err := a.checkMambaStrategy(); err != nil {
		errs = append(errs, err)
	}
	switch strings.ToLower(a.MambaSSMDType) {
	case "", "float32", "bfloat16", "float16":
	default:
		bad("mamba_ssm_dtype %q (accepted: float32, bfloat16)", a.MambaSSMDType)
	}
	switch strings.ToUpper(strings.TrimSpace(a.SpeculativeAlgorithm)) {
	case "", "NONE", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "DFLASH", "NGRAM":
	default:
		bad("speculative algorithm %q (accepted: EAGLE, EAGLE3, NEXTN, STANDALONE, DFLASH, NGRAM)", a.SpeculativeAlgorithm)
	}
	if a.SpeculativeNumDraftTokens < 0 || a.SpeculativeDraftNumLayers < 0 {
		bad("speculative draft tokens and layers must not be negative")
	}
	switch strings.ToLower(in.Hardware.Platform) {
	case "", "cuda", "hip":
	default:
		bad("platform %q (accepted: cuda, hip)", in.Hardware.Platform)
	}
	if in.PostLoadFreeBytes < 0 {
		bad("post-load free memory must not be negative")
	}
	if s.Attention == model.MHA || s.Attention == "" {
		if s.NumKVHeads <= 0 || s.HeadDim <= 0 {
			if s.CountLayers(model.FullAttention)+s.CountLayers(model.SlidingAttention) > 0 || len(s.LayerKinds) == 0 {
				bad("model has %d KV heads of dim %d", s.NumKVHeads, s.HeadDim)
			}
		}
	}
	return errors.Join(errs...)
}

// KV returns the resolved KV cache dtype.
func (c *Configurator) KV() KVResolution { return c.kv }

// Derived returns the server-args values after defaults.
func (c *Configurator) Derived() Derived { return c.d }

// Notes returns the warnings raised while deriving defaults.
func (c *Configurator) Notes() []string { return append([]string(nil), c.notes...) }

// MambaState returns the per-request linear-attention state (nil for
// models without one).
func (c *Configurator) MambaState() *sizing.MambaState {
	if c.state == nil {
		return nil
	}
	m := *c.state
	return &m
}

func (c *Configurator) initMamba() error {
	s := c.in.Spec
	conv, temporal, err := s.Linear.StateShapes(c.in.Parallel.AttnTP())
	if err != nil {
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: %w", ErrInvalid, err), Flag: "--tp-size", Hint: "choose a tensor-parallel size that divides the linear-attention heads"})
	}
	c.convDT = dtype.BFloat16
	c.ssmDT = dtype.Float32
	if s.Linear.Kind != "kda" {
		if v, err := dtype.Parse(s.Linear.ConfigSSMDType); err == nil && s.Linear.ConfigSSMDType != "" {
			switch v {
			case dtype.Float32, dtype.BFloat16, dtype.Float16:
				c.ssmDT = v
			}
		}
	}
	if a := strings.ToLower(c.in.Args.MambaSSMDType); a != "" {
		if v, err := dtype.Parse(a); err == nil {
			c.ssmDT = v
		}
	}
	c.state = &sizing.MambaState{Conv: conv, Temporal: temporal, ConvElem: c.convDT.Size(), SSMElem: c.ssmDT.Size(), Layers: len(s.Linear.LayerIDs)}
	return nil
}

// resolved memoizes dtype.Resolve (a pure function) for the few request
// shapes plans ask for: a sweep or a fit resolves the same dtype for
// thousands of plans. Only successful resolutions are kept, at most
// 1024 of them; their slices are clipped, so a caller's append
// never writes into the shared arrays.
var resolved = engine.NewMemo[KVRequest, KVResolution](1024)

func resolveKV(req KVRequest) (KVResolution, error) {
	if v, ok := resolved.Load(req); ok {
		return v, nil
	}
	kv, err := ResolveKV(req)
	if err != nil {
		return kv, err
	}
	kv.Logs, kv.Warnings = slices.Clip(kv.Logs), slices.Clip(kv.Warnings)
	resolved.Store(req, kv)
	return kv, nil
}
