package server

import (
	"reflect"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// fastPlanBodies are bodies of every shape: the common ones (which the
// fast path decodes) and the ones it leaves to decodeStrict.
var fastPlanBodies = []string{
	`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3"}`,
	`{}`, ` { } `, `{"tp_size":2,"context_length":32768,"mem_fraction_static":0.85,"enable_dp_attention":true}`,
	`{"tensor_parallel_size": 4, "engine": "vllm", "gpu_memory_utilization": 9e-1}`,
	`{"tp_size": -0, "context_length": 1e3}`, `{"tp_size": 2.0}`, `{"tp_size": "2"}`, `{"tp_size": 01}`,
	`{"mem_fraction_static": 1e400}`, `{"mem_fraction_static": .5}`, `{"mem_fraction_static": 5.}`,
	`{"enable_dp_attention": True}`, `{"enable_dp_attention": null}`, `{"gpu": null}`,
	`{"Model": "x"}`, `{"model": " H100"}`, `{"gpu": "H\u0031"}`, `{"gpu": ""}`, `{"gpu": "H100", "gpu": "A100"}`,
	`{"gpu": "H100",}`, `{"gpu": "H100"} x`, `{"gpu": "H100"`, `{"gpu" "H100"}`, `[]`, ``, `{"nope": 1}`,
	`{"--tp-size": 2}`, `{"gpu_memory": "80GiB"}`, `{"gpu_memory": 85899345920}`, `{"cuda_graph_bs": [1, 2]}`,
	"{\"gpu\": \"H100\xff\"}", "{\"gpu\": \"a\tb\"}", `{"model": "Qwen/Qwen3-8B", "revision": "main"}`,
}

// Every body the fast path takes decodes to the same request through
// encoding/json; the common body takes the fast path.
func TestDecodePlanFast(t *testing.T) {
	for _, b := range fastPlanBodies {
		checkFastPlan(t, []byte(b))
	}
	var r plan.Request
	if !decodePlanFast([]byte(fastPlanBodies[0]), &r) || r.GPU != "H100" || r.KVCacheDType != "fp8_e4m3" {
		t.Errorf("the common body: %+v", r)
	}
	for _, b := range []string{`{"tp_size": 2.0}`, `{"Model": "x"}`, `{"gpu": "H100", "gpu": "A100"}`, `{"gpu_memory": "80GiB"}`} {
		if decodePlanFast([]byte(b), new(plan.Request)) {
			t.Errorf("%s took the fast path", b)
		}
	}
}

func checkFastPlan(t *testing.T, body []byte) {
	t.Helper()
	var fast plan.Request
	if !decodePlanFast(body, &fast) {
		return
	}
	var slow plan.Request
	if err := decodeStrict(body, &slow); err != nil {
		t.Fatalf("%q: the fast path took what decodeStrict refuses: %v", body, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast %+v, encoding/json %+v", body, fast, slow)
	}
}

func FuzzDecodePlanFast(f *testing.F) {
	for _, b := range fastPlanBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkFastPlan(t, body) })
}
