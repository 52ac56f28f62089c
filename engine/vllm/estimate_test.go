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

// The dummy sampler's bytes an element follow the release and the
// top-k/top-p backend: 14 in bf16 (logits, float32 copy, then softmax and
// exponential noise, or FlashInfer's masked copy and softmax), 24 more
// for the PyTorch sort before 0.17; the release default is FlashInfer for
// 0.11.0 and after 0.19 only.
func TestSamplerPerRelease(t *testing.T) {
	s := load(t, "meta-llama/Llama-3.1-8B-Instruct")
	const seqs, tokens, vocab, hidden = 256, 2048, 128256, 4096
	for _, tt := range []struct {
		version, sampler, dflt string
		per                    int64
	}{
		{"0.10.1.1", "", vllm.SamplerNative, 38},
		{"0.10.1.1", vllm.SamplerFlashInfer, vllm.SamplerNative, 14},
		{"0.11.0", "", vllm.SamplerFlashInfer, 14},
		{"0.11.1", "", vllm.SamplerNative, 38},
		{"0.16.0", "", vllm.SamplerNative, 38},
		{"0.16.0", vllm.SamplerFlashInfer, vllm.SamplerNative, 14},
		{"0.17.0", "", vllm.SamplerNative, 14},
		{"0.19.0", vllm.SamplerNative, vllm.SamplerNative, 14},
		{"", "", vllm.SamplerFlashInfer, 14},
	} {
		if got := vllm.DefaultSampler(tt.version); got != tt.dflt {
			t.Errorf("%q: default sampler %q, want %q", tt.version, got, tt.dflt)
		}
		_, terms := vllm.EstimateStage(s, vllm.EstimateInput{TP: 1, PP: 1, Stage: -1, MaxNumBatchedTokens: tokens, MaxNumSeqs: seqs, DTypeBytes: 2, Version: tt.version, Sampler: tt.sampler})
		want := int64(seqs*vocab)*tt.per + 2*tokens*hidden*2
		if len(terms) == 0 || terms[0].Name != "sampler_logits" || terms[0].Bytes != want {
			t.Errorf("%q %q: %+v, want sampler_logits %d", tt.version, tt.sampler, terms, want)
		}
	}
}

// The non-torch increase at TP >= 2 follows the node's wiring: the H100
// NVSwitch figure vLLM 0.19 prints (also where the wiring is unknown), the
// single-GPU figure elsewhere, plus before 0.11 (whose baseline snapshot
// preceded distributed init) NCCL's PCIe buffers and the custom
// all-reduce's cudaMalloc buffers on A100 NVLink at TP 2, 4, 6, 8.
func TestNonTorchPerInterconnect(t *testing.T) {
	s := load(t, "meta-llama/Llama-3.1-8B-Instruct")
	const gib = vllm.GiB
	for _, tt := range []struct {
		version, ic string
		tp, pp      int
		want        int64
	}{
		{"0.19.0", "", 1, 1, gib / 4},
		{"0.16.0", "pcie", 1, 1, 130 * gib / 1000},
		{"0.19.0", "nvswitch", 2, 1, 2070 * gib / 1000},
		{"0.19.0", "", 4, 1, 2070*gib/1000 + 2*45*gib/1000},
		{"0.19.0", "pcie", 2, 1, gib / 4},
		{"0.11.0", "nvlink", 4, 1, 130 * gib / 1000},
		{"0.10.2", "pcie", 2, 1, 130*gib/1000 + 195<<20},
		{"0.10.1.1", "nvlink", 2, 1, 130*gib/1000 + (195+18)<<20},
		{"0.10.1.1", "nvlink", 3, 1, 130*gib/1000 + 195<<20},
		{"0.19.0", "pcie", 1, 2, 70 * gib / 1000},
	} {
		m, _ := vllm.EstimateStage(s, vllm.EstimateInput{TP: tt.tp, PP: tt.pp, Stage: -1, MaxNumBatchedTokens: 2048, MaxNumSeqs: 256, Version: tt.version, Interconnect: tt.ic})
		if m.NonTorchBytes != tt.want {
			t.Errorf("%s %q tp %d pp %d: non-torch %d, want %d", tt.version, tt.ic, tt.tp, tt.pp, m.NonTorchBytes, tt.want)
		}
	}
}
