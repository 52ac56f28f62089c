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
// context is the local-memory reservation (SMs × resident threads × 1 KiB)
// plus 350 MiB of runtime and kernel images; at one rank the newest
// releases add the first kernel's 92 MiB (TP1FirstKernelMiB), which the
// NCCL figures hold above one rank. The arithmetic, in MiB:
//
//	H100 TP 1:  81090 − (264 + 350) − 92 = 80384 = 78.50 GiB
//	H100 TP 8:  81090 − 614 − 1254 NCCL (NVSwitch) − 26 custom AR = 79196 = 77.34 GiB
//	H100 TP 2:  the same 79196 (custom AR at TP 2 too)
//	H100 TP 3:  81090 − 614 − 1254 = 79222 = 77.37 GiB (3 is no custom-AR world size)
//	H100 PP 4:  the same 79222: the PP group builds no custom all-reduce
//	H100 TP 8, 0.4: 81090 − 614 − 1254 − 28 = 79194 = 77.34 GiB
//	H200 TP 8:  143165 − 614 − 1280 = 141271 = 137.96 GiB
//	A100 TP 4:  81050 − (216 + 350) − 195 − 26 = 80263 = 78.38 GiB (NVLink: custom AR;
//	            no public log of its NCCL term, so the PCIe figure)
//	RTX 4090 TP 2: 24207 − (192 + 350) − 195 = 23470 = 22.92 GiB (GeForce has no
//	            P2P, so no custom all-reduce)
//	L4 TP 4, 0.4: 22559 − (87 + 350) − 195 = 21927 = 21.41 GiB (0.4.3's log: 21.63)
//	L4 PP 4:    22559 − (87 + 350) − 195 = 21927 = 21.41 GiB
//	RTX 3090 TP 1: 24146 − (123 + 350) − 92 = 23581 = 23.03 GiB
//	MI300X TP 8: 196288 − 614 − 3528 RCCL (8 ranks) − 3082 aiter custom AR
//	            − 4098 quick AR = 184966 = 180.63 GiB (HIP: no SM count, the
//	            H100's 614 MiB context)
//	MI300X TP 4: 196288 − 614 − 1329 − 3082 − 4098 = 187165 = 182.78 GiB
//	MI300X TP 6: 196288 − 614 − 1329 − 3082 = 191263 = 186.78 GiB (no quick AR
//	            at 6)
//	MI300X TP 8, 0.5.3: 196288 − 614 − 3528 − 394 = 191752 = 187.26 GiB (aiter's
//	            128 MiB custom AR, no quick AR)
//	MI300X PP 2: 196288 − 614 − 1329 = 194345 = 189.79 GiB (the PP group builds
//	            neither all-reduce)
func TestPreLoadMemory(t *testing.T) {
	for _, tt := range []struct {
		gpu         string
		tp, pp      int
		era         sglang.Era
		avail       string // GiB
		ctx         int64  // MiB
		first       int64  // MiB, the first kernel at one rank
		nccl, car   int64  // MiB
		interconect string
		qr          int64 // MiB
	}{
		{"H100", 1, 1, sglang.EraLatest, "78.50", 614, 92, 0, 0, "nvswitch", 0},
		{"H100", 8, 1, sglang.EraLatest, "77.34", 614, 0, 1254, 26, "nvswitch", 0},
		{"H100", 2, 1, sglang.EraLatest, "77.34", 614, 0, 1254, 26, "nvswitch", 0},
		{"H100", 3, 1, sglang.EraLatest, "77.37", 614, 0, 1254, 0, "nvswitch", 0},
		{"H100", 1, 4, sglang.EraLatest, "77.37", 614, 0, 1254, 0, "nvswitch", 0},
		{"H100", 8, 1, sglang.Era04, "77.34", 614, 0, 1254, 28, "nvswitch", 0},
		{"H200", 1, 1, sglang.EraLatest, "139.12", 614, 92, 0, 0, "nvswitch", 0},
		{"H200", 8, 1, sglang.EraLatest, "137.96", 614, 0, 1254, 26, "nvswitch", 0},
		{"A100-80GB", 4, 1, sglang.EraLatest, "78.38", 566, 0, 195, 26, "nvlink", 0},
		{"RTX-4090", 2, 1, sglang.EraLatest, "22.92", 542, 0, 195, 0, "pcie", 0},
		{"L4", 4, 1, sglang.Era04, "21.41", 437, 0, 195, 0, "pcie", 0},
		{"L4", 1, 4, sglang.EraLatest, "21.41", 437, 0, 195, 0, "pcie", 0},
		{"RTX-3090", 1, 1, sglang.EraLatest, "23.03", 473, 92, 0, 0, "pcie", 0},
		{"MI300X", 8, 1, sglang.EraLatest, "180.63", 614, 0, 3528, 3082, "xgmi", 4098},
		{"MI300X", 4, 1, sglang.Era0510, "182.78", 614, 0, 1329, 3082, "xgmi", 4098},
		{"MI300X", 6, 1, sglang.EraLatest, "186.78", 614, 0, 1329, 3082, "xgmi", 0},
		{"MI300X", 8, 1, sglang.Era053, "187.26", 614, 0, 3528, 394, "xgmi", 0},
		{"MI300X", 1, 2, sglang.EraLatest, "189.79", 614, 0, 1329, 0, "xgmi", 0},
		{"MI355X", 1, 1, sglang.EraLatest, "287.29", 614, 92, 0, 0, "xgmi", 0},
	} {
		g, err := gpu.Lookup(tt.gpu)
		if err != nil {
			t.Fatal(err)
		}
		p := sglang.PreLoadMemoryEra(g, tt.tp, tt.pp, tt.era)
		want := g.CUDATotalMiB<<20 - tt.ctx<<20 - (tt.first+tt.nccl+tt.car+tt.qr)<<20
		if got := gib2(p.FreeBytes); got != tt.avail || p.FreeBytes != want || p.ContextBytes != tt.ctx<<20 ||
			p.ContextBytes != sglang.CUDAContextBytes(g) || p.LocalMemoryBytes != g.LocalMemoryBytes() ||
			p.NCCLBytes != tt.nccl<<20 || p.CustomAllReduceBytes != tt.car<<20 || p.QuickAllReduceBytes != tt.qr<<20 ||
			p.Interconnect != tt.interconect || p.TotalBytes != g.CUDATotalMiB<<20 ||
			p.DistributedBytes != p.NCCLBytes+p.CustomAllReduceBytes+p.QuickAllReduceBytes+tt.first<<20 {
			t.Errorf("%s TP %d PP %d %s: %+v (avail %s GiB), want avail %s GiB, context %d MiB, NCCL %d MiB, custom AR %d MiB, quick AR %d MiB, %s",
				tt.gpu, tt.tp, tt.pp, tt.era, p, got, tt.avail, tt.ctx, tt.nccl, tt.car, tt.qr, tt.interconect)
		}
	}
	// The default era is the newest.
	g, _ := gpu.Lookup("H100")
	if sglang.PreLoadMemory(g, 8, 1) != sglang.PreLoadMemoryEra(g, 8, 1, sglang.DefaultEra) {
		t.Error("PreLoadMemory is not PreLoadMemoryEra with the default era")
	}
	// The context: local memory plus the runtime images; the H100's 614 MiB
	// for a GPU without an SM count.
	if got := sglang.CUDAContextBytes(g); got != g.LocalMemoryBytes()+sglang.RuntimeImagesMiB<<20 || got != sglang.CUDAContextMiB<<20 {
		t.Errorf("H100 context %d", got)
	}
	if got := sglang.CUDAContextBytes(gpu.GPU{MemoryMiB: 1000}); got != sglang.CUDAContextMiB<<20 {
		t.Errorf("custom GPU context %d", got)
	}
}

