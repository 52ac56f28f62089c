package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/server"
)

// POST /api/v1/fit and /api/v1/explain run the CLI's code and answer its
// JSON; bad input is 400, an infeasible plan 422, a repeated key 400.
func TestFitExplainEndpoints(t *testing.T) {
	ts := newTestServer(t, server.Config{})

	r := do(t, ts, "POST", "/api/v1/fit", `{"base": {"model": "meta-llama/Llama-3.1-8B-Instruct"}, "concurrency": 8, "context_length": 8192, "gpus": ["H100"], "max_gpus": 2}`)
	if r.status != 200 {
		t.Fatalf("fit: %d %s", r.status, r.body)
	}
	var fr struct {
		Configurations []struct {
			Flags []string `json:"flags"`
		} `json:"configurations"`
	}
	if err := json.Unmarshal([]byte(r.body), &fr); err != nil || len(fr.Configurations) == 0 {
		t.Fatalf("fit answer %s: %v", r.body, err)
	}
	if r := do(t, ts, "POST", "/api/v1/fit", `{"base": {}, "concurrency": 0, "context_length": 8192}`); r.status != 400 || !strings.Contains(r.body, "concurrency") {
		t.Errorf("fit with concurrency 0: %d %s", r.status, r.body)
	}

	// A workload target: a generator, or the requests inline.
	for _, wl := range []string{
		`"workload": {"requests": 30, "rate": 10, "prompt": {"mean": 500}, "output": {"mean": 50}, "shared_prefix": 200, "seed": 1}`,
		`"trace": [{"arrival_s": 0, "prompt_tokens": 500, "output_tokens": 50}, {"arrival_s": 0.1, "prompt_tokens": 300, "output_tokens": 20}]`,
	} {
		r := do(t, ts, "POST", "/api/v1/fit", `{"base": {"model": "meta-llama/Llama-3.1-8B-Instruct"}, "gpus": ["H100"], "max_gpus": 1, "simulation": {"step_time_s": 0.01}, `+wl+`}`)
		var wr struct {
			Target struct {
				Workload *struct {
					PeakRunning int `json:"peak_running"`
				} `json:"workload"`
			} `json:"target"`
			Configurations []struct {
				Simulation *struct {
					RequestsCompleted int    `json:"requests_completed"`
					BindingLimit      string `json:"binding_limit"`
				} `json:"simulation"`
			} `json:"configurations"`
		}
		if r.status != 200 || json.Unmarshal([]byte(r.body), &wr) != nil || wr.Target.Workload == nil || len(wr.Configurations) != 1 ||
			wr.Configurations[0].Simulation == nil || wr.Configurations[0].Simulation.RequestsCompleted == 0 {
			t.Errorf("fit with %s: %d %s", wl, r.status, r.body)
		}
	}
	for _, body := range []string{
		`{"base": {}, "workload": {"requests": 1000000, "prompt": {"mean": 5}, "output": {"mean": 5}}}`,
		`{"base": {}, "concurrency": 4, "workload": {"requests": 10, "prompt": {"mean": 5}, "output": {"mean": 5}}}`,
		`{"base": {}, "trace": [{"arrival_s": 0, "prompt_tokens": 0, "output_tokens": 5}]}`,
	} {
		if r := do(t, ts, "POST", "/api/v1/fit", body); r.status != 400 {
			t.Errorf("fit %s: %d %s, want 400", body, r.status, r.body)
		}
	}

	r = do(t, ts, "POST", "/api/v1/explain", `{"message": "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.835", "plan": {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp_size": 2, "context_length": 32768}}`)
	if r.status != 200 {
		t.Fatalf("explain: %d %s", r.status, r.body)
	}
	var er struct {
		Engine string `json:"engine"`
		Knob   string `json:"knob"`
		Advice struct {
			Flag  string `json:"flag"`
			Value string `json:"value"`
		} `json:"plan_advice"`
	}
	if err := json.Unmarshal([]byte(r.body), &er); err != nil {
		t.Fatal(err)
	}
	if er.Engine != "sglang" || er.Knob != "--mem-fraction-static" || er.Advice.Flag != "--mem-fraction-static" || er.Advice.Value == "" {
		t.Errorf("explain answer %s", r.body)
	}
	for _, body := range []string{`{"message": ""}`, `{"message": "hello"}`} {
		if r := do(t, ts, "POST", "/api/v1/explain", body); r.status != 400 || !strings.Contains(r.body, `"field":"message"`) {
			t.Errorf("explain %s: %d %s", body, r.status, r.body)
		}
	}

	if r := do(t, ts, "POST", "/api/v1/plan", `{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "L4"}`); r.status != 422 || !strings.Contains(r.body, `"report"`) {
		t.Errorf("infeasible plan: %d, want 422 with the report", r.status)
	}
	for _, body := range []string{
		`{"tp_size": 2, "tp_size": 4}`,
		`{"model": "meta-llama/Llama-3.1-8B-Instruct", "config": {"a": 1, "a": 2}}`,
		`{"gpu": "H100", "GPU": "A100-80GB"}`, // encoding/json would keep the last silently
	} {
		if r := do(t, ts, "POST", "/api/v1/plan", body); r.status != 400 || !strings.Contains(r.body, "duplicate key") {
			t.Errorf("%s: %d %s, want 400 duplicate key", body, r.status, r.body)
		}
	}
	// Keys repeated in different objects are fine.
	if r := do(t, ts, "POST", "/api/v1/fit", `{"base": {"model": "meta-llama/Llama-3.1-8B-Instruct", "context_length": 4096}, "context_length": 4096, "concurrency": 1, "gpus": ["H100"], "max_gpus": 1}`); r.status != 200 {
		t.Errorf("same key in nested objects: %d %s", r.status, r.body)
	}
}
