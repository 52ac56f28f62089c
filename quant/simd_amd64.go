//go:build goexperiment.simd && amd64

package quant

import (
	"encoding/binary"
	"math"
	"simd/archsimd"
	"unsafe"
)

// With GOEXPERIMENT=simd on amd64 (AVX2), the E2M1 power-of-two block
// encoders for bf16 input classify 16 elements per instruction: t = |x|
// bits − e·128 compared with the seven threshold bit patterns (the scalar
// path's table, unrolled into comparisons). The default build does not use
// this file.

var simdFP4 = archsimd.X86.AVX2()

// thresholds of t for the seven E2M1 bounds: code = #{k : t > thr[k]}.
var (
	fp4ThrUp  [7]int16 // SGLang: |y| >= bound
	fp4ThrRNE [7]int16 // RNE: > for 0.25, 1.25, 2.5, 5.0; >= for 0.75, 1.75, 3.5
)

func init() {
	for k, b := range e2m1Bounds {
		bits := int16(BF16FromF32(b))
		fp4ThrUp[k] = bits - 1
		if k%2 == 0 { // 0.25, 1.25, 2.5, 5.0: lower neighbour even, ties stay
			fp4ThrRNE[k] = bits
		} else {
			fp4ThrRNE[k] = bits - 1
		}
	}
}

func hmax16(a archsimd.Int16x16) int16 {
	m := a.GetLo().Max(a.GetHi())
	m = m.Max(m.AsInt32x4().PermuteScalars(2, 3, 0, 1).AsInt16x8())
	m = m.Max(m.AsInt32x4().PermuteScalars(1, 0, 3, 2).AsInt16x8())
	m = m.Max(m.AsUint32x4().ShiftAllRight(16).AsInt16x8())
	return m.GetElem(0)
}

// encodeFP4BF16AVX512 is encodeFP4BF16SIMD 32 elements per step (one
// mxfp4 block or two fp4_mx_block16 blocks); the two nibbles of each
// 32-bit lane pack into its low byte and VPMOVDB stores 16 bytes. A step
// with a non-finite block or an exponent outside the integer path goes to
// the table encoder.
func (c *pow2Codec) encodeFP4BF16AVX512(dst, scales []byte, src []uint16) {
	thr := &fp4ThrRNE
	if c.halfUp {
		thr = &fp4ThrUp
	}
	var T [7]archsimd.Int16x32
	for k := range T {
		T[k] = archsimd.BroadcastInt16x32(thr[k])
	}
	mask15 := archsimd.BroadcastInt16x32(0x7FFF)
	zero := archsimd.BroadcastInt16x32(0)
	eight := archsimd.BroadcastInt16x32(8)
	upper := archsimd.LoadUint16x32(&laneIdx).GreaterEqual(archsimd.BroadcastUint16x32(16))
	per := 32 / c.bs
	if per == 2 && c.rule != ruleSGLangFP4 {
		c.encodeFP4BF16Table(dst, scales, src)
		return
	}
	floor := c.rule == ruleFloor
	n := len(scales) / per
	if rest := len(scales) % per; rest != 0 {
		nb := len(scales) - rest
		c.encodeFP4BF16Table(dst[nb*c.bs/2:], scales[nb:], src[nb*c.bs:])
	}
	src, dst = src[:32*n], dst[:16*n]
	for i := range n {
		v := archsimd.LoadInt16x32((*[32]int16)(unsafe.Pointer(&src[32*i])))
		a := v.And(mask15)
		var e0, e1 int
		if per == 1 {
			amax := int(uint16(hmax16(a.GetLo().Max(a.GetHi()))))
			switch {
			case amax >= 0x7F80:
				e0 = 1000
			case floor:
				e0 = max(amax>>7-129, -127)
			default:
				e0 = c.fp4Exp(uint16(amax))
			}
			e1 = e0
		} else {
			// fp4_mx_block16 (SGLang rule): E − 2 + (f > 0.5), at least −33;
			// non-finite blocks land above 16
			a0, a1 := int(uint16(hmax16(a.GetLo()))), int(uint16(hmax16(a.GetHi())))
			e0 = max(a0>>7-129+(a0&0x7F+63)>>7, -33)
			e1 = max(a1>>7-129+(a1&0x7F+63)>>7, -33)
		}
		if e0 < -100 || e0 > 16 || e1 < -100 || e1 > 16 {
			c.encodeFP4BF16Table(dst[16*i:16*i+16], scales[per*i:per*i+per], src[32*i:32*i+32])
			continue
		}
		scales[per*i] = uint8(e0 + 127)
		scales[per*i+per-1] = uint8(e1 + 127)
		e128 := archsimd.BroadcastInt16x32(int16(e0 << 7))
		if per == 2 {
			e128 = archsimd.BroadcastInt16x32(int16(e1<<7)).Merge(e128, upper)
		}
		t := a.Sub(e128)
		cnt := zero.Sub(t.Greater(T[0]).ToInt16x32()).Sub(t.Greater(T[1]).ToInt16x32())
		cnt = cnt.Sub(t.Greater(T[2]).ToInt16x32()).Sub(t.Greater(T[3]).ToInt16x32())
		cnt = cnt.Sub(t.Greater(T[4]).ToInt16x32()).Sub(t.Greater(T[5]).ToInt16x32())
		cnt = cnt.Sub(t.Greater(T[6]).ToInt16x32())
		sgn := v.Less(zero)
		if c.halfUp {
			sgn = sgn.And(a.Greater(zero))
		}
		code := cnt.Or(sgn.ToInt16x32().And(eight)).AsUint32x16()
		code = code.Or(code.ShiftAllRight(12))
		code.TruncateToUint8().Store((*[16]uint8)(dst[16*i:]))
	}
}

