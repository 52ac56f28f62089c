package fit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
)

// fit searches TensorRT-LLM beside SGLang and vLLM; every configuration's
// printed flags and plan arguments plan to what it lists.
func TestRunEnginesTRTLLM(t *testing.T) {
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}, Concurrency: 16, ContextLength: 32768,
		GPUs: []string{"H100"}, KVCacheDTypes: []string{"auto", "fp8", "fp8_e4m3"}}
	res, err := fit.RunEngines(context.Background(), o, []string{"sglang", "vllm", "trtllm"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, c := range res.Configurations {
		seen[c.Engine] = true
		checkConfiguration(t, o, c)
		if i > 0 && res.Configurations[i-1].GPUCount > c.GPUCount {
			t.Errorf("not cheapest first: %d GPUs after %d", c.GPUCount, res.Configurations[i-1].GPUCount)
		}
		if c.Engine == plan.EngineSGLang && c.KVCacheDType == "fp8" {
			t.Errorf("sglang searched fp8, which it does not take")
		}
	}
	if !seen["sglang"] || !seen["vllm"] || !seen["trtllm"] || res.Target.Engine != "sglang,vllm,trtllm" {
		t.Errorf("engines %v, target %q", seen, res.Target.Engine)
	}
}

// Every --kv-cache-dtypes value is checked before the search: a name the
// engine does not take is invalid input naming the engine's own name.
func TestFitValidatesDTypes(t *testing.T) {
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}, Concurrency: 1, ContextLength: 8192,
		GPUs: []string{"H100"}, KVCacheDTypes: []string{"fp8"}}
	_, err := fit.Run(context.Background(), o)
	if !errors.Is(err, fit.ErrInvalid) || !strings.Contains(err.Error(), "did you mean fp8_e4m3 (SGLang's name for vLLM's fp8)") {
		t.Errorf("fp8: %v", err)
	}
	o.KVCacheDTypes = []string{"auto", "fp3"}
	if _, err := fit.Run(context.Background(), o); !errors.Is(err, fit.ErrInvalid) || !strings.Contains(err.Error(), `"fp3"`) {
		t.Errorf("fp3: %v", err)
	}
	if _, err := fit.RunEngines(context.Background(), o, []string{"sglang", "vllm"}); !errors.Is(err, fit.ErrInvalid) {
		t.Errorf("fp3 on two engines: %v", err)
	}
	o.KVCacheDTypes = []string{"fp8"}
	if _, err := fit.RunEngines(context.Background(), o, []string{"vllm", "tgi"}); !errors.Is(err, fit.ErrInvalid) {
		t.Errorf("unknown engine: %v", err)
	}
}
