package quant

import (
	"math"
	"math/bits"
	"unsafe"
)

// Fused float32 encoders of the ceil-rule power-of-two formats (mxfp8 with
// SGLang's RCEIL rule, SGLang's fp4_mx_block16): one kernel call computes
// the block maxima, the scales and the elements of sixteen blocks at a
// time (see internal/asmgen, fusedPow2F32), which matters for short calls
// such as a pool's scattered KV rows. The kernels form the same float32
// products x·2^-e as the portable code and round them exactly; blocks
// with a non-finite maximum are redone by the portable code.

// fusedGroups is the number of 16-block groups per kernel call (the size
// of the bad-block word buffer).
const fusedGroups = 16

// The scale parameters of the fused kernels (pow2Scales' p): pre, div,
// post, lo, hi, and the range of e whose multiplier 2^-e is a normal
// float32 (other blocks are redone by the portable code).
var (
	fusedRCEIL     = [8]int32{f32i(1e-30), f32i(448), f32i(0), -127, 127, -127, 126}
	fusedSGLangFP4 = [8]int32{f32i(0), f32i(6), f32i(1e-10), -1 << 30, 1 << 30, -127, 126}
)

func f32i(x float32) int32 { return int32(math.Float32bits(x)) }

// encodeF32Fused encodes the leading whole groups of sixteen blocks of src
// and returns how many blocks it did (0 when no fused kernel applies).
func (c *pow2Codec) encodeF32Fused(dst, scales []byte, src []float32) int {
	if !(useAsm || useAVX2) || len(scales) < 16 {
		return 0
	}
	var p *[8]int32
	out := c.bs
	switch {
	case c.fp8 && c.rule == ruleCeil && c.bs == 32 && c.maxElem == 448:
		p = &fusedRCEIL
	case !c.fp8 && c.rule == ruleSGLangFP4 && c.halfUp && c.bs == 16:
		p = &fusedSGLangFP4
		out = c.bs / 2
	default:
		return 0
	}
	bs, ng := c.bs, len(scales)/16
	var bad [fusedGroups]uint16
	for g0 := 0; g0 < ng; g0 += fusedGroups {
		m := min(fusedGroups, ng-g0)
		b0 := 16 * g0
		switch {
		case c.fp8 && useAVX2:
			mxfp8EncF32FusedB32AVX2(&dst[b0*out], &scales[b0], &bad[0], &src[b0*bs], m, &p[0], nil)
		case c.fp8:
			mxfp8EncF32FusedB32AVX512(&dst[b0*out], &scales[b0], &bad[0], &src[b0*bs], m, &p[0], nil)
		case useAVX2:
			fp4HalfUpEncF32FusedB16AVX2(&dst[b0*out], &scales[b0], &bad[0], &src[b0*bs], m, &p[0], (*uint16)(unsafe.Pointer(&e2m1TabUp[0][0])))
		default:
			fp4HalfUpEncF32FusedB16AVX512(&dst[b0*out], &scales[b0], &bad[0], &src[b0*bs], m, &p[0], nil)
		}
		for i, w := range bad[:m] {
			for ; w != 0; w &= w - 1 {
				b := b0 + 16*i + bits.TrailingZeros16(w)
				c.encodeF32Blocks(dst[b*out:(b+1)*out], scales[b:b+1], src[b*bs:(b+1)*bs])
			}
		}
	}
	return 16 * ng
}

// encodeF32Fused encodes the leading whole groups of sixteen nvfp4 blocks
// of src and returns how many blocks it did.
func (c *nvfp4Codec) encodeF32Fused(dst, scales []byte, src []float32) int {
	if !(useAsm || useAVX2) || len(scales) < 16 {
		return 0
	}
	p := [8]int32{f32i(c.invG), f32i(rcp6), f32i(c.g)}
	ng := len(scales) / 16
	var bad [fusedGroups]uint16
	for g0 := 0; g0 < ng; g0 += fusedGroups {
		m := min(fusedGroups, ng-g0)
		b0 := 16 * g0
		if useAVX2 {
			nvfp4EncF32FusedB16AVX2(&dst[b0*8], &scales[b0], &bad[0], &src[b0*16], m, &p[0], (*uint16)(unsafe.Pointer(&e2m1TabRNE[0][0])))
		} else {
			nvfp4EncF32FusedB16AVX512(&dst[b0*8], &scales[b0], &bad[0], &src[b0*16], m, &p[0], &e2m1LutRNE[0])
		}
		for i, w := range bad[:m] {
			for ; w != 0; w &= w - 1 {
				b := b0 + 16*i + bits.TrailingZeros16(w)
				c.encodeF32Blocks(dst[b*8:(b+1)*8], scales[b:b+1], src[b*16:(b+1)*16])
			}
		}
	}
	return 16 * ng
}

// encodeF32Fused encodes the leading whole runs of sixteen int8_g64 or
// int4_g32 groups of src and returns how many groups it did.
func (c *intCodec) encodeF32Fused(dst, scales []byte, src []float32) int {
	nb := len(scales) / 2
	if !(useAsm || useAVX2) || nb < 16 || (c.g != 64 || c.four) && (c.g != 32 || !c.four) {
		return 0
	}
	p := [8]int32{f32i(c.qmax)}
	g, ng := c.g, nb/16
	out := g
	if c.four {
		out /= 2
	}
	var bad [fusedGroups]uint16 // always clear: the kernels leave no group
	for g0 := 0; g0 < ng; g0 += fusedGroups {
		m := min(fusedGroups, ng-g0)
		b0 := 16 * g0
		switch {
		case c.four && useAVX2:
			int4EncF32FusedB32AVX2(&dst[b0*out], &scales[2*b0], &bad[0], &src[b0*g], m, &p[0], nil)
		case c.four:
			int4EncF32FusedB32AVX512(&dst[b0*out], &scales[2*b0], &bad[0], &src[b0*g], m, &p[0], nil)
		case useAVX2:
			int8EncF32FusedB64AVX2(&dst[b0*out], &scales[2*b0], &bad[0], &src[b0*g], m, &p[0], nil)
		default:
			int8EncF32FusedB64AVX512(&dst[b0*out], &scales[2*b0], &bad[0], &src[b0*g], m, &p[0], nil)
		}
	}
	return 16 * ng
}

// encodeFP8F32Lanes encodes the leading 64-element steps of src (unscaled
// E4M3FN or E5M2) with the 32-bit lane kernels, up to the first step that
// holds a value past the format's largest finite one (or NaN, ±Inf), and
// returns how many elements it did; the rest takes the 16-bit lane kernel,
// which knows the overflow policies.
func encodeFP8F32Lanes(dst []byte, src []float32, f Float) int {
	n := len(src) &^ 63
	if !(useAsm || useAVX2) || n == 0 {
		return 0
	}
	if useAVX2 {
		switch f {
		case E4M3FN:
			return e4m3EncF32LanesAVX2(&dst[0], &src[0], n)
		case E5M2:
			return e5m2EncF32LanesAVX2(&dst[0], &src[0], n)
		}
		return 0
	}
	switch f {
	case E4M3FN:
		return e4m3EncF32LanesAVX512(&dst[0], &src[0], n)
	case E5M2:
		return e5m2EncF32LanesAVX512(&dst[0], &src[0], n)
	}
	return 0
}