// encodeFP4BF16SIMD encodes all blocks of an E2M1 pow2 codec from bf16.
// It reports false when SIMD is unavailable.
func (c *pow2Codec) encodeFP4BF16SIMD(dst, scales []byte, src []uint16) bool {
	if simdAVX512 && littleEndian && !c.fp8 && (c.bs == 16 || c.bs == 32) {
		c.encodeFP4BF16AVX512(dst, scales, src)
		return true
	}
	if !simdFP4 || c.fp8 || (c.bs != 16 && c.bs != 32) {
		return false
	}
	thr := &fp4ThrRNE
	if c.halfUp {
		thr = &fp4ThrUp
	}
	var T [7]archsimd.Int16x16
	for k := range T {
		T[k] = archsimd.BroadcastInt16x16(thr[k])
	}
	mask15 := archsimd.BroadcastInt16x16(0x7FFF)
	zero := archsimd.BroadcastInt16x16(0)
	eight := archsimd.BroadcastInt16x16(8)
	// gathers byte 0 of each 32-bit lane into the low 4 bytes of each
	// 128-bit group
	pick := archsimd.LoadInt8x32(&[32]int8{0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1})
	bs := c.bs
	for b := range len(src) / bs {
		blk := src[b*bs : b*bs+bs]
		out := dst[b*bs/2 : b*bs/2+bs/2]
		v0 := archsimd.LoadInt16x16((*[16]int16)(unsafe.Pointer(&blk[0])))
		a0 := v0.And(mask15)
		var v1, a1 archsimd.Int16x16
		amaxV := a0
		if bs == 32 {
			v1 = archsimd.LoadInt16x16((*[16]int16)(unsafe.Pointer(&blk[16])))
			a1 = v1.And(mask15)
			amaxV = a0.Max(a1)
		}
		amax := uint16(hmax16(amaxV))
		if amax >= 0x7F80 {
			scales[b] = nonFiniteScale
			clear(out)
			continue
		}
		e := c.blockExpBF16(amax)
		scales[b] = uint8(e + 127)
		if e < -100 || e > 16 {
			c.encodeBlockFP4Slow(out, blk, e)
			continue
		}
		e128 := archsimd.BroadcastInt16x16(int16(e << 7))
		for h := 0; h < bs/16; h++ {
			v, a := v0, a0
			if h == 1 {
				v, a = v1, a1
			}
			t := a.Sub(e128)
			cnt := zero
			for k := range T {
				cnt = cnt.Sub(t.Greater(T[k]).ToInt16x16())
			}
			sgn := v.Less(zero)
			if c.halfUp {
				sgn = sgn.And(a.Greater(zero))
			}
			code := cnt.Or(sgn.ToInt16x16().And(eight)).AsUint32x8()
			code = code.Or(code.ShiftAllRight(12))
			r := code.AsUint8x32().PermuteOrZeroGrouped(pick)
			lo := r.GetLo().AsUint32x4().GetElem(0)
			hi := r.GetHi().AsUint32x4().GetElem(0)
			binary.LittleEndian.PutUint64(out[8*h:], uint64(lo)|uint64(hi)<<32)
		}
	}
	return true
}

