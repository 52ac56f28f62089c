package quant

//go:generate sh -c "cd internal/asmgen && go run . -out ../../kernels_amd64.s -stubs ../../kernels_amd64.go -pkg quant"

import (
	"math"
	"os"
)

// Vector kernels. On amd64 the codecs' hot loops run in assembly generated
// by internal/asmgen (avo) when the CPU has AVX-512 (F, BW, VL), chosen at
// run time; everywhere else, with -tags purego, or with KVCFG_QUANT_ASM=0
// in the environment, they run the portable Go code, which stays the
// reference: the tests run every codec both ways against the same tables
// and vectors (see asm_test.go).
var useAsm = hasAVX512 && os.Getenv("KVCFG_QUANT_ASM") != "0"

// AsmKernels reports whether the codecs use the assembly kernels in this
// process.
func AsmKernels() bool { return useAsm }

// fp8KernParams fills the FP8 encoder parameters of format f (see
// internal/asmgen, fp8EncodeW): the format's geometry in bf16 bits, and the
// codes of ±Inf, ±NaN and ±overflow from its table.
func fp8KernParams(w *[32]uint16, f Float, enc *[1 << 17]uint8) {
	fp := &floats[f]
	m, b := uint16(fp.mant), uint16(fp.bias)
	w[0], w[1], w[2] = (127-b)<<7, 7-m, 1<<(6-m)-1
	w[3], w[4] = (128-b)<<7, 7-m+128-b
	w[6] = 0x80 // the sign of a zero result: −0 exists
	switch f {
	case E4M3FN:
		w[5] = 0x7F // first magnitude code that is not finite
	case E5M2:
		w[5] = 0x7C
	case E4M3FNUZ:
		w[5], w[6] = 0x80, 0
	}
	for i, u := range []uint32{0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, math.Float32bits(1e30), math.Float32bits(-1e30)} {
		w[16+i] = uint16(enc[keyF32(u)])
	}
}

// zeroShift is the block shift of unscaled formats.
var zeroShift int32

// encodeFP8BF16Asm encodes the leading whole vectors of src (unscaled) and
// returns how many elements it did.
func encodeFP8BF16Asm(dst []byte, src []uint16, t *fp8Tables) int {
	n := len(src) &^ 31
	if !useAsm || n == 0 {
		return 0
	}
	fp8EncBF16AVX512(&dst[0], &src[0], n, &zeroShift, n, &t.kpW[0])
	return n
}

// encodeFP8F32Asm is encodeFP8BF16Asm for float32 input.
func encodeFP8F32Asm(dst []byte, src []float32, t *fp8Tables) int {
	n := len(src) &^ 31
	if !useAsm || n == 0 {
		return 0
	}
	fp8EncF32AVX512(&dst[0], &src[0], n, &zeroShift, n, &t.kpW[0])
	return n
}

// decodeFP8BF16Asm decodes the leading whole vectors of src (unscaled).
func decodeFP8BF16Asm(dst []uint16, src []byte, t *fp8Tables) int {
	n := len(dst) &^ 31
	if !useAsm || n == 0 {
		return 0
	}
	fp8DecBF16AVX512(&dst[0], &src[0], n, &t.decBF[0], &zeroShift, n)
	return n
}

// decodeFP8F32Asm is decodeFP8BF16Asm into float32.
func decodeFP8F32Asm(dst []float32, src []byte, t *fp8Tables) int {
	n := len(dst) &^ 31
	if !useAsm || n == 0 {
		return 0
	}
	fp8DecF32AVX512(&dst[0], &src[0], n, &t.decHi[0], &zeroShift, n)
	return n
}

// wideAsm converts the leading whole vectors with one of the 16-lane
// kernels and returns how many elements it did.
func wideAsm[D, S any](dst []D, src []S, k func(*D, *S, int)) int {
	n := min(len(dst), len(src)) &^ 15
	if !useAsm || n == 0 {
		return 0
	}
	k(&dst[0], &src[0], n)
	return n
}
