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
// them ("Load weight begin. avail mem=Y GB", formatted %.2f of GiB).
func TestPreLoadMemory(t *testing.T) {
	for _, tt := range []struct {
		gpu    string
		tp, pp int
		avail  string // GiB
		dist   int64  // MiB
	}{
		{"H100", 1, 1, "78.50", 0},
		{"H100", 8, 1, "78.31", 195},
		{"H200", 1, 1, "139.12", 0},
		{"RTX-4090", 2, 1, "22.76", 195}, // "mem usage=0.19 GB" at TP 2
		{"L4", 4, 1, "21.15", 195},
		{"L4", 1, 4, "21.15", 195},
		{"RTX-3090", 1, 1, "22.89", 0},
		{"MI300X", 8, 1, "187.30", 3789},
	} {
		g, err := gpu.Lookup(tt.gpu)
		if err != nil {
			t.Fatal(err)
		}
		p := sglang.PreLoadMemory(g, tt.tp, tt.pp)
		if got := gib2(p.FreeBytes); got != tt.avail || p.DistributedBytes != tt.dist<<20 || p.TotalBytes != g.CUDATotalMiB<<20 ||
			p.TotalBytes-p.ContextBytes-p.DistributedBytes != p.FreeBytes {
			t.Errorf("%s TP %d PP %d: %+v (avail %s GiB), want avail %s GiB, distributed %d MiB", tt.gpu, tt.tp, tt.pp, p, got, tt.avail, tt.dist)
		}
	}
}

func gib2(b int64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<30)) }
