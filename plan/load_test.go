package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// --dtype float32 plans as the engines do: the weights and the auto KV
// cache dtype follow the model dtype (ModelConfig._get_and_verify_dtype;
// the cache's "auto" is the model dtype in all three engines).
// Llama-3.1-8B: 16,060,522,496 B of bf16 weights become 32,121,044,992;
// a token's KV, 8 KV heads × 128 × (K + V) × 32 layers, 131,072 B in
// bf16, becomes 262,144 in float32.
func TestDTypeFloat32(t *testing.T) {
	for _, engine := range plan.Engines() {
		for _, tt := range []struct {
			dtype, kv string
			weights   int64
			cell      float64
		}{
			{"", "bf16", 16_060_522_496, 131_072},
			{"auto", "bf16", 16_060_522_496, 131_072},
			{"bfloat16", "bf16", 16_060_522_496, 131_072},
			{"half", "fp16", 16_060_522_496, 131_072},
			{"float16", "fp16", 16_060_522_496, 131_072},
			{"float", "fp32", 32_121_044_992, 262_144},
			{"float32", "fp32", 32_121_044_992, 262_144},
		} {
			r, err := plan.Run(context.Background(), plan.Request{Engine: engine, DType: tt.dtype})
			if err != nil {
				t.Fatalf("%s --dtype %q: %v", engine, tt.dtype, err)
			}
			if r.WeightsBytes != tt.weights || r.CellSizeBytes != tt.cell || r.ResolvedKVCacheDType != tt.kv {
				t.Errorf("%s --dtype %q: weights %d, cell %v, KV %s; want %d, %v, %s", engine, tt.dtype, r.WeightsBytes, r.CellSizeBytes, r.ResolvedKVCacheDType, tt.weights, tt.cell, tt.kv)
			}
		}
	}
	_, err := plan.Run(context.Background(), plan.Request{DType: "fp8"})
	var fe *plan.FieldError
	if !errors.As(err, &fe) || fe.Field != "dtype" || !strings.Contains(err.Error(), "accepted: auto, half, float16, bfloat16, float, float32") {
		t.Errorf("--dtype fp8: %v", err)
	}
}

// Runtime --quantization fp8 (vLLM's and SGLang's Fp8LinearMethod)
// quantizes a bf16 checkpoint's linear layers to one byte a weight after
// loading; embeddings, the LM head and norms stay bf16. Llama-3.1-8B:
// 6,979,321,856 linear weights + 2 × (1,050,673,152 embedding and head +
// 266,240 norm) = 9,081,200,640 B.
func TestRuntimeFP8(t *testing.T) {
	for _, engine := range []string{plan.EngineSGLang, plan.EngineVLLM} {
		r, err := plan.Run(context.Background(), plan.Request{Engine: engine, Quantization: "fp8"})
		if err != nil {
			t.Fatal(err)
		}
		if r.WeightsBytes != 9_081_200_640 || r.ResolvedKVCacheDType != "bf16" {
			t.Errorf("%s --quantization fp8: weights %d, KV %s; want 9,081,200,640 and bf16", engine, r.WeightsBytes, r.ResolvedKVCacheDType)
		}
		// float32 for the rest: 6,979,321,856 + 4 × 1,050,939,392.
		r, err = plan.Run(context.Background(), plan.Request{Engine: engine, Quantization: "fp8", DType: "float32"})
		if err != nil || r.WeightsBytes != 11_183_079_424 {
			t.Errorf("%s --quantization fp8 --dtype float32: %v, weights %d, want 11,183,079,424", engine, err, r.WeightsBytes)
		}
		// A checkpoint's own fp8: loaded as it is.
		own, err := plan.Run(context.Background(), plan.Request{Engine: engine, Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8, Quantization: "fp8"})
		base, err2 := plan.Run(context.Background(), plan.Request{Engine: engine, Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8})
		if err != nil || err2 != nil || own.WeightsBytes != base.WeightsBytes {
			t.Errorf("%s DeepSeek-V3 --quantization fp8: %v %v, %d vs %d", engine, err, err2, own.WeightsBytes, base.WeightsBytes)
		}
		// Another method than the checkpoint's is refused, as the engines do.
		_, err = plan.Run(context.Background(), plan.Request{Engine: engine, Model: "openai/gpt-oss-120b", Quantization: "fp8"})
		var fe *plan.FieldError
		if !errors.As(err, &fe) || fe.Field != "quantization" || !strings.Contains(err.Error(), "mxfp4") {
			t.Errorf("%s gpt-oss --quantization fp8: %v", engine, err)
		}
		_, err = plan.Run(context.Background(), plan.Request{Engine: engine, Quantization: "awq"})
		if !errors.As(err, &fe) || fe.Field != "quantization" {
			t.Errorf("%s --quantization awq on a bf16 checkpoint: %v", engine, err)
		}
	}
	_, err := plan.Run(context.Background(), plan.Request{Engine: plan.EngineTRTLLM, Quantization: "fp8"})
	var fe *plan.FieldError
	if !errors.As(err, &fe) || fe.Field != "quantization" {
		t.Errorf("trtllm --quantization fp8: %v", err)
	}
}

// SGLang's --disable-cuda-graph (kvcfg's --enforce-eager) drops the decode
// graph's cuda_graph_max_bs × 2 MiB from the newest profile's reserve
// (reserve_for_graph_mb): H100 TP 1, 13,904 − 512 = 13,392 MiB, so
// round((81559 − 13392)/81559, 3) = 0.836 instead of 0.830; the 0.5.3
// profile reserves it regardless.
func TestSGLangBudgetFlags(t *testing.T) {
	for _, tt := range []struct {
		req  plan.Request
		want float64
	}{
		{plan.Request{}, 0.83},
		{plan.Request{EnforceEager: true}, 0.836},
		{plan.Request{SGLangVersion: "0.5.3"}, 0.835},
		{plan.Request{SGLangVersion: "0.5.3", EnforceEager: true}, 0.835},
	} {
		r, err := plan.Run(context.Background(), tt.req)
		if err != nil {
			t.Fatalf("%+v: %v", tt.req, err)
		}
		if r.MemFractionStatic != tt.want {
			t.Errorf("eager %v, version %q: mem_fraction_static %v, want %v", tt.req.EnforceEager, tt.req.SGLangVersion, r.MemFractionStatic, tt.want)
		}
	}
}
