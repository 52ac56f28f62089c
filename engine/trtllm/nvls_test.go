package trtllm_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// TestNVLSBufferBytes checks NCCL's NVLS buffers against nvls.cc's sizes:
// nChannels (16 on SM 90, 24 on one SM 100 node) × 2 × 128 KiB × 8 steps
// per rank of the node, plus the 2 MiB credit buffer.
func TestNVLSBufferBytes(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name         string
		ranks, sm    int
		interconnect string
		want         int64
	}{
		{"B200 TP 4", 4, 100, "nvswitch", 194 * mib},
		{"B200 TP 8", 8, 100, "nvswitch", 386 * mib},
		{"H100 TP 4", 4, 90, "nvswitch", 130 * mib},
		{"H100 TP 8", 8, 90, "nvswitch", 258 * mib},
		{"B300 TP 3", 3, 103, "nvswitch", 146 * mib},
		{"two ranks: NCCL leaves NVLS off", 2, 100, "nvswitch", 0},
		{"one rank", 1, 90, "nvswitch", 0},
		{"several nodes", 16, 100, "nvswitch", 0},
		{"A100 NVLink", 8, 80, "nvlink", 0},
		{"PCIe", 4, 89, "pcie", 0},
		{"unknown wiring", 8, 100, "", 0},
		{"unknown SM", 8, 0, "nvswitch", 0},
	}
	for _, c := range cases {
		if got := trtllm.NVLSBufferBytes(c.ranks, c.sm, c.interconnect); got != c.want {
			t.Errorf("%s: NVLSBufferBytes(%d, %d, %q) = %d MiB, want %d MiB", c.name, c.ranks, c.sm, c.interconnect, got/mib, c.want/mib)
		}
	}
}

// TestNVLSInNonTorch checks that the PyTorch backend's modelled non-torch
// memory carries the NVLS buffers on an NVSwitch node and an engine build's
// does not.
func TestNVLSInNonTorch(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-70B-Instruct")
	d := trtllm.DryRun{TP: 4, PP: 1, MaxNumTokens: 8192}
	plain, _ := trtllm.EstimateDryRun(s, d)
	d.Interconnect, d.SM = "nvswitch", 100
	nvls, _ := trtllm.EstimateDryRun(s, d)
	if got, want := nvls.NonTorchBytes-plain.NonTorchBytes, trtllm.NVLSBufferBytes(4, 100, "nvswitch"); got != want {
		t.Errorf("PyTorch backend on B200 TP 4: non-torch grows by %d, want %d", got, want)
	}
	d.Engine = true
	eng, _ := trtllm.EstimateDryRun(s, d)
	d.Interconnect = ""
	engPlain, _ := trtllm.EstimateDryRun(s, d)
	if eng.NonTorchBytes != engPlain.NonTorchBytes {
		t.Errorf("engine build: NVLS charged (%d against %d)", eng.NonTorchBytes, engPlain.NonTorchBytes)
	}
}
