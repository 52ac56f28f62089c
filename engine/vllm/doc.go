// Package vllm models how vLLM sizes its KV cache, so that a plan can predict
// exactly what a vLLM server logs at startup: "# GPU blocks", "GPU KV cache
// size: N tokens", "Maximum concurrency for L tokens per request: X.XXx",
// the not-enough-memory refusal with its binary-searched maximum model length,
// and the auto-fit of max_model_len.
//
// The model follows vLLM's own structure. Every attention or state layer
// reports one LayerSpec (full attention, MLA, the DeepSeek-V3.2 indexer,
// sliding window, chunked local attention, Mamba / linear-attention state,
// cross attention, encoder-only); the specs are grouped (one uniform group,
// one group of one type with different sizes, or hybrid groups with page-size
// unification and padding layers); the pool gets
// num_blocks = available // page // group_size blocks, the minimum across
// pipeline stages; and the report lines are rendered the way the chosen vLLM
// generation prints them.
//
// Seven version profiles cover the releases users run (see Profile and
// ResolveProfile): "0.6" and "0.7" (the V0 engine), "0.8" (0.8.0 to 0.10.x,
// V1 by default with its fallbacks to V0), "0.11", "0.13", "0.18" and
// "latest" (0.28 and main). A version number selects the rules of that
// exact release within its profile. The same memory yields different
// logged numbers on each. On CUDA the V1 engine's attention backend is
// modelled explicitly (Input.AttentionBackend, or vLLM's default
// selection for the release and compute capability): it fixes the KV
// block size, the hybrid Mamba alignment and which KV dtypes start.
// docs/vllm-rules.md lists every rule with its source.
//
// It keeps the engine contract (package engine): Plan, ResolveProfile,
// AcceptedKVDTypes, MaxConcurrency and Patterns, and its refusals are
// *engine.Refusal values naming the flag that fixes them.
//
// The package is a pure library: it takes a model.Spec and byte figures and
// returns values. It never prints, reads flags or exits.
package vllm
