package trtllm_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// The all-reduce fusion workspace of one rank (plugin.py
// allocate_allreduce_fusion_workspace, IpcMemory's 2 MiB alignment). Before
// PR #9145, at TP 4: 8,000,000 × 4 B of IPC buffers (32 MiB), 3 × that of
// Lamport buffers (92 MiB) and 1 KiB of barriers (2 MiB). From it, 64 MiB:
// at TP 4, 256 MiB of IPC buffers, 768 of Lamport buffers and 2 of
// barriers.
func TestAllReduceWorkspaceBytes(t *testing.T) {
	for _, tt := range []struct {
		tp            int
		size, wantMiB int64
	}{{1, 0, 0}, {2, 0, 126}, {4, 0, 126}, {8, 0, 248},
		{1, trtllm.FusionWorkspaceEnlarged, 0}, {2, trtllm.FusionWorkspaceEnlarged, 514},
		{4, trtllm.FusionWorkspaceEnlarged, 1026}, {8, trtllm.FusionWorkspaceEnlarged, 2050}} {
		if got := trtllm.AllReduceWorkspaceBytes(tt.tp, tt.size); got != tt.wantMiB<<20 {
			t.Errorf("TP %d size %d: %d MiB, want %d", tt.tp, tt.size, got>>20, tt.wantMiB)
		}
	}
}

// The workspace cache is keyed by the Mapping: the attention projections'
// Mapping carries no MoE sizes, so a MoE model with expert parallelism
// holds a second workspace; a dense model, or EP 1, one.
func TestAllReduceWorkspaces(t *testing.T) {
	moe := load(t, "deepseek-ai__DeepSeek-V3")
	dense := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	for _, tt := range []struct {
		name      string
		dense     bool
		tp, ep, n int
	}{
		{"MoE TP 1", false, 1, 1, 0}, {"MoE TP 4 EP 1", false, 4, 1, 1}, {"MoE TP 4 EP 4", false, 4, 4, 2},
		{"MoE TP 8 EP 8", false, 8, 8, 2}, {"MoE TP 8 EP 2", false, 8, 2, 2}, {"MoE TP 4 EP 3", false, 4, 3, 1},
		{"dense TP 4 EP 4", true, 4, 4, 1},
	} {
		s := moe
		if tt.dense {
			s = dense
		}
		if got := trtllm.AllReduceWorkspaces(s, tt.tp, tt.ep); got != tt.n {
			t.Errorf("%s: %d workspaces, want %d", tt.name, got, tt.n)
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
