package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimulateCommandJSON(t *testing.T) {
	ts := filepath.Join(t.TempDir(), "ts.csv")
	out, errs, code := runKV(t, "", "simulate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--requests", "200", "--rate", "10",
		"--prompt-len", "1000", "--output-len", "100", "--shared-prefix", "500", "--timeseries", ts, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requests_completed", "unservable_requests", "peak_running", "mean_running", "retractions",
		"recomputed_tokens", "prefix_hit_rate", "peak_kv_tokens", "binding_limit"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if got["requests_completed"] != 200.0 || got["engine"] != "sglang" {
		t.Errorf("completed %v engine %v", got["requests_completed"], got["engine"])
	}
	b, err := os.ReadFile(ts)
	if err != nil || !strings.HasPrefix(string(b), "step,t_est_s,running,waiting,kv_used_tokens") || strings.Count(string(b), "\n") < 5 {
		t.Errorf("time series: %v %.200s", err, b)
	}
}

func TestSimulateTraceAndExitCodes(t *testing.T) {
	trace := `{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 10}
{"arrival_s": 0.5, "prompt_tokens": 200000, "output_tokens": 10}
`
	out, errs, code := runKV(t, trace, "simulate", "--engine", "vllm", "--max-model-len", "8192", "--trace", "-", "--step-time", "0.01")
	if code != 3 || !strings.Contains(errs, "1 of 2 requests could never be served") || !strings.Contains(out, "preemptions") {
		t.Errorf("exit %d, stderr %q, stdout %q", code, errs, out)
	}
	for _, args := range [][]string{
		{"simulate"},
		{"simulate", "--requests", "5", "--prompt-len", "10"},
		{"simulate", "--trace", "x.jsonl", "--requests", "5", "--prompt-len", "10", "--output-len", "5"},
		{"simulate", "--requests", "5", "--prompt-len", "10", "--output-len", "5", "--mbu", "2"},
		{"simulate", "--requests", "5", "--prompt-len", "10", "--output-len", "5", "--length-dist", "zipf"},
		{"simulate", "--requests", "5", "--prompt-len", "10", "--output-len", "5", "--engine", "trtllm"},
		{"simulate", "--requests", "5", "--prompt-len", "10", "--output-len", "5", "--gpu", "T4", "--model", "HuggingFaceTB/SmolLM2-1.7B-Instruct"},
	} {
		if _, errs, code := runKV(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
	if _, errs, code := runKV(t, `{"arrival_s": 0, "prompt_tokens": 0, "output_tokens": 1}`, "simulate", "--trace", "-"); code != 2 || !strings.Contains(errs, "trace line 1") {
		t.Errorf("bad trace: exit %d %s", code, errs)
	}
}

// SGLang serves a request longer than context - 2 with fewer outputs
// (init_req_max_new_tokens): exit 0 and a clipped row, not exit 3; a prompt
// of context - 6 tokens is refused (validate_input_length).
func TestSimulateSGLangClipsMaxNewTokens(t *testing.T) {
	trace := `{"arrival_s": 0, "prompt_tokens": 1000, "output_tokens": 200}
{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 20}
`
	out, errs, code := runKV(t, trace, "simulate", "--context-length", "1100", "--trace", "-", "--step-time", "0.01", "-o", "json")
	if code != 0 || !strings.Contains(out, `"clipped_requests": 1`) || !strings.Contains(out, `"output_tokens": 118`) {
		t.Errorf("exit %d, stderr %q, stdout %q; want 1 clipped request and 98 + 20 outputs", code, errs, out)
	}
	out, _, code = runKV(t, trace, "simulate", "--context-length", "1100", "--trace", "-", "--step-time", "0.01")
	if code != 0 || !strings.Contains(out, "clipped requests (fewer outputs)") {
		t.Errorf("exit %d: %s", code, out)
	}
	_, errs, code = runKV(t, `{"arrival_s": 0, "prompt_tokens": 1094, "output_tokens": 1}`+"\n", "simulate", "--context-length", "1100", "--trace", "-", "--step-time", "0.01")
	if code != 3 || !strings.Contains(errs, "1 of 1 requests could never be served") {
		t.Errorf("prompt 1094 of context 1100: exit %d %s, want 3", code, errs)
	}
}

func TestSimulateCompare(t *testing.T) {
	out, errs, code := runKV(t, "", "simulate", "--engine", "sglang,vllm", "--requests", "100", "--rate", "10", "--prompt-len", "500",
		"--output-len", "50", "--compare", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []struct {
		Values  map[string]string `json:"values"`
		Summary map[string]any    `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Values["engine"] != "sglang" || rows[1].Summary["preemptions"] == nil || rows[0].Summary["retractions"] == nil {
		t.Errorf("rows %+v", rows)
	}
}
