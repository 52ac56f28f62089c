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
// Three version profiles cover what users run (see Profile): "0.6" (the V0
// engine, up to 0.10), "0.11" (V1 with 0.11.x reporting) and "latest" (the
// newest main). The same memory yields different logged numbers on each.
//
// The package is a pure library: it takes a model.Spec and byte figures and
// returns values. It never prints, reads flags or exits.
package vllm
