package sglang_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/units"
)

// The KV cache dtype SGLang stores for --kv-cache-dtype: "auto" follows the
// model (or the checkpoint's FP8 KV calibration), an explicit format is
// stored as it says, and HIP parts with float8_e4m3fnuz store that instead.
func ExampleResolveKV() {
	for _, c := range []struct {
		what string
		req  sglang.KVRequest
	}{
		{"auto", sglang.KVRequest{ModelDType: dtype.BFloat16}},
		{"auto, FP8-calibrated checkpoint", sglang.KVRequest{ModelDType: dtype.BFloat16, KVCacheQuantAlgo: "FP8"}},
		{"fp8_e4m3", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: dtype.BFloat16}},
		{"fp8_e4m3 on MI300X", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: dtype.BFloat16, Platform: sglang.HIP, FNUZ: true}},
		{"nvfp4", sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: dtype.BFloat16}},
	} {
		kv, err := sglang.ResolveKV(c.req)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s, torch %s, %d B per element\n", c.what, kv.Format.Name, kv.DType, kv.ElementSize)
	}
	// Output:
	// auto: bf16, torch bfloat16, 2 B per element
	// auto, FP8-calibrated checkpoint: fp8_e4m3, torch float8_e4m3fn, 1 B per element
	// fp8_e4m3: fp8_e4m3, torch float8_e4m3fn, 1 B per element
	// fp8_e4m3 on MI300X: fp8_e4m3, torch float8_e4m3fnuz, 1 B per element
	// nvfp4: nvfp4, torch float4_e2m1fn_x2, 1 B per element
}

// Worked example 1 (docs/sglang.md#ex1): Llama-3.1-8B on an H100 that
// logged 78.50 GiB free before loading the weights and 63.54 GiB after,
// sized as SGLang 0.5.3 does (the example's release; without Version the
// newest profile is used).
func ExampleNew() {
	pre, _ := units.ParseSize("78.50GiB")
	post, _ := units.ParseSize("63.54GiB")
	llama := &model.Spec{Name: "Llama-3.1-8B", Architecture: "LlamaForCausalLM", NumLayers: 32, HiddenSize: 4096,
		NumAttentionHeads: 32, NumKVHeads: 8, HeadDim: 128, VHeadDim: 128, Attention: model.MHA,
		ContextLength: 131072, ModelDType: dtype.BFloat16}
	c, err := sglang.New(sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Version: "0.5.3",
		Hardware:          sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"},
		PostLoadFreeBytes: post.Bytes()})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Configure(pre.Bytes())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Derived().MemFractionStatic, res.MaxTotalNumTokens, res.MaxRunningRequests)
	fmt.Println(res.Logs[0])
	// Output:
	// 0.835 414412 2048
	// KV Cache is allocated. #tokens: 414412, K size: 25.29 GB, V size: 25.29 GB
}