// nvfp4 thresholds on |y|: RNE ties to the even neighbour, so > at 0.25,
// 1.25, 2.5, 5.0 and >= at 0.75, 1.75, 3.5.
func (c *nvfp4Codec) encodeBF16SIMD(dst, scales []byte, src []uint16) bool {
	if simdAVX512 {
		c.encodeBF16AVX512(dst, scales, src)
		return true
	}
	if !simdFP4 {
		return false
	}
	var T [7]archsimd.Float32x8
	for k, b := range e2m1Bounds {
		T[k] = archsimd.BroadcastFloat32x8(b)
	}
	mask15 := archsimd.BroadcastInt16x16(0x7FFF)
	absMask := archsimd.BroadcastUint32x8(0x7FFFFFFF)
	zero := archsimd.BroadcastInt32x8(0)
	// gathers byte 0 of each 64-bit lane into the low 2 bytes of each
	// 128-bit group
	pick := archsimd.LoadInt8x32(&[32]int8{0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1})
	for b := range len(src) / 16 {
		blk := src[b*16 : b*16+16]
		out := dst[b*8 : b*8+8]
		v := archsimd.LoadUint16x16((*[16]uint16)(blk))
		amax := uint16(hmax16(v.AsInt16x16().And(mask15)))
		if amax > 0x7F80 { // NaN in the block: scalar path
			c.encodeBlockBF16(out, scales[b:b+1], blk)
			continue
		}
		sf8, os := c.blockScale(BF16ToF32(amax))
		scales[b] = sf8
		if os > math.MaxFloat32 {
			c.encodeBlockBF16(out, scales[b:b+1], blk)
			continue
		}
		osv := archsimd.BroadcastFloat32x8(os)
		for h := range 2 {
			half := v.GetLo()
			if h == 1 {
				half = v.GetHi()
			}
			y := half.ExtendToUint32().ShiftAllLeft(16).AsFloat32x8().Mul(osv)
			yb := y.AsUint32x8()
			ya := yb.And(absMask).AsFloat32x8()
			cnt := zero
			cnt = cnt.Sub(ya.Greater(T[0]).ToInt32x8())
			cnt = cnt.Sub(ya.GreaterEqual(T[1]).ToInt32x8())
			cnt = cnt.Sub(ya.Greater(T[2]).ToInt32x8())
			cnt = cnt.Sub(ya.GreaterEqual(T[3]).ToInt32x8())
			cnt = cnt.Sub(ya.Greater(T[4]).ToInt32x8())
			cnt = cnt.Sub(ya.GreaterEqual(T[5]).ToInt32x8())
			cnt = cnt.Sub(ya.Greater(T[6]).ToInt32x8())
			code := cnt.AsUint32x8().Or(yb.ShiftAllRight(31).ShiftAllLeft(3)).AsUint64x4()
			code = code.Or(code.ShiftAllRight(28))
			r := code.AsUint8x32().PermuteOrZeroGrouped(pick)
			lo := r.GetLo().AsUint32x4().GetElem(0)
			hi := r.GetHi().AsUint32x4().GetElem(0)
			binary.LittleEndian.PutUint32(out[4*h:], lo&0xFFFF|hi<<16)
		}
	}
	return true
}

// fp4DecTab64 is fp4DecTab repeated in all four 128-bit groups; laneIdx
// numbers the 32 lanes of a Uint16x32.
var (
	fp4DecTab64 [64]uint8
	laneIdx     [32]uint16
)

// decodeFP4BF16AVX512 is decodeFP4BF16SIMD 32 elements per step (one
// mxfp4 block or two fp4_mx_block16 blocks): each payload byte widens to a
// 32-bit lane holding its two nibbles in 16-bit halves.
func (c *pow2Codec) decodeFP4BF16AVX512(dst []uint16, src, scales []byte) {
	tab := archsimd.LoadUint8x64(&fp4DecTab64)
	lo4 := archsimd.BroadcastUint32x16(0xF)
	hi4 := archsimd.BroadcastUint32x16(0xF0)
	seven := archsimd.BroadcastUint16x32(7)
	eight := archsimd.BroadcastUint16x32(8)
	hiSel := archsimd.BroadcastUint16x32(0x0800)
	zero := archsimd.BroadcastUint16x32(0)
	upper := archsimd.LoadUint16x32(&laneIdx).GreaterEqual(archsimd.BroadcastUint16x32(16))
	per := 32 / c.bs // blocks per step
	n := len(scales) / per
	if rest := len(scales) % per; rest != 0 {
		nb := len(scales) - rest
		c.decodeBF16Blocks(dst[nb*c.bs:], src[nb*c.bs/2:], scales[nb:])
	}
	src = src[:16*n]
	dst = dst[:32*n]
	for i := range n {
		k0 := int(scales[per*i]) - 127
		k1 := int(scales[per*i+per-1]) - 127
		if k0 < -125 || k0 > 125 || k1 < -125 || k1 > 125 {
			c.decodeBF16Blocks(dst[32*i:32*i+32], src[16*i:16*i+16], scales[per*i:per*i+per])
			continue
		}
		k7 := archsimd.BroadcastUint16x32(uint16(int16(k0) << 7))
		if per == 2 {
			k7 = archsimd.BroadcastUint16x32(uint16(int16(k1)<<7)).Merge(k7, upper)
		}
		w := archsimd.LoadUint8x16((*[16]uint8)(src[16*i:])).ExtendToUint32()
		codes := w.And(lo4).Or(w.And(hi4).ShiftAllLeft(12)).AsUint16x32()
		m := codes.And(seven)
		idx := m.Or(m.ShiftAllLeft(8)).Add(hiSel)
		r := tab.PermuteOrZeroGrouped(idx.AsInt8x64()).AsUint16x32()
		r = r.Or(codes.And(eight).ShiftAllLeft(12))
		r = r.Add(k7.AndNot(m.Equal(zero).ToInt16x32().AsUint16x32()))
		r.Store((*[32]uint16)(dst[32*i:]))
	}
}

