package vllm_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/model"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// The bytes per token of every layer on one rank: peers.md appendix numbers
// and vLLM's page formulas.
func TestBytesPerToken(t *testing.T) {
	tests := []struct {
		name  string
		spec  *model.Spec
		cfg   vllm.Input
		want  int64
		dtype string
	}{
		{"llama-3.1-8b bf16", llama31_8B(), vllm.Input{}, 131072, "bfloat16"},
		{"llama-3.1-8b fp8", llama31_8B(), vllm.Input{KVCacheDType: "fp8"}, 65536, "fp8_e4m3"},
		{"llama-3.1-8b fp8_e5m2", llama31_8B(), vllm.Input{KVCacheDType: "fp8_e5m2"}, 65536, "fp8_e5m2"},
		{"llama-3.1-8b nvfp4: 9/32 of bf16", llama31_8B(), vllm.Input{KVCacheDType: "nvfp4", GPUSM: 100}, 36864, "nvfp4"},
		{"llama-3.1-8b fp8 per token head: +8 B per head", llama31_8B(), vllm.Input{KVCacheDType: "fp8_per_token_head"}, 32 * 8 * (256 + 8), "fp8_per_token_head"},
		{"llama-3.1-8b int8 per token head", llama31_8B(), vllm.Input{KVCacheDType: "int8_per_token_head"}, 32 * 8 * (256 + 8), "int8_per_token_head"},
		{"llama-3.1-8b v0 auto", llama31_8B(), vllm.Input{Version: "0.6"}, 131072, "bfloat16"},
		{"llama-3.1-8b tp2 halves heads", llama31_8B(), vllm.Input{TensorParallelSize: 2}, 65536, "bfloat16"},
		{"llama-3.1-8b tp16 replicates the last head", llama31_8B(), vllm.Input{TensorParallelSize: 16}, 16384, "bfloat16"},
		{"deepseek-v3 bf16 latent", deepseekV3(), vllm.Input{}, 70272, "bfloat16"},
		{"deepseek-v3 latent replicated over tp8", deepseekV3(), vllm.Input{TensorParallelSize: 8}, 70272, "bfloat16"},
		{"deepseek-v3 fp8 latent", deepseekV3(), vllm.Input{Version: "0.11", KVCacheDType: "fp8"}, 61 * 576, "fp8_e4m3"},
		{"deepseek-v3.2 auto is fp8_ds_mla plus indexer", deepseekV32(), vllm.Input{}, 48068, "fp8_ds_mla"},
		{"deepseek-v3.2 0.11 fp8 becomes fp8_ds_mla", deepseekV32(), vllm.Input{Version: "0.11", KVCacheDType: "fp8"}, 48068, "fp8_ds_mla"},
		{"deepseek-v3.2 bf16 latent plus indexer", deepseekV32(), vllm.Input{Version: "0.11", KVCacheDType: "bfloat16"}, 61 * (1152 + 132), "bfloat16"},
		{"gpt-oss-120b", gptOSS(36), vllm.Input{}, 73728, "bfloat16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Memory.AvailableKVBytes = 40 * gib
			tt.cfg.MaxModelLen = 4096
			res, err := vllm.Plan(tt.spec, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := struct {
				B  int64
				DT string
			}{res.BytesPerToken, res.KVCacheDType.Name}
			want := struct {
				B  int64
				DT string
			}{tt.want, tt.dtype}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("bytes per token (-want +got):\n%s", diff)
			}
		})
	}
}

// llamaRunKV is a Llama-3.1-8B run with 2.89 GiB of KV cache: 1478.5 V0
// cache blocks of 16 tokens × 32 layers × 4 KiB (docs/vllm.md#known-answers).
const llamaRunKV = 1478*2*mib + mib

type runSummary struct {
	Blocks      int64
	Tokens      int64
	Concurrency string
	MaxModelLen int
	EstMaxLen   int
	Lines       []string
	Error       string
}

func summarize(r *vllm.Result) runSummary {
	return runSummary{Blocks: r.NumGPUBlocks, Tokens: r.KVCacheSizeTokens, Concurrency: fmtX(r.MaxConcurrency),
		MaxModelLen: r.MaxModelLen, EstMaxLen: r.EstimatedMaxModelLen, Lines: r.LogLines, Error: r.Error}
}

func fmtX(f float64) string { return strings.TrimRight(strings.TrimRight(ftoa(f), "0"), ".") }

func ftoa(f float64) string { return strconvFormat(f) }

