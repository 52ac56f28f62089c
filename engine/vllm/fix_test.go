package vllm_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// vLLM's refusals name the flag and value that get the launch started:
// callers never read vLLM's message to find them.
func TestRefusalsNameTheirFix(t *testing.T) {
	tests := []struct {
		name        string
		in          vllm.Input
		flag, value string
	}{
		{"max_model_len above the model's", vllm.Input{MaxModelLen: 200000, KVCacheMemoryBytes: 20 * gib}, "--max-model-len", "131072"},
		{"busy GPU", vllm.Input{Version: "0.11", MaxModelLen: 8192, Memory: vllm.Memory{TotalBytes: 80 * gib, FreeBytes: 40 * gib}}, "--gpu-memory-utilization", "0.5"},
		{"one request does not fit", vllm.Input{Version: "0.11", MaxModelLen: 131072, KVCacheMemoryBytes: 2 * gib}, "--max-model-len", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := vllm.Plan(llama31_8B(), tt.in)
			var re *engine.Refusal
			if !errors.As(err, &re) || !errors.Is(err, vllm.ErrRefused) || res == nil {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if re.Engine != "vllm" || re.Message != res.Error || re.Flag != tt.flag || re.Hint == "" {
				t.Errorf("refusal %+v", re)
			}
			want := tt.value
			if want == "" { // the admission check's estimate
				want = strconv.Itoa(res.EstimatedMaxModelLen)
			}
			if re.Value != want || want == "0" {
				t.Errorf("value %q, want %q (estimated %d)", re.Value, tt.value, res.EstimatedMaxModelLen)
			}
		})
	}
}
