package vllm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// The same golden numbers from the embedded real config.json files.
func TestCatalogModels(t *testing.T) {
	tests := []struct {
		model, dtype, version string
		bytesPerToken         int64
		groups, blockSize     int
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "auto", "latest", 131072, 1, 16},
		{"meta-llama/Llama-3.1-8B-Instruct", "fp8", "latest", 65536, 1, 16},
		{"meta-llama/Llama-3.1-8B-Instruct", "nvfp4", "latest", 36864, 1, 16},
		{"deepseek-ai/DeepSeek-V3", "auto", "0.11", 70272, 1, 64},
		{"deepseek-ai/DeepSeek-V3.2", "auto", "latest", 48068, 1, 64},
		{"openai/gpt-oss-120b", "auto", "0.11", 73728, 2, 16},
		{"Qwen/Qwen3-Next-80B-A3B-Instruct", "auto", "latest", 12 * 2048, 4, 544},
		{"meta-llama/Llama-4-Scout-17B-16E", "auto", "latest", 48 * 4096, 4, 16},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.dtype+"/"+tt.version, func(t *testing.T) {
			s, err := catalog.Load(tt.model)
			if err != nil {
				t.Skipf("catalog: %v", err)
			}
			sm := 0
			if tt.dtype == "nvfp4" {
				sm = 100 // a B200: NVFP4 pages need SM 10.x
			}
			res, err := vllm.Plan(s, vllm.Input{Version: tt.version, KVCacheDType: tt.dtype, MaxModelLen: 32768, GPUSM: sm,
				Memory: vllm.Memory{AvailableKVBytes: 60 * gib}})
			if err != nil {
				t.Fatal(err)
			}
			if res.BytesPerToken != tt.bytesPerToken || len(res.Groups) != tt.groups || res.BlockSize != tt.blockSize {
				t.Errorf("bytes/token %d, %d groups, block %d; want %d, %d, %d",
					res.BytesPerToken, len(res.Groups), res.BlockSize, tt.bytesPerToken, tt.groups, tt.blockSize)
			}
		})
	}
}

// Every embedded model plans under every profile it can run, without panics.
func TestCatalogAllProfiles(t *testing.T) {
	for _, n := range catalog.Names() {
		s, err := catalog.Load(n)
		if err != nil {
			continue
		}
		for _, p := range vllm.Profiles() {
			for _, dt := range []string{"auto", "fp8"} {
				_, err := vllm.Plan(s, vllm.Input{Version: string(p), KVCacheDType: dt, Memory: vllm.Memory{TotalBytes: 80 * gib}})
				if err != nil && !isExpected(err) {
					t.Errorf("%s %s %s: %v", n, p, dt, err)
				}
			}
		}
	}
}

// MiniMax-M3 is refused, naming what vLLM builds for it; DeepSeek-V4 is
// refused by the profiles before latest (dsv4_test.go plans it).
func TestNewPoolKindsRefused(t *testing.T) {
	for model, want := range map[string]string{
		"MiniMaxAI/MiniMax-M3": "lightning-indexer K cache",
	} {
		s, err := catalog.Load(model)
		if err != nil {
			t.Fatal(err)
		}
		_, err = vllm.Plan(s, vllm.Input{Memory: vllm.Memory{AvailableKVBytes: 60 * gib}})
		if !errors.Is(err, vllm.ErrUnsupportedModel) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", model, err)
		}
	}
}
