package quant

//go:generate sh -c "cd internal/asmgen && go run . -out ../../kernels_amd64.s -stubs ../../kernels_amd64.go -pkg quant"

import (
	"math"
	"os"
	"unsafe"
)

// Vector kernels. On amd64 the codecs' hot loops run in assembly generated
// by internal/asmgen (avo), chosen at run time from the CPU's features:
// the AVX-512 (F, BW, VL) kernels where the CPU has them, else the AVX2
// kernels (AVX2, FMA, F16C) for the conversions that have an AVX2 variant,
// else the portable Go code. Everywhere else, with -tags purego, or with
// KVCFG_QUANT_ASM=0 in the environment, every codec runs the portable Go
// code, which stays the reference: the tests run every codec on each level
// against the same tables and vectors (see asm_test.go).
// KVCFG_QUANT_ASM=avx2 selects the AVX2 kernels on an AVX-512 CPU (for
// tests and benchmarks).
const (
	levelPortable = iota
	levelAVX2
	levelAVX512
)

// bestLevel is the best kernel level of this CPU and build.
var bestLevel = func() int {
	switch {
	case hasAVX512:
		return levelAVX512
	case hasAVX2:
		return levelAVX2
	}
	return levelPortable
}()

var (
	asmLevel int
	useAsm   bool // the AVX-512 kernels
	useAVX2  bool // the AVX2 kernels
)

func init() {
	l := bestLevel
	switch os.Getenv("KVCFG_QUANT_ASM") {
	case "0":
		l = levelPortable
	case "avx2":
		l = min(l, levelAVX2)
	}
	setLevel(l)
}

// setLevel selects the kernels of level l (at most bestLevel).
func setLevel(l int) {
	asmLevel = min(l, bestLevel)
	useAsm = asmLevel == levelAVX512
	useAVX2 = asmLevel == levelAVX2
}

// AsmKernels reports whether the codecs use assembly kernels (AVX-512 or
// AVX2) in this process.
func AsmKernels() bool { return asmLevel != levelPortable }

// AsmLevel names the kernels the codecs use in this process: "avx512",
// "avx2" or "portable".
func AsmLevel() string {
	return [...]string{"portable", "avx2", "avx512"}[asmLevel]
}

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

// fp8KernParamsY fills the AVX2 FP8 encoders' parameters (see
// internal/asmgen, fp8EncodeY): the codes of ±Inf, ±NaN and ±overflow as
// bytes 0..5 of each 16-byte lane.
func fp8KernParamsY(t *fp8Tables) {
	w := &t.kpW
	for lane := range 2 {
		for i := range 3 {
			t.kpY[8*lane+i] = w[16+2*i] | w[17+2*i]<<8
		}
	}
}

// fp8EncAVX2 runs the AVX2 encoder of t's format on n elements (a multiple
// of bs, bs of 32) from bf16 (or float32 when f32 is not nil); sh, when not
// nil, holds the block shifts (E4M3FN only).
func fp8EncAVX2(t *fp8Tables, dst *byte, bf *uint16, f32 *float32, n int, sh *int32, bs int) {
	p := &t.kpY[0]
	switch {
	case sh != nil && f32 != nil:
		fp8ScaledEncE4M3FNF32AVX2(dst, f32, n, sh, bs, p)
	case sh != nil:
		fp8ScaledEncE4M3FNBF16AVX2(dst, bf, n, sh, bs, p)
	case t.f == E5M2 && f32 != nil:
		fp8EncE5M2F32AVX2(dst, f32, n, nil, bs, p)
	case t.f == E5M2:
		fp8EncE5M2BF16AVX2(dst, bf, n, nil, bs, p)
	case t.f == E4M3FNUZ && f32 != nil:
		fp8EncE4M3FNUZF32AVX2(dst, f32, n, nil, bs, p)
	case t.f == E4M3FNUZ:
		fp8EncE4M3FNUZBF16AVX2(dst, bf, n, nil, bs, p)
	case f32 != nil:
		fp8EncE4M3FNF32AVX2(dst, f32, n, nil, bs, p)
	default:
		fp8EncE4M3FNBF16AVX2(dst, bf, n, nil, bs, p)
	}
}

