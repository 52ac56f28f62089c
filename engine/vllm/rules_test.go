package vllm_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/model"
)

func load(t *testing.T, name string) *model.Spec {
	t.Helper()
	s, err := catalog.Load(name)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	return s
}

// Rule 1: ModelConfig.verify_with_parallel_config refuses query heads that
// tensor parallelism does not divide; the attention layer asserts that KV
// heads and TP divide one another. The error names the sizes that work,
// and the nearest one plans.
func TestTensorParallelDivisibility(t *testing.T) {
	tests := []struct {
		model   string
		tp      int
		msg     string
		valid   []int
		nearest int
	}{
		{"microsoft/phi-4", 8, "AssertionError: assert self.total_num_kv_heads % tp_size == 0 (10 KV heads, tensor parallel size 8)", []int{1, 2, 5, 10, 20, 40}, 10},
		{"google/gemma-3-1b-pt", 8, "Total number of attention heads (4) must be divisible by tensor parallel size (8).", []int{1, 2, 4}, 4},
		{"meta-llama/Llama-3.1-8B-Instruct", 3, "Total number of attention heads (32) must be divisible by tensor parallel size (3).", []int{1, 2, 4, 8, 16, 32}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			s := load(t, tt.model)
			cfg := vllm.Input{TensorParallelSize: tt.tp, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib}
			for _, v := range []string{"0.6", "0.8", "0.11", "latest"} {
				cfg.Version = v
				res, err := vllm.Plan(s, cfg)
				var te *vllm.TPError
				if !errors.As(err, &te) || !errors.Is(err, vllm.ErrRefused) {
					t.Fatalf("%s: err = %v, want a *TPError refusal", v, err)
				}
				var re *engine.Refusal
				if !errors.As(err, &re) || re.Message != tt.msg || res.Error != tt.msg {
					t.Errorf("%s: message %q (result %q), want %q", v, te.Message, res.Error, tt.msg)
				} else if re.Flag != "--tensor-parallel-size" || re.Value != strconv.Itoa(tt.nearest) || !errors.Is(err, engine.ErrRefused) {
					t.Errorf("%s: fix %s %s, want --tensor-parallel-size %d", v, re.Flag, re.Value, tt.nearest)
				}
				if false {
					t.Errorf("%s: message %q (result %q), want %q", v, te.Message, res.Error, tt.msg)
				}
				if diff := cmp.Diff(tt.valid, te.ValidSizes); diff != "" {
					t.Errorf("%s: valid sizes (-want +got):\n%s", v, diff)
				}
				if te.Nearest() != tt.nearest {
					t.Errorf("%s: nearest %d, want %d", v, te.Nearest(), tt.nearest)
				}
			}
			cfg.TensorParallelSize = tt.nearest
			if _, err := vllm.Plan(s, cfg); err != nil {
				t.Errorf("the fix --tensor-parallel-size %d does not plan: %v", tt.nearest, err)
			}
		})
	}
	// MLA shards only the query heads: DeepSeek-V3's 128 KV heads do not
	// matter at TP 16 nor at TP 256.
	if _, err := vllm.Plan(load(t, "deepseek-ai/DeepSeek-V3"), vllm.Input{TensorParallelSize: 16, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib}); err != nil {
		t.Errorf("DeepSeek-V3 at TP 16: %v", err)
	}
}

// Rule 2: a model-level sliding_window without layer_types makes every
// layer a sliding-window layer in vLLM, even a 262144-token window over a
// 131072-token context (Phi-4-mini): one block more per request than full
// attention, cdiv(min(W − 1 + in-flight, L), B) + 1 = 513 at L = 8192.
func TestModelLevelSlidingWindow(t *testing.T) {
	s := load(t, "microsoft/Phi-4-mini-instruct")
	if s.CountLayers(model.SlidingAttention) != 0 || s.UniformSlidingWindow != 262144 {
		t.Fatalf("spec: %d sliding layers, uniform window %d; want 0 and 262144 (SGLang keeps full attention)",
			s.CountLayers(model.SlidingAttention), s.UniformSlidingWindow)
	}
	tests := []struct {
		tp     int
		kv     int64
		tokens int64
	}{
		{1, 7514582908, 57216},
		{2, 20143633436, 306760},
	}
	for _, tt := range tests {
		res, err := vllm.Plan(s, vllm.Input{TensorParallelSize: tt.tp, MaxModelLen: 8192, KVCacheMemoryBytes: tt.kv})
		if err != nil {
			t.Fatal(err)
		}
		if res.KVCacheSizeTokens != tt.tokens || res.BlocksPerRequest != 513 || len(res.Groups) != 1 ||
			res.Groups[0].Kind != vllm.SlidingWindow || res.Groups[0].Window != 262144 {
			t.Errorf("TP %d: %d tokens, %d blocks per request, groups %+v; want %d, 513, one sliding_window group of 262144",
				tt.tp, res.KVCacheSizeTokens, res.BlocksPerRequest, res.Groups, tt.tokens)
		}
	}
	// V0 sizes sliding windows as full attention.
	res, err := vllm.Plan(s, vllm.Input{Version: "0.6", MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: 7514582908}})
	if err != nil {
		t.Fatal(err)
	}
	if res.KVCacheSizeTokens != 7514582908/(16*131072)*16 {
		t.Errorf("0.6: %d tokens", res.KVCacheSizeTokens)
	}
}

