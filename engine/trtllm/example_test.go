package trtllm_test

import (
	"fmt"
	"os"

	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/model"
)

// gpt-oss-120b on a 1.1.0rc3 trtllm-serve whose log said "available KV cache
// memory when calculating max tokens: 5.95 GiB".
func ExamplePlan() {
	data, err := os.ReadFile("testdata/openai__gpt-oss-120b.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := model.Parse(data, "openai/gpt-oss-120b")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := trtllm.Plan(spec, trtllm.Input{Version: "1.1.0rc3", KVCacheMemory: 6393065472})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d B/token, %d blocks of %d, max_seq_len %d, %.2f requests of 32k\n",
		res.CellSizeBytes, res.NumBlocks, res.TokensPerBlock, res.MaxSeqLen, res.MaxConcurrency(32768))
	for _, l := range res.LogLines[len(res.LogLines)-8:] {
		fmt.Println(l)
	}
	// Output:
	// 73728 B/token, 2710 blocks of 32, max_seq_len 86720, 2.65 requests of 32k
	// Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and 86711, respectively). The smaller value will be used.
	// Attention window size 131072 exceeds upper bound 86720 for available blocks. Reducing to 86720.
	// Adjusted max_attention_window_vec to [86720]
	// Adjusted window size 131072 to 86720 in blocks_per_window
	// Adjusted max_seq_len to 86720
	// Number of tokens per block: 32.
	// [MemUsageChange] Allocated 5.95 GiB for max tokens in paged KV cache (86720).
	// max_seq_len=86720, max_num_requests=2048, max_num_tokens=8192, max_batch_size=2048
}
