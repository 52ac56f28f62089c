//go:build goexperiment.simd && amd64

package quant

import "testing"

// TestAVX2Paths reruns the cross-checks with the AVX-512 kernels switched
// off, so the AVX2 fallbacks are tested on AVX-512 machines too.
func TestAVX2Paths(t *testing.T) {
	if !simdAVX512 {
		t.Skip("no AVX-512: the AVX2 paths are what the other tests ran")
	}
	simdAVX512 = false
	asm := useAsm
	useAsm = false // the generated AVX-512 kernels come first otherwise
	defer func() { simdAVX512, useAsm = true, asm }()
	t.Run("CodecsMatchReference", TestCodecsMatchReference)
	t.Run("AllScaleBytesDecode", TestAllScaleBytesDecode)
	t.Run("FP4ShiftTables", TestFP4ShiftTables)
	t.Run("FP4DecodeOddBlocks", TestFP4DecodeOddBlocks)
	t.Run("NVFP4DecodeOddBlocks", TestNVFP4DecodeOddBlocks)
	t.Run("IntDecodeAllScales", TestIntDecodeAllScales)
	t.Run("CRef", TestCRef)
}
