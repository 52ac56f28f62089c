package prefix

// SpecKind is vLLM's kv_cache_spec_kind: the kind of layer group a block
// belongs to, as KV events carry it (mirrored in llm-d's kvevents).
type SpecKind string

// The kv_cache_spec_kind values.
const (
	FullAttention         SpecKind = "full_attention"
	MLAAttention          SpecKind = "mla_attention"
	SlidingWindow         SpecKind = "sliding_window"
	SlidingWindowMLA      SpecKind = "sliding_window_mla"
	Mamba                 SpecKind = "mamba"
	ChunkedLocalAttention SpecKind = "chunked_local_attention"
	SinkFullAttention     SpecKind = "sink_full_attention"
	EncoderOnlyAttention  SpecKind = "encoder_only_attention"
	CrossAttention        SpecKind = "cross_attention"
)

// Medium names where a block lives.
const (
	MediumGPU = "GPU"
	MediumCPU = "CPU"
)

// Event is one KV cache event. The concrete types are BlockStored,
// BlockRemoved and AllBlocksCleared.
type Event interface {
	// Tag is the event's tag on the wire ("BlockStored", ...).
	Tag() string
}

// BlockStored reports full blocks that became resident, with the fields of
// vLLM's BlockStored event.
type BlockStored struct {
	// BlockHashes are the hashes of the stored blocks, in chain order.
	BlockHashes []Hash `json:"block_hashes"`
	// ParentBlockHash is the hash of the block before the first one (nil
	// when the first block starts a sequence).
	ParentBlockHash *Hash `json:"parent_block_hash"`
	// TokenIDs are the tokens of all stored blocks (BlockSize per block).
	TokenIDs []uint32 `json:"token_ids"`
	// BlockSize is the number of tokens per block.
	BlockSize int `json:"block_size"`
	// LoraID is the LoRA adapter id (nil: none).
	LoraID *int `json:"lora_id"`
	// Medium is where the blocks live ("GPU").
	Medium string `json:"medium"`
	// LoraName is the LoRA adapter name ("" on the wire as null).
	LoraName string `json:"lora_name,omitempty"`
	// ExtraKeys are the per-block extra keys (nil when no block has any).
	ExtraKeys [][]any `json:"extra_keys,omitempty"`
	// GroupIdx is the KV cache group of the blocks.
	GroupIdx int `json:"group_idx"`
	// KVCacheSpecKind is the kind of layer group.
	KVCacheSpecKind SpecKind `json:"kv_cache_spec_kind,omitempty"`
	// KVCacheSpecSlidingWindow is the window of sliding-window groups (0: none).
	KVCacheSpecSlidingWindow int `json:"kv_cache_spec_sliding_window,omitempty"`
}

// Tag implements Event.
func (BlockStored) Tag() string { return "BlockStored" }

// BlockRemoved reports blocks that were evicted or freed.
type BlockRemoved struct {
	// BlockHashes are the hashes of the removed blocks.
	BlockHashes []Hash `json:"block_hashes"`
	// Medium is where the blocks lived ("GPU").
	Medium string `json:"medium"`
	// GroupIdx is the KV cache group of the blocks.
	GroupIdx int `json:"group_idx"`
}

// Tag implements Event.
func (BlockRemoved) Tag() string { return "BlockRemoved" }

// AllBlocksCleared reports that the whole cache was cleared.
type AllBlocksCleared struct{}

// Tag implements Event.
func (AllBlocksCleared) Tag() string { return "AllBlocksCleared" }

// Keys returns the 64-bit wire keys of hashes (Hash.Uint64), appended to dst.
func Keys(dst []uint64, hashes []Hash) []uint64 {
	for _, h := range hashes {
		dst = append(dst, h.Uint64())
	}
	return dst
}
