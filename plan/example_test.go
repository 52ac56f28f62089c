package plan_test

import (
	"context"
	"fmt"
	"os"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// Reproduce a real run: SGLang 0.5.3 logged 78.50 GiB free before loading
// Llama-3.1-8B-Instruct on an H100 and 63.54 GiB after (docs/sglang.md#ex1).
// SGLangVersion pins the run's release; without it the newest profile is used.
func ExampleRun() {
	pre, _ := units.ParseSize("78.50GiB")
	post, _ := units.ParseSize("63.54GiB")
	r, err := plan.Run(context.Background(), plan.Request{
		Model:              "meta-llama/Llama-3.1-8B-Instruct",
		GPU:                "H100-80GB",
		SGLangVersion:      "0.5.3",
		PreLoadFreeMemory:  pre,
		PostLoadFreeMemory: post,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.MemFractionStatic, r.MaxTotalNumTokens, r.MaxRunningRequests)
	fmt.Println(r.LogLines[0])
	// Output:
	// 0.835 414412 2048
	// KV Cache is allocated. #tokens: 414412, K size: 25.29 GB, V size: 25.29 GB
}

// Print a plan the way `kvcfg plan` does: the same run with an FP8 KV
// cache, which halves the bytes per token and so doubles the tokens.
func ExampleReport_WriteText() {
	pre, _ := units.ParseSize("78.50GiB")
	post, _ := units.ParseSize("63.54GiB")
	r, err := plan.Run(context.Background(), plan.Request{
		Model:              "meta-llama/Llama-3.1-8B-Instruct",
		GPU:                "H100-80GB",
		SGLangVersion:      "0.5.3",
		KVCacheDType:       "fp8_e4m3",
		PreLoadFreeMemory:  pre,
		PostLoadFreeMemory: post,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Serves: 6 requests of 131,072 tokens fit at once (target 1).
	// bound by kv_pool: 6 requests at once (other limits: kv_capacity=414,412, heuristic_estimate=3,237); raised by --mem-fraction-static
	//
	// engine                             sglang
	// model                              meta-llama/Llama-3.1-8B-Instruct (LlamaForCausalLM, gqa attention)
	// gpu                                1 × H100-80GB (79.65 GiB), tp 1, pp 1, dp 1
	// kv_cache_dtype                     fp8_e4m3 → fp8_e4m3 (torch.float8_e4m3fn)
	// sglang_profile                     SGLang 0.5.3 is sized with the 0.5.3 profile (0.5.3–0.5.9: MiB reserve from chunked prefill and CUDA-graph size)
	// mem_fraction_static                0.835
	// page_size                          1
	// context_length                     131,072
	// configurator                       DefaultPoolConfigurator, 32 KV layers per GPU
	// cell_size                          65,536 bytes per token per GPU
	// max_total_num_tokens               828,825
	// max_running_requests               3,237
	// max concurrency at context length  6
	// K / V size                         25.29 GiB / 25.29 GiB
	//
	// MEMORY PER GPU
	//   total                                79.19 GiB
	//   runtime overhead                     706.00 MiB
	//   free before weights                  78.50 GiB
	//   weights                              14.96 GiB (measured)
	//   free after weights                   63.54 GiB
	//   reserved (activations, CUDA graphs)  12.95 GiB
	//   KV budget                            50.59 GiB
	//   KV pool                              50.59 GiB
	//   unused                               38.40 KiB
	//
	// ENGINE LOG
	//   KV Cache is allocated. #tokens: 828825, K size: 25.29 GB, V size: 25.29 GB
}
