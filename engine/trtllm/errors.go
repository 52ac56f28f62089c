package trtllm

import "errors"

// engineName is the Engine of this package's refusals.
const engineName = "trtllm"

// Sentinel errors. Refusals that TensorRT-LLM itself would raise are
// *engine.Refusal values wrapping ErrRefused (and engine.ErrRefused); Plan
// returns the Result computed up to the refusal with them. A refusal's Flag
// is the LLM API / YAML key to change ("free_gpu_memory_fraction",
// "max_num_tokens", ...), as trtllm-serve users spell it.
var (
	// ErrInvalidInput reports an Input that fails Validate.
	ErrInvalidInput = errors.New("trtllm: invalid input")
	// ErrUnknownVersion reports a --trtllm-version that is not understood.
	ErrUnknownVersion = errors.New("trtllm: unknown version")
	// ErrUnsupportedDType reports a kv_cache_dtype TensorRT-LLM (or this
	// profile of it) does not accept.
	ErrUnsupportedDType = errors.New("trtllm: unsupported kv cache dtype")
	// ErrUnsupportedModel reports a model shape whose TensorRT-LLM cache
	// manager kvcfg does not model (Mamba hybrids, DeepSeek sparse attention).
	ErrUnsupportedModel = errors.New("trtllm: unsupported model")
	// ErrRefused reports that TensorRT-LLM would refuse: an assertion at
	// startup, or a request it rejects.
	ErrRefused = errors.New("trtllm: engine refuses")
)
