package sglang_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/engine/sglang"
)

func TestPreLoadFree(t *testing.T) {
	// Calibrated on docs/sglang.md#ex1: H100 reads 78.50 GiB before load.
	if got, want := sglang.PreLoadFreeBytes(81559, 1), int64(785)<<30/10; got != want {
		t.Errorf("PreLoadFreeBytes(H100, 1) = %d, want %d", got, want)
	}
	if sglang.PreLoadFreeBytes(81559, 4) >= sglang.PreLoadFreeBytes(81559, 1) {
		t.Error("multi-rank overhead should exceed single-rank overhead")
	}
	if got := sglang.PreLoadFreeBytes(100, 1); got != 0 {
		t.Errorf("tiny GPU: %d, want 0", got)
	}
}
