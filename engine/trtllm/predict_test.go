package trtllm_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// Worked example A (trtllm.md): gpt-oss-120b on a GB10 under 1.1.0rc3,
// fraction 0.9, max_batch_size 64, overlap scheduler off. Given the run's
// own figures (63.52 GiB inside torch, 0.85 GiB of activation, 49.28 GiB
// outside torch of which 0.56 GiB is the temporary pool and 36 × 25 MiB
// kvcfg's CUDA graphs), PredictBudget reproduces the log: total 119.70,
// peak 113.65, tmp KV 8224 × 73,728 B, 86,720 tokens.
func TestPredictBudgetWorkedExample(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	graphs := int64(36 * 25 << 20)
	in := trtllm.BudgetInput{TotalBytes: gibs(119.70), Input: trtllm.Input{Version: "1.1.0rc3", MaxBatchSize: 64,
		DisableOverlapScheduler: true, WeightsBytes: gibs(63.52), ActivationBytes: gibs(0.85),
		NonTorchBytes: gibs(49.28) - 8224*73728 - graphs}}
	b, err := trtllm.PredictBudget(s, in)
	if err != nil {
		t.Fatal(err)
	}
	if b.TemporaryKVBytes != 8224*73728 || b.CUDAGraphBytes != graphs {
		t.Errorf("tmp KV %d, graphs %d", b.TemporaryKVBytes, b.CUDAGraphBytes)
	}
	if got := float64(b.PeakBytes) / float64(gib); math.Abs(got-113.65) > 0.006 {
		t.Errorf("peak %.3f GiB, want 113.65", got)
	}
	if b.KVCacheTokens != 86720 || b.MaxSeqLen != 86720 || b.Profile != trtllm.V11 {
		t.Errorf("pool %d tokens, max_seq_len %d, profile %s; want 86,720, 86,720, 1.1", b.KVCacheTokens, b.MaxSeqLen, b.Profile)
	}
	if len(b.Estimated) != 1 || b.Estimated[0] != "cudagraph" || b.ActivationTerms != nil {
		t.Errorf("estimated %v, activation terms %v", b.Estimated, b.ActivationTerms)
	}
}

// The same launch predicted from the shapes: the activation's terms add up
// to the activation (the MoE workspace and the hidden states of the one
// 8192-token dummy request; its logits are smaller), 0.88 GiB against the
// run's 0.85; the non-torch term is the discrete-GPU runtime's, so on the
// GB10, whose "outside torch" reading holds the host's own use of the
// unified memory (48.7 GiB), the pool comes out far too large.
func TestPredictBudgetFromShapes(t *testing.T) {
	s := load(t, "openai__gpt-oss-120b")
	b, err := trtllm.PredictBudget(s, trtllm.BudgetInput{TotalBytes: gibs(119.70), Input: trtllm.Input{Version: "1.1.0rc3",
		MaxBatchSize: 64, DisableOverlapScheduler: true, WeightsBytes: gibs(63.52)}})
	if err != nil {
		t.Fatal(err)
	}
	var fwd, logits int64
	for _, term := range b.ActivationTerms {
		if term.Source == "" {
			t.Errorf("%s has no source", term.Name)
		}
		if term.Name == "logits" {
			logits = term.Bytes
		} else {
			fwd += term.Bytes
		}
	}
	if b.ActivationBytes != max(fwd, logits) || fwd != 8192*(4*(2*2880+2*2880)+4*2880)*2 {
		t.Errorf("activation %d, forward %d, logits %d", b.ActivationBytes, fwd, logits)
	}
	// 1 request × 201,088 × (2 + 4) B + two 8192 × 2880 hidden states.
	if logits != 201088*6+2*8192*2880*2 {
		t.Errorf("logits %d", logits)
	}
	if len(b.Estimated) != 3 || b.KVCacheTokens < 8*86720 {
		t.Errorf("estimated %v, %d tokens", b.Estimated, b.KVCacheTokens)
	}
	if _, err := trtllm.PredictBudget(s, trtllm.BudgetInput{}); !errors.Is(err, trtllm.ErrInvalidInput) {
		t.Errorf("no total: %v", err)
	}
	if _, err := trtllm.PredictBudget(nil, trtllm.BudgetInput{TotalBytes: 1}); !errors.Is(err, trtllm.ErrInvalidInput) {
		t.Errorf("no model: %v", err)
	}
}

// The dry run's requests: prompts of max_seq_len − 1 tokens fill
// max_num_tokens (trtllm-bench's 157-token sequences at 23,552 tokens give
// 151 requests); one request when max_seq_len is above max_num_tokens.
func TestDryRunRequests(t *testing.T) {
	for _, tt := range []struct {
		tokens, seqLen int
		want           int64
	}{{23552, 157, 151}, {8192, 131072, 1}, {8192, 0, 1}, {8192, 4097, 2}} {
		if got := trtllm.DryRunRequests(tt.tokens, tt.seqLen); got != tt.want {
			t.Errorf("%d tokens, max_seq_len %d: %d requests, want %d", tt.tokens, tt.seqLen, got, tt.want)
		}
	}
	// Without CUDA graphs nothing is charged for them.
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	b, err := trtllm.PredictBudget(s, trtllm.BudgetInput{TotalBytes: gibs(79.19), Input: trtllm.Input{DisableCUDAGraph: true, WeightsBytes: gibs(14.96)}})
	if err != nil || b.CUDAGraphBytes != 0 {
		t.Errorf("graphs %d: %v", b.CUDAGraphBytes, err)
	}
}
