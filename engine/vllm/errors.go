package vllm

import (
	"errors"

	"github.com/kvcfg/kvcfg/engine"
)

// engineName is the Engine of this package's refusals.
const engineName = "vllm"

// Sentinel errors. Refusals that vLLM itself would raise at startup are
// *engine.Refusal values wrapping ErrRefused (and engine.ErrRefused); the
// Result computed up to the refusal is returned with them.
var (
	// ErrInvalidConfig reports an Input that fails Validate.
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

// refusal is vLLM's refusal with message msg, before Plan names its fix.
func refusal(msg string) *engine.Refusal {
	return &engine.Refusal{Engine: engineName, Message: msg, Err: ErrRefused}
}

// refusalMessage is vLLM's message of a refusal err, and whether err is one.
func refusalMessage(err error) (string, bool) {
	var re *engine.Refusal
	var tpe *TPError
	var be *BackendError
	switch {
	case errors.As(err, &re):
		return re.Message, true
	case errors.As(err, &tpe):
		return tpe.Message, true
	case errors.As(err, &be):
		return be.Message, true
	}
	return "", false
}
