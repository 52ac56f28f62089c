package explain_test

import (
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/explain"
)

// TensorRT-LLM's KV messages are recognised with their knob.
func TestTRTLLMMessages(t *testing.T) {
	tests := []struct {
		line, kind, knob string
	}{
		{"[TRT-LLM] [W] Adjusted max_seq_len to 86720", "adjusted_max_seq_len", "--max_seq_len"},
		{"[TRT-LLM] [W] Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and 86711, respectively). The smaller value will be used.", "both_fraction_and_max_tokens", "kv_cache_config.max_tokens"},
		{"RuntimeError: Impossible to fit in any sequence in kvCache", "impossible_to_fit", "--kv_cache_free_gpu_memory_fraction"},
		{"ValueError: The sum of prompt length (9000.0), query length (0) should not exceed max_num_tokens (8192)", "prompt_over_max_num_tokens", "--max_num_tokens"},
	}
	for _, tt := range tests {
		e, err := explain.Explain(tt.line)
		if err != nil {
			t.Errorf("%q: %v", tt.line, err)
			continue
		}
		if e.Engine != explain.TRTLLM || e.Kind != tt.kind || e.Knob != tt.knob || !strings.Contains(e.Advice, "kvcfg plan --engine trtllm") {
			t.Errorf("%q: engine %q kind %q knob %q advice %q", tt.line, e.Engine, e.Kind, e.Knob, e.Advice)
		}
	}
}