// Rules 3 and 4: Kimi-Linear's KDA state (conv 1536×3 in bf16 plus a
// float32 recurrent 4×128×128 at TP 8 = 271,360 B) against a 1,152-byte
// MLA token: the latest vLLM aligns on max(kernel block, --block-size) and
// at least 128 for MLA hybrids, so --block-size 32 gives 256-token blocks.
func TestHybridBlockAlignment(t *testing.T) {
	s := load(t, "moonshotai/Kimi-Linear-48B-A3B-Instruct")
	base := vllm.Input{TensorParallelSize: 8, KVCacheDType: "bfloat16", BlockSize: 32, MaxModelLen: 4096, KVCacheMemoryBytes: 26175922023}
	res, err := vllm.Plan(s, base)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{res.BlockSize, res.NumGPUBlocks, res.KVCacheSizeTokens, fmtX2(res.MaxConcurrency)}
	if diff := cmp.Diff([]any{256, int64(12679), int64(2360599), "576.32"}, got); diff != "" {
		t.Errorf("block, blocks, tokens, concurrency (-want +got):\n%s", diff)
	}
	// The recurrent state is float32: the 271,360-byte state is padded to
	// one 256-token MLA page (294,912 B).
	if !contains(res.LogLines, "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.") {
		t.Errorf("log lines %q", res.LogLines)
	}
	// The alignment rule across releases, without --block-size on a
	// Hopper: 0.18 aligns on FlashAttention MLA's 16 (16 × cdiv(271360,
	// 16 × 1152) = 240), 0.13 on 64, the latest on 128.
	for _, tt := range []struct {
		version string
		block   int
	}{{"0.13", 256}, {"0.18", 240}, {"latest", 256}} {
		c := base
		c.Version, c.BlockSize = tt.version, 0
		res, err := vllm.Plan(s, c)
		if err != nil {
			t.Fatal(err)
		}
		if res.BlockSize != tt.block {
			t.Errorf("%s: block %d, want %d", tt.version, res.BlockSize, tt.block)
		}
	}
}

func fmtX2(f float64) string { return strconvFormat2(f) }

