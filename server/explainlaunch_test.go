package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/server"
)

// POST /api/v1/explain plans the launch the message states (SGLang's 0.7),
// honours the plan's concurrency, names one value in value and
// plan_advice.value, and says what it assumed without a context length.
func TestExplainPlansThePastedLaunch(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	const msg = `"message": "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.7"`
	type answer struct {
		Value  string `json:"value"`
		Advice string `json:"advice"`
		Plan   struct {
			Value       string   `json:"value"`
			PlanError   string   `json:"plan_error"`
			FromMessage []string `json:"from_message"`
			Assumed     []string `json:"assumed"`
			Target      int      `json:"target_concurrency"`
		} `json:"plan_advice"`
	}
	ask := func(plan string) answer {
		t.Helper()
		r := do(t, ts, "POST", "/api/v1/explain", `{`+msg+`, "plan": `+plan+`}`)
		var a answer
		if r.status != 200 || json.Unmarshal([]byte(r.body), &a) != nil {
			t.Fatalf("explain %s: %d %s", plan, r.status, r.body)
		}
		return a
	}
	for _, tt := range []struct{ plan, value string }{
		{`{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp_size": 2, "context_length": 8192}`, "0.866"}, // NVSwitch NCCL 1254 + custom AR 26 MiB per rank
		{`{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp_size": 2, "context_length": 8192, "concurrency": 4}`, "0.915"},
	} {
		a := ask(tt.plan)
		if a.Value != tt.value || a.Plan.Value != tt.value || strings.Join(a.Plan.FromMessage, ",") != "mem_fraction_static=0.7" ||
			!strings.Contains(a.Plan.PlanError, "=0.7.") || strings.Contains(a.Plan.PlanError, "Raise") {
			t.Errorf("%s: %+v", tt.plan, a)
		}
	}
	a := ask(`{"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp_size": 2}`)
	if len(a.Plan.Assumed) != 1 || !strings.Contains(a.Plan.Assumed[0], "context length 131072") || !strings.Contains(a.Advice, "131072") {
		t.Errorf("no context length: %+v", a)
	}
}
