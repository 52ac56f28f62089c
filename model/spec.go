// Package model reads a HuggingFace config.json into the shape facts that KV
// cache sizing needs: layers, heads, head dims, MLA and DSA dims, sliding
// windows, linear-attention state shapes, context length and dtypes.
package model

import "github.com/kvcfg/kvcfg/dtype"

// AttentionKind is how the model's full-attention layers store KV.
type AttentionKind string

// The attention kinds.
const (
	// MHA covers MHA, GQA and MQA: per layer a K and a V row per KV head.
	MHA AttentionKind = "mha"
	// MLA is multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one
	// latent row of kv_lora_rank + qk_rope_head_dim per layer, never sharded
	// across tensor parallel ranks.
	MLA AttentionKind = "mla"
	// DSA is MLA plus DeepSeek sparse attention's lightning indexer cache
	// (DeepSeek-V3.2).
	DSA AttentionKind = "dsa"
)

// LayerKind is what one decoder layer keeps per token or per request.
type LayerKind string

// The layer kinds.
const (
	// FullAttention keeps K and V (or the MLA latent) for every token.
	FullAttention LayerKind = "full_attention"
	// SlidingAttention keeps KV for the last SlidingWindow tokens only
	// (sliding window or Llama-4 chunked attention); whether the engine's
	// pool benefits depends on HybridSWAPool.
	SlidingAttention LayerKind = "sliding_attention"
	// LinearAttention is a Mamba2 / gated-delta-net / KDA layer: fixed-size
	// state per request, no per-token KV.
	LinearAttention LayerKind = "linear_attention"
	// NoCache is a layer without attention or state (a Nemotron-H MLP or
	// MoE layer): it holds nothing per token or per request.
	NoCache LayerKind = "none"
)

