package plan_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcfg/kvcfg/internal/units"
	"github.com/kvcfg/kvcfg/plan"
)

const mib = int64(1) << 20

// The Llama-3.1-8B run of peers.md §1.6: 2.89 GiB of KV cache.
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
				FixValue: "23648"},
			wantErr: plan.ErrInfeasible,
		},
		{
			name: "0.6 takes kv_cache_memory_bytes as the measured budget, prints the blocks, then refuses",
			req:  plan.Request{Engine: "vllm", VLLMVersion: "0.6.4", MaxModelLen: 29000, KVCacheMemoryBytes: llamaKV},
			want: got{Version: "0.6", Blocks: 1478, Tokens: 23648, Capacity: 23648, Concurrency: 23648.0 / 29000, BlockSize: 16, Cell: 131072, MaxLen: 29000,
				Lines:    []string{"# GPU blocks: 1478, # CPU blocks: 2048", "Maximum concurrency for 29000 tokens per request: 0.82x"},
				Error:    "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
				FixValue: "23648"},
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
		{"no KV memory left", plan.Request{Engine: "vllm", MaxModelLen: 8192, GPUMemoryUtilization: 0.1}, "--gpu-memory-utilization", ""},
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
