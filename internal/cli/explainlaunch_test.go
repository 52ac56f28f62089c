package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The message: SGLang ran Llama-3.1-70B on two H100s at
// --mem-fraction-static 0.7. explain plans that launch (not the default
// 0.828) and names one value everywhere: 0.915 for one 32,768-token
// request (see explain's tests), in the headline, the advice and the JSON.
func TestExplainCommandPlansThePastedLaunch(t *testing.T) {
	const msg = "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.7"
	flags := []string{"explain", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--tp-size", "2", "--context-length", "32768"}
	out, errs, code := runKV(t, "", append(flags, msg)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"turn     --mem-fraction-static 0.915\n", "Set --mem-fraction-static 0.915 (the launch had 0.7)",
		"planned with the message's own settings: mem_fraction_static=0.7", "use --mem-fraction-static 0.915"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	for _, f := range regexp.MustCompile(`\b0\.\d+\b`).FindAllString(out, -1) {
		if f != "0.7" && f != "0.915" {
			t.Errorf("the answer states %s besides the launch's 0.7 and the planned 0.915:\n%s", f, out)
		}
	}

	// JSON: the explanation's value is the plan's; --concurrency 4 of
	// 8,192 tokens needs the same 0.915.
	out, errs, code = runKV(t, "", "explain", "-o", "json", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--tp-size", "2",
		"--context-length", "8192", "--concurrency", "4", msg)
	var res struct {
		Knob   string `json:"knob"`
		Value  string `json:"value"`
		Advice string `json:"advice"`
		Plan   struct {
			Flag        string   `json:"flag"`
			Value       string   `json:"value"`
			FromMessage []string `json:"from_message"`
			Target      int      `json:"target_concurrency"`
		} `json:"plan_advice"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if res.Value != "0.915" || res.Plan.Value != res.Value || res.Knob != res.Plan.Flag || res.Plan.Target != 4 ||
		strings.Join(res.Plan.FromMessage, ",") != "mem_fraction_static=0.7" || !strings.Contains(res.Advice, "4 requests of 8192 tokens") {
		t.Errorf("json: %+v", res)
	}
}

// Without --context-length the answer says which context it planned.
func TestExplainCommandSaysWhatItAssumed(t *testing.T) {
	const msg = "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.7"
	out, errs, code := runKV(t, "", "explain", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--tp-size", "2", msg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "assumed: context length 131072 tokens, the model's full context (pass --context-length") {
		t.Errorf("output does not say the context it assumed:\n%s", out)
	}
}

// vLLM's message states the launch's max_model_len and its measured KV
// budget: the plan uses them (not the L4's modelled budget, which gives
// 36224), so one request gets vLLM's own estimate, 70112, and
// --concurrency 4 a quarter of the pool.
func TestExplainCommandPlansVLLMsBudget(t *testing.T) {
	const msg = "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.56 GiB). Based on the available memory, the estimated maximum model length is 70112."
	for _, tt := range []struct{ concurrency, value string }{{"1", "70112"}, {"4", "17520"}} {
		out, errs, code := runKV(t, "", "explain", "-o", "json", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "L4", "--concurrency", tt.concurrency, msg)
		var res struct {
			Value string `json:"value"`
			Plan  struct {
				Value       string   `json:"value"`
				FromMessage []string `json:"from_message"`
			} `json:"plan_advice"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		if res.Value != tt.value || res.Plan.Value != tt.value || strings.Join(res.Plan.FromMessage, ",") != "kv_cache_memory=8.56GiB,max_model_len=131072" {
			t.Errorf("--concurrency %s: %+v", tt.concurrency, res)
		}
	}
}

// vLLM V0's message gives the pool's size in tokens: the plan pins it
// (2,000 blocks of 16), so the longest context is its 32,000 tokens.
func TestExplainCommandPlansVLLMsBlocks(t *testing.T) {
	const msg = "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (32000)."
	out, errs, code := runKV(t, "", "explain", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "A100-40GB", msg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"turn     --max-model-len 32000\n", "num_gpu_blocks_override=2000 (32000 tokens)",
		"kvcfg plans this launch to start, but to hold 0 of the 1 requests of its context asked at once", "use --max-model-len 32000"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
