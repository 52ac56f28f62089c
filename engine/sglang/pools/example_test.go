package pools_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/pools"
	"github.com/kvcfg/kvcfg/model"
)

// From a configured rank to ready pools (request table, allocator, KV
// buffers), for a tiny model: 104 MiB free after loading, less the 100 MiB
// reserved, leaves 4 MiB, 4096 tokens of 4 layers × 2 heads × (64 + 64)
// fp8 bytes. Each K buffer holds one page more than the tokens (4112 rows);
// the request table is (8 + 1) × (2048 + 4) int32 slots.
func ExampleNew() {
	const mib = 1 << 20
	tiny := &model.Spec{Name: "tiny", Architecture: "LlamaForCausalLM", NumLayers: 4, HiddenSize: 512,
		NumAttentionHeads: 8, NumKVHeads: 2, HeadDim: 64, VHeadDim: 64, Attention: model.MHA,
		ContextLength: 2048, ModelDType: dtype.BFloat16}
	in := sglang.Input{Spec: tiny, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
		Args:              sglang.ServerArgs{KVCacheDType: "fp8_e4m3", PageSize: 16, MemFractionStatic: 0.9, MaxRunningRequests: 8},
		Hardware:          sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"},
		PostLoadFreeBytes: 104 * mib}
	c, err := sglang.New(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Configure(1000 * mib) // reserves 100 MiB: 4 MiB left for the KV cache
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := pools.New(in, c, res)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := p.Bytes()
	fmt.Println("tokens:", res.MaxTotalNumTokens, "allocator:", p.Allocator.Size(), "requests:", res.MaxRunningRequests)
	fmt.Println("K:", b.K, "V:", b.V, "request table:", b.ReqToToken)
	// Output:
	// tokens: 4096 allocator: 4096 requests: 8
	// K: 2105344 V: 2105344 request table: 73872
}
