package vllm

import (
	"fmt"
	"slices"
	"strings"
)

// The attention backends vLLM selects between on CUDA, by the names
// --attention-backend (and, before 0.11, VLLM_ATTENTION_BACKEND) accepts.
const (
	BackendFlashAttn         = "FLASH_ATTN"
	BackendFlashInfer        = "FLASHINFER"
	BackendTritonAttn        = "TRITON_ATTN"
	BackendFlexAttention     = "FLEX_ATTENTION"
	BackendTurboQuant        = "TURBOQUANT"
	BackendFlashAttnMLA      = "FLASH_ATTN_MLA"
	BackendFlashMLA          = "FLASHMLA"
	BackendFlashInferMLA     = "FLASHINFER_MLA"
	BackendTritonMLA         = "TRITON_MLA"
	BackendCutlassMLA        = "CUTLASS_MLA"
	BackendTokenspeedMLA     = "TOKENSPEED_MLA"
	BackendFlashMLASparse    = "FLASHMLA_SPARSE"
	BackendFlashInferMLASpar = "FLASHINFER_MLA_SPARSE"
)

// AttentionBackends lists the backend names Input.AttentionBackend accepts.
func AttentionBackends() []string {
	out := make([]string, 0, len(backendTable))
	for _, b := range backendTable {
		out = append(out, b.name)
	}
	return out
}

// kernelBlock is one entry of get_supported_kernel_block_sizes: a fixed
// size, or any multiple of size.
type kernelBlock struct {
	size     int
	multiple bool
}

// backendQuery is AttentionSelectorConfig plus what the backends read from
// the model and the device.
type backendQuery struct {
	headSize   int
	modelDType string // "bfloat16", "float16"
	kvDType    string // the --kv-cache-dtype as given ("auto", "fp8", ...)
	blockSize  int    // the user's --block-size, 0 when not given (None)
	mla        bool
	sparse     bool
	sink       bool
	// major and minor are the compute capability.
	major, minor int
	// qkNope and qkRope, vHead are the MLA dims the kernels check.
	qkNope, qkRope, vHead int
	// indexTopK marks a DeepSeek sparse attention model.
	indexTopK bool
	// hybridFP32 marks a hybrid model with a float32 Mamba state (the
	// FlashAttention backend then restricts its kernel blocks).
	hybridFP32 bool
}

// backendSpec is one CUDA attention backend as its validate_configuration
// judges a configuration (newest main, v1/attention/backends/*.py).
type backendSpec struct {
	name        string
	mla, sparse bool
	modelDTypes []string
	kvDTypes    []string
	blocks      func(q backendQuery) []kernelBlock
	headOK      func(h int) bool
	ccOK        func(major, minor int) bool
	sinkOK      func(q backendQuery) bool
	// kvOK overrides the plain kvDTypes membership test.
	kvOK func(q backendQuery) bool
	// combination is supports_combination: a reason, or "".
	combination func(q backendQuery) string
}

func fixed(sizes ...int) func(backendQuery) []kernelBlock {
	return func(backendQuery) []kernelBlock {
		out := make([]kernelBlock, len(sizes))
		for i, s := range sizes {
			out[i] = kernelBlock{size: s}
		}
		return out
	}
}

func multipleOf(n int) func(backendQuery) []kernelBlock {
	return func(backendQuery) []kernelBlock { return []kernelBlock{{size: n, multiple: true}} }
}

func headIn(sizes ...int) func(int) bool {
	return func(h int) bool { return slices.Contains(sizes, h) }
}

func majorIn(majors ...int) func(int, int) bool {
	return func(major, _ int) bool { return slices.Contains(majors, major) }
}

var (
	halfDTypes  = []string{"float16", "bfloat16"}
	plainKV     = []string{"auto", "float16", "bfloat16"}
	plainFP8KV  = []string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3"}
	mlaHeadSize = headIn(320, 576) // MLACommonBackend.get_supported_head_sizes
)

