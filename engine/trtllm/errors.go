package trtllm

import "errors"

// Sentinel errors. Refusals that TensorRT-LLM itself would raise wrap
// ErrRefused; Plan returns the Result computed up to the refusal with them.
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

// RefusalError carries TensorRT-LLM's own message for a refusal and the knob
// that changes the outcome. It wraps ErrRefused.
type RefusalError struct {
	// Message is the text TensorRT-LLM raises, verbatim.
	Message string `json:"message"`
	// Knob is the LLM API / YAML key to change ("free_gpu_memory_fraction",
	// "max_num_tokens", ...), as trtllm-serve users spell it.
	Knob string `json:"knob"`
	// Fix says what to do, in one sentence.
	Fix string `json:"fix"`
}

func (e *RefusalError) Error() string {
	s := "trtllm: " + e.Message
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusalError) Unwrap() error { return ErrRefused }
