package plan_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// The host KV tier of each engine for Llama-3.1-8B in bf16: 131,072 B per
// token on one GPU (32 layers × 8 KV heads × 128 × 2 × 2 B), half that per
// rank at TP 2. None of them changes the GPU pool.
func TestHostTierPerEngine(t *testing.T) {
	const llama = "meta-llama/Llama-3.1-8B-Instruct"
	tests := []struct {
		name             string
		req              plan.Request
		option           string
		tokens, blocks   int64
		bytes, total     int64
		block, bptExpect int64
	}{
		// vLLM: cpu_bytes_to_use = 64·2^30 over the group; a CPU block costs
		// a 16-token GPU block on every rank: 2,097,152 B at TP 1 → 32,768
		// blocks; at TP 2, 1,048,576 B × 2 ranks → 32,768 blocks again,
		// 32 GiB per rank.
		{"vllm tp1", plan.Request{Engine: "vllm", Model: llama, GPU: "H100", KVOffloadingSize: 64}, "--kv-offloading-size", 524_288, 32_768, 64 << 30, 64 << 30, 16, 131_072},
		{"vllm tp2", plan.Request{Engine: "vllm", Model: llama, GPU: "H100", TPSize: 2, KVOffloadingSize: 64}, "--kv-offloading-size", 524_288, 32_768, 32 << 30, 64 << 30, 16, 65_536},
		// TensorRT-LLM: 64 GiB // 131,072 B // 32 tokens per block = 16,384.
		{"trtllm", plan.Request{Engine: "trtllm", Model: llama, GPU: "H100", HostCacheSize: units.Size(64 << 30)}, "kv_cache_config.host_cache_size", 524_288, 16_384, 64 << 30, 64 << 30, 32, 131_072},
		// SGLang: --hicache-size 100 (GB) at page 64: int(100e9 // 131,072) =
		// 762,939 → 762,939 // 64 + 1 = 11,921 pages = 762,944 tokens =
		// 100,000,595,968 B.
		{"sglang size", plan.Request{Engine: "sglang", Model: llama, GPU: "H100", PageSize: 64, EnableHierarchicalCache: true, HiCacheSize: 100},
			"--enable-hierarchical-cache", 762_944, 11_921, 100_000_595_968, 100_000_595_968, 64, 131_072},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.req
			base.KVOffloadingSize, base.HostCacheSize, base.EnableHierarchicalCache, base.HiCacheSize = 0, 0, false, 0
			off, err := plan.Run(context.Background(), base)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := plan.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			h := rep.HostTier
			if h == nil || off.HostTier != nil {
				t.Fatalf("host tier %+v (without the flag %+v)", h, off.HostTier)
			}
			if h.Option != tt.option || h.Tokens != tt.tokens || h.Blocks != tt.blocks || h.Bytes != tt.bytes || h.TotalBytes != tt.total || int64(h.BlockSize) != tt.block || h.BytesPerToken != tt.bptExpect {
				t.Errorf("host tier %+v", h)
			}
			if rep.MaxTotalNumTokens != off.MaxTotalNumTokens {
				t.Errorf("GPU tokens changed: %d vs %d", rep.MaxTotalNumTokens, off.MaxTotalNumTokens)
			}
			var b strings.Builder
			if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "host KV tier "+tt.option) {
				t.Errorf("text lacks the host tier row (%v)", err)
			}
		})
	}
}

// SGLang refuses a host pool over the host's free RAM; the fix lowers
// --hicache-ratio until it fits, and the re-plan serves.
func TestHiCacheRefusalFix(t *testing.T) {
	req := plan.Request{Engine: "sglang", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", EnableHierarchicalCache: true, HostMemory: units.Size(100 << 30)}
	rep, err := plan.Run(context.Background(), req)
	if err == nil || rep == nil {
		t.Fatalf("no refusal: %v", err)
	}
	if !strings.Contains(rep.Error, "Not enough host memory available. Requesting ") || rep.FixFlag != "--hicache-ratio" || rep.FixValue == "" {
		t.Fatalf("error %q fix %s %s", rep.Error, rep.FixFlag, rep.FixValue)
	}
}

// vLLM and TensorRT-LLM warn when the node's free RAM cannot hold the tier.
func TestHostTierRAMWarning(t *testing.T) {
	rep, err := plan.Run(context.Background(), plan.Request{Engine: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", KVOffloadingSize: 64, HostMemory: units.Size(32 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "more than the 32.00 GiB free") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}
