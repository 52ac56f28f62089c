package vllm

import (
	"fmt"

	"github.com/kvcfg/kvcfg/model"
)

// checkNewPoolKinds refuses the models whose vLLM KV cache groups kvcfg
// does not model yet, saying what vLLM builds for them (docs/vllm.md#not-modelled).
//
// DeepSeek-V4 (vllm/models/deepseek_v4/attention.py, compressor.py,
// v1/kv_cache_interface.py SlidingWindowMLASpec): each layer's compressed
// MLA cache holds block_size // compress_ratio slots of 584 bytes (448 fp8
// NoPE + 128 bf16 RoPE + 8 scale bytes, fp8_ds_mla), a DeepseekV4SWACache
// of the sliding window, compressor-state caches padded to a 576-byte
// alignment and the c4 layers' indexer K cache, in KV cache groups of
// different block sizes; the block_size vLLM reports is the smallest
// group's.
//
// MiniMax-M3 (MiniMaxM3SparseForCausalLM): the sparse layers keep a
// lightning-indexer K cache next to the K/V cache.
func checkNewPoolKinds(s *model.Spec) error {
	switch {
	case s.Compressed != nil:
		return fmt.Errorf("%w: %s uses DeepSeek-V4 compressed attention; vLLM sizes it as KV cache groups of different block sizes (per-layer compressed MLA caches of block_size/compress_ratio 584-byte slots, a sliding-window cache, compressor-state caches padded to 576-byte alignment, the c4 indexer K cache; the reported block_size is the smallest group's), which kvcfg does not model: plan it with --engine sglang", ErrUnsupportedModel, s.Name)
	case s.SparseIndex != nil:
		return fmt.Errorf("%w: %s uses MiniMax-M3 sparse attention; vLLM keeps its lightning-indexer K cache as a separate KV cache spec, which kvcfg does not model: plan it with --engine sglang", ErrUnsupportedModel, s.Name)
	}
	return nil
}