// Spec is the shape of a model as KV sizing sees it. Fields that do not
// apply to a model are zero.
type Spec struct {
	// Name is the model's name (HF id when known, else the source path).
	Name string `json:"name"`
	// Architecture is architectures[0] of the config ("LlamaForCausalLM").
	Architecture string `json:"architecture"`
	// ModelType is the config's model_type (of the text config when nested).
	ModelType string `json:"model_type"`

	// NumLayers is num_hidden_layers (MTP/NextN layers not included).
	NumLayers int `json:"num_layers"`
	// HiddenSize is the model width (hidden_size).
	HiddenSize int `json:"hidden_size"`
	// NumAttentionHeads is the query head count of full attention.
	NumAttentionHeads int `json:"num_attention_heads"`
	// NumKVHeads is the total number of KV heads (before TP sharding), as
	// SGLang's total_num_kv_heads reads it (for MLA the config's value; the
	// latent cache ignores it). 0 for a model without attention layers.
	NumKVHeads int `json:"num_kv_heads"`
	// HeadDim and VHeadDim are the K and V head dims of full attention. For
	// MLA, HeadDim is qk_nope_head_dim + qk_rope_head_dim (not used by KV
	// sizing).
	HeadDim  int `json:"head_dim"`
	VHeadDim int `json:"v_head_dim"`

	// Attention is mha, mla or dsa (mha for a model without attention
	// layers, such as a pure Mamba2).
	Attention AttentionKind `json:"attention_kind"`
	// MLA latent dims (Attention == MLA or DSA).
	KVLoraRank    int `json:"kv_lora_rank"`
	QKRopeHeadDim int `json:"qk_rope_head_dim"`
	QKNopeHeadDim int `json:"qk_nope_head_dim"`
	// QLoraRank is the MLA query low-rank dim (q_lora_rank); 0 when queries
	// are projected directly. Parameter counts only.
	QLoraRank int `json:"q_lora_rank"`
	// DSA indexer dims (Attention == DSA).
	IndexHeadDim int `json:"index_head_dim"`
	IndexTopK    int `json:"index_topk"`
	// IndexNHeads is the DSA indexer's query head count (index_n_heads).
	IndexNHeads int `json:"index_n_heads"`

	// LayerKinds has one entry per decoder layer (len == NumLayers).
	LayerKinds []LayerKind `json:"layer_kinds"`
	// SlidingWindow is the window (tokens) of sliding-attention layers as the
	// config writes it (sliding_window, window_size, attention_chunk_size for
	// Llama-4); 0 when the model has none.
	SlidingWindow int `json:"sliding_window"`
	// EngineSlidingWindow is the window SGLang's model code reports
	// (get_attention_sliding_window_size): sliding_window-1 for GPT-OSS and
	// Gemma2/3, attention_chunk_size for Llama-4, else SlidingWindow. The
	// hybrid SWA admission floor uses it.
	EngineSlidingWindow int `json:"engine_sliding_window"`
	// UniformSlidingWindow is a model-level sliding_window, in a config
	// without layer_types, that is at least the context length: the layers
	// stay FullAttention (the window never slides, and SGLang sizes them as
	// full attention), but vLLM makes every layer a sliding-window layer
	// with it (CacheConfig.sliding_window). 0 otherwise.
	UniformSlidingWindow int `json:"uniform_sliding_window,omitempty"`
	// SWANumKVHeads, SWAHeadDim and SWAVHeadDim describe sliding layers when
	// they differ from full layers (MiMo-V2-Flash); 0 means "same as full".
	SWANumKVHeads int `json:"swa_num_kv_heads"`
	SWAHeadDim    int `json:"swa_head_dim"`
	SWAVHeadDim   int `json:"swa_v_head_dim"`
	// HybridSWAPool reports whether SGLang pools this architecture as hybrid
	// SWA (separate full and sliding pools). Gemma2/3, Command-R and OLMo-2
	// have sliding layers but get a full-size pool.
	HybridSWAPool bool `json:"hybrid_swa_pool"`

	// Compressed is DeepSeek-V4's compressed attention (docs/sglang.md#dsv4);
	// nil for other models. Attention is mha for it: the engines size its
	// pools with their own configurators, not a head count.
	Compressed *CompressedSpec `json:"compressed_attention,omitempty"`
	// SparseIndex is MiniMax-M3's lightning-indexer layout
	// (docs/sglang.md#minimax-sparse); nil for other models.
	SparseIndex *SparseIndexSpec `json:"sparse_index,omitempty"`

	// Linear is the linear-attention / Mamba state description of a hybrid
	// (or pure) state-space model; nil otherwise.
	Linear *LinearSpec `json:"linear_attention,omitempty"`

	// ContextLength is the derived maximum context (rope scaling applied).
	ContextLength int `json:"context_length"`
	// ConfigDType is the checkpoint dtype as written (torch_dtype / dtype).
	ConfigDType string `json:"config_dtype"`
	// ModelDType is the resolved model dtype of --dtype auto (SGLang rules:
	// fp32 checkpoints run as fp16, or bf16 for Gemma).
	ModelDType dtype.DType `json:"model_dtype"`

	// Quant describes the checkpoint's quantization_config; nil if none.
	Quant *QuantSpec `json:"quantization,omitempty"`

	// NumNextNPredictLayers is the number of MTP (NextN) draft layers the
	// checkpoint ships; 0 if none.
	NumNextNPredictLayers int `json:"num_nextn_predict_layers"`
	// Multimodal reports whether SGLang serves the model as multimodal by
	// default (docs/sglang.md#model-multimodal): a multimodal architecture or a text_config
	// wrapper, except Gemma3, Llama4 and Step3-VL ConditionalGeneration,
	// which run language-only unless multimodal is enabled.
	Multimodal bool `json:"multimodal"`
	// Vision is the config's vision_config as SGLang's VLM memory rule
	// reads it; nil when the config has none.
	Vision *VisionSpec `json:"vision,omitempty"`
	// Encoder reports a vision (or audio) encoder config next to the text
	// model, whether or not the engine enables it by default.
	Encoder bool `json:"encoder"`

	// Params estimates parameter counts from the config (for weight memory
	// when no checkpoint is at hand).
	Params Params `json:"params"`

	// FFN is the vocabulary and feed-forward shape the config gives; the
	// engines' profile-run estimates size activations from it.
	FFN FFNShape `json:"ffn"`

	// Warnings lists what the reader guessed (unknown architecture, ...).
	Warnings []string `json:"warnings,omitempty"`
}

// LinearSpec describes per-request state of linear-attention layers.
type LinearSpec struct {
	// Kind is "mamba2", "gdn" (Qwen3-Next gated delta net) or "kda" (Kimi-Linear).
	Kind string `json:"kind"`
	// LayerIDs are the linear-attention (state) layers.
	LayerIDs []int `json:"layer_ids"`
	// NumHeads, HeadDim, StateSize, NGroups, ConvKernel and IntermediateSize
	// are the Mamba2StateShape inputs (SGLang configs/mamba_utils.py).
	NumHeads         int `json:"num_heads"`
	HeadDim          int `json:"head_dim"`
	StateSize        int `json:"state_size"`
	NGroups          int `json:"n_groups"`
	ConvKernel       int `json:"conv_kernel"`
	IntermediateSize int `json:"intermediate_size"`
	// ConfigSSMDType is the config's mamba_ssm_dtype, "" if unset.
	ConfigSSMDType string `json:"config_ssm_dtype,omitempty"`
}

// QuantSpec is the part of a quantization_config sizing cares about.
type QuantSpec struct {
	// Method is quant_method ("fp8", "modelopt", "compressed-tensors", "mxfp4", "awq", ...).
	Method string `json:"method"`
	// KVCacheQuantAlgo is kv_cache_quant_algo (ModelOpt) or the equivalent
	// from a compressed-tensors kv_cache_scheme ("FP8"), "" if none.
	KVCacheQuantAlgo string `json:"kv_cache_quant_algo,omitempty"`
	// WeightBits is the bits per quantized weight (8 for fp8, 4 for mxfp4/awq/gptq/nvfp4).
	WeightBits int `json:"weight_bits"`
}

