package vllm_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/model"
)

// A Llama-3.1-8B run that had 2.89 GiB for its KV cache, as each vLLM
// generation would log it at max_model_len 8192.
func ExamplePlan() {
	llama := &model.Spec{Name: "Llama-3.1-8B", NumLayers: 32, NumAttentionHeads: 32, NumKVHeads: 8,
		HeadDim: 128, ContextLength: 131072, ModelDType: dtype.BFloat16}
	for _, v := range []string{"0.6", "0.11", "latest"} {
		res, err := vllm.Plan(llama, vllm.Input{Version: v, MaxModelLen: 8192,
			Memory: vllm.Memory{AvailableKVBytes: 1478*2<<20 + 1<<20}})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %d B/token\n", v, res.BytesPerToken)
		for _, l := range res.LogLines {
			fmt.Println("  " + l)
		}
	}
	// Output:
	// 0.6: 131072 B/token
	//   # GPU blocks: 1478, # CPU blocks: 2048
	//   Maximum concurrency for 8192 tokens per request: 2.89x
	// 0.11: 131072 B/token
	//   Available KV cache memory: 2.89 GiB
	//   GPU KV cache size: 23,648 tokens
	//   Maximum concurrency for 8,192 tokens per request: 2.89x
	// latest: 131072 B/token
	//   Available KV cache memory: 2.89 GiB
	//   GPU KV cache size: 23,648 tokens, Maximum concurrency for 8,192 tokens per request: 2.89x
}
