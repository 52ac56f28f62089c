package vllm_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// DeepSeek-V4-Flash at TP 8 with 100 GiB of KV cache per GPU, 8192
// batched tokens (two batches in flight: 16,384), max_model_len 1,048,576.
//
// Block stride (packed layout): the largest group page, the compressed
// group's 1,002,240 bytes; num_blocks = 107,374,182,400 // 1,002,240 =
// 107,134.
//
// Blocks per request: compressed cdiv(1,048,576, 256) = 4,096; each SWA
// group cdiv(min(127 + 16,384, L), 64) + 1 = 258 + 1 = 259; c4 states
// cdiv(7 + 16,384, 4) + 1 = 4,098 + 1 = 4,099; c128 states cdiv(127 +
// 16,384, 8) + 1 = 2,064 + 1 = 2,065; in all 4,096 + 2·259 + 4,099 + 2,065
// = 10,778. Concurrency 107,134 / 10,778 = 9.94x; "GPU KV cache size"
// int(9.9400… × 1,048,576) = 10,422,911 tokens.
//
// Admission: 22 layer tuples × 10,778 pages × (37,440 + 8,640 + 1,728 =
// 47,808) = 11,336,041,728 bytes.
func TestDSV4FlashPlan(t *testing.T) {
	s, err := catalog.Load("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	res, err := vllm.Plan(s, vllm.Input{Version: "latest", TensorParallelSize: 8, KVCacheMemoryBytes: 100 << 30, MaxNumBatchedTokens: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if res.NumGPUBlocks != 107134 || res.BlocksPerRequest != 10778 || res.KVCacheSizeTokens != 10422911 || res.NeededBytes != 11336041728 {
		t.Errorf("blocks %d, per request %d, tokens %d, needed %d", res.NumGPUBlocks, res.BlocksPerRequest, res.KVCacheSizeTokens, res.NeededBytes)
	}
	if res.BlockSize != 4 || res.SchedulerBlockSize != 256 || res.HashBlockSize != 4 {
		t.Errorf("block sizes %d / %d / %d, want 4 (smallest group), 256, 4", res.BlockSize, res.SchedulerBlockSize, res.HashBlockSize)
	}
	if res.KVCacheDType.Name != "fp8_ds_mla" || res.PageBytes != 1002240 {
		t.Errorf("dtype %s, page %d", res.KVCacheDType.Name, res.PageBytes)
	}
	line := "GPU KV cache size: 10,422,911 tokens, Maximum concurrency for 1,048,576 tokens per request: 9.94x"
	if !slices.Contains(res.LogLines, line) {
		t.Errorf("log lines %q lack %q", res.LogLines, line)
	}
}

// With 8 GiB the request does not fit: the admission check (8 GiB less the
// null block, 1,002,240) refuses 1,048,576 tokens; the largest length whose
// 22 × pages × 47,808 fits is 379,904 (binary search on the same formula).
func TestDSV4FlashAdmission(t *testing.T) {
	s, err := catalog.Load("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	res, err := vllm.Plan(s, vllm.Input{Version: "latest", TensorParallelSize: 8, KVCacheMemoryBytes: 8 << 30, MaxNumBatchedTokens: 8192})
	var re *engine.Refusal
	if !errors.As(err, &re) {
		t.Fatalf("err %v, want a refusal", err)
	}
	if res.EstimatedMaxModelLen != 379904 || !strings.Contains(re.Message, "estimated maximum model length is 379904") {
		t.Errorf("estimate %d: %s", res.EstimatedMaxModelLen, re.Message)
	}
}

// The profiles before latest cover releases without DeepseekV4ForCausalLM;
// what kvcfg does not model is a kvcfg error, not a refusal.
func TestDSV4Errors(t *testing.T) {
	s, err := catalog.Load("deepseek-ai/DeepSeek-V4-Pro")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   vllm.Input
		is   error
		want string
	}{
		{vllm.Input{Version: "0.18"}, vllm.ErrUnsupportedModel, "Model architectures ['DeepseekV4ForCausalLM'] are not supported for now."},
		{vllm.Input{KVCacheDType: "bfloat16"}, vllm.ErrUnsupportedDType, "fp8_ds_mla"},
		{vllm.Input{BlockSize: 64}, vllm.ErrInvalidConfig, "256-token blocks"},
		{vllm.Input{PipelineParallelSize: 2}, vllm.ErrInvalidConfig, "pipeline parallelism"},
	} {
		tc.in.TensorParallelSize, tc.in.KVCacheMemoryBytes = 8, 100<<30
		_, err := vllm.Plan(s, tc.in)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.in, err)
		}
	}
}

// With the MXFP4 indexer cache (68 bytes per slot: 64 × 68 = 4,352 → 4,608
// per page) and the MTP layer's SWA cache (44 SWA layers, still two groups
// of 22), the compressed group holds 21 × 37,440 + 21 × 4,608 + 20 × 1,728
// = 917,568 bytes, the block stride. 8 GiB // 917,568 = 9,361 blocks.
//
// 2048 batched tokens (4,096 in flight), 1,048,576 tokens: blocks per
// request 4,096 + 2 × (cdiv(127 + 4,096, 64) + 1 = 67) + (cdiv(7 + 4,096,
// 4) + 1 = 1,027) + (cdiv(127 + 4,096, 8) + 1 = 529) = 5,786; concurrency
// 9,361 / 5,786 = 1.6179 → "1.62x", int(1.6179… × 1,048,576) = 1,696,460
// tokens. Admission: 22 × 5,786 × (37,440 + 4,608 + 1,728 = 43,776) =
// 5.19 GiB ≤ 8 GiB.
//
// At 8192 batched tokens the same launch needs 22 × 10,778 × 43,776 =
// 9.667 GiB and is refused; the estimate searches 8 GiB less the null
// block (one stride, vllm#47272): 572,416 (572,672 before that change).
func TestDSV4FlashFP4IndexerMTP(t *testing.T) {
	s, err := catalog.Load("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	in := vllm.Input{Version: "latest", TensorParallelSize: 8, KVCacheMemoryBytes: 8 << 30, MaxNumBatchedTokens: 2048,
		FP4IndexerCache: true, DraftLayers: 1}
	res, err := vllm.Plan(s, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.PageBytes != 917568 || res.NumGPUBlocks != 9361 || res.BlocksPerRequest != 5786 || res.KVCacheSizeTokens != 1696460 {
		t.Errorf("stride %d, blocks %d, per request %d, tokens %d", res.PageBytes, res.NumGPUBlocks, res.BlocksPerRequest, res.KVCacheSizeTokens)
	}
	if n := len(res.Groups); n != 5 || len(res.Groups[1].Layers) != 22 || len(res.Groups[2].Layers) != 22 {
		t.Errorf("%d groups: %+v", n, res.Groups)
	}
	in.MaxNumBatchedTokens = 8192
	res, err = vllm.Plan(s, in)
	var re *engine.Refusal
	if !errors.As(err, &re) || res.NeededBytes != 22*10778*43776 || res.EstimatedMaxModelLen != 572416 {
		t.Errorf("err %v, needed %d, estimate %d", err, res.NeededBytes, res.EstimatedMaxModelLen)
	}
}
