package plan_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

const mib = int64(1) << 20

// The Llama-3.1-8B run of docs/vllm.md#known-answers: 2.89 GiB of KV cache.
const llamaKV = units.Size(1478*2*mib + mib)

func TestRunVLLM(t *testing.T) {
	type got struct {
		Version     string
		Blocks      int64
		Tokens      int64
		Capacity    int64
		Concurrency float64
		BlockSize   int
		Cell        float64
		MaxLen      int
		Lines       []string
		Error       string
		FixValue    string
	}
	tests := []struct {
		name    string
		req     plan.Request
		want    got
		wantErr error
	}{
		{
			name: "llama 0.11 at 8192",
			req:  plan.Request{Engine: "vllm", VLLMVersion: "0.11", MaxModelLen: 8192, KVCacheMemoryBytes: llamaKV},
			want: got{Version: "0.11", Blocks: 1478, Tokens: 23648, Capacity: 23648, Concurrency: 1478.0 / 512, BlockSize: 16, Cell: 131072, MaxLen: 8192,
				Lines: []string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens", "Maximum concurrency for 8,192 tokens per request: 2.89x"}},
		},
		{
			name: "context_length stands in for max_model_len",
			req:  plan.Request{Engine: "vllm", VLLMVersion: "latest", ContextLength: 8192, KVCacheMemoryBytes: llamaKV, TensorParallelSize: 1},
			want: got{Version: "latest", Blocks: 1478, Tokens: 23648, Capacity: 23648, Concurrency: 1478.0 / 512, BlockSize: 16, Cell: 131072, MaxLen: 8192,
				Lines: []string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens, Maximum concurrency for 8,192 tokens per request: 2.89x"}},
		},
		{
			name: "llama 0.11 refuses 29000 tokens",
			req:  plan.Request{Engine: "vllm", VLLMVersion: "0.11", MaxModelLen: 29000, KVCacheMemoryBytes: llamaKV},
			want: got{Version: "0.11", BlockSize: 16, Cell: 131072, MaxLen: 29000,
				Lines:    []string{"Available KV cache memory: 2.89 GiB"},
				Error:    "To serve at least one request with the models's max seq len (29000), (3.54 GiB KV cache is needed, which is larger than the available KV cache memory (2.89 GiB). Based on the available memory, the estimated maximum model length is 23648. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
				FixValue: "fp8"}, // verified: fp8 KV holds one 29k request
			wantErr: plan.ErrInfeasible,
		},
		{
			name: "0.6 takes kv_cache_memory_bytes as the measured budget, prints the blocks, then refuses",
			req:  plan.Request{Engine: "vllm", VLLMVersion: "0.6.4", MaxModelLen: 29000, KVCacheMemoryBytes: llamaKV},
			want: got{Version: "0.6", Blocks: 1478, Tokens: 23648, Capacity: 23648, Concurrency: 23648.0 / 29000, BlockSize: 16, Cell: 131072, MaxLen: 29000,
				Lines:    []string{"# GPU blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 29000 tokens per request: 0.82x"},
				Error:    "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
				FixValue: "fp8"}, // verified: fp8 KV holds one 29k request
			wantErr: plan.ErrInfeasible,
		},
		{
			name: "EAGLE adds the drafter's layer (H100 log: 51.63 GiB, 410,128 tokens, 3.13x)",
			req: plan.Request{Engine: "vllm", VLLMVersion: "0.11", SpeculativeAlgorithm: "EAGLE",
				KVCacheMemoryBytes: units.Size(25633 * 16 * 33 * 4096)},
			want: got{Version: "0.11", Blocks: 25633, Tokens: 410128, Capacity: 410128, Concurrency: 25633.0 / 8192, BlockSize: 16, Cell: 33 * 4096, MaxLen: 131072,
				Lines: []string{"Available KV cache memory: 51.63 GiB", "GPU KV cache size: 410,128 tokens", "Maximum concurrency for 131,072 tokens per request: 3.13x"}},
		},
		{
			name: "gpt-oss-120b logs 78,384 tokens on 0.11",
			req: plan.Request{Engine: "vllm", Model: "openai/gpt-oss-120b", VLLMVersion: "0.11.1", MaxNumBatchedTokens: 8192,
				KVCacheMemoryBytes: units.Size(9798 * 18 * 32768)},
			want: got{Version: "0.11", Blocks: 9798, Tokens: 78384, Capacity: 9798 * 131072 / (8192 + 521), Concurrency: 9798.0 / (8192 + 521),
				BlockSize: 16, Cell: 73728, MaxLen: 131072,
				Lines: []string{"Available KV cache memory: 5.38 GiB", "GPU KV cache size: 78,384 tokens", "Maximum concurrency for 131,072 tokens per request: 1.12x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), tt.req)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			g := got{rep.VLLMVersion, rep.NumGPUBlocks, rep.KVCacheSizeTokens, rep.MaxTotalNumTokens, rep.MaxConcurrency,
				rep.BlockSize, rep.CellSizeBytes, rep.MaxModelLen, rep.LogLines, rep.Error, rep.FixValue}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
			if rep.Engine != plan.EngineVLLM {
				t.Errorf("engine %q", rep.Engine)
			}
		})
	}
}

func TestRunVLLMInputErrors(t *testing.T) {
	tests := []struct {
		name, field string
		req         plan.Request
	}{
		{"sglang-only dtype", "kv_cache_dtype", plan.Request{Engine: "vllm", KVCacheDType: "mxfp8"}},
		{"unknown version", "vllm_version", plan.Request{Engine: "vllm", VLLMVersion: "zero"}},
		{"mamba on V0", "model", plan.Request{Engine: "vllm", VLLMVersion: "0.6", Model: "Qwen/Qwen3-Next-80B-A3B-Instruct"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan.Run(context.Background(), tt.req)
			var fe *plan.FieldError
			if !errors.Is(err, plan.ErrInvalid) || !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("err = %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

func TestRunVLLMFixes(t *testing.T) {
	tests := []struct {
		name        string
		req         plan.Request
		flag, value string
	}{
		{"max_model_len above the model's", plan.Request{Engine: "vllm", MaxModelLen: 200000, KVCacheMemoryBytes: llamaKV}, "--max-model-len", "131072"},
		{"busy GPU", plan.Request{Engine: "vllm", VLLMVersion: "0.11", GPU: "H100-80GB", MaxModelLen: 8192, PreLoadFreeMemory: units.Size(40 << 30)}, "--gpu-memory-utilization", "0.5"},
		// Verified: the smallest utilization that holds one 8k request.
		{"no KV memory left", plan.Request{Engine: "vllm", MaxModelLen: 8192, GPUMemoryUtilization: 0.1}, "--gpu-memory-utilization", "0.238"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), tt.req)
			if !errors.Is(err, plan.ErrInfeasible) {
				t.Fatalf("err = %v", err)
			}
			if rep.FixFlag != tt.flag || rep.FixValue != tt.value || rep.Error == "" {
				t.Errorf("fix %s %q, error %q", rep.FixFlag, rep.FixValue, rep.Error)
			}
		})
	}
}

// The vLLM-only request fields: a measured "Available KV cache memory"
// (kv_cache_memory), auto-fit max_model_len -1, --num-gpu-blocks-override,
// and the effective gpu_memory_utilization in the report. Known answers:
// the 2.89 GiB Llama-3.1-8B run of docs/vllm.md#known-answers (1478 blocks of 16 tokens,
// estimated maximum model length 23,648 on 0.11).
func TestRunVLLMMeasuredAndOverrides(t *testing.T) {
	type got struct {
		Blocks int64
		Tokens int64
		MaxLen int
		Util   float64
		Lines  []string
	}
	tests := []struct {
		name string
		req  plan.Request
		want got
	}{
		{"kv_cache_memory on 0.11", plan.Request{Engine: "vllm", VLLMVersion: "0.11", MaxModelLen: 8192, KVCacheMemory: llamaKV},
			got{1478, 23648, 8192, 0, []string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens", "Maximum concurrency for 8,192 tokens per request: 2.89x"}}},
		{"kv_cache_memory on 0.6", plan.Request{Engine: "vllm", VLLMVersion: "0.6", MaxModelLen: 8192, KVCacheMemory: llamaKV},
			got{1478, 23648, 8192, 0, []string{"# GPU blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 8192 tokens per request: 2.89x"}}},
		{"kv_cache_memory wins over kv_cache_memory_bytes", plan.Request{Engine: "vllm", VLLMVersion: "latest", MaxModelLen: 8192,
			KVCacheMemory: llamaKV, KVCacheMemoryBytes: 2 * llamaKV},
			got{1478, 23648, 8192, 0, []string{"Available KV cache memory: 2.89 GiB", "GPU KV cache size: 23,648 tokens, Maximum concurrency for 8,192 tokens per request: 2.89x"}}},
		// latest reserves one null block before the auto-fit (docs/vllm.md#known-answers
		// profile table): (1478 − 1) × 16 = 23,632 tokens.
		{"max_model_len -1 fits the budget", plan.Request{Engine: "vllm", VLLMVersion: "latest", MaxModelLen: -1, KVCacheMemory: llamaKV},
			got{1478, 23648, 23632, 0, nil}},
		{"num_gpu_blocks_override", plan.Request{Engine: "vllm", VLLMVersion: "latest", MaxModelLen: 8192, KVCacheMemory: llamaKV, NumGPUBlocksOverride: 1000},
			got{1000, 16000, 8192, 0, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			g := got{rep.NumGPUBlocks, rep.KVCacheSizeTokens, rep.MaxModelLen, rep.GPUMemoryUtilization, rep.LogLines}
			if tt.want.Lines == nil {
				g.Lines = nil
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// gpu_memory_utilization is reported as vLLM used it: the version's
// default (0.92 latest, 0.9 for 0.6 and 0.11) or the given one.
func TestRunVLLMUtilization(t *testing.T) {
	tests := []struct {
		version string
		given   float64
		want    float64
	}{
		{"", 0, 0.92}, {"latest", 0, 0.92}, {"0.11", 0, 0.9}, {"0.6", 0, 0.9}, {"latest", 0.8, 0.8}, {"0.11", 0.95, 0.95},
	}
	for _, tt := range tests {
		rep, err := plan.Run(context.Background(), plan.Request{Engine: "vllm", VLLMVersion: tt.version, GPUMemoryUtilization: tt.given, MaxModelLen: 8192})
		if err != nil {
			t.Fatalf("%s %v: %v", tt.version, tt.given, err)
		}
		if rep.GPUMemoryUtilization != tt.want {
			t.Errorf("version %q, given %v: gpu_memory_utilization %v, want %v", tt.version, tt.given, rep.GPUMemoryUtilization, tt.want)
		}
	}
}

// --enforce-eager sets nothing aside for CUDA graphs: the KV budget grows
// by exactly the CUDA-graph estimate the default run reserves.
func TestRunVLLMEnforceEager(t *testing.T) {
	base := plan.Request{Engine: "vllm", MaxModelLen: 8192}
	graphs, err := plan.Run(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	base.EnforceEager = true
	eager, err := plan.Run(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	saved := graphs.Breakdown.ReservedBytes - eager.Breakdown.ReservedBytes
	if saved <= 0 || eager.AvailableKVBytes-graphs.AvailableKVBytes != saved {
		t.Errorf("eager: reserved %d → %d, KV budget %d → %d", graphs.Breakdown.ReservedBytes, eager.Breakdown.ReservedBytes, graphs.AvailableKVBytes, eager.AvailableKVBytes)
	}
}

func TestValidateMaxModelLen(t *testing.T) {
	tests := []struct {
		name string
		req  plan.Request
		ok   bool
	}{
		{"vllm auto-fit", plan.Request{Engine: "vllm", MaxModelLen: -1}, true},
		{"sglang has no auto-fit", plan.Request{MaxModelLen: -1}, false},
		{"below -1", plan.Request{Engine: "vllm", MaxModelLen: -2}, false},
		{"negative measured KV memory", plan.Request{Engine: "vllm", KVCacheMemory: -1}, false},
		{"negative block override", plan.Request{Engine: "vllm", NumGPUBlocksOverride: -1}, false},
	}
	for _, tt := range tests {
		err := tt.req.Validate()
		var fe *plan.FieldError
		if tt.ok != (err == nil) || (!tt.ok && !errors.As(err, &fe)) {
			t.Errorf("%s: Validate() = %v", tt.name, err)
		}
	}
}
