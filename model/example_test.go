package model_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/model"
)

func ExampleParse() {
	cfg := []byte(`{
	  "architectures": ["LlamaForCausalLM"],
	  "hidden_size": 4096, "num_hidden_layers": 32,
	  "num_attention_heads": 32, "num_key_value_heads": 8,
	  "max_position_embeddings": 131072,
	  "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
	  "torch_dtype": "bfloat16"
	}`)
	s, err := model.Parse(cfg, "llama-3.1-8b")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.NumLayers, s.NumKVHeads, s.HeadDim, s.Attention, s.ContextLength, s.ModelDType)
	// Output: 32 8 128 mha 131072 bfloat16
}

func ExampleLinearSpec_StateShapes() {
	l := &model.LinearSpec{Kind: "gdn", NumHeads: 32, HeadDim: 128, StateSize: 128, NGroups: 16, ConvKernel: 4, IntermediateSize: 4096}
	conv, ssm, err := l.StateShapes(4)
	fmt.Println(conv, ssm, err)
	// Output: [[2048 3]] [8 128 128] <nil>
}
