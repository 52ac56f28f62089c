package trtllm

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// checkTensorParallel applies TensorRT-LLM's one head rule at tp_size tp:
// the attention module splits the query heads evenly over the TP ranks and
// asserts it (PyTorch backend, tensorrt_llm/_torch/modules/attention.py:
// "assert self.num_heads % tp_size == 0", a bare AssertionError; engine
// builds, tensorrt_llm/layers/attention.py: "num_attention_heads must be
// divisible by tp_size"). KV heads are not checked: they are rounded up per
// rank ((num_key_value_heads + tp_size - 1) // tp_size), so 8 KV heads run
// on TP 16. With enable_attention_dp attention runs at tp_size 1 and any
// size plans. The refusal names tp_size and the nearest size that splits
// the heads.
func checkTensorParallel(s *model.Spec, tp int, attentionDP, engineBuild bool) error {
	heads := s.NumAttentionHeads
	if tp <= 1 || attentionDP || heads <= 0 || heads%tp == 0 {
		return nil
	}
	msg := fmt.Sprintf("AssertionError: assert self.num_heads %% tp_size == 0 (%d attention heads, tp_size %d)", heads, tp)
	if engineBuild {
		msg = fmt.Sprintf("AssertionError: num_attention_heads must be divisible by tp_size (%d attention heads, tp_size %d)", heads, tp)
	}
	var valid []string
	nearest := 0
	for t := 1; t <= heads && t <= 1024; t++ {
		if heads%t != 0 {
			continue
		}
		valid = append(valid, fmt.Sprint(t))
		if nearest < tp || (t > tp && nearest > t) {
			nearest = t
		}
	}
	return &engine.Refusal{Engine: engineName, Err: ErrRefused, Message: msg, Flag: "tp_size", Value: fmt.Sprint(nearest),
		Hint: fmt.Sprintf("the %d attention heads do not split over tp_size %d; use --tp_size %d (or enable_attention_dp); TP sizes that split them: %s",
			heads, tp, nearest, strings.Join(valid, ", "))}
}

// checkMaxSeqLen applies the PyTorch backend's model limit to an explicit
// max_seq_len: PyTorchModelEngine._init_max_seq_len logs "Specified
// self.max_seq_len=N is larger than what the model can support (M).
// Setting max_seq_len to M." and serves at most M tokens per request
// (unless TLLM_ALLOW_LONG_MAX_MODEL_LEN, on the releases that read it).
// kvcfg answers it as SGLang and vLLM, which refuse such a context at
// start-up: a refusal naming max_seq_len and the longest context, since
// the context asked for is never served. M is the model's context length
// (max_position_embeddings, scaled by the rope factor where TensorRT-LLM
// scales it). Engine builds fix max_seq_len when they are built.
func checkMaxSeqLen(s *model.Spec, maxSeqLen int, engineBuild bool) error {
	if engineBuild || maxSeqLen <= 0 || s.ContextLength <= 0 || maxSeqLen <= s.ContextLength {
		return nil
	}
	return &engine.Refusal{Engine: engineName, Err: ErrRefused, Flag: "max_seq_len", Value: fmt.Sprint(s.ContextLength),
		Message: fmt.Sprintf("Specified self.max_seq_len=%d is larger than what the model can support (%d). Setting max_seq_len to %d.", maxSeqLen, s.ContextLength, s.ContextLength),
		Hint:    fmt.Sprintf("requests longer than %d tokens are never served; set --max_seq_len %d or less", s.ContextLength, s.ContextLength)}
}
