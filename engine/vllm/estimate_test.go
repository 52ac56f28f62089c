package vllm_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/engine/vllm"
)

// Plan's budget without readings and PredictBudget are the same
// arithmetic: the same terms give the same KV budget (so the validation
// table, which calls PredictBudget, judges what plans print).
func TestPlanMatchesPredictBudget(t *testing.T) {
	s := load(t, "meta-llama/Llama-3.1-8B-Instruct")
	const total, weights = int64(81090) << 20, int64(16060522496)
	for _, tt := range []struct {
		version string
		tp      int
		eager   bool
	}{{"0.19.0", 1, false}, {"0.19.0", 2, false}, {"0.16.0", 1, false}, {"", 1, false}, {"", 4, true}} {
		res, err := vllm.Plan(s, vllm.Input{Version: tt.version, TensorParallelSize: tt.tp, MaxModelLen: 8192, GPUName: "H100-80GB", EnforceEager: tt.eager,
			Memory: vllm.Memory{TotalBytes: total, WeightsBytes: weights}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := vllm.PredictBudget(s, vllm.BudgetInput{
			EstimateInput: vllm.EstimateInput{TP: tt.tp, PP: 1, Stage: -1, MaxNumBatchedTokens: res.MaxNumBatchedTokens, MaxNumSeqs: res.MaxNumSeqs, DTypeBytes: 2},
			Version:       tt.version, TotalBytes: total, WeightsBytes: weights, EnforceEager: tt.eager})
		if err != nil {
			t.Fatal(err)
		}
		if m.AvailableKVBytes != res.Memory.AvailableKVBytes || m.ActivationBytes != res.Memory.ActivationBytes || m.CUDAGraphBytes != res.Memory.CUDAGraphBytes {
			t.Errorf("%q tp %d: PredictBudget %d (activation %d, graphs %d), Plan %d (%d, %d)", tt.version, tt.tp,
				m.AvailableKVBytes, m.ActivationBytes, m.CUDAGraphBytes, res.Memory.AvailableKVBytes, res.Memory.ActivationBytes, res.Memory.CUDAGraphBytes)
		}
	}
}

// Bad input is an error naming what to give, never a panic.
func TestPredictBudgetRejects(t *testing.T) {
	s := load(t, "meta-llama/Llama-3.1-8B-Instruct")
	for _, in := range []vllm.BudgetInput{
		{},
		{TotalBytes: 80 << 30, GPUMemoryUtilization: 1.5},
		{TotalBytes: 80 << 30, Version: "not-a-version"},
	} {
		if _, err := vllm.PredictBudget(s, in); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
	if _, err := vllm.PredictBudget(nil, vllm.BudgetInput{TotalBytes: 1}); err == nil {
		t.Error("nil model: no error")
	}
}