func TestLlamaProfiles(t *testing.T) {
	refusal := "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
	docs := " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
	tests := []struct {
		name    string
		version string
		L       int
		want    runSummary
		refused bool
	}{
		{
			name: "0.6 prints the blocks, then refuses", version: "0.6", L: 29000, refused: true,
			want: runSummary{Blocks: 1478, Tokens: 23648, Concurrency: "0.8154482758620689", MaxModelLen: 29000,
				Lines: []string{"# GPU blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 29000 tokens per request: 0.82x"},
				Error: "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). " + refusal},
		},
		{
			name: "0.11 refuses at admission with 3.54 GiB needed", version: "0.11", L: 29000, refused: true,
			want: runSummary{MaxModelLen: 29000, EstMaxLen: 23648,
				Lines: []string{"Available KV cache memory: 2.89 GiB"},
				Error: "To serve at least one request with the models's max seq len (29000), (3.54 GiB KV cache is needed, which is larger than the available KV cache memory (2.89 GiB). Based on the available memory, the estimated maximum model length is 23648. " + refusal},
		},
		{
			name: "latest keeps a null block before admission", version: "latest", L: 29000, refused: true,
			want: runSummary{MaxModelLen: 29000, EstMaxLen: 23632,
				Lines: []string{"Available KV cache memory: 2.89 GiB"},
				Error: "To serve at least one request with the model's max seq len (29000), (3.54 GiB KV cache is needed, which is larger than the available KV cache memory (2.89 GiB). Based on the available memory, the estimated maximum model length is 23632. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine." + docs},
		},
		{
			name: "0.6 at 8192", version: "0.6.3.post1", L: 8192,
			want: runSummary{Blocks: 1478, Tokens: 23648, Concurrency: "2.88671875", MaxModelLen: 8192,
				Lines: []string{"# GPU blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 8192 tokens per request: 2.89x"}},
		},
		{
			name: "0.11 at 8192", version: "0.11.0", L: 8192,
			want: runSummary{Blocks: 1478, Tokens: 23648, Concurrency: "2.88671875", MaxModelLen: 8192,
				Lines: []string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens", "Maximum concurrency for 8,192 tokens per request: 2.89x"}},
		},
		{
			name: "latest at 8192", version: "", L: 8192,
			want: runSummary{Blocks: 1478, Tokens: 23648, Concurrency: "2.88671875", MaxModelLen: 8192,
				Lines: []string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens, Maximum concurrency for 8,192 tokens per request: 2.89x"}},
		},
		{
			name: "latest auto-fits max_model_len", version: "latest", L: -1,
			want: runSummary{Blocks: 1478, Tokens: int64(float64(1478) / float64(1477) * 23632), Concurrency: fmtX(float64(1478) / float64(1477)), MaxModelLen: 23632,
				Lines: []string{"Available KV cache memory: 2.89 GiB",
					"Auto-fit max_model_len: reduced from 131072 to 23632 to fit in available GPU memory (2.89 GiB available for KV cache)",
					"GPU KV cache size: 23,648 tokens, Maximum concurrency for 23,632 tokens per request: 1.00x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(llama31_8B(), vllm.Input{Version: tt.version, MaxModelLen: tt.L,
				Memory: vllm.Memory{AvailableKVBytes: llamaRunKV}})
			if tt.refused != errors.Is(err, vllm.ErrRefused) {
				t.Fatalf("err = %v, want refused %v", err, tt.refused)
			}
			if res == nil {
				t.Fatal("no result")
			}
			if diff := cmp.Diff(tt.want, summarize(res)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			var re *engine.Refusal
			if tt.refused && (!errors.As(err, &re) || re.Message != tt.want.Error || !strings.HasPrefix(err.Error(), "vllm: "+tt.want.Error+" (")) {
				t.Errorf("error %q does not carry vLLM's message and a hint", err)
			}
		})
	}
}

// gpt-oss-120b: 5.38 GiB of KV logged as 78,384 tokens by 0.11 (hf-mem#60),
// two groups of 18 layers.
func TestGPTOSSGrouping(t *testing.T) {
	avail := int64(9798) * 18 * 32768
	base := vllm.Input{MaxNumBatchedTokens: 8192, Memory: vllm.Memory{AvailableKVBytes: avail}}

	c := base
	c.Version = "0.11"
	res, err := vllm.Plan(gptOSS(36), c)
	if err != nil {
		t.Fatal(err)
	}
	// full: 131072/16 = 8192 pages; SWA: ceil((127+8192)/16)+1 = 521 pages.
	want := runSummary{Blocks: 9798, Tokens: 78384, Concurrency: fmtX(9798.0 / (8192 + 521)), MaxModelLen: 131072,
		Lines: []string{"Available KV cache memory: 5.38 GiB", "GPU KV cache size: 78,384 tokens",
			"Maximum concurrency for 131,072 tokens per request: 1.12x"}}
	if diff := cmp.Diff(want, summarize(res)); diff != "" {
		t.Errorf("0.11 mismatch (-want +got):\n%s", diff)
	}
	type grp struct {
		Kind   vllm.SpecKind
		N      int
		Page   int64
		Blocks int64
	}
	var got []grp
	for _, g := range res.Groups {
		got = append(got, grp{g.Kind, len(g.Layers), g.PageBytes, g.BlocksPerRequest})
	}
	wantG := []grp{{vllm.SlidingWindow, 18, 32768, 521}, {vllm.FullAttention, 18, 32768, 8192}}
	if diff := cmp.Diff(wantG, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if res.GroupSize != 18 {
		t.Errorf("group size %d, want 18", res.GroupSize)
	}
	wantCap := int64(9798) * 131072 / (8192 + 521)
	if res.TokenCapacity != wantCap {
		t.Errorf("token capacity %d, want %d", res.TokenCapacity, wantCap)
	}
	if len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, "\n"), "vllm#40691") {
		t.Errorf("no note about the misleading 0.11 figure: %q", res.Notes)
	}

	// latest: two batches in flight for the window: ceil((127+16384)/16)+1 = 1033.
	c = base
	res, err = vllm.Plan(gptOSS(36), c)
	if err != nil {
		t.Fatal(err)
	}
	conc := 9798.0 / (8192 + 1033)
	tokens := int64(conc * 131072)
	if res.KVCacheSizeTokens != tokens || res.BlocksPerRequest != 8192+1033 {
		t.Errorf("latest tokens %d blocks/request %d, want %d and %d", res.KVCacheSizeTokens, res.BlocksPerRequest, tokens, 8192+1033)
	}
	if ratio := float64(res.KVCacheSizeTokens) / 78384; ratio < 1.7 || ratio > 2.0 {
		t.Errorf("latest/0.11 token ratio %.2f, peers.md says about 1.9", ratio)
	}
}

func TestPaddingLayers(t *testing.T) {
	tests := []struct {
		name       string
		spec       *model.Spec
		wantLog    string
		groupSize  int
		wantGroups int
	}{
		{
			// gpt-oss-20b + EAGLE: 12 SWA + 13 full → 13 + 13, max < 1.5·min.
			name: "gpt-oss-20b with an eagle layer",
			spec: func() *model.Spec {
				s := gptOSS(25)
				s.LayerKinds[24] = model.FullAttention
				return s
			}(),
			wantLog: "Add 1 padding layers, may waste at most 8.33% KV cache memory", groupSize: 13, wantGroups: 2,
		},
		{
			// Gemma-3-27B: 52 SWA + 10 full → group size 10, 6 SWA groups with 8 padding layers.
			name: "gemma-3-27b 5:1", spec: gemma3_27B(),
			wantLog: "Add 8 padding layers, may waste at most 15.38% KV cache memory", groupSize: 10, wantGroups: 7,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(tt.spec, vllm.Input{MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: 20 * gib}})
			if err != nil {
				t.Fatal(err)
			}
			if !contains(res.LogLines, tt.wantLog) {
				t.Errorf("log lines %q lack %q", res.LogLines, tt.wantLog)
			}
			if res.GroupSize != tt.groupSize || len(res.Groups) != tt.wantGroups {
				t.Errorf("group size %d, %d groups; want %d, %d", res.GroupSize, len(res.Groups), tt.groupSize, tt.wantGroups)
			}
			page := res.Groups[0].PageBytes
			want := 20 * gib / page / int64(tt.groupSize)
			if res.NumGPUBlocks != want {
				t.Errorf("num blocks %d, want avail // page // group_size = %d", res.NumGPUBlocks, want)
			}
		})
	}
}

