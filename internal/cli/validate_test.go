package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// kvcfg validate prints every run of the table with its error and the
// summary per engine; JSON carries the same; an engine without runs is bad
// input.
func TestValidateCommand(t *testing.T) {
	out, errOut, code := run(t, "validate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"RUN", "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192", "63.84 / 63.90", "runs; |error| median 0.10 %", "llm-d's planner: 6.70 %",
		// SGLang's table: the free memory before weights printed/predicted,
		// the pool's tokens printed/predicted.
		"PRE-LOAD RUN/KVCFG", "llms-in-clouds-qwq-32b-l4-tp4", "21.63 / 21.41", "46611 / 43599", "sglang: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, "validate", "-o", "json")
	var v struct {
		Rows []struct {
			Error float64 `json:"error"`
			Run   struct {
				Source string `json:"source"`
			} `json:"run"`
		} `json:"rows"`
		Summary []struct {
			Engine string `json:"engine"`
			Runs   int    `json:"runs"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	total, engines := 0, ""
	for _, e := range v.Summary {
		total, engines = total+e.Runs, engines+e.Engine+" "
	}
	if len(v.Rows) == 0 || len(v.Rows) != total || engines != "sglang trtllm vllm " || !strings.HasPrefix(v.Rows[0].Run.Source, "https://github.com/") {
		t.Errorf("json: %d rows, summary %+v", len(v.Rows), v.Summary)
	}
	if out, _, code := run(t, "validate", "--engine", "sglang"); code != 0 || strings.Contains(out, "vllm") {
		t.Errorf("--engine sglang: exit %d\n%s", code, out)
	}
	if out, _, code := run(t, "validate", "--engine", "trtllm"); code != 0 || !strings.Contains(out, "trtllm: ") {
		t.Errorf("--engine trtllm: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, "validate", "--engine", "nosuch"); code != 2 || !strings.Contains(errOut, "no runs of that engine (it has sglang, trtllm, vllm)") {
		t.Errorf("--engine nosuch: exit %d, %s", code, errOut)
	}
}
