package trtllm_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/model"
)

const gib = int64(1) << 30

// gibs converts a GiB figure as a log prints it to bytes.
func gibs(x float64) int64 { return int64(x * float64(gib)) }

// Worked example A: gpt-oss-120b on a GB10 under 1.1.0rc3. The log printed
// "available KV cache memory …: 5.95 GiB" and the estimate 86,711 tokens;
// any reading within that rounding (here 86,711.5 × 73,728 B) gives the run's
// exact lines: 2,710 blocks → 86,720 tokens, max_seq_len lowered to 86,720.
func TestWorkedExampleGptOss(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	res, err := trtllm.Plan(s, trtllm.Input{Version: "1.1.0rc3", KVCacheMemory: 86711*73728 + 36864,
		MaxBatchSize: 64, DisableOverlapScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	// The lines of the real log, in order (its profiling lines come from the
	// run itself and are not repeated for a measured reading).
	want := []string{
		"max_seq_len is not specified, using inferred value 131072",
		"Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and 8224, respectively). The smaller value will be used.",
		"Attention window size 131072 exceeds upper bound 8224 for available blocks. Reducing to 8224.",
		"Adjusted max_attention_window_vec to [8224]",
		"Adjusted window size 131072 to 8224 in blocks_per_window",
		"Adjusted max_seq_len to 8224",
		"Number of tokens per block: 32.",
		"[MemUsageChange] Allocated 0.56 GiB for max tokens in paged KV cache (8224).",
		"max_seq_len=8224, max_num_requests=64, max_num_tokens=8192, max_batch_size=64",
		"Estimated max memory in KV cache : 5.95 GiB",
		"Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and 86711, respectively). The smaller value will be used.",
		"Attention window size 131072 exceeds upper bound 86720 for available blocks. Reducing to 86720.",
		"Adjusted max_attention_window_vec to [86720]",
		"Adjusted window size 131072 to 86720 in blocks_per_window",
		"Adjusted max_seq_len to 86720",
		"Number of tokens per block: 32.",
		"[MemUsageChange] Allocated 5.95 GiB for max tokens in paged KV cache (86720).",
		"max_seq_len=86720, max_num_requests=64, max_num_tokens=8192, max_batch_size=64",
	}
	if diff := cmp.Diff(want, res.LogLines); diff != "" {
		t.Errorf("log lines mismatch (-want +got):\n%s", diff)
	}
	if res.Profile != trtllm.V11 || res.TokensPerBlock != 32 || res.CellSizeBytes != 73728 || res.EstimateBytesPerToken != 73728 {
		t.Errorf("profile %s, tpb %d, cell %d, estimate %d", res.Profile, res.TokensPerBlock, res.CellSizeBytes, res.EstimateBytesPerToken)
	}
	if res.EstimatedMaxTokens != 86711 || res.NumBlocks != 2710 || res.MaxTokens != 86720 || res.KVCacheBytes != 86720*73728 {
		t.Errorf("estimate %d, blocks %d, tokens %d, bytes %d; want 86711, 2710, 86720, %d", res.EstimatedMaxTokens, res.NumBlocks, res.MaxTokens, res.KVCacheBytes, 86720*73728)
	}
	if res.MaxSeqLen != 86720 || res.RequestedMaxSeqLen != 131072 || res.DryRunTokens != 8224 {
		t.Errorf("max_seq_len %d (requested %d), dry run %d", res.MaxSeqLen, res.RequestedMaxSeqLen, res.DryRunTokens)
	}
	if got := res.MaxConcurrency(86720); got != 1 {
		t.Errorf("MaxConcurrency(86720) = %v, want 1", got)
	}
	if got := res.MaxConcurrency(8192); got != 2710.0/256 {
		t.Errorf("MaxConcurrency(8192) = %v, want %v", got, 2710.0/256)
	}
	// The newest main rounds down: 2,709 blocks.
	latest, err := trtllm.Plan(s, trtllm.Input{Version: "latest", KVCacheMemory: 86711*73728 + 36864, MaxBatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if latest.NumBlocks != 2709 || latest.MaxSeqLen != 86688 {
		t.Errorf("latest: %d blocks, max_seq_len %d; want 2709, 86688", latest.NumBlocks, latest.MaxSeqLen)
	}
}

// The same run modelled from its profiling figures: weights 63.52 GiB inside
// torch, 0.85 GiB of activations, 49.28 GiB outside torch of which 0.56 GiB
// is the temporary pool, on 119.70 GiB. The profiling lines come out as the
// log printed them.
func TestModelledBudgetLines(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	res, err := trtllm.Plan(s, trtllm.Input{Version: "1.1", GPUMemoryBytes: gibs(119.70), WeightsBytes: gibs(63.52),
		ActivationBytes: gibs(0.85), NonTorchBytes: gibs(49.28-0.5647) - 1<<20, CUDAGraphBytes: 1 << 20, MaxBatchSize: 64, DisableOverlapScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"Memory used after loading model weights (inside torch) in memory usage profiling: 63.52 GiB",
		"Memory dynamically allocated during inference (inside torch) in memory usage profiling: 0.85 GiB",
		"Memory used outside torch (e.g., NCCL and CUDA graphs) in memory usage profiling: 49.28 GiB",
		"Peak memory during memory usage profiling (torch + non-torch): 113.65 GiB, available KV cache memory when calculating max tokens: 5.95 GiB, fraction is set 0.8999999761581421, kv size is 73728. device total memory 119.70 GiB, , tmp kv_mem 0.56 GiB",
		"Estimated max memory in KV cache : 5.95 GiB",
	} {
		if !contains(res.LogLines, line) {
			t.Errorf("missing line %q in\n%s", line, strings.Join(res.LogLines, "\n"))
		}
	}
	if res.Memory.Source != "modelled" || len(res.Memory.Estimated) != 0 || res.Memory.TemporaryKVBytes != 8224*73728 {
		t.Errorf("memory = %+v", res.Memory)
	}
	// available = (total − weights − activation − non-torch − graphs) × fraction.
	f := float64(float32(0.9))
	wantAvail := int64(math.Floor(float64(gibs(119.70)-gibs(63.52)-gibs(0.85)-(gibs(49.28-0.5647)-1<<20)-1<<20) * f))
	if res.Memory.AvailableKVBytes != wantAvail {
		t.Errorf("available = %d, want %d", res.Memory.AvailableKVBytes, wantAvail)
	}
	if res.EstimatedMaxTokens != wantAvail/73728 {
		t.Errorf("estimate = %d, want %d", res.EstimatedMaxTokens, wantAvail/73728)
	}

	// Without the figures every part is estimated and named.
	est, err := trtllm.Plan(s, trtllm.Input{GPUMemoryBytes: gibs(80)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"weights", "activation", "non_torch", "cudagraph"}, est.Memory.Estimated); diff != "" {
		t.Errorf("estimated parts mismatch (-want +got):\n%s", diff)
	}
	if !containsPrefix(est.Notes, "estimated without a GPU: weights, activation, non_torch, cudagraph") {
		t.Errorf("notes = %q", est.Notes)
	}
}

// Worked example B: Kimi-K2.5 (the DeepSeek-V3 text stack of Kimi-K2) on
// 8×B300, fp8: 158,543 blocks → 5,073,376 tokens → "Allocated 166.02 GiB".
func TestWorkedExampleKimi(t *testing.T) {
	s := load(t, "moonshotai__Kimi-K2-Instruct")
	for _, v := range []string{"1.1", "latest"} {
		res, err := trtllm.Plan(s, trtllm.Input{Version: v, TPSize: 8, KVCacheDType: "fp8", KVCacheMemory: 5073376 * 35136,
			GPUMemoryBytes: 275040 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if res.CellSizeBytes != 35136 || res.NumBlocks != 158543 || res.MaxTokens != 5073376 {
			t.Errorf("%s: cell %d, blocks %d, tokens %d", v, res.CellSizeBytes, res.NumBlocks, res.MaxTokens)
		}
		if want := "[MemUsageChange] Allocated 166.02 GiB for max tokens in paged KV cache (5073376)."; !contains(res.LogLines, want) {
			t.Errorf("%s: missing %q in\n%s", v, want, strings.Join(res.LogLines, "\n"))
		}
		if res.MaxSeqLen != 131072 {
			t.Errorf("%s: max_seq_len %d, want 131072 (the pool holds it)", v, res.MaxSeqLen)
		}
	}
}

// Worked example C at TP16: the estimate counts half a KV head, the pool a
// whole one, so the final min against fraction × free ÷ allocation cost
// decides.
func TestEstimateVersusAllocation(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	res, err := trtllm.Plan(s, trtllm.Input{Version: "1.1", TPSize: 16, KVCacheDType: "fp8", KVCacheMemory: 10 * gib,
		FreeMemoryAtAllocation: 10 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if res.EstimateBytesPerToken != 4096 || res.CellSizeBytes != 8192 {
		t.Fatalf("estimate %d, cell %d", res.EstimateBytesPerToken, res.CellSizeBytes)
	}
	// estimate: 10 GiB / 4096 = 2,621,440 tokens; allocation: 0.9f × 10 GiB /
	// 8192 = 1,179,647.97 → ceil(/32) = 36,864 blocks.
	if res.EstimatedMaxTokens != 2621440 || res.NumBlocks != 36864 {
		t.Errorf("estimate %d, blocks %d; want 2621440, 36864", res.EstimatedMaxTokens, res.NumBlocks)
	}
	if res.KVCacheBytes > 10*gib {
		t.Errorf("pool %d B exceeds the 10 GiB free", res.KVCacheBytes)
	}
	if !containsPrefix(res.Notes, "fraction × free memory ÷ the allocation cost is below the estimate") {
		t.Errorf("notes = %q", res.Notes)
	}
}

// Worked example D: DeepSeek-R1 (DeepSeek-V3 architecture), TP8 + PP2, bf16,
// one MTP layer: stages of 31 and 30 + 1 layers allocate 35,712 B/token
// each; 1.1 estimates the last stage without the draft layer, latest with it;
// the ranks take the minimum.
func TestWorkedExampleDeepSeekPP2MTP(t *testing.T) {
	s := load(t, "deepseek-ai__DeepSeek-V3")
	in := trtllm.Input{TPSize: 8, PPSize: 2, SpeculativeMode: trtllm.SpecMTP, KVCacheMemory: 40 * gib}
	tests := []struct {
		version string
		stages  []trtllm.Stage
		tokens  int64
	}{
		{"1.1", []trtllm.Stage{
			{Index: 0, Layers: 31, EstimateBytesPerToken: 35712, CellSizeBytes: 35712, EstimatedMaxMemory: 40 * gib, EstimatedMaxTokens: 40 * gib / 35712},
			{Index: 1, Layers: 30, DraftLayers: 1, EstimateBytesPerToken: 34560, CellSizeBytes: 35712, EstimatedMaxMemory: 40 * gib, EstimatedMaxTokens: 40 * gib / 34560},
		}, 40 * gib / 35712},
		{"latest", []trtllm.Stage{
			{Index: 0, Layers: 31, EstimateBytesPerToken: 35712, CellSizeBytes: 35712, EstimatedMaxMemory: 40 * gib, EstimatedMaxTokens: 40 * gib / 35712},
			{Index: 1, Layers: 30, DraftLayers: 1, EstimateBytesPerToken: 35712, CellSizeBytes: 35712, EstimatedMaxMemory: 40 * gib, EstimatedMaxTokens: 40 * gib / 35712},
		}, 40 * gib / 35712},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			in.Version = tt.version
			res, err := trtllm.Plan(s, in)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Stages
			for i := range got {
				got[i].MaxTokens = 0 // checked below
			}
			if diff := cmp.Diff(tt.stages, got); diff != "" {
				t.Errorf("stages mismatch (-want +got):\n%s", diff)
			}
			if res.EstimatedMaxTokens != tt.tokens || res.CellSizeBytes != 35712 {
				t.Errorf("estimate %d, cell %d", res.EstimatedMaxTokens, res.CellSizeBytes)
			}
			wantBlocks := (tt.tokens + 31) / 32
			if tt.version == "latest" {
				wantBlocks = tt.tokens / 32
			}
			if res.NumBlocks != wantBlocks {
				t.Errorf("blocks %d, want %d", res.NumBlocks, wantBlocks)
			}
		})
	}
}

// Two published engine-build logs (64-token blocks, the C++ executor) for a
// model of 262,144 B/token (32 layers × 32 KV heads × 128, fp16, TP2).
func TestEngineLogs(t *testing.T) {
	s := &model.Spec{Name: "llama-2-7b", ModelType: "llama", NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32, NumKVHeads: 32, HeadDim: 128,
		ContextLength: 4096, ModelDType: dtype.Float16}
	tests := []struct {
		name string
		in   trtllm.Input
		want []string
		seq  int
	}{
		{"pool smaller than max_seq_len", trtllm.Input{GPUMemoryBytes: gibs(22.18), FreeMemoryAfterLoad: gibs(1.42), MaxSeqLen: 8192, MaxInputLen: 8191}, []string{
			"Memory usage when calculating max tokens in paged kv cache: total: 22.18 GiB, available: 1.42 GiB",
			"Number of blocks in KV cache primary pool: 82",
			"Number of blocks in KV cache secondary pool: 0, onboard blocks to primary memory before reuse: true",
			"maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache. they are reduced to 5185",
			"maxInputLen is reduced to 5184",
			"Max KV cache pages per sequence: 82",
			"Number of tokens per block: 64.",
			"[MemUsageChange] Allocated 1.28 GiB for max tokens in paged KV cache (5248).",
		}, 5185},
		{"TensorRT-LLM's memory FAQ", trtllm.Input{GPUMemoryBytes: gibs(79.10), FreeMemoryAfterLoad: gibs(70.48), MaxSeqLen: 2048}, []string{
			"Memory usage when calculating max tokens in paged kv cache: total: 79.10 GiB, available: 70.48 GiB",
			"Number of blocks in KV cache primary pool: 4060",
			"Number of blocks in KV cache secondary pool: 0, onboard blocks to primary memory before reuse: true",
			"Max KV cache pages per sequence: 32",
			"Number of tokens per block: 64.",
			"[MemUsageChange] Allocated 63.44 GiB for max tokens in paged KV cache (259840).",
		}, 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Version, in.TPSize = "0.x", 2
			res, err := trtllm.Plan(s, in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.LogLines); diff != "" {
				t.Errorf("log lines mismatch (-want +got):\n%s", diff)
			}
			if res.CellSizeBytes != 262144 || res.MaxSeqLen != tt.seq || res.TokensPerBlock != 64 {
				t.Errorf("cell %d, max_seq_len %d, tpb %d", res.CellSizeBytes, res.MaxSeqLen, res.TokensPerBlock)
			}
		})
	}
}

// max_tokens caps the estimate in bytes (1.1, latest) or tokens (1.0).
func TestUserMaxTokens(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	tests := []struct {
		version string
		blocks  int64
		line    string
	}{
		{"1.0", 1563, "Estimated max tokens in KV cache : 50000"},
		{"1.1", 1563, "max_tokens=50000 is provided. It limits max memory to 6.10 GiB. New max_memory is set to 6.10 GiB"},
		{"latest", 1562, "max_tokens=50000 is provided. It limits max memory to 6.10 GiB. New max_memory is set to 6.10 GiB"},
	}
	for _, tt := range tests {
		res, err := trtllm.Plan(s, trtllm.Input{Version: tt.version, MaxTokens: 50000, KVCacheMemory: 40 * gib, GPUMemoryBytes: 80 * gib})
		if err != nil {
			t.Fatal(err)
		}
		if res.NumBlocks != tt.blocks || !contains(res.LogLines, tt.line) {
			t.Errorf("%s: blocks %d (want %d), lines\n%s", tt.version, res.NumBlocks, tt.blocks, strings.Join(res.LogLines, "\n"))
		}
	}
}

// max_attention_window with two windows gives two pools, each with an equal
// share of the estimated memory.
func TestPerWindowPools(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	res, err := trtllm.Plan(s, trtllm.Input{Version: "latest", KVCacheMemory: 20 * gib, GPUMemoryBytes: 128 * gib,
		MaxAttentionWindow: []int{128, 131072}})
	if err != nil {
		t.Fatal(err)
	}
	// 18 layers per window · 8 heads · 64 · 2 · 2 B = 36,864 B/token;
	// 10 GiB / 36,864 / 32 = 9,102 blocks each.
	want := []trtllm.WindowPool{
		{RequestedWindow: 128, Window: 128, Layers: 18, CellSizeBytes: 36864, NumBlocks: 9102},
		{RequestedWindow: 131072, Window: 131072, Layers: 18, CellSizeBytes: 36864, NumBlocks: 9102},
	}
	if diff := cmp.Diff(want, res.Windows); diff != "" {
		t.Errorf("windows mismatch (-want +got):\n%s", diff)
	}
	for _, line := range []string{"Window size = 128, primary_blocks: 9102, secondary_blocks: 0",
		"Derived window_size_shares: [0.5, 0.5]", "[MemUsageChange] Allocated 20.00 GiB for max tokens in paged KV cache (582528)."} {
		if !contains(res.LogLines, line) {
			t.Errorf("missing %q in\n%s", line, strings.Join(res.LogLines, "\n"))
		}
	}
	if res.MaxSeqLen != 131072 || res.NumBlocks != 2*9102 {
		t.Errorf("max_seq_len %d, blocks %d", res.MaxSeqLen, res.NumBlocks)
	}
	if got, want := res.MaxConcurrency(131072), 9102.0/4096; got != want {
		t.Errorf("MaxConcurrency = %v, want %v (the full-attention pool limits)", got, want)
	}
}

func TestRefusals(t *testing.T) {
	llama := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	fp8Ckpt := load(t, "Qwen__Qwen3-8B")
	fp8Ckpt.Quant = &model.QuantSpec{Method: "modelopt", KVCacheQuantAlgo: "FP8", WeightBits: 8}
	tests := []struct {
		name    string
		spec    *model.Spec
		in      trtllm.Input
		is      error
		message string
		knob    string
	}{
		{"fraction 1 (PyTorch)", llama, trtllm.Input{FreeGPUMemoryFraction: 1, KVCacheMemory: gib}, trtllm.ErrRefused,
			"Invalid freeMemFraction, freeMemFraction 1.0 must be smaller than 1.0", "free_gpu_memory_fraction"},
		{"fraction 1 (engine)", llama, trtllm.Input{Version: "0.x", FreeGPUMemoryFraction: 1, FreeMemoryAfterLoad: gib}, trtllm.ErrRefused,
			"Invalid freeMemFraction, freeMemFraction (1.000000) must be smaller than 1.0f", "free_gpu_memory_fraction"},
		{"zero blocks", llama, trtllm.Input{Version: "1.1", KVCacheMemory: 100000}, trtllm.ErrRefused,
			"Impossible to fit in any sequence in kvCache", "free_gpu_memory_fraction"},
		{"prompt over max_num_tokens", llama, trtllm.Input{KVCacheMemory: 20 * gib, PromptLen: 9000}, trtllm.ErrRefused,
			"The sum of prompt length (9000.0), query length (0) should not exceed max_num_tokens (8192)", "max_num_tokens"},
		{"prompt over the clamped max_seq_len", llama, trtllm.Input{KVCacheMemory: 7904 * 131072, PromptLen: 8000}, trtllm.ErrRefused,
			"`default_max_tokens` (-96) must be greater than 0, `default_max_tokens` (-96) = max_seq_len (7904) - `splited_prompt_len` (8000) - `query_token_len` (0)", "max_seq_len"},
		{"engine pool too small", llama, trtllm.Input{Version: "0.x", FreeMemoryAfterLoad: 100000}, trtllm.ErrRefused,
			"maxTokensInPagedKvCache (0) must be large enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (1) * tokensPerBlock (64) * maxBlocksPerSeq (2048))", "free_gpu_memory_fraction"},
		{"pp over layers", llama, trtllm.Input{PPSize: 33, KVCacheMemory: gib}, trtllm.ErrRefused,
			"pp size cannot be larger than num_hidden_layers", "pp_size"},
		{"1.0 refuses overriding a pre-quantized KV cache", fp8Ckpt, trtllm.Input{Version: "1.0", KVCacheDType: "nvfp4", KVCacheMemory: gib}, trtllm.ErrRefused,
			"Attempting to override KV cache quantization \"FP8\" with PyTorchConfig.kv_cache_dtype=\"nvfp4\". You cannot override a checkpoint with a pre-quantized KV cache that doesn't match.", "kv_cache_dtype"},
		{"int8 is not a PyTorch cache type", llama, trtllm.Input{KVCacheDType: "int8", KVCacheMemory: gib}, trtllm.ErrUnsupportedDType,
			"", ""},
		{"hybrid Mamba", load(t, "Qwen__Qwen3-Next-80B-A3B-Instruct"), trtllm.Input{KVCacheMemory: gib}, trtllm.ErrUnsupportedModel, "", ""},
		{"kv_cache_memory on an engine build", llama, trtllm.Input{Version: "0.x", KVCacheMemory: gib}, trtllm.ErrInvalidInput, "", ""},
		{"no memory at all", llama, trtllm.Input{}, trtllm.ErrInvalidInput, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := trtllm.Plan(tt.spec, tt.in)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if tt.message == "" {
				return
			}
			var re *engine.Refusal
			if !errors.As(err, &re) || !errors.Is(err, engine.ErrRefused) {
				t.Fatalf("err %v is not an engine.Refusal", err)
			}
			if re.Engine != "trtllm" || re.Message != tt.message || re.Flag != tt.knob || re.Hint == "" {
				t.Errorf("refusal = %+v\nwant message %q, knob %q", re, tt.message, tt.knob)
			}
			if res == nil || res.Error != tt.message {
				t.Errorf("result error = %v", res)
			}
		})
	}
	// Chunked prefill admits the long prompt.
	if _, err := trtllm.Plan(llama, trtllm.Input{KVCacheMemory: 20 * gib, PromptLen: 9000, EnableChunkedPrefill: true}); err != nil {
		t.Errorf("chunked prefill: %v", err)
	}
	// The invalid dtype error carries TensorRT-LLM's words.
	_, err := trtllm.Plan(llama, trtllm.Input{KVCacheDType: "int8", KVCacheMemory: gib})
	if err == nil || !strings.Contains(err.Error(), `Overriding KV cache quantization with an invalid type "llm_args.KvCacheConfig.dtype="int8" Accepted types are "('fp8', 'nvfp4', 'auto')".`) {
		t.Errorf("err = %v", err)
	}
}

// Newer versions override a pre-quantized KV cache with a warning.
func TestKVDTypeOverrideWarning(t *testing.T) {
	s := load(t, "Qwen__Qwen3-8B")
	s.Quant = &model.QuantSpec{Method: "modelopt", KVCacheQuantAlgo: "FP8", WeightBits: 8}
	res, err := trtllm.Plan(s, trtllm.Input{KVCacheDType: "nvfp4", KVCacheMemory: 10 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if res.KVCacheDType.Name != "nvfp4" || !contains(res.Warnings, `Overriding checkpoint KV cache quantization "FP8" with llm_args.KvCacheConfig.dtype="nvfp4".`) {
		t.Errorf("dtype %+v, warnings %q", res.KVCacheDType, res.Warnings)
	}
	auto, err := trtllm.Plan(s, trtllm.Input{KVCacheMemory: 10 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if auto.KVCacheDType.Name != "fp8" || !auto.KVCacheDType.FromCheckpoint || auto.CellSizeBytes != 73728 {
		t.Errorf("auto: %+v, cell %d", auto.KVCacheDType, auto.CellSizeBytes)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	err := trtllm.Input{Version: "banana", FreeGPUMemoryFraction: -1, TokensPerBlock: -2, MaxAttentionWindow: []int{0}, SpeculativeMode: "medusa"}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	// The model is Plan's first argument, not part of Input.
	if _, perr := trtllm.Plan(nil, trtllm.Input{KVCacheMemory: gib}); !errors.Is(perr, trtllm.ErrInvalidInput) || !strings.Contains(perr.Error(), "no model") {
		t.Errorf("Plan(nil, ...) = %v, want no model", perr)
	}
	for _, want := range []string{"unknown version", "free_gpu_memory_fraction", "tokens_per_block", "max_attention_window", "speculative_decoding_mode", "gpu_memory_bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func containsPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// When one sequence of every window does not fit the pool,
// adjust_window_sizes_for_vswa shrinks the windows before the shares are cut.
func TestPerWindowAdjustment(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	res, err := trtllm.Plan(s, trtllm.Input{Version: "latest", KVCacheMemory: 2 * gib, GPUMemoryBytes: 128 * gib,
		MaxAttentionWindow: []int{128, 131072}})
	if err != nil {
		t.Fatal(err)
	}
	// Needed: 128 × 36,864 + 131,072 × 36,864 B > 2 GiB. Ascending windows:
	// 128 takes 128 tokens of all 36 layers (73,728 B/token), then the
	// full-attention layers buy (2 GiB − 128 × 73,728) // 36,864 = 57,998 more,
	// capped by the estimate 2 GiB // 73,728 = 29,127 tokens. Equal shares:
	// 1 GiB / 36,864 / 32 = 910 blocks each; 29,127 > 910 × 32 = 29,120, so the
	// clamp lowers the window and max_seq_len to 29,120.
	want := []trtllm.WindowPool{
		{RequestedWindow: 128, Window: 128, Layers: 18, CellSizeBytes: 36864, NumBlocks: 910},
		{RequestedWindow: 131072, Window: 29120, Layers: 18, CellSizeBytes: 36864, NumBlocks: 910},
	}
	if diff := cmp.Diff(want, res.Windows); diff != "" {
		t.Errorf("windows mismatch (-want +got):\n%s", diff)
	}
	if res.MaxSeqLen != 29120 || !contains(res.LogLines, "Adjusting the window sizes [128, 131072] to fit the memory 2147483648 bytes.") ||
		!contains(res.Warnings, "Attention window size 29127 exceeds upper bound 29120 for available blocks. Reducing to 29120.") {
		t.Errorf("max_seq_len %d, lines\n%s", res.MaxSeqLen, strings.Join(res.LogLines, "\n"))
	}
	if diff := cmp.Diff([]int{128, 29120}, res.MaxAttentionWindow); diff != "" {
		t.Errorf("max_attention_window mismatch (-want +got):\n%s", diff)
	}
}

// One-model EAGLE3 adds a draft layer to the last stage's pool and, with the
// overlap scheduler, draft tokens to every dummy request of the dry run.
func TestEagle3(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	in := trtllm.Input{Version: "1.1", KVCacheMemory: 20 * gib, MaxNumTokens: 8184}
	plain, err := trtllm.Plan(s, in)
	if err != nil {
		t.Fatal(err)
	}
	in.SpeculativeMode, in.MaxDraftLen = trtllm.SpecEagle3, 3
	eagle, err := trtllm.Plan(s, in)
	if err != nil {
		t.Fatal(err)
	}
	// 2 · 33 · 8 · 128 · 2 B allocated; 1.1 estimates the 32 target layers.
	if eagle.CellSizeBytes != 135168 || eagle.EstimateBytesPerToken != 131072 {
		t.Errorf("cell %d, estimate %d", eagle.CellSizeBytes, eagle.EstimateBytesPerToken)
	}
	// extra = 1 + 3 (overlap) + 3 + 2 (max_draft_len − 1): ceil(8193/32) = 257
	// blocks instead of ceil(8185/32) = 256.
	if plain.DryRunTokens != 256*32 || eagle.DryRunTokens != 257*32 {
		t.Errorf("dry run %d / %d tokens", plain.DryRunTokens, eagle.DryRunTokens)
	}
	in.Version = "latest"
	latest, err := trtllm.Plan(s, in)
	if err != nil {
		t.Fatal(err)
	}
	if latest.EstimateBytesPerToken != 135168 {
		t.Errorf("latest estimate %d, want 135168 (draft layer included)", latest.EstimateBytesPerToken)
	}
}
