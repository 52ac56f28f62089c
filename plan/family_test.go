package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/plan"
)

// Per-architecture-family cells over the embedded catalog configs. Each
// expected cell is written as the spec's formula with the config's numbers
// (docs/sglang.md#cell-size-mha through #hybrid-swa-pool), not copied from the planner's output.
func TestFamilies(t *testing.T) {
	tests := []struct {
		name         string
		req          plan.Request
		configurator sizing.Kind
		cell         float64
		page         int
		kv           string
	}{
		// MHA / GQA: H·(D_k+D_v)·L·s.
		{"Llama-3.1-8B TP1 bf16", plan.Request{}, sizing.KindDefault, 8 * 256 * 32 * 2, 1, "bf16"},
		{"Llama-3.1-8B TP8 replicates heads", plan.Request{TPSize: 8}, sizing.KindDefault, 1 * 256 * 32 * 2, 1, "bf16"},
		{"Llama-3.1-8B fp8", plan.Request{KVCacheDType: "fp8_e4m3"}, sizing.KindDefault, 8 * 256 * 32 * 1, 1, "fp8_e4m3"},
		{"Llama-3.1-8B fp8_e5m2", plan.Request{KVCacheDType: "fp8_e5m2"}, sizing.KindDefault, 8 * 256 * 32 * 1, 1, "fp8_e5m2"},
		{"Llama-3.1-8B nvfp4 (G3)", plan.Request{KVCacheDType: "nvfp4"}, sizing.KindDefault, 38912, 1, "nvfp4"},
		{"Llama-3.1-8B mxfp8 (G4)", plan.Request{KVCacheDType: "mxfp8"}, sizing.KindDefault, 67584, 1, "mxfp8"},
		{"Llama-3.1-70B TP4 fp8 (G5)", plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", TPSize: 4, KVCacheDType: "fp8_e4m3"}, sizing.KindDefault, 40960, 1, "fp8_e4m3"},
		{"Qwen2.5-7B (4 KV heads)", plan.Request{Model: "Qwen/Qwen2.5-7B-Instruct"}, sizing.KindDefault, 4 * 256 * 28 * 2, 1, "bf16"},
		{"Qwen3-30B-A3B MoE", plan.Request{Model: "Qwen/Qwen3-30B-A3B"}, sizing.KindDefault, 4 * 256 * 48 * 2, 1, "bf16"},
		{"falcon-7b MQA", plan.Request{Model: "tiiuae/falcon-7b"}, sizing.KindDefault, 1 * 128 * 32 * 2, 1, "bf16"},
		{"Mixtral-8x7B", plan.Request{Model: "mistralai/Mixtral-8x7B-v0.1", TPSize: 2}, sizing.KindDefault, 4 * 256 * 32 * 2, 1, "bf16"},
		// Sliding-window models SGLang pools at full size (docs/sglang.md#model-sliding-window, G10).
		{"Gemma-2-9B (G10)", plan.Request{Model: "google/gemma-2-9b-it"}, sizing.KindDefault, 344064, 1, "bf16"},
		{"Gemma-3-1B full pool", plan.Request{Model: "google/gemma-3-1b-pt"}, sizing.KindDefault, 1 * 512 * 26 * 2, 1, "bf16"},
		{"OLMo-2 full pool", plan.Request{Model: "allenai/OLMo-2-1124-7B-Instruct"}, sizing.KindDefault, 32 * 256 * 32 * 2, 1, "bf16"},
		// Hybrid SWA (docs/sglang.md#hybrid-swa-pool): full_pt·F + r·swa_pt·S.
		{"gpt-oss-120b (G11)", plan.Request{Model: "openai/gpt-oss-120b"}, sizing.KindHybridSWA, 2048*18 + 0.8*2048*18, 1, "bf16"},
		{"gpt-oss-120b ratio 0.5", plan.Request{Model: "openai/gpt-oss-120b", SWAFullTokensRatio: 0.5}, sizing.KindHybridSWA, 2048*18 + 0.5*2048*18, 1, "bf16"},
		{"gpt-oss-120b hybrid disabled", plan.Request{Model: "openai/gpt-oss-120b", DisableHybridSWAMemory: true}, sizing.KindDefault, 8 * 128 * 36 * 2, 1, "bf16"},
		{"gpt-oss-120b on B200 (trtllm_mha)", plan.Request{Model: "openai/gpt-oss-120b", GPU: "B200"}, sizing.KindDefault, 8 * 128 * 36 * 2, 64, "bf16"},
		{"gpt-oss-120b chunk cap", plan.Request{Model: "openai/gpt-oss-120b", MaxRunningRequests: 64, DisableRadixCache: true}, sizing.KindSWAChunkCap, 2048*18 + 0.8*2048*18, 1, "bf16"},
		{"Llama-4-Scout chunked attention TP8", plan.Request{Model: "meta-llama/Llama-4-Scout-17B-16E", TPSize: 8, GPU: "H200"}, sizing.KindHybridSWA, 512*12 + 0.8*512*36, 1, "bf16"},
		// MLA (docs/sglang.md#cell-size-mla, G7/G9): (kv_lora_rank+rope)·L·s, never divided by TP.
		{"DeepSeek-V3 TP8 (G7)", plan.Request{Model: "deepseek-ai/DeepSeek-V3", TPSize: 8, GPU: "H200"}, sizing.KindDefault, 576 * 61 * 2, 1, "bf16"},
		{"DeepSeek-V3 fp8 (G7)", plan.Request{Model: "deepseek-ai/DeepSeek-V3", TPSize: 8, GPU: "H200", KVCacheDType: "fp8_e4m3"}, sizing.KindDefault, 576 * 61, 1, "fp8_e4m3"},
		{"DeepSeek-V3 nvfp4 (G9)", plan.Request{Model: "deepseek-ai/DeepSeek-V3", TPSize: 8, GPU: "H200", KVCacheDType: "nvfp4"}, sizing.KindDefault, 19764, 1, "nvfp4"},
		{"DeepSeek-V3 on B200 page 64", plan.Request{Model: "deepseek-ai/DeepSeek-V3", TPSize: 8, GPU: "B200"}, sizing.KindDefault, 576 * 61 * 2, 64, "bf16"},
		{"Kimi-K2 MLA", plan.Request{Model: "moonshotai/Kimi-K2-Instruct", TPSize: 8, GPU: "H200", KVCacheDType: "fp8_e4m3"}, sizing.KindDefault, 576 * 61, 1, "fp8_e4m3"},
		// DSA (docs/sglang.md#cell-size-mla, G8): + 132 B/layer indexer, page 64.
		{"DeepSeek-V3.2 bf16 Hopper (G8)", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "H200"}, sizing.KindDefault, (1152 + 132) * 61, 64, "bf16"},
		{"DeepSeek-V3.2 fp8 row (G8)", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "H200", KVCacheDType: "fp8_e4m3"}, sizing.KindDefault, (656 + 132) * 61, 64, "fp8_e4m3"},
		// Blackwell defaults to fp8 with the trtllm DSA backends from 0.5.10 (576-byte row), flashmla before.
		{"DeepSeek-V3.2 Blackwell default fp8", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "B200"}, sizing.KindDefault, (576 + 132) * 61, 64, "fp8_e4m3"},
		{"DeepSeek-V3.2 Blackwell default fp8 0.5.17", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "B200", SGLangVersion: "0.5.17"}, sizing.KindDefault, (576 + 132) * 61, 64, "fp8_e4m3"},
		{"DeepSeek-V3.2 Blackwell fp8 flashmla_kv decode", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "B200", NSAPrefillBackend: "flashmla_auto", NSADecodeBackend: "flashmla_kv"}, sizing.KindDefault, (656 + 132) * 61, 64, "fp8_e4m3"},
		{"DeepSeek-V3.2 Hopper fp8 trtllm decode", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "H200", KVCacheDType: "fp8_e4m3", NSADecodeBackend: "trtllm"}, sizing.KindDefault, (576 + 132) * 61, 64, "fp8_e4m3"},
		// The same under SGLang's newer key (dsa_decode_backend, an alias).
		{"DeepSeek-V3.2 Hopper fp8 trtllm decode, dsa key", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "H200", KVCacheDType: "fp8_e4m3", DSADecodeBackend: "trtllm"}, sizing.KindDefault, (576 + 132) * 61, 64, "fp8_e4m3"},
		// RTX PRO 6000 (compute capability 12.0): SGLang's DSA default is fp8 from major 10 up.
		{"DeepSeek-V3.2 RTX PRO 6000 default fp8", plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", TPSize: 8, GPU: "RTX-PRO-6000", MemFractionStatic: 0.93}, sizing.KindDefault, (576 + 132) * 61, 64, "fp8_e4m3"},
		// Mamba hybrids (docs/sglang.md#cell-size-layers): only full-attention layers hold KV.
		{"Qwen3-Next TP4 (G6)", plan.Request{Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", TPSize: 4}, sizing.KindDefault, 12288, 1, "bf16"},
		{"Nemotron-H-56B", plan.Request{Model: "nvidia/Nemotron-H-56B-Base-8K", TPSize: 4}, sizing.KindDefault, 2 * 256 * 10 * 2, 1, "bf16"},
		{"Kimi-Linear MLA + KDA", plan.Request{Model: "moonshotai/Kimi-Linear-48B-A3B-Instruct", TPSize: 2}, sizing.KindDefault, 576 * 7 * 2, 1, "bf16"},
		{"mamba2-130m zero KV", plan.Request{Model: "AntonV/mamba2-130m-hf", GPU: "L4"}, sizing.KindDefault, 0, 1, "fp16"},
		// Speculative decoding (docs/sglang.md#cell-size-speculative-decoding).
		{"DeepSeek-V3 EAGLE MTP", plan.Request{Model: "deepseek-ai/DeepSeek-V3", TPSize: 8, GPU: "H200", SpeculativeAlgorithm: "EAGLE", SpeculativeNumDraftTokens: 4}, sizing.KindDefault, float64(int64(70272 * (1 + 1.0/61))), 1, "bf16"},
		{"Llama-3.1-8B DFLASH 2 layers", plan.Request{SpeculativeAlgorithm: "DFLASH", SpeculativeDraftNumLayers: 2}, sizing.KindDefault, (131072*34 + 31) / 32, 1, "bf16"},
		// PP: the last stages get the extra layers (k.7): 61 over 2 → 30 + 31.
		{"DeepSeek-V3 PP2", plan.Request{Model: "deepseek-ai/DeepSeek-V3", TPSize: 8, PPSize: 2, GPU: "H200"}, sizing.KindDefault, 576 * 31 * 2, 1, "bf16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := plan.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("%v", err)
			}
			got := []any{sizing.Kind(r.Configurator), r.CellSizeBytes, r.PageSize, r.ResolvedKVCacheDType}
			want := []any{tt.configurator, tt.cell, tt.page, tt.kv}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkInvariants(t, r)
		})
	}
}