// Rule 5: the attention backend decides which KV dtypes start. No CUDA MLA
// backend stores fp8_e5m2, and NVFP4 pages run only on FlashInfer on SM
// 10.x; elsewhere vLLM refuses with its selector's reasons.
func TestBackendKVDTypeSupport(t *testing.T) {
	dsv3 := load(t, "deepseek-ai/DeepSeek-V3")
	res, err := vllm.Plan(dsv3, vllm.Input{KVCacheDType: "fp8_e5m2", GPUSM: 90, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib})
	want := "No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8_e5m2, block_size=None, use_mla=True, has_sink=False, use_sparse=False, use_mm_prefix=False, use_per_head_quant_scales=False, attn_type=decoder, use_non_causal=False, use_batch_invariant=False). Reasons: {FLASH_ATTN_MLA: [kv_cache_dtype not supported], FLASHMLA: [kv_cache_dtype not supported], FLASHINFER_MLA: [kv_cache_dtype not supported, compute capability not supported], TRITON_MLA: [kv_cache_dtype not supported], FLASHMLA_SPARSE: [kv_cache_dtype not supported, non-sparse not supported]}."
	if !errors.Is(err, vllm.ErrRefused) || res.Error != want {
		t.Errorf("DeepSeek-V3 fp8_e5m2 on H100: err %v\n got %q\nwant %q", err, res.Error, want)
	}
	// The fix names the dtypes that start; fp8 (e4m3) runs on FlashMLA
	// (FlashAttention MLA stores no fp8).
	var be *vllm.BackendError
	if !errors.As(err, &be) || be.SuggestedKVCacheDType() != "fp8" ||
		!cmp.Equal(be.ValidKVCacheDTypes, []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3"}) {
		t.Fatalf("err %v: want a *BackendError suggesting fp8", err)
	}
	res, err = vllm.Plan(dsv3, vllm.Input{KVCacheDType: be.SuggestedKVCacheDType(), GPUSM: 90, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib})
	if err != nil || res.AttentionBackend != vllm.BackendFlashMLA || res.BlockSize != 64 {
		t.Errorf("DeepSeek-V3 fp8 on H100: %v, backend %q, block %d", err, res.AttentionBackend, res.BlockSize)
	}
	// B200 too: FlashInfer MLA, CUTLASS MLA and FlashMLA all lack e5m2.
	if _, err := vllm.Plan(dsv3, vllm.Input{KVCacheDType: "fp8_e5m2", GPUSM: 100, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib}); !errors.Is(err, vllm.ErrRefused) {
		t.Errorf("DeepSeek-V3 fp8_e5m2 on B200: %v", err)
	}

	llama := load(t, "meta-llama/Llama-3.1-8B-Instruct")
	for _, tt := range []struct {
		gpu     string
		sm      int
		backend string // "" for a refusal
	}{
		{"B200", 100, vllm.BackendFlashInfer},
		{"GB200", 100, vllm.BackendFlashInfer},
		{"B300", 103, vllm.BackendFlashInfer},
		{"H100", 90, ""},
		{"H200", 90, ""},
		{"L40S", 89, ""},
		{"A100", 80, ""},
		{"RTX-4090", 89, ""},
		{"RTX-PRO-6000", 120, ""},
	} {
		res, err := vllm.Plan(llama, vllm.Input{KVCacheDType: "nvfp4", GPUSM: tt.sm, MaxModelLen: 8192, KVCacheMemoryBytes: 20 * gib})
		switch {
		case tt.backend != "" && (err != nil || res.AttentionBackend != tt.backend || res.BytesPerToken != 36864):
			t.Errorf("nvfp4 on %s: err %v, backend %q, %d B/token", tt.gpu, err, res.AttentionBackend, res.BytesPerToken)
		case tt.backend == "" && (!errors.Is(err, vllm.ErrRefused) || !strings.HasPrefix(res.Error, "No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, dtype=torch.bfloat16, kv_cache_dtype=nvfp4,")):
			t.Errorf("nvfp4 on %s: err %v, message %q", tt.gpu, err, res.Error)
		case tt.backend == "":
			var be *vllm.BackendError
			if !errors.As(err, &be) || be.SuggestedKVCacheDType() == "" {
				t.Fatalf("nvfp4 on %s: no suggestion in %v", tt.gpu, err)
			}
			if _, err := vllm.Plan(llama, vllm.Input{KVCacheDType: be.SuggestedKVCacheDType(), GPUSM: tt.sm, MaxModelLen: 8192, KVCacheMemoryBytes: 20 * gib}); err != nil {
				t.Errorf("nvfp4 on %s: the fix --kv-cache-dtype %s: %v", tt.gpu, be.SuggestedKVCacheDType(), err)
			}
		}
	}
	// An explicit backend that cannot run the launch.
	_, err = vllm.Plan(llama, vllm.Input{KVCacheDType: "nvfp4", GPUSM: 100, AttentionBackend: vllm.BackendFlashAttn, MaxModelLen: 8192, KVCacheMemoryBytes: 20 * gib})
	if err == nil || !strings.HasPrefix(err.Error(), "vllm: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: ['kv_cache_dtype not supported'] (") {
		t.Errorf("FLASH_ATTN with nvfp4: %v", err)
	}
	// A --block-size the backend cannot tile: DeepSeek-V3.2's sparse
	// backend needs 64-token pages.
	res, err = vllm.Plan(load(t, "deepseek-ai/DeepSeek-V3.2"), vllm.Input{BlockSize: 16, GPUSM: 90, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib})
	if !errors.Is(err, vllm.ErrRefused) || !strings.Contains(res.Error, "FLASHMLA_SPARSE: [block_size not supported]") ||
		!errors.As(err, &be) || !be.DropBlockSize {
		t.Errorf("DeepSeek-V3.2 --block-size 16: %v", err)
	}
	// Default backends and their blocks on the latest release.
	for _, tt := range []struct {
		spec    *model.Spec
		sm      int
		backend string
		block   int
	}{
		{llama, 90, vllm.BackendFlashAttn, 16},
		{llama, 100, vllm.BackendFlashInfer, 16},
		{dsv3, 90, vllm.BackendFlashAttnMLA, 16},
		{dsv3, 100, vllm.BackendFlashInferMLA, 32},
		{dsv3, 80, vllm.BackendTritonMLA, 16},
	} {
		res, err := vllm.Plan(tt.spec, vllm.Input{GPUSM: tt.sm, MaxModelLen: 4096, KVCacheMemoryBytes: 20 * gib})
		if err != nil || res.AttentionBackend != tt.backend || res.BlockSize != tt.block {
			t.Errorf("%s on SM %d: %v, backend %q block %d; want %s, %d", tt.spec.Name, tt.sm, err, res.AttentionBackend, res.BlockSize, tt.backend, tt.block)
		}
	}
}