// fp8DecAVX2 runs the AVX2 decoder of t's format on n codes (a multiple of
// bs, bs of 32) into bf16 (or float32 when bf is nil); scales, when not
// nil, holds the blocks' E8M0 scales (E4M3FN only; blocks with a scale
// outside [10, 246] are left to the caller).
func fp8DecAVX2(t *fp8Tables, bf *uint16, f32 *float32, src *byte, n int, scales *byte, bs int, nt bool) {
	switch {
	case nt && scales != nil && bf != nil:
		fp8ScaledDecE4M3FNBF16NTAVX2(bf, src, n, &t.decBF[0], scales, bs)
	case nt && t.f == E5M2 && bf != nil:
		fp8DecE5M2BF16NTAVX2(bf, src, n, &t.decBF[0], nil, bs)
	case nt && t.f == E4M3FNUZ && bf != nil:
		fp8DecE4M3FNUZBF16NTAVX2(bf, src, n, &t.decBF[0], nil, bs)
	case nt && bf != nil:
		fp8DecE4M3FNBF16NTAVX2(bf, src, n, &t.decBF[0], nil, bs)
	case scales != nil && bf != nil:
		fp8ScaledDecE4M3FNBF16AVX2(bf, src, n, &t.decBF[0], scales, bs)
	case scales != nil:
		fp8ScaledDecE4M3FNF32AVX2(f32, src, n, &t.decHi[0], scales, bs)
	case t.f == E5M2 && bf != nil:
		fp8DecE5M2BF16AVX2(bf, src, n, &t.decBF[0], nil, bs)
	case t.f == E5M2:
		fp8DecE5M2F32AVX2(f32, src, n, &t.decHi[0], nil, bs)
	case t.f == E4M3FNUZ && bf != nil:
		fp8DecE4M3FNUZBF16AVX2(bf, src, n, &t.decBF[0], nil, bs)
	case t.f == E4M3FNUZ:
		fp8DecE4M3FNUZF32AVX2(f32, src, n, &t.decHi[0], nil, bs)
	case bf != nil:
		fp8DecE4M3FNBF16AVX2(bf, src, n, &t.decBF[0], nil, bs)
	default:
		fp8DecE4M3FNF32AVX2(f32, src, n, &t.decHi[0], nil, bs)
	}
}

// zeroShift is the block shift of unscaled formats.
var zeroShift int32

// encodeFP8BF16Asm encodes the leading whole vectors of src (unscaled) and
// returns how many elements it did.
func encodeFP8BF16Asm(dst []byte, src []uint16, t *fp8Tables) int {
	n := len(src) &^ 31
	switch {
	case n == 0:
	case useAsm:
		fp8EncBF16AVX512(&dst[0], &src[0], n, &zeroShift, n, &t.kpW[0])
	case useAVX2:
		fp8EncAVX2(t, &dst[0], &src[0], nil, n, nil, n)
	default:
		return 0
	}
	return n
}

// encodeFP8F32Asm is encodeFP8BF16Asm for float32 input.
func encodeFP8F32Asm(dst []byte, src []float32, t *fp8Tables) int {
	n := len(src) &^ 31
	switch {
	case n == 0:
	case useAsm:
		fp8EncF32AVX512(&dst[0], &src[0], n, &zeroShift, n, &t.kpW[0])
	case useAVX2:
		fp8EncAVX2(t, &dst[0], nil, &src[0], n, nil, n)
	default:
		return 0
	}
	return n
}

// ntMinBytes is the bf16 output size from which the decoders store
// non-temporally (a variable for tests): past the L2 caches of today's
// cores, where the output would not stay cached for its reader anyway.
var ntMinBytes = 2 << 20

// ntOut reports whether a bf16 decode into dst takes the NT kernels: a
// large output, aligned to 64 bytes (VMOVNTDQ needs its store width's
// alignment; every chunk the callers hand a kernel keeps it).
func ntOut(dst []uint16) bool {
	return len(dst) > 0 && 2*len(dst) >= ntMinBytes && uintptr(unsafe.Pointer(&dst[0]))%64 == 0
}

// decodeFP8BF16Asm decodes the leading whole vectors of src (unscaled).
func decodeFP8BF16Asm(dst []uint16, src []byte, t *fp8Tables) int {
	n := len(dst) &^ 31
	if n == 0 || !(useAsm || useAVX2) {
		return 0
	}
	nt := ntOut(dst[:n])
	switch {
	case useAsm && nt:
		fp8DecBF16NTAVX512(&dst[0], &src[0], n, &t.decBF[0], &zeroShift, n)
	case useAsm:
		fp8DecBF16AVX512(&dst[0], &src[0], n, &t.decBF[0], &zeroShift, n)
	default:
		fp8DecAVX2(t, &dst[0], nil, &src[0], n, nil, n, nt)
	}
	if nt {
		storeFence()
	}
	return n
}

// decodeFP8F32Asm is decodeFP8BF16Asm into float32.
func decodeFP8F32Asm(dst []float32, src []byte, t *fp8Tables) int {
	n := len(dst) &^ 31
	switch {
	case n == 0:
	case useAsm:
		switch t.f {
		case E5M2:
			fp8DecE5M2F32AVX512(&dst[0], &src[0], n, &t.decHi[0], nil, n)
		case E4M3FNUZ:
			fp8DecE4M3FNUZF32AVX512(&dst[0], &src[0], n, &t.decHi[0], nil, n)
		default:
			fp8DecE4M3FNF32AVX512(&dst[0], &src[0], n, &t.decHi[0], nil, n)
		}
	case useAVX2:
		fp8DecAVX2(t, nil, &dst[0], &src[0], n, nil, n, false)
	default:
		return 0
	}
	return n
}

// wideAsm converts the leading whole vectors with one of the 16-lane
// kernels (k512 for AVX-512, k2 for AVX2) and returns how many elements it
// did.
func wideAsm[D, S any](dst []D, src []S, k512, k2 func(*D, *S, int)) int {
	n := min(len(dst), len(src)) &^ 15
	switch {
	case n == 0:
	case useAsm:
		k512(&dst[0], &src[0], n)
	case useAVX2:
		k2(&dst[0], &src[0], n)
	default:
		return 0
	}
	return n
}
