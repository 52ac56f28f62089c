package trtllm_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// The all-reduce fusion workspace of one rank (plugin.py
// allocate_allreduce_fusion_workspace, IpcMemory's 2 MiB alignment): at TP 4
// 8,000,000 × 4 B of IPC buffers (32 MiB), 3 × that of Lamport buffers (92
// MiB) and 1 KiB of barriers (2 MiB).
func TestAllReduceWorkspaceBytes(t *testing.T) {
	for _, tt := range []struct {
		tp      int
		wantMiB int64
	}{{1, 0}, {2, 126}, {4, 126}, {8, 248}} {
		if got := trtllm.AllReduceWorkspaceBytes(tt.tp); got != tt.wantMiB<<20 {
			t.Errorf("TP %d: %d MiB, want %d", tt.tp, got>>20, tt.wantMiB)
		}
	}
}

// With EP = TP a DeepSeek-V3 rank holds whole experts (moe_tp_size 1): the
// routed rows of the MoE workspace carry the full 2048 intermediate, so at
// TP 4 the workspace is 8192 × (3 × 2048 / 4 + 8 × (2 × 2048 + 2 × 7168)) ×
// 2 B, where EP 1 splits the intermediate by TP.
func TestActivationTermsExpertParallel(t *testing.T) {
	s := load(t, "deepseek-ai__DeepSeek-V3")
	moe := func(terms []trtllm.Term) int64 {
		for _, term := range terms {
			if term.Name == "moe_workspace" {
				return term.Bytes
			}
		}
		return 0
	}
	ep4 := moe(trtllm.ActivationTerms(s, 4, 4, 1, 8192, 1))
	if want := int64(8192 * (3*2048/4 + 8*(2*2048+2*7168)) * 2); ep4 != want {
		t.Errorf("EP 4 workspace %d, want %d", ep4, want)
	}
	tp4 := moe(trtllm.ActivationTerms(s, 4, 1, 1, 8192, 1))
	if want := int64(8192 * (3*2048/4 + 8*(2*2048/4+2*7168)) * 2); tp4 != want {
		t.Errorf("TP 4 workspace %d, want %d", tp4, want)
	}
	if odd := moe(trtllm.ActivationTerms(s, 4, 3, 1, 8192, 1)); odd != tp4 {
		t.Errorf("an EP size that does not divide TP should count as 1: %d, want %d", odd, tp4)
	}
}

// moe_expert_parallel_size must divide tp_size.
func TestEPSizeValidate(t *testing.T) {
	in := trtllm.Input{TPSize: 4, EPSize: 3, GPUMemoryBytes: 80 << 30}
	if err := in.Validate(); !errors.Is(err, trtllm.ErrInvalidInput) {
		t.Errorf("EP 3 at TP 4: %v, want ErrInvalidInput", err)
	}
	in.EPSize = 2
	if err := in.Validate(); err != nil {
		t.Errorf("EP 2 at TP 4: %v", err)
	}
}