// backendTable is every CUDA backend kvcfg models.
var backendTable = []backendSpec{
	{
		name: BackendFlashAttn, modelDTypes: halfDTypes, kvDTypes: plainKV,
		blocks: func(q backendQuery) []kernelBlock {
			if q.hybridFP32 {
				// Block sizes free of FlashAttention's NaN propagation with
				// fp32 Mamba state (flash-attention#1974).
				return fixed(16, 32, 64)(q)
			}
			return multipleOf(16)(q)
		},
		headOK: func(h int) bool { return h%8 == 0 && h <= 256 },
		ccOK:   func(major, _ int) bool { return major >= 8 },
		// FlashAttention 3 (Hopper) stores fp8 caches and supports sinks.
		kvOK: func(q backendQuery) bool {
			if q.kvDType == "fp8" || q.kvDType == "fp8_e4m3" {
				return q.major == 9
			}
			return slices.Contains(plainKV, q.kvDType)
		},
		sinkOK: func(q backendQuery) bool { return q.major == 9 },
		combination: func(q backendQuery) string {
			if q.sink && q.major < 9 {
				return "sink not supported on compute capability < 9.0"
			}
			return ""
		},
	},
	{
		name: BackendFlashInfer, modelDTypes: halfDTypes,
		kvDTypes: []string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4"},
		blocks:   fixed(16, 32, 64),
		headOK:   headIn(64, 128, 256),
		ccOK: func(major, minor int) bool {
			return (major > 7 || major == 7 && minor >= 5) && (major < 12 || major == 12 && minor <= 1)
		},
		// NVFP4 pages run only on the trtllm-gen kernels of SM 10.x.
		kvOK: func(q backendQuery) bool {
			if q.kvDType == "nvfp4" {
				return q.major == 10
			}
			return slices.Contains([]string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"}, q.kvDType)
		},
		sinkOK: func(q backendQuery) bool { return q.major == 10 },
	},
	{
		name: BackendTritonAttn, modelDTypes: []string{"float16", "bfloat16", "float32"},
		kvDTypes: []string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8_per_token_head", "fp8_per_token_head"},
		blocks:   multipleOf(16),
		headOK:   func(h int) bool { return h >= 32 },
		sinkOK:   func(backendQuery) bool { return true },
	},
	{
		name: BackendFlexAttention, modelDTypes: []string{"float16", "bfloat16", "float32"}, kvDTypes: plainKV,
		blocks: multipleOf(16),
	},
	{
		name: BackendTurboQuant, modelDTypes: halfDTypes,
		blocks: fixed(16, 32, 64, 128),
		headOK: func(h int) bool { return h > 0 },
		kvOK:   func(q backendQuery) bool { return strings.HasPrefix(q.kvDType, "turboquant_") },
	},
	{
		name: BackendFlashAttnMLA, mla: true, modelDTypes: halfDTypes, kvDTypes: plainKV,
		blocks: multipleOf(16), headOK: mlaHeadSize, ccOK: majorIn(9),
		combination: func(q backendQuery) string {
			if q.major != 9 {
				return "FlashAttention MLA not supported on this device"
			}
			return ""
		},
	},
	{
		name: BackendFlashMLA, mla: true, modelDTypes: halfDTypes, kvDTypes: plainFP8KV,
		blocks: fixed(64), headOK: mlaHeadSize, ccOK: majorIn(9, 10),
		combination: func(q backendQuery) string {
			if q.sparse {
				if q.major != 9 && q.major != 10 {
					return "FlashMLA Sparse is only supported on Hopper and Blackwell devices."
				}
				return ""
			}
			if q.major != 9 {
				return "FlashMLA Dense is only supported on Hopper devices."
			}
			return ""
		},
	},
	{
		name: BackendFlashInferMLA, mla: true, modelDTypes: halfDTypes, kvDTypes: plainFP8KV,
		blocks: fixed(32, 64), headOK: mlaHeadSize, ccOK: majorIn(10),
		combination: func(q backendQuery) string {
			if q.qkNope != 64 && q.qkNope != 128 && q.qkNope != 192 {
				return fmt.Sprintf("FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128, 192], but got %d", q.qkNope)
			}
			return ""
		},
	},
	{
		name: BackendTokenspeedMLA, mla: true, modelDTypes: halfDTypes, kvDTypes: []string{"fp8", "fp8_e4m3"},
		blocks: fixed(32, 64), headOK: mlaHeadSize, ccOK: majorIn(10),
		// An optional package that a default install lacks.
		combination: func(backendQuery) string {
			return "tokenspeed_mla package is not installed. Install it with: `uv pip install tokenspeed-mla`"
		},
	},
	{
		name: BackendCutlassMLA, mla: true, modelDTypes: halfDTypes, kvDTypes: plainFP8KV,
		blocks: fixed(128), headOK: mlaHeadSize, ccOK: majorIn(10),
	},
	{
		name: BackendTritonMLA, mla: true, modelDTypes: halfDTypes, kvDTypes: plainFP8KV,
		blocks: multipleOf(16),
	},
	{
		name: BackendFlashMLASparse, mla: true, sparse: true, modelDTypes: []string{"bfloat16"},
		kvDTypes: []string{"auto", "bfloat16", "fp8_ds_mla", "fp8"},
		blocks:   fixed(64), headOK: headIn(512, 576), ccOK: majorIn(9, 10),
	},
	{
		name: BackendFlashInferMLASpar, mla: true, sparse: true, modelDTypes: halfDTypes, kvDTypes: plainFP8KV,
		blocks: fixed(32, 64), headOK: headIn(576), ccOK: majorIn(10),
		combination: func(q backendQuery) string {
			if q.qkNope != 128 && q.qkNope != 192 {
				return fmt.Sprintf("FlashInfer MLA Sparse kernel requires qk_nope_head_dim in [128, 192], but got %d", q.qkNope)
			}
			if !q.indexTopK {
				return "FlashInfer MLA Sparse requires model with index_topk config"
			}
			return ""
		},
	},
}

func lookupBackend(name string) (backendSpec, bool) {
	i := slices.IndexFunc(backendTable, func(b backendSpec) bool { return b.name == name })
	if i < 0 {
		return backendSpec{}, false
	}
	return backendTable[i], true
}

// supportsBlock is supports_block_size: any kernel block that divides it.
func (b backendSpec) supportsBlock(q backendQuery, block int) bool {
	for _, k := range b.blocks(q) {
		if block%k.size == 0 {
			return true
		}
	}
	return false
}

// minKernelBlock is the smallest kernel block (a multiple's base).
func (b backendSpec) minKernelBlock(q backendQuery) int {
	m := 0
	for _, k := range b.blocks(q) {
		if m == 0 || k.size < m {
			m = k.size
		}
	}
	return m
}

// preferredBlock is get_preferred_block_size(16).
func (b backendSpec) preferredBlock(q backendQuery) int {
	if b.supportsBlock(q, 16) {
		return 16
	}
	return b.minKernelBlock(q)
}

// reasons is validate_configuration: why b cannot run q, in vLLM's order
// and wording; nil when it can.
func (b backendSpec) reasons(q backendQuery) []string {
	var out []string
	if b.headOK != nil && !b.headOK(q.headSize) {
		out = append(out, "head_size not supported")
	}
	if !slices.Contains(b.modelDTypes, q.modelDType) {
		out = append(out, "dtype not supported")
	}
	kvOK := slices.Contains(b.kvDTypes, q.kvDType)
	if b.kvOK != nil {
		kvOK = b.kvOK(q)
	}
	if !kvOK {
		out = append(out, "kv_cache_dtype not supported")
	}
	if q.blockSize > 0 && !b.supportsBlock(q, q.blockSize) {
		out = append(out, "block_size not supported")
	}
	if q.mla != b.mla {
		if q.mla {
			out = append(out, "MLA not supported")
		} else {
			out = append(out, "non-MLA not supported")
		}
	}
	if q.sink && (b.sinkOK == nil || !b.sinkOK(q)) {
		out = append(out, "attention sinks not supported")
	}
	if q.sparse != b.sparse {
		if q.sparse {
			out = append(out, "sparse not supported")
		} else {
			out = append(out, "non-sparse not supported")
		}
	}
	if b.ccOK != nil && !b.ccOK(q.major, q.minor) {
		out = append(out, "compute capability not supported")
	}
	if b.combination != nil {
		if r := b.combination(q); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// priorities is _get_backend_priorities for the release: the backends
// tried in order. numHeads is the query heads per rank.
func priorities(r rules, q backendQuery, numHeads int) []string {
	if q.mla {
		if q.major == 10 {
			if !r.rel.atLeast(0, 15, 0) {
				// 0.13 and 0.14: CUTLASS MLA first on Blackwell.
				return []string{BackendCutlassMLA, BackendFlashInferMLA, BackendFlashAttnMLA, BackendFlashMLA, BackendTritonMLA, BackendFlashMLASparse}
			}
			sparse := []string{BackendFlashMLASparse, BackendFlashInferMLASpar}
			switch {
			case r.backendBlocks && (strings.HasPrefix(q.kvDType, "fp8") || strings.HasSuffix(q.kvDType, "per_token_head") || q.kvDType == "nvfp4"):
				sparse = []string{BackendFlashInferMLASpar, BackendFlashMLASparse}
			case numHeads > 0 && numHeads <= 16:
				sparse = []string{BackendFlashInferMLASpar, BackendFlashMLASparse}
			}
			head := []string{BackendFlashInferMLA, BackendCutlassMLA, BackendFlashAttnMLA, BackendFlashMLA, BackendTritonMLA}
			if r.rel.atLeast(0, 21, 0) {
				// TOKENSPEED_MLA (PR #41778) sits behind FlashInfer MLA.
				head = []string{BackendFlashInferMLA, BackendTokenspeedMLA, BackendCutlassMLA, BackendFlashAttnMLA, BackendFlashMLA, BackendTritonMLA}
			}
			return append(head, sparse...)
		}
		return []string{BackendFlashAttnMLA, BackendFlashMLA, BackendFlashInferMLA, BackendTritonMLA, BackendFlashMLASparse}
	}
	list := []string{BackendFlashAttn, BackendFlashInfer, BackendTritonAttn, BackendFlexAttention}
	if q.major == 10 {
		list = []string{BackendFlashInfer, BackendFlashAttn, BackendTritonAttn, BackendFlexAttention}
	}
	if r.backendBlocks && !r.v0 && r.rel.atLeast(0, 19, 0) {
		list = append(list, BackendTurboQuant)
	}
	return list
}

// selectorRepr is AttentionSelectorConfig's repr.
func (q backendQuery) selectorRepr() string {
	block := "None"
	if q.blockSize > 0 {
		block = fmt.Sprint(q.blockSize)
	}
	py := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	return fmt.Sprintf("AttentionSelectorConfig(head_size=%d, dtype=torch.%s, kv_cache_dtype=%s, block_size=%s, use_mla=%s, has_sink=%s, use_sparse=%s, use_mm_prefix=False, use_per_head_quant_scales=False, attn_type=decoder, use_non_causal=False, use_batch_invariant=False)",
		q.headSize, q.modelDType, q.kvDType, block, py(q.mla), py(q.sink), py(q.sparse))
}

// selectBackend is CudaPlatform.get_attn_backend_cls: the requested backend
// when it is valid, else the first valid one in priority order; a refusal
// with vLLM's message otherwise.
func selectBackend(r rules, q backendQuery, requested string, numHeads int) (backendSpec, error) {
	if requested != "" {
		b, ok := lookupBackend(requested)
		if !ok {
			return backendSpec{}, fmt.Errorf("%w: attention backend %q (accepted: %s)", ErrInvalidConfig, requested, strings.Join(AttentionBackends(), ", "))
		}
		if why := b.reasons(q); len(why) > 0 {
			return b, refusal(fmt.Sprintf("Selected backend AttentionBackendEnum.%s is not valid for this configuration. Reason: [%s]",
				b.name, quoteList(why)))
		}
		return b, nil
	}
	var invalid []string
	for _, name := range priorities(r, q, numHeads) {
		b, _ := lookupBackend(name)
		why := b.reasons(q)
		if len(why) == 0 {
			return b, nil
		}
		invalid = append(invalid, fmt.Sprintf("%s: [%s]", name, strings.Join(why, ", ")))
	}
	return backendSpec{}, &BackendError{Message: fmt.Sprintf("No valid attention backend found for cuda with %s. Reasons: {%s}.",
		q.selectorRepr(), strings.Join(invalid, ", ")), KVCacheDType: q.kvDType, BlockSize: q.blockSize}
}

// BackendError is vLLM's refusal when no attention backend accepts the
// launch ("No valid attention backend found"). Plan fills the alternatives
// that start, so a fix can name one. It unwraps to ErrRefused; Plan wraps it
// in an *engine.Refusal naming the fix (and so
// to ErrRefused).
type BackendError struct {
	// Message is vLLM's wording.
	Message string `json:"message"`
	// KVCacheDType and BlockSize are the refused --kv-cache-dtype and
	// --block-size (0 when not given).
	KVCacheDType string `json:"kv_cache_dtype"`
	BlockSize    int    `json:"block_size,omitempty"`
	// ValidKVCacheDTypes are the --kv-cache-dtype values some backend
	// accepts on this GPU with the same --block-size, in the profile's order.
	ValidKVCacheDTypes []string `json:"valid_kv_cache_dtypes,omitempty"`
	// DropBlockSize reports that the launch starts without --block-size.
	DropBlockSize bool `json:"drop_block_size,omitempty"`
}

func (e *BackendError) Error() string { return "vllm: " + e.Message }

// Unwrap returns ErrRefused.
func (e *BackendError) Unwrap() error { return ErrRefused }

// SuggestedKVCacheDType is the valid --kv-cache-dtype closest to the
// refused one: the first of the narrowest element width at least as wide
// (fp8 for fp8_e5m2 or nvfp4), else the first valid one; "" when none.
func (e *BackendError) SuggestedKVCacheDType() string {
	width := func(name string) int {
		switch {
		case strings.HasPrefix(name, "fp8"), strings.HasPrefix(name, "int8"):
			return 8
		case name == "nvfp4":
			return 4
		}
		return 16
	}
	best := ""
	for _, d := range e.ValidKVCacheDTypes {
		if w := width(d); w >= width(e.KVCacheDType) && (best == "" || w < width(best)) {
			best = d
		}
	}
	if best == "" && len(e.ValidKVCacheDTypes) > 0 {
		best = e.ValidKVCacheDTypes[0]
	}
	return best
}

// alternatives fills e with what would start: other KV dtypes of the
// profile, and the launch without --block-size.
func (e *BackendError) alternatives(r rules, q backendQuery, numHeads int) {
	for _, d := range r.dtypes {
		if d == q.kvDType || d == "fp8_ds_mla" && !q.sparse {
			continue
		}
		alt := q
		alt.kvDType = d
		if _, err := selectBackend(r, alt, "", numHeads); err == nil {
			e.ValidKVCacheDTypes = append(e.ValidKVCacheDTypes, d)
		}
	}
	if q.blockSize > 0 {
		alt := q
		alt.blockSize = 0
		if _, err := selectBackend(r, alt, "", numHeads); err == nil {
			e.DropBlockSize = true
		}
	}
}

// quoteList renders a Python list of strings.
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, ", ")
}