// fp4DecTab holds, in each 128-bit group, the low bytes (0..7) and high
// bytes (8..15) of the bf16 magnitudes of the E2M1 codes 0..7.
var fp4DecTab [32]uint8

func init() {
	for m := range 8 {
		b := BF16FromF32(e2m1F32[m])
		for g := range 2 {
			fp4DecTab[16*g+m], fp4DecTab[16*g+8+m] = uint8(b), uint8(b>>8)
		}
	}
	for g := range 2 {
		copy(fp4DecTab64[32*g:], fp4DecTab[:])
	}
	for i := range laneIdx {
		laneIdx[i] = uint16(i)
	}
}

// decodeFP4BF16SIMD decodes E2M1 power-of-two blocks to bf16, 16 elements
// per step: nibbles spread to 16-bit lanes by one byte shuffle, magnitudes
// looked up by a second, the sign ORed in and the scale exponent added to
// nonzero lanes. Blocks whose scale leaves the normal range go scalar.
func (c *pow2Codec) decodeFP4BF16SIMD(dst []uint16, src, scales []byte) bool {
	if simdAVX512 && !c.fp8 && (c.bs == 16 || c.bs == 32) {
		c.decodeFP4BF16AVX512(dst, src, scales)
		return true
	}
	if !simdFP4 || c.fp8 || (c.bs != 16 && c.bs != 32) {
		return false
	}
	tab := archsimd.LoadUint8x32(&fp4DecTab)
	dupIdx := archsimd.LoadInt8x32(&[32]int8{0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,
		4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1})
	evenLo := archsimd.LoadUint16x16(&[16]uint16{0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0})
	oddLo := archsimd.LoadUint16x16(&[16]uint16{0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF})
	seven := archsimd.BroadcastUint16x16(7)
	eight := archsimd.BroadcastUint16x16(8)
	hiSel := archsimd.BroadcastUint16x16(0x0800)
	zero := archsimd.BroadcastUint16x16(0)
	bs := c.bs
	for b, s := range scales {
		k := int(s) - 127
		if k < -125 || k > 125 {
			c.decodeBF16Blocks(dst[b*bs:b*bs+bs], src[b*bs/2:b*bs/2+bs/2], scales[b:b+1])
			continue
		}
		k7 := archsimd.BroadcastUint16x16(uint16(int16(k) << 7))
		for h := 0; h < bs/16; h++ {
			p := binary.LittleEndian.Uint64(src[b*bs/2+8*h:])
			v := archsimd.BroadcastUint64x4(p).AsUint8x32().PermuteOrZeroGrouped(dupIdx).AsUint16x16()
			codes := v.And(evenLo).Or(v.ShiftAllRight(4).And(oddLo))
			m := codes.And(seven)
			idx := m.Or(m.ShiftAllLeft(8)).Add(hiSel)
			r := tab.PermuteOrZeroGrouped(idx.AsInt8x32()).AsUint16x16()
			r = r.Or(codes.And(eight).ShiftAllLeft(12))
			r = r.Add(k7.AndNot(m.Equal(zero).ToInt16x16().AsUint16x16()))
			r.Store((*[16]uint16)(dst[b*bs+16*h:]))
		}
	}
	return true
}

// e4m3SubTab64 is e4m3SubTab repeated in all four 128-bit groups.
var e4m3SubTab64 [64]uint8