// Qwen3-Next: a GDN state of 3·8192·2 + 32·128·128·2 = 1,097,728 B against
// 2,048 B per attention token: 16·ceil(1097728/32768) = 544-token blocks.
func TestMambaHybrid(t *testing.T) {
	avail := 10 * gib
	page := int64(544 * 2048)
	nb := avail / page / 12
	tests := []struct {
		version   string
		perReq    int64
		tokens    int64
		linesTail []string
	}{
		{"0.11", 482 + 3, nb / 4 * 544, []string{"GPU KV cache size: " + commasI(nb/4*544) + " tokens"}},
		{"latest", 482 + 3*2, int64(float64(nb) / float64(482+6) * 262144), nil},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			res, err := vllm.Plan(qwen3Next(), vllm.Input{Version: tt.version, Memory: vllm.Memory{AvailableKVBytes: avail}})
			if err != nil {
				t.Fatal(err)
			}
			wantHead := []string{
				"Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
				"Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
			}
			if diff := cmp.Diff(wantHead, res.LogLines[:2]); diff != "" {
				t.Errorf("log head (-want +got):\n%s", diff)
			}
			for _, l := range tt.linesTail {
				if !contains(res.LogLines, l) {
					t.Errorf("log lines %q lack %q", res.LogLines, l)
				}
			}
			got := []int64{res.NumGPUBlocks, res.BlocksPerRequest, res.KVCacheSizeTokens, int64(res.BlockSize), int64(len(res.Groups)), res.PageBytes}
			want := []int64{nb, tt.perReq, tt.tokens, 544, 4, page}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("blocks, per request, tokens, block, groups, page (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChunkedLocalAttention(t *testing.T) {
	// 0.11 turns the hybrid manager off for chunked local attention: one group
	// paying the full context.
	res, err := vllm.Plan(llama4Scout(), vllm.Input{Version: "0.11", MaxModelLen: 65536, Memory: vllm.Memory{AvailableKVBytes: 20 * gib}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Groups[0].Kind != vllm.FullAttention || !strings.HasPrefix(res.LogLines[1], "Hybrid KV cache manager is disabled") {
		t.Errorf("0.11 groups %d (%v), lines %q", len(res.Groups), res.Groups[0].Kind, res.LogLines)
	}
	if want := int64(65536 / 16); res.BlocksPerRequest != want {
		t.Errorf("0.11 blocks per request %d, want %d", res.BlocksPerRequest, want)
	}
	// latest keeps it hybrid: 12 full + 36 chunked = 4 groups of 12; the
	// chunked groups hold ceil((8192 + 2·2048)/16) blocks.
	res, err = vllm.Plan(llama4Scout(), vllm.Input{MaxModelLen: 65536, MaxNumBatchedTokens: 2048, Memory: vllm.Memory{AvailableKVBytes: 20 * gib}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 4 {
		t.Fatalf("latest %d groups, want 4", len(res.Groups))
	}
	if want := int64(4096 + 3*768); res.BlocksPerRequest != want {
		t.Errorf("latest blocks per request %d, want %d", res.BlocksPerRequest, want)
	}
}

func TestDeepSeekV32UniformType(t *testing.T) {
	avail := 10 * gib
	res, err := vllm.Plan(deepseekV32(), vllm.Input{Memory: vllm.Memory{AvailableKVBytes: avail}})
	if err != nil {
		t.Fatal(err)
	}
	// FlashMLA sparse pages are 64 tokens.
	page := int64(61 * 64 * (656 + 132))
	nb := avail / page
	if len(res.Groups) != 1 || !res.Groups[0].UniformType || res.Groups[0].PageBytes != page {
		t.Fatalf("groups %+v", res.Groups)
	}
	if res.NumGPUBlocks != nb || res.TokenCapacity != nb*64 || res.BlockSize != 64 {
		t.Errorf("blocks %d capacity %d block %d, want %d, %d and 64", res.NumGPUBlocks, res.TokenCapacity, res.BlockSize, nb, nb*64)
	}
	// 0.13 to 0.17 force the MLA page: the sparse backend's 64 over any
	// --block-size, CUTLASS MLA's 128 on SM100 (FlashInfer MLA's 64 from
	// 0.15), FlashMLA's 64 on Hopper.
	// From 0.18 the backend's preferred block applies: FlashInfer MLA's 32
	// on SM100 and FlashAttention MLA's 16 on Hopper; V0 uses 16.
	for _, tt := range []struct {
		spec      *model.Spec
		cfg       vllm.Input
		wantBlock int
	}{
		{deepseekV32(), vllm.Input{Version: "0.13", BlockSize: 16}, 64},
		{deepseekV3(), vllm.Input{Version: "0.13", GPUSM: 100}, 128},
		{deepseekV3(), vllm.Input{Version: "0.15.1", GPUSM: 100}, 64},
		{deepseekV3(), vllm.Input{Version: "0.13", GPUSM: 90}, 64},
		{deepseekV3(), vllm.Input{GPUSM: 100}, 32},
		{deepseekV3(), vllm.Input{GPUSM: 90}, 16},
		{deepseekV3(), vllm.Input{GPUSM: 90, BlockSize: 64}, 64},
		{deepseekV3(), vllm.Input{Version: "0.7.3"}, 16},
	} {
		tt.cfg.MaxModelLen = 4096
		tt.cfg.Memory.AvailableKVBytes = avail
		res, err := vllm.Plan(tt.spec, tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.BlockSize != tt.wantBlock {
			t.Errorf("%s %+v: block %d, want %d", tt.spec.Name, tt.cfg, res.BlockSize, tt.wantBlock)
		}
	}
}

func TestPipelineParallelMinimum(t *testing.T) {
	// 32 layers over 3 stages: 11, 11, 10; the 11-layer stages bound the pool.
	avail := 4 * gib
	res, err := vllm.Plan(llama31_8B(), vllm.Input{PipelineParallelSize: 3, MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: avail}})
	if err != nil {
		t.Fatal(err)
	}
	if want := avail / 65536 / 11; res.NumGPUBlocks != want {
		t.Errorf("blocks %d, want %d", res.NumGPUBlocks, want)
	}
	res, err = vllm.Plan(llama31_8B(), vllm.Input{Version: "0.6", PipelineParallelSize: 3, MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: avail}})
	if err != nil {
		t.Fatal(err)
	}
	if want := avail / (16 * 4096 * 11); res.NumGPUBlocks != want {
		t.Errorf("v0 blocks %d, want %d", res.NumGPUBlocks, want)
	}
}

func TestBudget(t *testing.T) {
	total := 80 * gib
	mem := vllm.Memory{TotalBytes: total, WeightsBytes: 15 * gib, ActivationBytes: gib, NonTorchBytes: 512 * mib}
	nonKV := 15*gib + gib + 512*mib
	tests := []struct {
		name string
		cfg  vllm.Input
		want vllm.MemoryReport
	}{
		{"latest: ceil(total × 0.92), enforce eager", vllm.Input{EnforceEager: true, Memory: mem}, vllm.MemoryReport{TotalBytes: total,
			RequestedBytes: int64(math.Ceil(float64(total) * 0.92)), WeightsBytes: 15 * gib, ActivationBytes: gib, NonTorchBytes: 512 * mib,
			AvailableKVBytes: int64(math.Ceil(float64(total)*0.92)) - nonKV, Source: "profile"}},
		{"latest subtracts the cudagraph estimate", vllm.Input{Memory: func() vllm.Memory { m := mem; m.CUDAGraphBytes = gib; return m }()},
			vllm.MemoryReport{TotalBytes: total, RequestedBytes: int64(math.Ceil(float64(total) * 0.92)), WeightsBytes: 15 * gib, ActivationBytes: gib,
				NonTorchBytes: 512 * mib, CUDAGraphBytes: gib, AvailableKVBytes: int64(math.Ceil(float64(total)*0.92)) - nonKV - gib, Source: "profile"}},
		{"latest estimates CUDA graphs at 25 MiB per layer", vllm.Input{Memory: mem},
			vllm.MemoryReport{TotalBytes: total, RequestedBytes: int64(math.Ceil(float64(total) * 0.92)), WeightsBytes: 15 * gib, ActivationBytes: gib,
				NonTorchBytes: 512 * mib, CUDAGraphBytes: 32 * 25 * mib, AvailableKVBytes: int64(math.Ceil(float64(total)*0.92)) - nonKV - 32*25*mib,
				Source: "profile", Estimated: []string{"cudagraph"}}},
		{"0.11: total × 0.9", vllm.Input{Version: "0.11", Memory: mem}, vllm.MemoryReport{TotalBytes: total,
			RequestedBytes: 72 * gib, WeightsBytes: 15 * gib, ActivationBytes: gib, NonTorchBytes: 512 * mib,
			AvailableKVBytes: 72*gib - nonKV, Source: "profile"}},
		{"0.6 with util 0.5", vllm.Input{Version: "0.6", GPUMemoryUtilization: 0.5, Memory: mem}, vllm.MemoryReport{TotalBytes: total,
			RequestedBytes: 40 * gib, WeightsBytes: 15 * gib, ActivationBytes: gib, NonTorchBytes: 512 * mib,
			AvailableKVBytes: 40*gib - nonKV, Source: "profile"}},
		{"kv_cache_memory_bytes ignores utilization", vllm.Input{KVCacheMemoryBytes: 7 * gib, Memory: mem},
			vllm.MemoryReport{TotalBytes: total, AvailableKVBytes: 7 * gib, Source: "kv_cache_memory_bytes"}},
		{"measured available memory", vllm.Input{Memory: vllm.Memory{TotalBytes: total, AvailableKVBytes: 9 * gib}},
			vllm.MemoryReport{TotalBytes: total, AvailableKVBytes: 9 * gib, Source: "measured"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.MaxModelLen = 8192
			res, err := vllm.Plan(llama31_8B(), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Memory); diff != "" {
				t.Errorf("memory (-want +got):\n%s", diff)
			}
		})
	}
	// Estimated figures are flagged.
	res, err := vllm.Plan(llama31_8B(), vllm.Input{MaxModelLen: 8192, Memory: vllm.Memory{TotalBytes: total}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"weights", "activation", "non_torch", "cudagraph"}, res.Memory.Estimated); diff != "" {
		t.Errorf("estimated (-want +got):\n%s", diff)
	}
	if w := res.Memory.WeightsBytes; w != 8_030_261_248*2 {
		t.Errorf("estimated weights %d, want 2 bytes per parameter", w)
	}
}

func TestNoMemory(t *testing.T) {
	res, err := vllm.Plan(llama31_8B(), vllm.Input{MaxModelLen: 8192, Memory: vllm.Memory{TotalBytes: 16 * gib, WeightsBytes: 16 * gib}})
	if !errors.Is(err, vllm.ErrRefused) || !strings.HasPrefix(res.Error, "No available memory for the cache blocks.") {
		t.Errorf("err %v, result error %q", err, res.Error)
	}
}

func TestDTypeErrors(t *testing.T) {
	tests := []struct {
		name, version, dtype string
		spec                 *model.Spec
		want                 string
	}{
		{"sglang-only name", "latest", "mxfp8", llama31_8B(), `"mxfp8" is not supported by vLLM; accepted: auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, nvfp4, int8_per_token_head, fp8_per_token_head`},
		{"int8_g64", "latest", "int8_g64", llama31_8B(), "is not supported by vLLM; accepted:"},
		{"nvfp4 before its time", "0.11", "nvfp4", llama31_8B(), `"nvfp4" is not accepted by vLLM 0.11 (accepted: auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla)`},
		{"bfloat16 on V0", "0.6", "bfloat16", llama31_8B(), "not accepted by vLLM 0.6"},
		{"known but unmodelled", "latest", "turboquant_k8v4", llama31_8B(), "does not model"},
		{"fp8_ds_mla needs DSA", "latest", "fp8_ds_mla", llama31_8B(), "DeepSeek-V3.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := vllm.Plan(tt.spec, vllm.Input{Version: tt.version, KVCacheDType: tt.dtype, MaxModelLen: 4096, Memory: vllm.Memory{AvailableKVBytes: gib}})
			if !errors.Is(err, vllm.ErrUnsupportedDType) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrUnsupportedDType containing %q", err, tt.want)
			}
		})
	}
}

func TestResolveProfile(t *testing.T) {
	tests := []struct {
		in   string
		want vllm.Profile
		note bool
		err  bool
	}{
		{"", vllm.Latest, false, false},
		{"latest", vllm.Latest, false, false},
		{"0.6", vllm.V06, false, false},
		{"0.11", vllm.V011, false, false},
		{"0.6.3.post1", vllm.V06, true, false},
		{"v0.10.1", vllm.V08, true, false},
		{"0.7.3", vllm.V07, true, false},
		{"0.7", vllm.V07, false, false},
		{"0.8.0", vllm.V08, true, false},
		{"0.9", vllm.V08, true, false},
		{"0.11.0rc2", vllm.V011, true, false},
		{"0.12.0", vllm.V011, true, false},
		{"0.13.0", vllm.V013, true, false},
		{"0.17.1", vllm.V013, true, false},
		{"0.18", vllm.V018, false, false},
		{"0.19.1", vllm.V018, true, false},
		{"0.27.0", vllm.V018, true, false},
		{"0.28.0", vllm.Latest, true, false},
		{"1.0", vllm.Latest, true, false},
		{"banana", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			// Twice: the second answer comes from the cache.
			for range 2 {
				p, note, err := vllm.ResolveProfile(tt.in)
				if (err != nil) != tt.err || p != tt.want || (note != "") != tt.note {
					t.Errorf("ResolveProfile(%q) = %q, %q, %v", tt.in, p, note, err)
				}
			}
		})
	}
}

func TestValidateReportsEverything(t *testing.T) {
	err := vllm.Input{Version: "x", BlockSize: -1, GPUMemoryUtilization: 2, MambaCacheMode: "sometimes"}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"unknown version", "block_size", "gpu_memory_utilization", "mamba_cache_mode", "total_bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestV0RefusesMamba(t *testing.T) {
	_, err := vllm.Plan(qwen3Next(), vllm.Input{Version: "0.6", Memory: vllm.Memory{AvailableKVBytes: gib}})
	if !errors.Is(err, vllm.ErrUnsupportedModel) {
		t.Errorf("err = %v", err)
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func TestNoMemoryMessages(t *testing.T) {
	for _, tt := range []struct{ version, want string }{
		{"0.11", "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
		{"latest", "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
	} {
		res, err := vllm.Plan(llama31_8B(), vllm.Input{Version: tt.version, MaxModelLen: 8192, Memory: vllm.Memory{TotalBytes: 16 * gib, WeightsBytes: 16 * gib}})
		if !errors.Is(err, vllm.ErrRefused) || res.Error != tt.want {
			t.Errorf("%s: err %v, message %q", tt.version, err, res.Error)
		}
	}
}

func TestFreeMemoryStartupCheck(t *testing.T) {
	res, err := vllm.Plan(llama31_8B(), vllm.Input{Version: "0.11", MaxModelLen: 8192,
		Memory: vllm.Memory{TotalBytes: 80 * gib, FreeBytes: 40 * gib, WeightsBytes: 15 * gib}})
	want := "Free memory on device (40.00/80.00 GiB) on startup is less than desired GPU memory utilization (0.9, 72.00 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
	if !errors.Is(err, vllm.ErrRefused) || res.Error != want {
		t.Errorf("err %v, message %q", err, res.Error)
	}
	// Two instances at 0.45 each fit.
	if _, err := vllm.Plan(llama31_8B(), vllm.Input{Version: "0.11", MaxModelLen: 8192, GPUMemoryUtilization: 0.45,
		Memory: vllm.Memory{TotalBytes: 80 * gib, FreeBytes: 40 * gib, WeightsBytes: 15 * gib}}); err != nil {
		t.Errorf("0.45 of 80 GiB with 40 GiB free: %v", err)
	}
}

// vLLM's scheduler defaults: 8192 batched tokens and 1024 sequences on
// ≥ 70 GiB GPUs except A100s, else 2048 and 256.
func TestSchedulerDefaults(t *testing.T) {
	tests := []struct {
		name      string
		gpu       string
		total     int64
		mbt, seqs int
	}{
		{"h100", "H100-80GB", 80 * gib, 8192, 1024},
		{"a100 80GB stays small", "A100-80GB", 80 * gib, 2048, 256},
		{"l40s", "L40S", 48 * gib, 2048, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(llama31_8B(), vllm.Input{GPUName: tt.gpu, MaxModelLen: 4096, Memory: vllm.Memory{TotalBytes: tt.total, WeightsBytes: 16 * gib}})
			if err != nil {
				t.Fatal(err)
			}
			if res.MaxNumBatchedTokens != tt.mbt || res.MaxNumSeqs != tt.seqs {
				t.Errorf("max_num_batched_tokens %d, max_num_seqs %d; want %d, %d", res.MaxNumBatchedTokens, res.MaxNumSeqs, tt.mbt, tt.seqs)
			}
		})
	}
}

// Refusals pasted from real vLLM runs of the newest generation: the
// figures in the messages (needed, available, estimated length) come from
// those logs; the available bytes are chosen inside the logged rounding.
func TestLatestRefusalsFromRealLogs(t *testing.T) {
	tail := " Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
	full := func(name string, layers, ctx int) *model.Spec {
		return &model.Spec{Name: name, NumLayers: layers, NumAttentionHeads: 40, NumKVHeads: 8, HeadDim: 128,
			LayerKinds: kinds(layers, allFull), ContextLength: ctx, ModelDType: dtype.BFloat16}
	}
	tests := []struct {
		name  string
		spec  *model.Spec
		L     int
		avail int64
		want  string
	}{
		{
			// vllm serve Qwen/Qwen3-0.6B --gpu-memory-utilization 0.2 (28 layers × 8 × 128).
			name: "qwen3-0.6b", spec: full("Qwen/Qwen3-0.6B", 28, 40960), L: 40960, avail: 769 * 16 * 114688,
			want: "To serve at least one request with the model's max seq len (40960), (4.38 GiB KV cache is needed, which is larger than the available KV cache memory (1.31 GiB). Based on the available memory, the estimated maximum model length is 12288." + tail,
		},
		{
			// Qwen2.5-32B-Instruct-AWQ at 4096 tokens (64 layers × 8 × 128).
			name: "qwen2.5-32b-awq", spec: full("Qwen/Qwen2.5-32B-Instruct-AWQ", 64, 32768), L: 4096, avail: 597 * mib,
			want: "To serve at least one request with the model's max seq len (4096), (1.0 GiB KV cache is needed, which is larger than the available KV cache memory (0.58 GiB). Based on the available memory, the estimated maximum model length is 2368." + tail,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(tt.spec, vllm.Input{MaxModelLen: tt.L, Memory: vllm.Memory{AvailableKVBytes: tt.avail}})
			if !errors.Is(err, vllm.ErrRefused) {
				t.Fatalf("err = %v", err)
			}
			if res.Error != tt.want {
				t.Errorf("message\n got %q\nwant %q", res.Error, tt.want)
			}
		})
	}
}

// Llama-3.1-8B with one EAGLE layer on an H100 (vLLM issue log, V1 with
// two-line reporting): "Available KV cache memory: 51.63 GiB", "GPU KV cache
// size: 410,128 tokens", "Maximum concurrency for 131,072 tokens per
// request: 3.13x" — 33 layers of 4 KiB per token.
func TestEAGLEDraftLayer(t *testing.T) {
	avail := int64(25633) * 16 * 33 * 4096
	res, err := vllm.Plan(llama31_8B(), vllm.Input{Version: "0.11", DraftLayers: 1, Memory: vllm.Memory{AvailableKVBytes: avail}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Available KV cache memory: 51.63 GiB", "GPU KV cache size: 410,128 tokens", "Maximum concurrency for 131,072 tokens per request: 3.13x"}
	if diff := cmp.Diff(want, res.LogLines); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if res.BytesPerToken != 33*4096 {
		t.Errorf("bytes per token %d", res.BytesPerToken)
	}
	// gpt-oss-20b + EAGLE3: 12 SWA + 13 full layers → 13 + 13 with one padding layer.
	res, err = vllm.Plan(gptOSS(24), vllm.Input{DraftLayers: 1, MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: 8 * gib}})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(res.LogLines, "Add 1 padding layers, may waste at most 8.33% KV cache memory") || res.GroupSize != 13 {
		t.Errorf("lines %q, group size %d", res.LogLines, res.GroupSize)
	}
	// DeepSeek-V3.2 MTP: one more MLA layer with its indexer.
	res, err = vllm.Plan(deepseekV32(), vllm.Input{DraftLayers: 1, MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: 8 * gib}})
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesPerToken != 62*(656+132) {
		t.Errorf("dsv3.2 + MTP bytes per token %d, want %d", res.BytesPerToken, 62*(656+132))
	}
}

// MiMo-V2-Flash-like asymmetric sliding layers (8 KV heads, K 192, V 128)
// next to full layers (4 KV heads): latest sizes V with its own head size,
// 0.11 sized V like K.
func TestAsymmetricSlidingHeads(t *testing.T) {
	s := gptOSS(8)
	s.NumKVHeads, s.HeadDim, s.VHeadDim = 4, 192, 128
	s.SWANumKVHeads, s.SWAHeadDim, s.SWAVHeadDim = 8, 192, 128
	for _, tt := range []struct {
		version string
		want    int64
		refused bool
	}{
		{"latest", 4*4*(192+128)*2 + 4*8*(192+128)*2, false},
		// 0.11: pages of 40,960 and 98,304 bytes do not divide: vLLM raises.
		{"0.11", 4*4*(192+128)*2 + 4*8*(192+192)*2, true},
	} {
		res, err := vllm.Plan(s, vllm.Input{Version: tt.version, MaxModelLen: 4096, Memory: vllm.Memory{AvailableKVBytes: gib}})
		if errors.Is(err, vllm.ErrRefused) != tt.refused || (err != nil && !tt.refused) {
			t.Fatalf("%s: err = %v", tt.version, err)
		}
		if res.BytesPerToken != tt.want {
			t.Errorf("%s: bytes per token %d, want %d", tt.version, res.BytesPerToken, tt.want)
		}
	}
}

// V0 logs from real runs (Qwen2.5-0.5B / -1.5B shapes, 4 GiB swap): the
// block and concurrency lines and the device word of each generation.
func TestV0RealLogs(t *testing.T) {
	qwen := func(layers, headDim, ctx int) *model.Spec {
		return &model.Spec{Name: "qwen2.5", NumLayers: layers, NumAttentionHeads: 14, NumKVHeads: 2, HeadDim: headDim,
			LayerKinds: kinds(layers, allFull), ContextLength: ctx, ModelDType: dtype.BFloat16}
	}
	tests := []struct {
		name, version string
		useV0         bool // VLLM_USE_V1=0 (0.8 to 0.10 default to V1)
		spec          *model.Spec
		kv            int64 // "the rest of the memory reserved for KV Cache is X GiB"
		want          []string
	}{
		{
			// 28 layers × 2 KV heads × 128: 458,752 B per block; 2.36 GiB.
			name: "0.7 prints CUDA", version: "0.7.3", spec: qwen(28, 128, 32768), kv: 5519*458752 + 1000,
			want: []string{"# CUDA blocks: 5519, # CPU blocks: 9362", "Maximum concurrency for 32768 tokens per request: 2.69x"},
		},
		{
			// 24 layers × 2 KV heads × 64: 196,608 B per block; 7.57 GiB.
			name: "0.9 on V0 prints cuda", version: "0.9.2", useV0: true, spec: qwen(24, 64, 32768), kv: 41345*196608 + 5000,
			want: []string{"# cuda blocks: 41345, # CPU blocks: 21845", "Maximum concurrency for 32768 tokens per request: 20.19x"},
		},
		{
			name: "0.6 prints GPU", version: "0.6", spec: qwen(24, 64, 32768), kv: 15712 * 196608,
			want: []string{"# GPU blocks: 15712, # CPU blocks: 21845", "Maximum concurrency for 32768 tokens per request: 7.67x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(tt.spec, vllm.Input{Version: tt.version, UseV0: tt.useV0, Memory: vllm.Memory{AvailableKVBytes: tt.kv}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.LogLines); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}
