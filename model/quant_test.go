package model_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/model"
)

func TestQuantConfigs(t *testing.T) {
	tests := []struct {
		name string
		qc   map[string]any
		want *model.QuantSpec
	}{
		{"modelopt fp8 with fp8 kv", map[string]any{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
			&model.QuantSpec{Method: "modelopt", KVCacheQuantAlgo: "FP8", WeightBits: 8}},
		{"modelopt nvfp4", map[string]any{"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"},
			&model.QuantSpec{Method: "modelopt", KVCacheQuantAlgo: "FP8", WeightBits: 4}},
		{"hf_quant_config nesting", map[string]any{"quantization": map[string]any{"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}},
			&model.QuantSpec{Method: "modelopt", KVCacheQuantAlgo: "FP8", WeightBits: 8}},
		{"compressed-tensors fp8 kv scheme", map[string]any{
			"quant_method": "compressed-tensors", "format": "float-quantized",
			"config_groups":   map[string]any{"group_0": map[string]any{"weights": map[string]any{"num_bits": 8, "type": "float"}}},
			"kv_cache_scheme": map[string]any{"num_bits": 8, "type": "float", "strategy": "tensor"},
		}, &model.QuantSpec{Method: "compressed-tensors", KVCacheQuantAlgo: "FP8", WeightBits: 8}},
		{"compressed-tensors w4a16", map[string]any{
			"quant_method": "compressed-tensors", "format": "pack-quantized",
			"config_groups": map[string]any{"group_0": map[string]any{"weights": map[string]any{"num_bits": 4, "type": "int"}}},
		}, &model.QuantSpec{Method: "compressed-tensors", WeightBits: 4}},
		{"compressed-tensors nvfp4 format only", map[string]any{"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"},
			&model.QuantSpec{Method: "compressed-tensors", WeightBits: 4}},
		{"awq", map[string]any{"quant_method": "awq", "bits": 4, "group_size": 128}, &model.QuantSpec{Method: "awq", WeightBits: 4}},
		{"gptq 8-bit", map[string]any{"quant_method": "gptq", "bits": 8}, &model.QuantSpec{Method: "gptq", WeightBits: 8}},
		{"bitsandbytes 8-bit", map[string]any{"quant_method": "bitsandbytes", "load_in_8bit": true}, &model.QuantSpec{Method: "bitsandbytes", WeightBits: 8}},
		{"fbgemm fp8", map[string]any{"quant_method": "fbgemm_fp8"}, &model.QuantSpec{Method: "fbgemm_fp8", WeightBits: 8}},
		{"w4a16 method", map[string]any{"quant_method": "w4a16"}, &model.QuantSpec{Method: "w4a16", WeightBits: 4}},
		{"nvfp4 method", map[string]any{"quant_method": "nvfp4"}, &model.QuantSpec{Method: "nvfp4", WeightBits: 4}},
		{"unknown method", map[string]any{"quant_method": "magic"}, &model.QuantSpec{Method: "magic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := model.Parse(encode(t, patch(llama(), "quantization_config", tt.qc)), "q")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.Quant); diff != "" {
				t.Errorf("Quant (-want +got):\n%s", diff)
			}
		})
	}
}