// decodeMXFP8BF16SIMD decodes mxfp8 (E4M3 blocks of 32, power-of-two
// scales) to bf16, one block per AVX-512 step; blocks whose scale leaves
// the exponent-add range go scalar. It reports false without AVX-512.
func (c *pow2Codec) decodeMXFP8BF16SIMD(dst []uint16, src, scales []byte) bool {
	if !simdAVX512 || !c.fp8 || c.bs != 32 {
		return false
	}
	tab := archsimd.LoadUint8x64(&e4m3SubTab64)
	m7f := archsimd.BroadcastUint16x32(0x7F)
	s80 := archsimd.BroadcastUint16x32(0x80)
	bias := archsimd.BroadcastUint16x32(120 << 7)
	eight := archsimd.BroadcastUint16x32(8)
	hiSel := archsimd.BroadcastUint16x32(0x0800)
	qnan := archsimd.BroadcastUint16x32(0x7FC0)
	zero := archsimd.BroadcastUint16x32(0)
	src = src[:32*len(scales)]
	dst = dst[:32*len(scales)]
	for b, s := range scales {
		k := int(s) - 127
		if k < -117 || k > 119 {
			c.decodeBF16Blocks(dst[32*b:32*b+32], src[32*b:32*b+32], scales[b:b+1])
			continue
		}
		k7 := archsimd.BroadcastUint16x32(uint16(int16(k) << 7))
		q := archsimd.LoadUint8x32((*[32]uint8)(src[32*b:])).ExtendToUint16()
		mag := q.And(m7f)
		normal := mag.ShiftAllLeft(4).Add(bias)
		idx := mag.Or(mag.ShiftAllLeft(8)).Add(hiSel)
		sub := tab.PermuteOrZeroGrouped(idx.AsInt8x64()).AsUint16x32()
		r := normal.Merge(sub, mag.GreaterEqual(eight))
		isNaN := mag.Equal(m7f).ToInt16x32().AsUint16x32()
		isZero := mag.Equal(zero).ToInt16x32().AsUint16x32()
		r = r.Add(k7.AndNot(isNaN.Or(isZero)))
		r = r.Or(q.And(s80).ShiftAllLeft(8))
		r = r.AndNot(isNaN).Or(qnan.And(isNaN))
		r.Store((*[32]uint16)(dst[32*b:]))
	}
	return true
}

// decodeE4M3BF16AVX512 is decodeE4M3BF16SIMD 32 lanes at a time.
func decodeE4M3BF16AVX512(dst []uint16, src []byte, k int) int {
	tab := archsimd.LoadUint8x64(&e4m3SubTab64)
	m7f := archsimd.BroadcastUint16x32(0x7F)
	s80 := archsimd.BroadcastUint16x32(0x80)
	bias := archsimd.BroadcastUint16x32(120 << 7)
	eight := archsimd.BroadcastUint16x32(8)
	hiSel := archsimd.BroadcastUint16x32(0x0800)
	qnan := archsimd.BroadcastUint16x32(0x7FC0)
	zero := archsimd.BroadcastUint16x32(0)
	k7 := archsimd.BroadcastUint16x32(uint16(int16(k) << 7))
	n := min(len(dst), len(src)) / 32 * 32
	for i := 0; i < n; i += 32 {
		c := archsimd.LoadUint8x32((*[32]uint8)(src[i:])).ExtendToUint16()
		mag := c.And(m7f)
		normal := mag.ShiftAllLeft(4).Add(bias)
		idx := mag.Or(mag.ShiftAllLeft(8)).Add(hiSel)
		sub := tab.PermuteOrZeroGrouped(idx.AsInt8x64()).AsUint16x32()
		r := normal.Merge(sub, mag.GreaterEqual(eight)) // normal where mag ≥ 8
		isNaN := mag.Equal(m7f).ToInt16x32().AsUint16x32()
		isZero := mag.Equal(zero).ToInt16x32().AsUint16x32()
		r = r.Add(k7.AndNot(isNaN.Or(isZero)))
		r = r.Or(c.And(s80).ShiftAllLeft(8))
		r = r.AndNot(isNaN).Or(qnan.And(isNaN))
		r.Store((*[32]uint16)(dst[i:]))
	}
	return n
}

// e4m3SubTab holds, in each 128-bit group, the low (0..7) and high (8..15)
// bytes of the bf16 values of the E4M3 subnormal magnitudes 0..7.
var e4m3SubTab [32]uint8

func init() {
	for m := range 8 {
		b := BF16FromF32(e4m3fnF32[m])
		for g := range 2 {
			e4m3SubTab[16*g+m], e4m3SubTab[16*g+8+m] = uint8(b), uint8(b>>8)
		}
	}
	for g := range 2 {
		copy(e4m3SubTab64[32*g:], e4m3SubTab[:])
	}
}