// Params is a config-derived parameter count.
type Params struct {
	// Total is every parameter, embeddings included.
	Total int64 `json:"total"`
	// Embedding counts input embeddings plus an untied LM head.
	Embedding int64 `json:"embedding"`
	// Active is the parameters used per token (MoE: routed top-k experts).
	Active int64 `json:"active"`
	// Quantizable is the part that a weight quantization_config applies to
	// (linear layers; not embeddings, norms, router; minus modules the
	// quantization_config leaves unconverted, e.g. gpt-oss attention).
	Quantizable int64 `json:"quantizable"`
	// MTP is what the checkpoint ships for its NextN / MTP draft layers (one
	// decoder layer each plus the projection and its embedding/head copies);
	// it is not part of Total.
	MTP int64 `json:"mtp"`
	// FP4Experts is the part of Quantizable the checkpoint stores as FP4
	// whatever its quantization_config says (DeepSeek-V4's routed experts).
	FP4Experts int64 `json:"fp4_experts,omitempty"`
}

// LayerIDs returns the ids of layers of kind k, in order.
func (s *Spec) LayerIDs(k LayerKind) []int {
	var ids []int
	for i, lk := range s.LayerKinds {
		if lk == k {
			ids = append(ids, i)
		}
	}
	return ids
}

// CountLayers returns how many layers are of kind k.
func (s *Spec) CountLayers(k LayerKind) int {
	n := 0
	for _, lk := range s.LayerKinds {
		if lk == k {
			n++
		}
	}
	return n
}

// VisionSpec is the size of a multimodal model's vision tower:
// vision_config.num_hidden_layers and hidden_size (0 when absent or not a
// positive number).
type VisionSpec struct {
	Layers int `json:"num_hidden_layers,omitempty"`
	Hidden int `json:"hidden_size,omitempty"`
	// PatchesPerToken is how many of the tower's patches make one token
	// of the language model (pooling or merging; 1 when the config says
	// none).
	PatchesPerToken int `json:"patches_per_token,omitempty"`
}

// FFNShape is the part of a config that sizes a forward pass's activations
// beyond attention: the vocabulary (the logits) and the MLP or experts.
type FFNShape struct {
	// VocabSize is vocab_size (padded_vocab_size).
	VocabSize int `json:"vocab_size"`
	// Intermediate is the dense MLP's intermediate_size (Falcon: 4×hidden).
	Intermediate int `json:"intermediate_size"`
	// Gated reports a gated MLP (gate and up projections: three matrices).
	Gated bool `json:"gated"`
	// Experts and TopK are the routed experts and experts per token (0 for
	// a dense model).
	Experts int `json:"num_experts,omitempty"`
	TopK    int `json:"num_experts_per_tok,omitempty"`
	// ExpertIntermediate is one expert's intermediate size
	// (moe_intermediate_size, else intermediate_size); SharedIntermediate
	// the always-on shared experts' total. 0 for a dense model.
	ExpertIntermediate int `json:"moe_intermediate_size,omitempty"`
	SharedIntermediate int `json:"shared_expert_intermediate_size,omitempty"`
}

// CompressedSpec is DeepSeek-V4's per-layer compressed attention: every
// layer keeps a sliding window of raw KV rows, and layers with compress
// ratio 4 (c4, with a lightning indexer) or 128 (c128) also keep one
// compressed row per 4 or 128 tokens.
type CompressedSpec struct {
	// Ratios is compress_ratios cut to the decoder layers: 0 (window only),
	// 4 or 128 per layer.
	Ratios []int `json:"compress_ratios"`
	// Window is the sliding window (config sliding_window), which SGLang
	// also uses as the SWA page of the compress-state rings.
	Window int `json:"window"`
}

// CountRatio counts the layers with compress ratio r.
func (c *CompressedSpec) CountRatio(r int) int {
	n := 0
	for _, v := range c.Ratios {
		if v == r {
			n++
		}
	}
	return n
}

// SparseIndexSpec is MiniMax-M3's sparse attention: dense layers, sparse
// layers with a lightning-indexer cache of one head of IndexDim, whose
// value part is dropped on KOnlyLayerIDs (sparse_disable_index_value).
type SparseIndexSpec struct {
	// IndexDim is sparse_index_dim.
	IndexDim int `json:"sparse_index_dim"`
	// DenseLayerIDs and SparseLayerIDs split the decoder layers by
	// sparse_attention_freq.
	DenseLayerIDs  []int `json:"dense_layer_ids"`
	SparseLayerIDs []int `json:"sparse_layer_ids"`
	// KOnlyLayerIDs are the sparse layers whose indexer keeps K only.
	KOnlyLayerIDs []int `json:"k_only_layer_ids"`
}
