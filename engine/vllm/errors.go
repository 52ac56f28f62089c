package vllm

import "errors"

// Sentinel errors. Refusals that vLLM itself would raise at startup wrap
// ErrRefused; the Result computed up to the refusal is returned with them.
var (
	// ErrInvalidConfig reports a Config that fails Validate.
	ErrInvalidConfig = errors.New("vllm: invalid config")
	// ErrUnknownVersion reports a --vllm-version that is not understood.
	ErrUnknownVersion = errors.New("vllm: unknown version")
	// ErrUnsupportedDType reports a KV cache dtype this engine (or this
	// profile of it) does not accept.
	ErrUnsupportedDType = errors.New("vllm: unsupported kv cache dtype")
	// ErrUnsupportedModel reports a model shape the chosen profile cannot
	// serve or that kvcfg does not model for vLLM.
	ErrUnsupportedModel = errors.New("vllm: unsupported model")
	// ErrRefused reports that vLLM would refuse to start (not enough KV cache
	// memory, max_model_len too long, pages that cannot be unified).
	ErrRefused = errors.New("vllm: engine refuses to start")
)

// RefusalError carries vLLM's own message for a startup refusal. It wraps
// ErrRefused.
type RefusalError struct {
	// Message is the text vLLM raises, verbatim.
	Message string
}

func (e *RefusalError) Error() string { return "vllm: " + e.Message }

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusalError) Unwrap() error { return ErrRefused }
