package trtllm

import (
	"fmt"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// StageLayers splits n decoder layers over pp pipeline stages the way
// Mapping.pp_layers does (torch.tensor_split): every stage gets n / pp
// layers and the first n % pp stages one more. It returns nil when pp < 1
// or pp > n (TensorRT-LLM asserts "pp size cannot be larger than
// num_hidden_layers").
func StageLayers(n, pp int) []int {
	if pp < 1 || pp > n {
		return nil
	}
	out := make([]int, pp)
	for i := range out {
		out[i] = n / pp
		if i < n%pp {
			out[i]++
		}
	}
	return out
}

// engineStageLayers is the older Mapping.pp_layers of engine builds:
// num_layers // pp_size layers on every stage.
func engineStageLayers(n, pp int) []int {
	if pp < 1 || pp > n {
		return nil
	}
	out := make([]int, pp)
	for i := range out {
		out[i] = n / pp
	}
	return out
}

// tpForKV is the tensor-parallel size the KV heads are split over: 1 with
// attention data parallelism (every rank holds whole heads).
func tpForKV(tp int, attentionDP bool) int64 {
	if attentionDP || tp < 1 {
		return 1
	}
	return int64(tp)
}

// mhaDims returns the KV heads and head dim TensorRT-LLM reads from the
// config: num_key_value_heads (num_attention_heads when absent) and head_dim
// (hidden_size // num_attention_heads when absent).
func mhaDims(s *model.Spec) (kvHeads, headDim int64) {
	kvHeads = int64(s.NumKVHeads)
	if kvHeads == 0 {
		kvHeads = int64(s.NumAttentionHeads)
	}
	headDim = int64(s.HeadDim)
	if headDim == 0 && s.NumAttentionHeads > 0 {
		headDim = int64(s.HiddenSize / s.NumAttentionHeads)
	}
	return kvHeads, headDim
}

// EstimateBytesPerToken is KVCacheManager.get_cache_size_per_token, the cost
// TensorRT-LLM divides the profiled memory by to get max_tokens, for one rank
// holding layers attention layers (at least 1 is counted):
//
//   - MLA (the config has kv_lora_rank): head = kv_lora_rank +
//     qk_rope_head_dim, K only, not divided by TP;
//   - otherwise head = head_dim × num_kv_heads // TP as one floored product
//     (TP = 1 with attention DP), K and V;
//   - elements E = kv_factor × layers × head; fp8 and int8 E bytes, nvfp4
//     ceil(E/2) + ceil(E/16), any other cache 2E.
func EstimateBytesPerToken(s *model.Spec, kv CacheDType, tp int, attentionDP bool, layers int) int64 {
	return estimateBytes(s, kv, tpForKV(tp, attentionDP), layers, true)
}

func estimateBytes(s *model.Spec, kv CacheDType, tp int64, layers int, nvfp4Scales bool) int64 {
	if s == nil {
		return 0
	}
	var head, factor int64
	if isMLA(s) {
		head, factor = int64(s.KVLoraRank+s.QKRopeHeadDim), 1
	} else {
		kvh, hd := mhaDims(s)
		head, factor = hd*kvh/max(tp, 1), 2
	}
	e := factor * int64(max(layers, 1)) * head
	switch {
	case kv.oneByte():
		return e
	case kv.Name == "nvfp4" && nvfp4Scales:
		return (e+1)/2 + (e+15)/16
	default:
		return 2 * e
	}
}

// AllocationBytesPerToken is KVCacheManager.get_cache_bytes_per_token, the
// cost of one token in the pool TensorRT-LLM allocates, for one rank holding
// layers attention layers (an empty stage holds 1): kv_factor × Σ local heads
// per layer × head_dim × element size, where every layer holds
// ceil(num_kv_heads / TP) heads (TP = 1 with attention DP) and an MLA
// manager one K-only head of kv_lora_rank + qk_rope_head_dim. NVFP4 adds
// one FP8 scale per 16 values and needs the element count to be a multiple
// of 16.
func AllocationBytesPerToken(s *model.Spec, kv CacheDType, tp int, attentionDP bool, layers int) (int64, error) {
	if s == nil {
		return 0, fmt.Errorf("%w: no model", ErrInvalidInput)
	}
	e := allocElements(s, tpForKV(tp, attentionDP), max(layers, 1))
	return elementBytes(kv, e)
}

// allocElements is kv_factor × Σ heads per layer × head_dim.
func allocElements(s *model.Spec, tp int64, layers int) int64 {
	if isMLA(s) {
		return int64(layers) * int64(s.KVLoraRank+s.QKRopeHeadDim)
	}
	kvh, hd := mhaDims(s)
	heads := (kvh + tp - 1) / max(tp, 1)
	return 2 * int64(layers) * heads * hd
}

// elementBytes is get_size_in_bytes plus the NVFP4 scale pool.
func elementBytes(kv CacheDType, e int64) (int64, error) {
	switch kv.Name {
	case "fp8", "int8":
		return e, nil
	case "nvfp4":
		if e%16 != 0 {
			return 0, &engine.Refusal{Engine: engineName, Err: ErrRefused, Message: "NVFP4 cache size must be divisible by quant vector size", Flag: "kv_cache_dtype",
				Hint: fmt.Sprintf("%d values per token are not a multiple of 16; use fp8", e)}
		}
		return e/2 + e/16, nil
	case "float32":
		return 4 * e, nil
	default:
		return 2 * e, nil
	}
}