// Rule 6: version profiles. 0.6.x has no MLA: Kimi-K2 (model_type kimi_k2)
// caches per-head K and V of hidden/heads = 112 on 8 KV heads per rank at
// TP 8: 3,189 blocks of 16 = 51,024 tokens, then the max-seq-len refusal.
func TestVersionProfiles(t *testing.T) {
	k2 := load(t, "moonshotai/Kimi-K2-Instruct")
	res, err := vllm.Plan(k2, vllm.Input{Version: "0.6.6", TensorParallelSize: 8, Memory: vllm.Memory{AvailableKVBytes: 11158225554}})
	want := "The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (51024). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
	if !errors.Is(err, vllm.ErrRefused) || res.Error != want || res.NumGPUBlocks != 3189 || res.KVCacheSizeTokens != 51024 || res.BytesPerToken != 61*8*112*2*2 {
		t.Errorf("Kimi-K2 on 0.6.6: err %v, %d blocks, %d tokens, %d B/token", err, res.NumGPUBlocks, res.KVCacheSizeTokens, res.BytesPerToken)
	}
	// DeepseekV3ForCausalLM is not registered before 0.6.6.
	if _, err := vllm.Plan(k2, vllm.Input{Version: "0.6.5", TensorParallelSize: 8, Memory: vllm.Memory{AvailableKVBytes: gib}}); !errors.Is(err, vllm.ErrUnsupportedModel) {
		t.Errorf("Kimi-K2 on 0.6.5: %v", err)
	}
	// DeepSeek-V3 per TP 8 rank and layer: 0.6.6 pads the head to 256
	// (16 heads × 2 × 256 × 2 B), 0.7.0 uses 192, 0.7.1 one 576-wide latent
	// row, 0.7.2 aligns it to 1,280 bytes, 0.8 back to 1,152.
	dsv3 := load(t, "deepseek-ai/DeepSeek-V3")
	for _, tt := range []struct {
		version string
		perTok  int64
	}{{"0.6.6", 16 * 2 * 256 * 2}, {"0.7.0", 16 * 2 * 192 * 2}, {"0.7.1", 1152}, {"0.7.3", 1280}, {"0.8.5", 1152}} {
		res, err := vllm.Plan(dsv3, vllm.Input{Version: tt.version, TensorParallelSize: 8, MaxModelLen: 4096, UseV0: true, Memory: vllm.Memory{AvailableKVBytes: 40 * gib}})
		if err != nil || res.BytesPerToken != 61*tt.perTok {
			t.Errorf("DeepSeek-V3 on %s: %v, %d B/token, want %d", tt.version, err, res.BytesPerToken, 61*tt.perTok)
		}
	}

	// 0.8 to 0.10 default to V1, falling back to V0 for what V1 lacks.
	llama := llama31_8B()
	for _, tt := range []struct {
		name, version, dtype string
		sm                   int
		engine               string
		lines                []string
	}{
		{"0.8.2 prints V1 lines", "0.8.2", "", 90, "V1",
			[]string{"GPU KV cache size: 23,648 tokens", "Maximum concurrency for 8,192 tokens per request: 2.89x"}},
		{"0.8.2 falls back for fp8", "0.8.2", "fp8", 90, "V0",
			[]string{"--kv-cache-dtype is not supported by the V1 Engine. Falling back to V0. ", "# cuda blocks: 2957, # CPU blocks: 4096", "Maximum concurrency for 8192 tokens per request: 5.78x"}},
		{"0.9.2 runs fp8 on FlashAttention 3", "0.9.2", "fp8", 90, "V1",
			[]string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 47,312 tokens", "Maximum concurrency for 8,192 tokens per request: 5.78x"}},
		{"0.9.2 falls back for fp8 on Ampere", "0.9.2", "fp8", 80, "V0",
			[]string{"--kv-cache-dtype is not supported by the V1 Engine. Falling back to V0. ", "# cuda blocks: 2957, # CPU blocks: 4096", "Maximum concurrency for 8192 tokens per request: 5.78x"}},
		{"0.10.1 falls back on Turing", "0.10.1", "", 75, "V0",
			[]string{"Compute Capability < 8.0 is not supported by the V1 Engine. Falling back to V0. ", "# cuda blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 8192 tokens per request: 2.89x"}},
		{"0.10.2 runs Turing on V1", "0.10.2", "", 75, "V1",
			[]string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens", "Maximum concurrency for 8,192 tokens per request: 2.89x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(llama, vllm.Input{Version: tt.version, KVCacheDType: tt.dtype, GPUSM: tt.sm, MaxModelLen: 8192, Memory: vllm.Memory{AvailableKVBytes: llamaRunKV}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Engine != tt.engine {
				t.Errorf("engine %s, want %s", res.Engine, tt.engine)
			}
			if diff := cmp.Diff(tt.lines, res.LogLines); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}

	// The admission refusal's wording by release.
	tail := "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
	for _, tt := range []struct{ version, want string }{
		{"0.8.2", "To serve at least one request with the models's max seq len (29000), (3.54 GB KV cache is needed, which is larger than the available KV cache memory (2.89 GB). " + tail},
		{"0.8.5", "To serve at least one request with the models's max seq len (29000), (3.54 GiB KV cache is needed, which is larger than the available KV cache memory (2.89 GiB). Based on the available memory,  " + tail},
		{"0.9.2", "To serve at least one request with the models's max seq len (29000), (3.54 GiB KV cache is needed, which is larger than the available KV cache memory (2.89 GiB). Based on the available memory, the estimated maximum model length is 23648. " + tail},
	} {
		res, err := vllm.Plan(llama, vllm.Input{Version: tt.version, MaxModelLen: 29000, Memory: vllm.Memory{AvailableKVBytes: llamaRunKV}})
		if !errors.Is(err, vllm.ErrRefused) || res.Error != tt.want {
			t.Errorf("%s: %v\n got %q\nwant %q", tt.version, err, res.Error, tt.want)
		}
	}

	// Scheduler defaults by release: 0.8.0 to 0.8.4 by GPU name, 0.8.5 by
	// memory (A100s included), 0.9 on without A100s, 0.28 on 16384 batched
	// tokens on GPUs of 160 GiB or more.
	for _, tt := range []struct {
		version, gpu string
		total        int64
		batched      int
		seqs         int
	}{
		{"0.8.2", "H100-80GB", 80 * gib, 8192, 1024},
		{"0.8.2", "A100-80GB", 80 * gib, 2048, 1024},
		{"0.8.5", "A100-80GB", 80 * gib, 8192, 1024},
		{"0.9.0", "A100-80GB", 80 * gib, 2048, 256},
		{"0.27.0", "B200", 183359 * mib, 8192, 1024},
		{"latest", "B200", 183359 * mib, 16384, 1024},
		{"latest", "H200", 143771 * mib, 8192, 1024},
		{"latest", "H100-80GB", 81559 * mib, 8192, 1024},
	} {
		res, err := vllm.Plan(llama, vllm.Input{Version: tt.version, GPUName: tt.gpu, GPUSM: 90, MaxModelLen: 4096,
			Memory: vllm.Memory{TotalBytes: tt.total, AvailableKVBytes: 20 * gib}})
		if err != nil || res.MaxNumBatchedTokens != tt.batched || res.MaxNumSeqs != tt.seqs {
			t.Errorf("%s on %s: %v, max_num_batched_tokens %d, max_num_seqs %d; want %d, %d", tt.version, tt.gpu, err,
				res.MaxNumBatchedTokens, res.MaxNumSeqs, tt.batched, tt.seqs)
		}
	}
}
