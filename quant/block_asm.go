package quant

import "math/bits"

// Assembly paths of the power-of-two block formats (mxfp8): the block
// maxima and the encode or decode run in the kernels, the scale of each
// block in Go, in chunks of asmChunk blocks; blocks the kernels do not
// cover (non-finite, or a scale outside their exponent range) are redone
// by the portable code.

const asmChunk = 64

// encodeFP8Asm encodes all blocks of mxfp8 from f32 (or bf16 when f32 is
// nil) and reports whether it did.
func (c *pow2Codec) encodeFP8Asm(dst, scales []byte, f32 []float32, bf []uint16) bool {
	if !useAsm || !c.fp8 || c.bs%16 != 0 || len(scales) == 0 {
		return false
	}
	bs, nb := c.bs, len(scales)
	var amax [asmChunk]uint32
	var sh [asmChunk]int32
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		if f32 != nil {
			amaxF32AVX512(&amax[0], &f32[b0*bs], m, bs)
		} else {
			amaxBF16AVX512(&amax[0], &bf[b0*bs], m, bs)
		}
		var bad uint64
		for i, a := range amax[:m] {
			if a >= 0x7F800000 {
				bad |= 1 << i
				continue
			}
			var e int
			if f32 != nil {
				e = c.blockExp(a)
			} else {
				e = c.blockExpBF16(uint16(a >> 16))
			}
			if e < -100 {
				bad |= 1 << i
			}
			scales[b0+i] = uint8(e + 127)
			sh[i] = int32(e) << 23
		}
		if f32 != nil {
			fp8EncF32AVX512(&dst[b0*bs], &f32[b0*bs], m*bs, &sh[0], bs, &c.t.kp[0])
		} else {
			fp8EncBF16AVX512(&dst[b0*bs], &bf[b0*bs], m*bs, &sh[0], bs, &c.t.kp[0])
		}
		for ; bad != 0; bad &= bad - 1 {
			b := b0 + bits.TrailingZeros64(bad)
			if f32 != nil {
				c.encodeF32Blocks(dst[b*bs:(b+1)*bs], scales[b:b+1], f32[b*bs:(b+1)*bs])
			} else {
				c.encodeBF16Blocks(dst[b*bs:(b+1)*bs], scales[b:b+1], bf[b*bs:(b+1)*bs])
			}
		}
	}
	return true
}

// decodeFP8Asm decodes all blocks of mxfp8 into bf16 (or float32 when bf
// is nil) and reports whether it did.
func (c *pow2Codec) decodeFP8Asm(bf []uint16, f32 []float32, src, scales []byte) bool {
	if !useAsm || !c.fp8 || c.bs%32 != 0 || len(scales) == 0 {
		return false
	}
	bs, nb := c.bs, len(scales)
	var adds [asmChunk]int32
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		var bad uint64
		for i, s := range scales[b0 : b0+m] {
			// E4M3 magnitudes span float exponents 118..135: adding k
			// keeps them normal for k in [-117, 119].
			k := int32(s) - 127
			if k < -117 || k > 119 {
				bad |= 1 << i
			}
			adds[i] = k << 7
		}
		if bf != nil {
			fp8DecBF16AVX512(&bf[b0*bs], &src[b0*bs], m*bs, &c.t.decBF[0], &adds[0], bs)
		} else {
			fp8DecF32AVX512(&f32[b0*bs], &src[b0*bs], m*bs, &c.t.decHi[0], &adds[0], bs)
		}
		for ; bad != 0; bad &= bad - 1 {
			b := b0 + bits.TrailingZeros64(bad)
			if bf != nil {
				c.decodeBF16Blocks(bf[b*bs:(b+1)*bs], src[b*bs:(b+1)*bs], scales[b:b+1])
			} else {
				c.decodeF32Blocks(f32[b*bs:(b+1)*bs], src[b*bs:(b+1)*bs], scales[b:b+1])
			}
		}
	}
	return true
}