// The public runs that print "Load weight begin. avail mem" (the MIN over
// ranks: the rank that used most) and, with more than one rank, "Init
// torch distributed ends. mem usage" (the largest rank's). logged context =
// CUDA total − distributed init − pre-load. A run marked read gave one of
// the model's figures (the runtime images, the NVSwitch NCCL term), so it
// is no test of that term; the others are held out.
func TestPreLoadPublicRuns(t *testing.T) {
	for _, tt := range []struct {
		run       string
		gpu       string
		tp        int
		era       sglang.Era
		pre, dist float64 // GiB, as printed
		read      bool
		maxErrPct float64
	}{
		// docs/sglang.md#ex1: public 2026 H100 logs at TP 1 read 78.43–78.50.
		{"H100 TP 1 (2026 logs)", "H100", 1, sglang.EraLatest, 78.50, 0, true, 0.01},
		// Shivank Chaudhary, "Grok2 OnPrem Deployment via sglang" (2025-09-14):
		// 8 × H100 on SGLang's v0.5.2rc2 image, TP 8; only TP0 prints. Its
		// NCCL figure is the model's; its context (522 MiB) is held out.
		{"8 × H100 TP 8, v0.5.2rc2", "H100", 8, sglang.Era048, 77.43, 1.25, true, 0.2},
		// https://github.com/sgl-project/sglang/pull/11716 (2025-10), 8 × H200
		// on an unmerged branch: its largest rank's NCCL reading is 0.76 GiB
		// above the release's, its context (522 MiB) like the release's.
		{"8 × H200 TP 8, PR #11716", "H200", 8, sglang.Era053, 137.29, 2.01, false, 0.6},
		// https://github.com/didier-durand/llms-in-clouds (SGLang 0.4.3), 4 × L4:
		// context 277 MiB logged, 529 modelled; NCCL 133 logged, 195 modelled.
		{"4 × L4 TP 4, 0.4.3", "L4", 4, sglang.Era04, 21.63, 0.13, false, 1.5},
		// https://github.com/sgl-project/sglang/issues/40558 (2026-09), 4 × RTX
		// PRO 6000 (sm_120): context 585 MiB logged, 632 modelled; NCCL 399
		// logged, 195 modelled.
		{"4 × RTX PRO 6000 TP 4, issue #40558", "RTX-PRO-6000", 4, sglang.EraLatest, 94.01, 0.39, false, 0.2},
		// ROCm, SGLang's ROCm images. https://github.com/ajith-sirra-amd/Issues
		// (GLM-5-FP8-MI355X-SGLANG-ERROR.md, 2026-02), 8 × MI355X on
		// v0.5.8.post1: aiter's 128 MiB custom all-reduce, the quick
		// all-reduce failed; its 8-rank RCCL figure is the model's.
		{"8 × MI355X TP 8, 0.5.8.post1", "MI355X", 8, sglang.Era053, 283.48, 3.83, true, 0.05},
		// https://github.com/sgl-project/sglang/issues/25118 (2026-05), 4 ×
		// MI300X at TP 4 (DP attention): its RCCL figure below 8 ranks is the
		// model's.
		{"4 × MI300X TP 4, issue #25118", "MI300X", 4, sglang.Era0510, 182.61, 8.31, true, 0.1},
		// Jacob0226/SGLang-benchmarks (2026-05), 0.5.12 on MI355X, held out:
		// aiter's 1 GiB custom all-reduce and the quick all-reduce.
		{"2 × MI355X TP 2, 0.5.12", "MI355X", 2, sglang.Era0510, 279.13, 8.18, false, 0.1},
		{"8 × MI355X TP 8, 0.5.12", "MI355X", 8, sglang.Era0510, 276.85, 10.46, false, 0.05},
	} {
		g, err := gpu.Lookup(tt.gpu)
		if err != nil {
			t.Fatal(err)
		}
		p := sglang.PreLoadMemoryEra(g, tt.tp, 1, tt.era)
		got := float64(p.FreeBytes) / (1 << 30)
		errPct := 100 * (got/tt.pre - 1)
		ctx := float64(g.CUDATotalMiB)/1024 - tt.dist - tt.pre
		t.Logf("%-36s logged %.2f GiB (context %.2f, distributed %.2f), predicted %.2f GiB (context %.2f, distributed %.2f): %+.2f %%",
			tt.run, tt.pre, ctx, tt.dist, got, float64(p.ContextBytes)/(1<<30), float64(p.DistributedBytes)/(1<<30), errPct)
		if errPct > tt.maxErrPct || errPct < -tt.maxErrPct {
			t.Errorf("%s: predicted %.2f GiB, the run printed %.2f (%+.2f %%)", tt.run, got, tt.pre, errPct)
		}
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
		{mi, 8, sglang.EraLatest, 3082}, // aiter: 2050 meta + 1024 input + 8 rank_data
		{mi, 2, sglang.Era0510, 3082},
		{mi, 6, sglang.EraLatest, 3082},
		{mi, 8, sglang.Era053, 394}, // aiter up to v0.1.11: 130 + 128 + 128 + 8
		{mi, 3, sglang.EraLatest, 0},
		{mi, 16, sglang.EraLatest, 0},
	} {
		if got := sglang.CustomAllReduceMiB(tt.g, tt.tp, tt.era); got != tt.want {
			t.Errorf("%s TP %d %s: %d MiB, want %d", tt.g.Name, tt.tp, tt.era, got, tt.want)
		}
	}
}

