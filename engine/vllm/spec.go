package vllm

// SpecKind is the kind of a layer's KV cache spec, in the vocabulary of
// vLLM's KV events (kv_cache_spec_kind).
type SpecKind string

// The spec kinds.
const (
	FullAttention         SpecKind = "full_attention"
	MLAAttention          SpecKind = "mla_attention"
	SlidingWindow         SpecKind = "sliding_window"
	SlidingWindowMLA      SpecKind = "sliding_window_mla"
	ChunkedLocalAttention SpecKind = "chunked_local_attention"
	Mamba                 SpecKind = "mamba"
	CrossAttention        SpecKind = "cross_attention"
	EncoderOnlyAttention  SpecKind = "encoder_only_attention"
)

// fullType reports whether the kind is a FullAttentionSpec in vLLM's class
// hierarchy (MLAAttentionSpec derives from it).
func (k SpecKind) fullType() bool { return k == FullAttention || k == MLAAttention }

// LayerSpec is one layer's KV cache spec on one rank (vLLM's KVCacheSpec).
// A "page" is one block of BlockSize tokens of this one layer.
type LayerSpec struct {
	// Name identifies the layer ("layers.3.attn", "layers.3.indexer").
	Name string `json:"name"`
	// Stage is the pipeline stage that owns the layer.
	Stage int `json:"stage"`
	// Kind is the spec kind.
	Kind SpecKind `json:"kind"`
	// BlockSize is the tokens per block.
	BlockSize int `json:"block_size"`
	// TokenBytes is the bytes of one token (attention kinds).
	TokenBytes int64 `json:"token_bytes,omitempty"`
	// StateBytes is the unpadded state of one request (Mamba).
	StateBytes int64 `json:"state_bytes,omitempty"`
	// PagePadded overrides the page size when larger (page_size_padded).
	PagePadded int64 `json:"page_padded,omitempty"`
	// Window is the sliding window (SlidingWindow), or the window kept as
	// information on a full-attention layer when the hybrid manager is off.
	Window int `json:"window,omitempty"`
	// ChunkSize is the attention chunk (ChunkedLocalAttention).
	ChunkSize int `json:"chunk_size,omitempty"`
	// Variant distinguishes specs of one kind with different shapes
	// ("indexer" for the DeepSeek-V3.2 indexer).
	Variant string `json:"variant,omitempty"`
	// CompressRatio is DeepSeek-V4's compress_ratio: a block of BlockSize
	// tokens stores BlockSize/CompressRatio slots (storage_block_size).
	CompressRatio int `json:"compress_ratio,omitempty"`
}

// PageBytes is page_size_bytes: BlockSize·TokenBytes for attention kinds,
// the state for Mamba, raised to PagePadded when that is larger.
func (s LayerSpec) PageBytes() int64 {
	var p int64
	if s.Kind == Mamba {
		p = s.StateBytes
	} else {
		p = int64(s.BlockSize/max(s.CompressRatio, 1)) * s.TokenBytes
	}
	if s.PagePadded > p {
		p = s.PagePadded
	}
	return p
}

// key is the spec without its identity, for bucketing equal specs.
func (s LayerSpec) key() LayerSpec {
	s.Name, s.Stage = "", 0
	return s
}

// usage holds the inputs of max_memory_usage_bytes.
type usage struct {
	maxModelLen int
	// batchedTokens is what sliding-window and chunked layers must hold
	// beyond the window: max_num_batched_tokens × batches in flight.
	batchedTokens int
	// mambaMode is none, align or all.
	mambaMode string
	// specBlocks is num_speculative_blocks for Mamba.
	specBlocks int
	// encoderTokens is max_num_encoder_input_tokens (cross attention).
	encoderTokens int
}

// at is u for requests of L tokens.
func (u usage) at(L int) usage {
	u.maxModelLen = L
	return u
}

// blocks returns how many pages one request of u.maxModelLen tokens needs
// in the worst case (max_memory_usage_bytes / page_size_bytes).
func (s LayerSpec) blocks(u usage) int64 {
	b := int64(max(s.BlockSize, 1))
	L := int64(u.maxModelLen)
	switch s.Kind {
	case SlidingWindow, SlidingWindowMLA:
		n := min(int64(s.Window)-1+int64(u.batchedTokens), L)
		return cdiv(n, b) + 1
	case ChunkedLocalAttention:
		n := min(int64(s.ChunkSize)+int64(u.batchedTokens), L)
		return cdiv(n, b)
	case Mamba:
		switch u.mambaMode {
		case "all":
			return cdiv(L, b)
		case "align":
			return 2 + int64(u.specBlocks)
		default:
			return 1 + int64(u.specBlocks)
		}
	case CrossAttention:
		return cdiv(int64(u.encoderTokens), b)
	case EncoderOnlyAttention:
		return 0
	default:
		return cdiv(L, b)
	}
}

// maxMemory is max_memory_usage_bytes for one request.
func (s LayerSpec) maxMemory(u usage) int64 { return s.blocks(u) * s.PageBytes() }

func cdiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
