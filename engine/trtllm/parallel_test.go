package trtllm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// TensorRT-LLM's attention module asserts that the query heads split over
// tp_size (issue 32, item 5): TP 3 on a 32-head model is refused with the
// nearest size that works; KV heads are rounded up per rank, so 8 KV heads
// on TP 16 plan; attention DP runs attention at TP 1.
func TestTensorParallelHeads(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct") // 32 heads, 8 KV heads
	for _, c := range []struct {
		name    string
		in      trtllm.Input
		want    string // "" plans
		value   string
		profile string
	}{
		{"tp3", trtllm.Input{TPSize: 3}, "assert self.num_heads % tp_size == 0 (32 attention heads, tp_size 3)", "4", ""},
		{"tp5 1.0", trtllm.Input{TPSize: 5, Version: "1.0"}, "assert self.num_heads % tp_size == 0", "8", ""},
		{"tp3 engine build", trtllm.Input{TPSize: 3, Version: "0.x"}, "num_attention_heads must be divisible by tp_size", "4", ""},
		{"tp48", trtllm.Input{TPSize: 48}, "tp_size 48", "32", ""},
		{"tp16 (8 KV heads round up)", trtllm.Input{TPSize: 16}, "", "", ""},
		{"tp3 attention DP", trtllm.Input{TPSize: 3, EnableAttentionDP: true}, "", "", ""},
	} {
		c.in.GPUMemoryBytes = 80 << 30
		_, err := trtllm.Plan(s, c.in)
		if c.want == "" {
			if r, ok := errors.AsType[*engine.Refusal](err); ok && r.Flag == "tp_size" {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		r, ok := errors.AsType[*engine.Refusal](err)
		if !ok || r.Flag != "tp_size" || r.Value != c.value || !strings.Contains(r.Message, c.want) || !errors.Is(err, trtllm.ErrRefused) || !strings.Contains(r.Hint, "--tp_size "+c.value) {
			t.Errorf("%s: %#v (%v), want a tp_size refusal %q with value %s", c.name, r, err, c.want, c.value)
		}
	}
}