// checkInvariants asserts what must hold for every successful plan.
func checkInvariants(t *testing.T, r *plan.Report) {
	t.Helper()
	if r.MaxTotalNumTokens <= 0 || r.MaxRunningRequests <= 0 {
		t.Errorf("empty plan: tokens %d running %d", r.MaxTotalNumTokens, r.MaxRunningRequests)
	}
	if r.PageSize < 1 || r.MaxTotalNumTokens%int64(r.PageSize) != 0 {
		t.Errorf("tokens %d not aligned to page %d", r.MaxTotalNumTokens, r.PageSize)
	}
	if r.FullMaxTotalNumTokens > 0 {
		if r.FullMaxTotalNumTokens%int64(r.PageSize) != 0 || r.MaxTotalNumTokens != r.FullMaxTotalNumTokens {
			t.Errorf("full pool %d vs max %d page %d", r.FullMaxTotalNumTokens, r.MaxTotalNumTokens, r.PageSize)
		}
		if r.Configurator == string(sizing.KindHybridSWA) {
			ratio := 0.8
			if r.SWAMaxTotalNumTokens > int64(float64(r.FullMaxTotalNumTokens)*max(ratio, 1)) {
				t.Errorf("swa %d > full %d", r.SWAMaxTotalNumTokens, r.FullMaxTotalNumTokens)
			}
		}
	}
	if int64(r.MaxRunningRequests) > max(r.MaxTotalNumTokens/2, 1) {
		t.Errorf("running %d > tokens/2 %d", r.MaxRunningRequests, r.MaxTotalNumTokens/2)
	}
	if r.MaxConcurrencyAtContextLength < 0 || r.MaxConcurrencyAtContextLength > int64(r.MaxRunningRequests) {
		t.Errorf("concurrency %d", r.MaxConcurrencyAtContextLength)
	}
	b := r.Breakdown
	for name, v := range map[string]int64{"weights": b.WeightsBytes, "reserved": b.ReservedBytes, "state": b.StateBytes, "kv": b.KVBudgetBytes, "pool": b.KVPoolBytes, "unused": b.UnusedBytes} {
		if v < 0 {
			t.Errorf("negative %s: %d", name, v)
		}
	}
	if b.KVPoolBytes > b.KVBudgetBytes+b.OverBudgetBytes && r.CellSizeBytes > 0 {
		t.Errorf("pool %d exceeds budget %d + over budget %d", b.KVPoolBytes, b.KVBudgetBytes, b.OverBudgetBytes)
	}
	if logs := strings.Join(r.LogLines, "\n"); !strings.Contains(logs, "KV Cache is allocated.") && !strings.Contains(logs, "DSV4 pool sizes:") {
		t.Errorf("no allocation log: %q", r.LogLines)
	}
}

