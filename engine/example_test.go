package engine_test

import (
	"errors"
	"fmt"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/model"
)

// Every engine refuses a launch with one type: the engine's words, the
// flag to change and the value that fixes it. Here TensorRT-LLM refuses
// TP 3 for a model of 32 attention heads.
func ExampleRefusal() {
	spec, err := model.Parse([]byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
		"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
		"intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}`), "example")
	if err != nil {
		panic(err)
	}
	_, err = trtllm.Plan(spec, trtllm.Input{TPSize: 3, GPUMemoryBytes: 80 << 30})
	var r *engine.Refusal
	if errors.As(err, &r) {
		fmt.Println(errors.Is(err, engine.ErrRefused), r.Engine)
		fmt.Println(r.Message)
		fmt.Printf("fix: %s %s\n", r.Flag, r.Value)
	}
	// Output:
	// true trtllm
	// AssertionError: assert self.num_heads % tp_size == 0 (32 attention heads, tp_size 3)
	// fix: tp_size 4
}
