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
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", Engine: "trtllm"}, Concurrency: 1, ContextLength: 8192,
		GPUs: []string{"H100"}, KVCacheDTypes: []string{"fp8_e5m2"}}
	_, err := fit.Run(context.Background(), o)
	if !errors.Is(err, fit.ErrInvalid) || !strings.Contains(err.Error(), "accepted: auto, fp8, nvfp4") {
		t.Errorf("fp8_e5m2 on TensorRT-LLM: %v", err)
	}
	o.Base.Engine = ""
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

// Any engine's spelling of a KV dtype is every engine's: fit plans
// TensorRT-LLM's fp8 for SGLang's fp8_e4m3 (and SGLang's fp8_e4m3 for
// vLLM's fp8), each storage once per engine, printed in the engine's
// spelling; a dtype an engine has no name for is a skip of that engine
// (never a silent omission).
func TestFitTranslatesDTypes(t *testing.T) {
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}, Concurrency: 16, ContextLength: 32768,
		GPUs: []string{"H100"}, KVCacheDTypes: []string{"auto", "fp8_e4m3", "fp8", "fp8_e5m2"}}
	res, err := fit.RunEngines(context.Background(), o, []string{"sglang", "vllm", "trtllm"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sglang": "fp8_e4m3", "vllm": "fp8_e4m3", "trtllm": "fp8"}
	fp8 := map[string]int{}
	for _, c := range res.Configurations {
		if c.ResolvedKVCacheDType != "fp8_e4m3" {
			continue
		}
		fp8[c.Engine]++
		if c.KVCacheDType != want[c.Engine] {
			t.Errorf("%s fp8 row lists kv dtype %q, want %q", c.Engine, c.KVCacheDType, want[c.Engine])
		}
		if flags := strings.Join(c.Flags, " "); !strings.Contains(flags, want[c.Engine]+" ") && !strings.Contains(flags, "dtype="+want[c.Engine]+" ") {
			t.Errorf("%s flags %q lack its spelling %s", c.Engine, flags, want[c.Engine])
		}
	}
	for e := range want {
		if fp8[e] != 1 {
			t.Errorf("%s: %d fp8 rows on one GPU type, want 1 (fp8 and fp8_e4m3 are one storage)", e, fp8[e])
		}
	}
	skipped := false
	for _, s := range res.Skipped {
		if s.KVCacheDType == "fp8_e5m2" && s.GPU == "" && strings.Contains(s.Reason, "TensorRT-LLM") {
			skipped = true
		}
	}
	if !skipped {
		t.Errorf("TensorRT-LLM's missing fp8_e5m2 is not a skip: %+v", res.Skipped)
	}
}