// Every catalog model plans on a big enough GPU without error and keeps the
// invariants.
func TestCatalogModels(t *testing.T) {
	for _, name := range catalog.Names() {
		t.Run(name, func(t *testing.T) {
			// The largest TP up to 8 that splits the model's heads: SGLang
			// refuses the others (tested in engine/sglang).
			var r *plan.Report
			var err error
			for tp := 8; tp >= 1; tp /= 2 {
				if r, err = plan.Run(context.Background(), plan.Request{Model: name, GPU: "H200", TPSize: tp}); !errors.Is(err, sglang.ErrTensorParallel) {
					break
				}
			}
			if err != nil {
				t.Fatalf("%v", err)
			}
			checkInvariants(t, r)
		})
	}
}

var update = flag.Bool("update", false, "rewrite golden files")

// Golden reports guard the whole output (log lines, warnings, breakdown)
// of representative plans against unintended changes. Run with -update
// after an intended change and review the diff.
func TestGoldenReports(t *testing.T) {
	cases := map[string]plan.Request{
		"default":              {},
		"ex1-measured":         {PreLoadFreeMemory: gib("78.50GiB"), PostLoadFreeMemory: gib("63.54GiB"), SGLangVersion: specRelease}, // spec Ex.1
		"gpt-oss-120b":         {Model: "openai/gpt-oss-120b"},
		"qwen3-next-tp4":       {Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", TPSize: 4},
		"deepseek-v3-h200-tp8": {Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8},
		"llama-70b-infeasible": {Model: "meta-llama/Llama-3.1-70B-Instruct"},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := plan.Run(context.Background(), req)
			got, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./plan -run TestGoldenReports -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("report changed (-want +got):\n%s", diff)
			}
		})
	}
}
