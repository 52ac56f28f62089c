package cli

import (
	"strings"
	"testing"
)

// One KV dtype vocabulary (issue 32, item 1): compare, plan and fit take
// any engine's spelling of a format, plan it under each engine's own name
// and print that name in the engine's flags.
func TestDTypeVocabularyCompare(t *testing.T) {
	want := map[string]string{"sglang": "--kv-cache-dtype fp8_e4m3", "vllm": "--kv-cache-dtype %s", "trtllm": "kv_cache_config.dtype=fp8"}
	for _, dt := range []string{"fp8_e4m3", "fp8"} {
		out, errOut, code := run(t, "compare", "--engine", "sglang,vllm,trtllm", "--kv-cache-dtype", "auto,"+dt)
		if code != 0 || strings.Contains(out, "refused") {
			t.Errorf("auto,%s: exit %d %q\n%s", dt, code, errOut, out)
		}
		for e, f := range want {
			if f = strings.Replace(f, "%s", dt, 1); !strings.Contains(out, f) {
				t.Errorf("auto,%s: the %s column lacks its flag %q:\n%s", dt, e, f, out)
			}
		}
	}
	// A dtype an engine truly lacks is a refused column, a numbered note
	// and exit status 1.
	out, _, code := run(t, "compare", "--engine", "sglang,trtllm", "--kv-cache-dtype", "fp8_e5m2")
	if code != 1 || !strings.Contains(out, "refused [1]") || !strings.Contains(out, "[1] trtllm, fp8_e5m2") {
		t.Errorf("fp8_e5m2 on TensorRT-LLM: exit %d, want 1 and a note:\n%s", code, out)
	}
}

func TestDTypeVocabularyPlanAndFit(t *testing.T) {
	out, errOut, code := run(t, "plan", "--engine", "trtllm", "--kv-cache-dtype", "fp8_e4m3")
	if code != 0 || !strings.Contains(out, "kv_cache_dtype fp8_e4m3 is TensorRT-LLM's kv_cache_config.dtype=fp8") || !strings.Contains(out, "fp8 → fp8_e4m3") {
		t.Errorf("plan --engine trtllm --kv-cache-dtype fp8_e4m3: exit %d %q\n%s", code, errOut, out)
	}
	out, errOut, code = run(t, "plan", "--engine", "sglang", "--kv-cache-dtype", "fp8")
	if code != 0 || !strings.Contains(out, "SGLang's --kv-cache-dtype fp8_e4m3") {
		t.Errorf("plan --engine sglang --kv-cache-dtype fp8: exit %d %q\n%s", code, errOut, out)
	}
	// bf16 is TensorRT-LLM's auto on a bf16 model; fp16 is not (refused,
	// with why).
	if out, errOut, code = run(t, "plan", "--engine", "trtllm", "--kv-cache-dtype", "bf16"); code != 0 || !strings.Contains(out, "auto → bf16") {
		t.Errorf("bf16 on TensorRT-LLM: exit %d %q\n%s", code, errOut, out)
	}
	if out, errOut, code = run(t, "plan", "--engine", "trtllm", "--kv-cache-dtype", "fp16"); code == 0 || !strings.Contains(out+errOut, "its auto stores the cache in the model's dtype") {
		t.Errorf("fp16 on TensorRT-LLM (a bf16 model): exit %d %q\n%s", code, errOut, out)
	}
	// fit no longer drops TensorRT-LLM's fp8 rows for SGLang's spelling,
	// and says which rows an engine cannot have.
	out, errOut, code = run(t, "fit", "--engines", "sglang,vllm,trtllm", "--kv-cache-dtypes", "auto,fp8_e4m3,fp8_e5m2", "-n", "16", "--context-length", "32768", "--gpus", "H100")
	if code != 0 || !strings.Contains(out, "kv_cache_config.dtype=fp8 ") || !strings.Contains(out, "[1] no TensorRT-LLM rows for KV dtype fp8_e5m2") {
		t.Errorf("fit auto,fp8_e4m3,fp8_e5m2: exit %d %q\n%s", code, errOut, out)
	}
}
