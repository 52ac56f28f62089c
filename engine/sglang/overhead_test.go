package sglang_test

import (
	"fmt"
	"testing"

	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/gpu"
)

func TestPreLoadFree(t *testing.T) {
	// docs/sglang.md#ex1: H100 (CUDA total 81090 MiB) reads 78.50 GiB before load.
	if got, want := sglang.PreLoadFreeBytes(81090, 1), int64(785)<<30/10; got != want {
		t.Errorf("PreLoadFreeBytes(H100, 1) = %d, want %d", got, want)
	}
	if sglang.PreLoadFreeBytes(81090, 4) >= sglang.PreLoadFreeBytes(81090, 1) {
		t.Error("multi-rank overhead should exceed single-rank overhead")
	}
	if got := sglang.PreLoadFreeBytes(100, 1); got != 0 {
		t.Errorf("tiny GPU: %d, want 0", got)
	}
}

// The terms from the catalog's CUDA-visible total, as SGLang's logs print
// them ("Load weight begin. avail mem=Y GB", formatted %.2f of GiB). The
// arithmetic, in MiB (context 706):
//
//	H100 TP 8:  81090 − 706 − 2032 NCCL (NVSwitch) − 26 custom AR = 78326 = 76.49 GiB
//	H100 TP 2:  81090 − 706 − 2032 − 26 = 78326 (custom AR at TP 2 too)
//	H100 TP 3:  81090 − 706 − 2032 = 78352 = 76.52 GiB (3 is no custom-AR world size)
//	H100 PP 4:  the same 78352: the PP group builds no custom all-reduce
//	H200 TP 8:  143165 − 706 − 2058 = 140401 = 137.11 GiB; the public run
//	            (PR #11716) printed 137.29 with a 0.51 GiB context
//	A100 TP 4:  81050 − 706 − 195 − 26 = 80123 = 78.25 GiB (NVLink: custom AR;
//	            no public log of its NCCL term, so the PCIe figure)
//	RTX 4090 TP 2: 24207 − 706 − 195 = 23306 = 22.76 GiB ("mem usage=0.19 GB";
//	            GeForce has no P2P, so no custom all-reduce)
//	L4 TP 4:    22559 − 706 − 195 = 21658 = 21.15 GiB (PCIe beyond 2 GPUs: no custom AR)
//	MI300X TP 8: 196288 − 706 − 3789 = 191793 = 187.30 GiB (HIP: the logged figure)
func TestPreLoadMemory(t *testing.T) {
	for _, tt := range []struct {
		gpu         string
		tp, pp      int
		era         sglang.Era
		avail       string // GiB
		nccl, car   int64  // MiB
		interconect string
	}{
		{"H100", 1, 1, sglang.EraLatest, "78.50", 0, 0, "nvswitch"},
		{"H100", 8, 1, sglang.EraLatest, "76.49", 2032, 26, "nvswitch"},
		{"H100", 2, 1, sglang.EraLatest, "76.49", 2032, 26, "nvswitch"},
		{"H100", 3, 1, sglang.EraLatest, "76.52", 2032, 0, "nvswitch"},
		{"H100", 1, 4, sglang.EraLatest, "76.52", 2032, 0, "nvswitch"},
		{"H100", 8, 1, sglang.Era04, "76.49", 2032, 28, "nvswitch"}, // 78324 MiB = 76.488 GiB
		{"H200", 1, 1, sglang.EraLatest, "139.12", 0, 0, "nvswitch"},
		{"H200", 8, 1, sglang.EraLatest, "137.11", 2032, 26, "nvswitch"},
		{"A100-80GB", 4, 1, sglang.EraLatest, "78.25", 195, 26, "nvlink"},
		{"RTX-4090", 2, 1, sglang.EraLatest, "22.76", 195, 0, "pcie"}, // "mem usage=0.19 GB" at TP 2
		{"L4", 4, 1, sglang.Era04, "21.15", 195, 0, "pcie"},           // 0.4.3's "mem usage=0.13 GB"
		{"L4", 1, 4, sglang.EraLatest, "21.15", 195, 0, "pcie"},
		{"RTX-3090", 1, 1, sglang.EraLatest, "22.89", 0, 0, "pcie"},
		{"MI300X", 8, 1, sglang.EraLatest, "187.30", 3789, 0, "xgmi"},
	} {
		g, err := gpu.Lookup(tt.gpu)
		if err != nil {
			t.Fatal(err)
		}
		p := sglang.PreLoadMemoryEra(g, tt.tp, tt.pp, tt.era)
		want := g.CUDATotalMiB<<20 - sglang.CUDAContextMiB<<20 - (tt.nccl+tt.car)<<20
		if got := gib2(p.FreeBytes); got != tt.avail || p.FreeBytes != want ||
			p.NCCLBytes != tt.nccl<<20 || p.CustomAllReduceBytes != tt.car<<20 || p.Interconnect != tt.interconect ||
			p.DistributedBytes != p.NCCLBytes+p.CustomAllReduceBytes || p.TotalBytes != g.CUDATotalMiB<<20 {
			t.Errorf("%s TP %d PP %d %s: %+v (avail %s GiB), want avail %s GiB, NCCL %d MiB, custom AR %d MiB, %s",
				tt.gpu, tt.tp, tt.pp, tt.era, p, got, tt.avail, tt.nccl, tt.car, tt.interconect)
		}
	}
	// The default era is the newest.
	g, _ := gpu.Lookup("H100")
	if sglang.PreLoadMemory(g, 8, 1) != sglang.PreLoadMemoryEra(g, 8, 1, sglang.DefaultEra) {
		t.Error("PreLoadMemory is not PreLoadMemoryEra with the default era")
	}
}

// The custom all-reduce's buffers by world size, platform and era
// (custom_all_reduce.py: _SUPPORTED_WORLD_SIZES [2, 4, 6, 8], max_size
// 8 MiB on CUDA).
func TestCustomAllReduceMiB(t *testing.T) {
	h100, _ := gpu.Lookup("H100")
	l40s, _ := gpu.Lookup("L40S")
	mi, _ := gpu.Lookup("MI300X")
	for _, tt := range []struct {
		g    gpu.GPU
		tp   int
		era  sglang.Era
		want int64
	}{
		{h100, 1, sglang.EraLatest, 0},
		{h100, 2, sglang.EraLatest, 26}, // 10 + 8 + 8
		{h100, 4, sglang.Era053, 26},
		{h100, 6, sglang.Era048, 26},
		{h100, 8, sglang.Era04, 28}, // 8 + 8 + 2 + 2 + 8
		{h100, 3, sglang.EraLatest, 0},
		{h100, 16, sglang.EraLatest, 0},
		{l40s, 2, sglang.EraLatest, 0},
		{l40s, 4, sglang.EraLatest, 0},
		{mi, 8, sglang.EraLatest, 0}, // inside the logged HIP figure
	} {
		if got := sglang.CustomAllReduceMiB(tt.g, tt.tp, tt.era); got != tt.want {
			t.Errorf("%s TP %d %s: %d MiB, want %d", tt.g.Name, tt.tp, tt.era, got, tt.want)
		}
	}
}

func gib2(b int64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<30)) }
