package plan_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// TestAttentionBackendRule: --attention-backend (SGLang's and vLLM's flag)
// overrides the engine's default backend choice, and with it the page
// (block) size the backend forces and, on ROCm, SGLang's aiter ×0.85 rule
// (it scales only aiter's fraction, with a context above 8192).
func TestAttentionBackendRule(t *testing.T) {
	tests := []struct {
		name      string
		req       plan.Request
		mfs       float64
		page      int
		maxTokens int64
	}{
		// MI355X, Qwen3-30B-A3B, context 32768: aiter is the HIP default
		// and scales 0.911 by 0.85; triton does not.
		{"ROCm aiter default", plan.Request{Model: "Qwen/Qwen3-30B-A3B", GPU: "MI355X", ContextLength: 32768}, 0.77435, 1, 1808753},
		{"ROCm triton", plan.Request{Model: "Qwen/Qwen3-30B-A3B", GPU: "MI355X", ContextLength: 32768, AttentionBackend: "triton"}, 0.911, 1, 2237564},
		// DeepSeek-V3 on H200: fa3's page 1, flashmla's page 64.
		{"MLA default fa3", plan.Request{Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8}, 0.886, 1, 670576}, // 8 × H200: NCCL over NVSwitch 1254 + custom AR 26 MiB before weights
		{"MLA flashmla", plan.Request{Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8, AttentionBackend: "flashmla"}, 0.886, 64, 670528},
		// B200: every MHA model defaults to trtllm_mha (page 64); flashinfer keeps page 1.
		// (148 SMs: a 738 MiB CUDA context, 296 MiB of it local memory.)
		{"Blackwell trtllm_mha default", plan.Request{GPU: "B200"}, 0.854, 64, 1120128},
		{"Blackwell flashinfer", plan.Request{GPU: "B200", AttentionBackend: "flashinfer"}, 0.854, 1, 1120160},
		// vLLM: FLASHMLA sets the block size to 64.
		{"vLLM default", plan.Request{Engine: "vllm", Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8}, 0, 16, 0},
		{"vLLM FLASHMLA", plan.Request{Engine: "vllm", Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8, AttentionBackend: "FLASHMLA"}, 0, 64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := plan.Run(context.Background(), tt.req)
			if err != nil && !errors.Is(err, plan.ErrInfeasible) {
				t.Fatal(err)
			}
			if r.MemFractionStatic != tt.mfs || r.PageSize != tt.page || (tt.maxTokens > 0 && r.MaxTotalNumTokens != tt.maxTokens) {
				t.Errorf("mem_fraction_static %v, page %d, tokens %d; want %v, %d, %d", r.MemFractionStatic, r.PageSize, r.MaxTotalNumTokens, tt.mfs, tt.page, tt.maxTokens)
			}
		})
	}
	// A backend the GPU does not run is refused with the flag that fixes it.
	_, err := plan.Run(context.Background(), plan.Request{GPU: "H100", AttentionBackend: "trtllm_mha"})
	var fe *plan.FieldError
	if !errors.As(err, &fe) || fe.Field != "attention_backend" {
		t.Errorf("trtllm_mha on H100: %v, want a field error on attention_backend", err)
	}
}
