package trtllm_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/gpu"
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
// memory carries the NVLS buffers on an NVSwitch node, and NCCL's eagerly
// connected buffers in place of the generic multi-rank figure, and an engine
// build's does neither.
func TestNVLSInNonTorch(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-70B-Instruct")
	d := trtllm.DryRun{TP: 4, PP: 1, MaxNumTokens: 8192}
	plain, _ := trtllm.EstimateDryRun(s, d)
	d.Interconnect, d.SM, d.NVLinks = "nvswitch", 100, 18
	nvls, _ := trtllm.EstimateDryRun(s, d)
	want := trtllm.NVLSBufferBytes(4, 100, "nvswitch") + trtllm.NCCLEagerBytes(4, 100, 18, "nvswitch") - gpu.MultiRankExtraMiB<<20
	if got := nvls.NonTorchBytes - plain.NonTorchBytes; got != want {
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

// TestNonTorchTerms: the non-torch memory's parts add up to the modelled
// figure, and a DeepSeek-V3 rank at TP 8 with EP 8 on a B200 node of the
// 1.2+ profile lists the runtime of one rank (1175 MiB), NCCL's eagerly
// connected buffers (1268 MiB), two 64 MiB fusion workspaces (2 × 2050
// MiB) and the NVLS buffers (386 MiB); at TP 1 only the runtime.
func TestNonTorchTerms(t *testing.T) {
	const mib = int64(1) << 20
	s := load(t, "deepseek-ai__DeepSeek-V3")
	d := trtllm.DryRun{TP: 8, PP: 1, EP: 8, MaxNumTokens: 8192, FusionAllReduce: true, FusionSize: trtllm.FusionWorkspaceEnlarged,
		Interconnect: "nvswitch", SM: 100, NVLinks: 18}
	terms := trtllm.NonTorchTerms(s, d)
	want := map[string]int64{"runtime": 1175 * mib, "nccl": 1268 * mib, "allreduce_workspace": 2 * 2050 * mib, "nvls_buffers": 386 * mib}
	var sum int64
	for _, term := range terms {
		if term.Bytes != want[term.Name] || term.Source == "" {
			t.Errorf("%s: %d MiB (source %q), want %d MiB", term.Name, term.Bytes/mib, term.Source, want[term.Name]/mib)
		}
		sum += term.Bytes
	}
	if len(terms) != len(want) {
		t.Errorf("terms %+v, want %v", terms, want)
	}
	if p, _ := trtllm.EstimateDryRun(s, d); p.NonTorchBytes != sum {
		t.Errorf("EstimateDryRun non-torch %d, parts add up to %d", p.NonTorchBytes, sum)
	}
	d.TP, d.EP = 1, 1
	if terms := trtllm.NonTorchTerms(s, d); len(terms) != 1 || terms[0].Name != "runtime" || terms[0].Bytes != 1175*mib {
		t.Errorf("TP 1: %+v, want the runtime's 1175 MiB alone", terms)
	}
}

// NCCL's eagerly connected buffers (NCCLEagerBytes): 32 collective channels
// on SM 100, 24 on SM 90, each 2 × 12 MiB of ring and tree connections, a
// 256 MiB NET shared buffer, 98 channel structures and the NVLS channels'
// at 2 MiB; the generic figure applies elsewhere (0).
func TestNCCLEagerBytes(t *testing.T) {
	const mib = int64(1) << 20
	for _, c := range []struct {
		name             string
		ranks, sm, links int
		interconnect     string
		want             int64
	}{
		{"B200 TP 4", 4, 100, 18, "nvswitch", (2*32*12 + 256 + (98+24)*2) * mib},
		{"B200 TP 8", 8, 100, 18, "nvswitch", 1268 * mib},
		{"B300 TP 8", 8, 103, 18, "nvswitch", 1268 * mib},
		{"H100 TP 8", 8, 90, 18, "nvswitch", (2*24*12 + 256 + (98+16)*2) * mib},
		{"H100 TP 8 is 1060 MiB", 8, 90, 18, "nvswitch", 1060 * mib},
		{"H800 (8 links)", 8, 90, 8, "nvswitch", 0},
		{"links unknown", 8, 100, 0, "nvswitch", 0},
		{"TP 2", 2, 100, 18, "nvswitch", 0},
		{"TP 16", 16, 100, 18, "nvswitch", 0},
		{"PCIe", 4, 89, 0, "pcie", 0},
		{"A100 NVSwitch", 8, 80, 12, "nvswitch", 0},
	} {
		if got := trtllm.NCCLEagerBytes(c.ranks, c.sm, c.links, c.interconnect); got != c.want {
			t.Errorf("%s: %d MiB, want %d MiB", c.name, got/mib, c.want/mib)
		}
	}
}