// decodeE4M3BF16SIMD widens E4M3FN codes to bf16 times 2^k (k in
// [-117, 119]; 0 for a plain FP8 pool), 16 per step: normal codes by
// exponent arithmetic (mag<<4 + 120<<7), subnormals from a byte-shuffle
// table, NaN as 0x7FC0. It returns how many elements it wrote (a multiple
// of 16), 0 without AVX2.
func decodeE4M3BF16SIMD(dst []uint16, src []byte, k int) int {
	if simdAVX512 {
		return decodeE4M3BF16AVX512(dst, src, k)
	}
	if !simdFP4 {
		return 0
	}
	tab := archsimd.LoadUint8x32(&e4m3SubTab)
	m7f := archsimd.BroadcastUint16x16(0x7F)
	s80 := archsimd.BroadcastUint16x16(0x80)
	bias := archsimd.BroadcastUint16x16(120 << 7)
	eight := archsimd.BroadcastUint16x16(8)
	hiSel := archsimd.BroadcastUint16x16(0x0800)
	qnan := archsimd.BroadcastUint16x16(0x7FC0)
	zero := archsimd.BroadcastUint16x16(0)
	k7 := archsimd.BroadcastUint16x16(uint16(int16(k) << 7))
	n := min(len(dst), len(src)) / 16 * 16
	for i := 0; i < n; i += 16 {
		c := archsimd.LoadUint8x16((*[16]uint8)(src[i:])).ExtendToUint16()
		mag := c.And(m7f)
		normal := mag.ShiftAllLeft(4).Add(bias)
		idx := mag.Or(mag.ShiftAllLeft(8)).Add(hiSel)
		sub := tab.PermuteOrZeroGrouped(idx.AsInt8x32()).AsUint16x16()
		r := normal.Merge(sub, mag.GreaterEqual(eight)) // normal where mag ≥ 8
		isNaN := mag.Equal(m7f).ToInt16x16().AsUint16x16()
		isZero := mag.Equal(zero).ToInt16x16().AsUint16x16()
		r = r.Add(k7.AndNot(isNaN.Or(isZero)))
		r = r.Or(c.And(s80).ShiftAllLeft(8))
		r = r.AndNot(isNaN).Or(qnan.And(isNaN))
		r.Store((*[16]uint16)(dst[i:]))
	}
	return n
}

var simdAVX512 = archsimd.X86.AVX512()

// encodeE4M3BF16SIMD narrows bf16 to E4M3FN with the OCP non-saturating
// policy (overflow and NaN → ±NaN), 32 lanes per step with AVX-512
// (per-lane 16-bit shifts, VPMOVWB): normal results by dropping four
// mantissa bits with round-to-nearest-even (a carry moves into the
// exponent), subnormal results by rounding the 8-bit significand shifted
// right by 125 − exponent. It returns how many elements it wrote (a
// multiple of 32); 0 without AVX-512. TestE4M3EncodeSIMD checks all 2^16
// inputs against the table.
func encodeE4M3BF16SIMD(dst []byte, src []uint16) int {
	if !simdAVX512 {
		return 0
	}
	m15 := archsimd.BroadcastUint16x32(0x7FFF)
	one := archsimd.BroadcastUint16x32(1)
	seven := archsimd.BroadcastUint16x32(7)
	bias := archsimd.BroadcastUint16x32(120 << 3)
	nan := archsimd.BroadcastUint16x32(0x7F)
	minNormal := archsimd.BroadcastUint16x32(121 << 7) // 2^-6
	m7f := archsimd.BroadcastUint16x32(0x7F)
	implicit := archsimd.BroadcastUint16x32(0x80)
	c125 := archsimd.BroadcastUint16x32(125)
	c15 := archsimd.BroadcastUint16x32(15)
	sgn := archsimd.BroadcastUint16x32(0x80)
	n := min(len(dst), len(src)) / 32 * 32
	for i := 0; i < n; i += 32 {
		x := archsimd.LoadUint16x32((*[32]uint16)(src[i:]))
		a := x.And(m15)
		// normal: RNE to 3 mantissa bits, rebias, clamp to NaN
		r := a.Add(seven).Add(a.ShiftAllRight(4).And(one)).ShiftAllRight(4)
		norm := r.Sub(bias).Min(nan)
		// subnormal: RNE(M >> sh), M = 1.m as 8 bits, sh = 125 − E ≤ 15
		sh := c125.Sub(a.ShiftAllRight(7)).Min(c15)
		mant := a.And(m7f).Or(implicit)
		half := one.ShiftLeft(sh.Sub(one))
		sub := mant.Add(half).Sub(one).Add(mant.ShiftRight(sh).And(one)).ShiftRight(sh)
		code := norm.Merge(sub, a.GreaterEqual(minNormal))
		code = code.Or(x.ShiftAllRight(8).And(sgn))
		code.TruncateToUint8().Store((*[32]uint8)(dst[i:]))
	}
	return n
}