func gib2(b int64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<30)) }

// The quick all-reduce (ROCm, TP 2, 4 or 8, from 0.5.10) and RCCL's part by
// the TP group's size.
func TestQuickAllReduceAndRCCL(t *testing.T) {
	mi, _ := gpu.Lookup("MI355X")
	h100, _ := gpu.Lookup("H100")
	for _, tt := range []struct {
		g    gpu.GPU
		tp   int
		era  sglang.Era
		want int64
	}{
		{mi, 2, sglang.Era0510, 4098},
		{mi, 4, sglang.EraLatest, 4098},
		{mi, 8, sglang.EraLatest, 4098},
		{mi, 6, sglang.EraLatest, 0},
		{mi, 16, sglang.EraLatest, 0},
		{mi, 8, sglang.Era053, 0},
		{h100, 8, sglang.EraLatest, 0},
	} {
		if got := sglang.QuickAllReduceMiBFor(tt.g, tt.tp, tt.era); got != tt.want {
			t.Errorf("%s TP %d %s: quick all-reduce %d MiB, want %d", tt.g.Name, tt.tp, tt.era, got, tt.want)
		}
	}
	for tp, want := range map[int]int64{1: 1329, 2: 1329, 4: 1329, 6: 1329, 8: 3528, 16: 3528} {
		if got := sglang.RCCLMiB(tp); got != want {
			t.Errorf("RCCL at TP %d: %d MiB, want %d", tp, got, want)
		}
	}
}

