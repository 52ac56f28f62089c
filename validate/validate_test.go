package validate_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/validate"
)

// The table's acceptance: per engine, the median |error| of the predicted
// KV memory at most 1 % and at least 90 % of the runs within 3 %, and no
// run outside its band (5 %: a run beyond it means a term is wrong).
func TestTableWithinBand(t *testing.T) {
	runs, err := validate.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 30 {
		t.Fatalf("%d runs, want at least 30", len(runs))
	}
	rows, err := validate.Check(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if math.Abs(r.Error) > 0.05 {
			t.Errorf("%s: predicted %.2f GiB, the run printed %.2f GiB (%+.1f %%): activation %.2f/%.2f, non-torch %.2f/%.2f",
				r.Run.ID, r.KVGiB, r.Run.AvailableKVGiB, 100*r.Error, r.ActivationGiB, r.Run.ActivationGiB, r.NonTorchGiB, r.Run.NonTorchGiB)
		}
		// The catalog's CUDA total is the one the run printed.
		if math.Abs(r.TotalGiB-r.Run.TotalGiB) > 0.006 {
			t.Errorf("%s: total %.3f GiB, the run printed %.2f", r.Run.ID, r.TotalGiB, r.Run.TotalGiB)
		}
	}
	for _, s := range validate.Summarize(rows) {
		if s.MedianAbs > 0.01 || s.Within3 < 0.9 {
			t.Errorf("%s: median |error| %.2f %%, %.0f %% within 3 %%", s.Engine, 100*s.MedianAbs, 100*s.Within3)
		}
	}
}

// Golden figures of single terms, so that a change to one is seen even
// when the KV error stays small.
func TestActivationGolden(t *testing.T) {
	for _, tt := range []struct {
		model      string
		tp, pp, st int
		want       int64 // bytes
		peak       string
	}{
		// 1024 × 128256 × 14 + 2 × 8192 × 4096 × 2.
		{"meta-llama/Llama-3.1-8B-Instruct", 1, 1, 0, 1024*128256*14 + 2*8192*4096*2, "sampler_logits"},
		// 8192 × (3 × 11008 + 4 × 4096) × 2: the forward is larger than the
		// 32016-entry vocabulary's logits.
		{"codellama/CodeLlama-7b-hf", 1, 1, 0, 8192 * (3*11008 + 4*4096) * 2, "forward_activations"},
		// Mixtral at TP 2: logits plus the fused-MoE workspace
		// 8192 × 2 × (max(7168, 4096) + max(14336, 4096)) × 2.
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", 2, 1, 0, 1024*32000*14 + 2*8192*4096*2 + 8192*2*(7168+14336)*2, "sampler_logits"},
		// A first pipeline stage: no logits, the intermediate tensors.
		{"meta-llama/Llama-3.1-8B-Instruct", 1, 2, 0, 8192*(3*14336+4*4096)*2 + 2*8192*4096*2, "forward_activations"},
	} {
		s, err := validate.Spec(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		m, terms := vllm.EstimateStage(s, vllm.EstimateInput{TP: tt.tp, PP: tt.pp, Stage: tt.st, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, DTypeBytes: 2})
		if m.ActivationBytes != tt.want || len(terms) == 0 || terms[0].Name != tt.peak {
			t.Errorf("%s tp%d pp%d stage %d: activation %d (%v), want %d peaking in %s", tt.model, tt.tp, tt.pp, tt.st, m.ActivationBytes, terms, tt.want, tt.peak)
		}
	}
}

func TestParseRunsRejects(t *testing.T) {
	for _, in := range []string{
		`{"id":"x","engine":"vllm","model":"m","available_kv_gib":1,"source":"u","bogus":1}`,
		`{"id":"x","engine":"vllm","model":"m","available_kv_gib":0,"source":"u"}`,
		`{"id":"x","engine":"vllm","model":"m","available_kv_gib":1}`,
		`not json`,
	} {
		if _, err := validate.ParseRuns([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), "validate: ") {
			t.Errorf("%s: err %v", in, err)
		}
	}
}

func TestBand(t *testing.T) {
	b, s, ok := validate.Band("vllm")
	if !ok || b <= 0 || b > 0.03 || s.Runs < 30 {
		t.Errorf("band %v %+v %v", b, s, ok)
	}
	if _, _, ok := validate.Band("nosuch"); ok {
		t.Error("a band for an engine without runs")
	}
}