// decodeBF16SIMD decodes nvfp4 to bf16 one block (16 elements) per AVX2
// step: nibbles spread to 16-bit lanes, the block scale's magnitude bytes
// looked up by byte shuffles, the sign ORed in. Blocks whose table is not
// sign-symmetric (NaN scales) go scalar. It reports false without AVX2.
func (c *nvfp4Codec) decodeBF16SIMD(dst []uint16, src, scales []byte) bool {
	if simdAVX512 {
		c.decodeBF16AVX512(dst, src, scales)
		return true
	}
	if !simdFP4 {
		return false
	}
	dupIdx := archsimd.LoadInt8x32(&[32]int8{0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,
		4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1})
	evenLo := archsimd.LoadUint16x16(&[16]uint16{0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0})
	oddLo := archsimd.LoadUint16x16(&[16]uint16{0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF, 0, 0xF})
	seven := archsimd.BroadcastUint16x16(7)
	eight := archsimd.BroadcastUint16x16(8)
	hiSel := archsimd.BroadcastUint16x16(0x0800)
	src = src[:8*len(scales)]
	dst = dst[:16*len(scales)]
	d := c.dec
	for b, s := range scales {
		if !d.sym[s] {
			t := &d.bf[s]
			out := (*[16]uint16)(dst[16*b:])
			for j, q := range (*[8]byte)(src[8*b:]) {
				out[2*j], out[2*j+1] = t[q&0xF], t[q>>4]
			}
			continue
		}
		tab := archsimd.LoadUint8x32(&d.lh[s])
		p := binary.LittleEndian.Uint64(src[8*b:])
		v := archsimd.BroadcastUint64x4(p).AsUint8x32().PermuteOrZeroGrouped(dupIdx).AsUint16x16()
		codes := v.And(evenLo).Or(v.ShiftAllRight(4).And(oddLo))
		m := codes.And(seven)
		idx := m.Or(m.ShiftAllLeft(8)).Add(hiSel)
		r := tab.PermuteOrZeroGrouped(idx.AsInt8x32()).AsUint16x16()
		r = r.Or(codes.And(eight).ShiftAllLeft(12))
		r.Store((*[16]uint16)(dst[16*b:]))
	}
	return true
}

// encodeBF16AVX512 is encodeBF16SIMD one block (16 float32 lanes) per
// step: the two codes of each 64-bit lane pack into its low byte and
// VPMOVQB gathers the block's 8 bytes.
func (c *nvfp4Codec) encodeBF16AVX512(dst, scales []byte, src []uint16) {
	var T [7]archsimd.Float32x16
	for k, b := range e2m1Bounds {
		T[k] = archsimd.BroadcastFloat32x16(b)
	}
	mask15 := archsimd.BroadcastInt16x16(0x7FFF)
	absMask := archsimd.BroadcastUint32x16(0x7FFFFFFF)
	zero := archsimd.BroadcastInt32x16(0)
	nb := len(src) / 16
	src, dst, scales = src[:16*nb], dst[:8*nb], scales[:nb]
	for b := range scales {
		blk := src[b*16 : b*16+16]
		out := dst[b*8 : b*8+8]
		v := archsimd.LoadUint16x16((*[16]uint16)(blk))
		amax := uint16(hmax16(v.AsInt16x16().And(mask15)))
		if amax > 0x7F80 { // NaN in the block: scalar path
			c.encodeBlockBF16(out, scales[b:b+1], blk)
			continue
		}
		sf8, os := c.blockScale(BF16ToF32(amax))
		scales[b] = sf8
		if os > math.MaxFloat32 {
			c.encodeBlockBF16(out, scales[b:b+1], blk)
			continue
		}
		y := v.ExtendToUint32().ShiftAllLeft(16).AsFloat32x16().Mul(archsimd.BroadcastFloat32x16(os))
		yb := y.AsUint32x16()
		ya := yb.And(absMask).AsFloat32x16()
		cnt := zero
		cnt = cnt.Sub(ya.Greater(T[0]).ToInt32x16())
		cnt = cnt.Sub(ya.GreaterEqual(T[1]).ToInt32x16())
		cnt = cnt.Sub(ya.Greater(T[2]).ToInt32x16())
		cnt = cnt.Sub(ya.GreaterEqual(T[3]).ToInt32x16())
		cnt = cnt.Sub(ya.Greater(T[4]).ToInt32x16())
		cnt = cnt.Sub(ya.GreaterEqual(T[5]).ToInt32x16())
		cnt = cnt.Sub(ya.Greater(T[6]).ToInt32x16())
		code := cnt.AsUint32x16().Or(yb.ShiftAllRight(31).ShiftAllLeft(3)).AsUint64x8()
		code = code.Or(code.ShiftAllRight(28))
		r := code.TruncateToUint8().AsUint64x2().GetElem(0)
		binary.LittleEndian.PutUint64(out, r)
	}
}

// bf16x16 rounds 16 float32 lanes to bf16 exactly as BF16FromF32 does
// (round to nearest even, NaN → 0x7FC0), one result per 32-bit lane.
func bf16x16(f archsimd.Float32x16) archsimd.Uint32x16 {
	u := f.AsUint32x16()
	r := u.Add(archsimd.BroadcastUint32x16(0x7FFF)).Add(u.ShiftAllRight(16).And(archsimd.BroadcastUint32x16(1))).ShiftAllRight(16)
	nan := u.And(archsimd.BroadcastUint32x16(0x7FFFFFFF)).Greater(archsimd.BroadcastUint32x16(0x7F800000))
	return archsimd.BroadcastUint32x16(0x7FC0).Merge(r, nan)
}

