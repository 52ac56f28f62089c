// Package trtllm models how TensorRT-LLM sizes its paged KV cache, so that a
// plan can predict what a trtllm-serve (or LLM API) launch logs at startup:
// "Number of tokens per block: T.", "[MemUsageChange] Allocated X GiB for max
// tokens in paged KV cache (N).", the estimate lines of the version in use,
// the window clamp that lowers max_seq_len, and the refusals.
//
// TensorRT-LLM uses two different bytes-per-token functions, and the package
// keeps them apart:
//
//   - the estimate (KVCacheManager.get_cache_size_per_token) turns the
//     profiled memory into max_tokens; it floors head_dim × kv_heads ÷ TP as
//     one product, so 8 KV heads on 16 ranks count as half a head;
//   - the allocation (KVCacheManager.get_cache_bytes_per_token) sizes the
//     pool; it ceils the KV heads of every layer, so the same rank holds a
//     whole head. Its value per GPU is Result.CellSizeBytes.
//
// MLA latents (kv_lora_rank + qk_rope_head_dim, K only) are never split by
// tensor parallelism; NVFP4 counts one FP8 scale per 16 values; pipeline
// stages hold torch.tensor_split's share of the layers, with MTP / EAGLE3
// draft layers on the last stage; ranks agree on the minimum token count.
//
// Four version profiles cover what users run (see Profile and
// ResolveProfile): "0.x" (TensorRT engine builds and the C++ executor), "1.0"
// and "1.1" (the PyTorch backend, blocks rounded up), and "latest" (2026
// main: blocks rounded down, CUDA-graph warm-up blocks in the estimation dry
// run). docs/trtllm.md lists every rule with the source it was read from.
//
// It keeps the engine contract (package engine): Plan, ResolveProfile,
// AcceptedKVDTypes, MaxConcurrency and Patterns, and its refusals are
// *engine.Refusal values naming the flag that fixes them.
//
// The package is a pure library: it takes a model.Spec and byte figures and
// returns values. It never prints, reads flags or exits.
package trtllm