// The first kernel by release (PR #11657, 0.5.8): at one rank 0.5.8 reads
// it before weights (78.50 GiB on an H100), 0.5.6 inside load_model
// (78.59 GiB before weights, 92 MiB after); above one rank NCCL's figure
// holds it in every release.
func TestFirstKernelByRelease(t *testing.T) {
	g, _ := gpu.Lookup("H100")
	for _, tt := range []struct {
		version     string
		tp          int
		avail       string
		dist, after int64 // MiB
	}{
		{"0.5.6", 1, "78.59", 0, 92},
		{"0.5.7", 1, "78.59", 0, 92},
		{"0.5.8", 1, "78.50", 92, 0},
		{"0.5.10", 1, "78.50", 92, 0},
		{"0.5.6", 2, "77.34", 1254 + 26, 0},
		{"0.5.8", 2, "77.34", 1254 + 26, 0},
	} {
		prof, _, err := sglang.ResolveProfile(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		p := sglang.PreLoadMemoryFor(g, tt.tp, 1, prof)
		after := sglang.FirstKernelAfterPreLoadBytes(tt.tp, 1, prof)
		if got := gib2(p.FreeBytes); got != tt.avail || p.DistributedBytes != tt.dist<<20 || after != tt.after<<20 {
			t.Errorf("%s TP %d: avail %s GiB, distributed %d, after %d; want %s, %d MiB, %d MiB", tt.version, tt.tp, got, p.DistributedBytes, after, tt.avail, tt.dist, tt.after)
		}
	}
}