// decodeBF16SIMD decodes int8_g64 / int4_g32 to bf16 with AVX-512: codes
// widen to int32 lanes, convert to float32 exactly, multiply by the group
// scale (the same float32 product as the scalar path) and round to bf16.
// It reports false without AVX-512.
func (c *intCodec) decodeBF16SIMD(dst []uint16, src, scales []byte) bool {
	if !simdAVX512 || (c.four && c.g != 32) || (!c.four && c.g != 64) {
		return false
	}
	ng := len(dst) / c.g
	if c.four {
		lo4 := archsimd.BroadcastInt32x16(0xF)
		eight := archsimd.BroadcastInt32x16(8)
		src, dst = src[:16*ng], dst[:32*ng]
		for b := range ng {
			sv := archsimd.BroadcastFloat32x16(fp16ToF32(get16(scales[2*b:])))
			w := archsimd.LoadUint8x16((*[16]uint8)(src[16*b:])).ExtendToUint32().AsInt32x16()
			lo := bf16x16(w.And(lo4).Sub(eight).ConvertToFloat32().Mul(sv))
			hi := bf16x16(w.ShiftAllRight(4).Sub(eight).ConvertToFloat32().Mul(sv))
			lo.Or(hi.ShiftAllLeft(16)).Store((*[16]uint32)(unsafe.Pointer(&dst[32*b])))
		}
		return true
	}
	// 32 codes per step: 16-bit lanes (two codes each) widen to 32-bit
	// lanes, the even and odd codes are sign-extended by shifts, and the
	// two bf16 results share one 32-bit lane, in element order.
	src, dst = src[:64*ng], dst[:64*ng]
	for b := range ng {
		sv := archsimd.BroadcastFloat32x16(fp16ToF32(get16(scales[2*b:])))
		for h := range 2 {
			w := archsimd.LoadUint16x16((*[16]uint16)(unsafe.Pointer(&src[64*b+32*h]))).ExtendToUint32().AsInt32x16()
			even := bf16x16(w.ShiftAllLeft(24).ShiftAllRight(24).ConvertToFloat32().Mul(sv))
			odd := bf16x16(w.ShiftAllLeft(16).ShiftAllRight(24).ConvertToFloat32().Mul(sv))
			even.Or(odd.ShiftAllLeft(16)).Store((*[16]uint32)(unsafe.Pointer(&dst[64*b+32*h])))
		}
	}
	return true
}

// decodeBF16AVX512 is decodeBF16SIMD two blocks (32 elements) per step:
// the two blocks' magnitude tables fill the low and high 256 bits of the
// shuffle table, payload bytes widen to 32-bit lanes holding their two
// nibbles. A pair with a NaN scale goes scalar.
func (c *nvfp4Codec) decodeBF16AVX512(dst []uint16, src, scales []byte) {
	lo4 := archsimd.BroadcastUint32x16(0xF)
	hi4 := archsimd.BroadcastUint32x16(0xF0)
	seven := archsimd.BroadcastUint16x32(7)
	eight := archsimd.BroadcastUint16x32(8)
	hiSel := archsimd.BroadcastUint16x32(0x0800)
	d := c.dec
	scalar := func(dst []uint16, src, scales []byte) {
		for b, s := range scales {
			t := &d.bf[s]
			out := (*[16]uint16)(dst[16*b:])
			for j, q := range (*[8]byte)(src[8*b:]) {
				out[2*j], out[2*j+1] = t[q&0xF], t[q>>4]
			}
		}
	}
	n := len(scales) / 2
	if len(scales)%2 != 0 {
		scalar(dst[32*n:], src[16*n:], scales[2*n:])
	}
	src, dst = src[:16*n], dst[:32*n]
	var tab archsimd.Uint8x64
	for i := range n {
		s0, s1 := scales[2*i], scales[2*i+1]
		if !d.sym[s0] || !d.sym[s1] {
			scalar(dst[32*i:32*i+32], src[16*i:16*i+16], scales[2*i:2*i+2])
			continue
		}
		tab = tab.SetLo(archsimd.LoadUint8x32(&d.lh[s0])).SetHi(archsimd.LoadUint8x32(&d.lh[s1]))
		w := archsimd.LoadUint8x16((*[16]uint8)(src[16*i:])).ExtendToUint32()
		codes := w.And(lo4).Or(w.And(hi4).ShiftAllLeft(12)).AsUint16x32()
		m := codes.And(seven)
		idx := m.Or(m.ShiftAllLeft(8)).Add(hiSel)
		r := tab.PermuteOrZeroGrouped(idx.AsInt8x64()).AsUint16x32()
		r = r.Or(codes.And(eight).ShiftAllLeft(12))
		r.Store((*[32]uint16)(dst[32*i:]))
	}
}
