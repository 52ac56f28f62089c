package quant

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"
	"unsafe"
)

// Assembly paths of the power-of-two block formats (mxfp8): the block
// maxima and the encode or decode run in the kernels, the scale of each
// block in Go, in chunks of asmChunk blocks; blocks the kernels do not
// cover (non-finite, or a scale outside their exponent range) are redone
// by the portable code.

const asmChunk = 64

// encodeFP8Asm encodes all blocks of mxfp8 from f32 (or bf16 when f32 is
// nil) and reports whether it did.
func (c *pow2Codec) encodeFP8Asm(dst, scales []byte, f32 []float32, bf []uint16) bool {
	if !c.fp8 || !(useAsm || useAVX2 && c.t.f == E4M3FN) || c.bs%32 != 0 || len(scales) == 0 {
		return false
	}
	bs, nb := c.bs, len(scales)
	et := c.expTableBF16()
	var amax [asmChunk]uint32
	var sh [2 * asmChunk]int32
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		if f32 != nil {
			amaxF32(&amax, f32[b0*bs:], m, bs)
		} else {
			amaxBF16(&amax, bf[b0*bs:], m, bs)
		}
		// bf16 maxima go through the ceil kernel too: blockExpBF16 =
		// blockExp on them (TestBlockExpBF16)
		bad, ok := c.ceilScales(scales[b0:b0+m], &sh, &amax, m, 1<<30)
		if !ok {
			bad = 0
			for i, a := range amax[:m] {
				if a >= 0x7F800000 {
					bad |= 1 << i
					continue
				}
				var e int
				switch {
				case f32 != nil:
					e = c.blockExp(a)
				case et != nil:
					e = int(et[a>>16])
				default:
					e = c.blockExpBF16(uint16(a >> 16))
				}
				if e < -100 {
					bad |= 1 << i
				}
				scales[b0+i] = uint8(e + 127)
				sh[i] = int32(e) << 7
			}
		}
		switch {
		case f32 != nil && useAVX2:
			fp8EncAVX2(c.t, &dst[b0*bs], nil, &f32[b0*bs], m*bs, &sh[0], bs)
		case f32 != nil:
			fp8EncF32AVX512(&dst[b0*bs], &f32[b0*bs], m*bs, &sh[0], bs, &c.t.kpW[0])
		case useAVX2:
			fp8EncAVX2(c.t, &dst[b0*bs], &bf[b0*bs], nil, m*bs, &sh[0], bs)
		default:
			fp8EncBF16AVX512(&dst[b0*bs], &bf[b0*bs], m*bs, &sh[0], bs, &c.t.kpW[0])
		}
		c.redoEncode(bad, b0, bs, dst, scales, bf, f32)
	}
	return true
}

// decodeFP8Asm decodes all blocks of mxfp8 into bf16 (or float32 when bf
// is nil) and reports whether it did. Float32 output and the AVX2 kernels
// read the scale bytes themselves; the AVX-512 bf16 kernel takes the
// exponent adds of a chunk.
func (c *pow2Codec) decodeFP8Asm(bf []uint16, f32 []float32, src, scales []byte) bool {
	if !c.fp8 || !(useAsm || useAVX2 && c.t.f == E4M3FN) || c.bs%32 != 0 || len(scales) == 0 {
		return false
	}
	bs, nb := c.bs, len(scales)
	nt := bf != nil && ntOut(bf)
	switch {
	case useAVX2 && bf != nil:
		fp8DecAVX2(c.t, &bf[0], nil, &src[0], nb*bs, &scales[0], bs, nt)
		if nt {
			storeFence()
		}
		c.redoUncoveredScales(bf, nil, src, scales)
		return true
	case useAVX2:
		fp8DecAVX2(c.t, nil, &f32[0], &src[0], nb*bs, &scales[0], bs, false)
		c.redoUncoveredScales(nil, f32, src, scales)
		return true
	case bf == nil:
		fp8ScaledDecE4M3FNF32AVX512(&f32[0], &src[0], nb*bs, &c.t.decHi[0], &scales[0], bs)
		c.redoUncoveredScales(nil, f32, src, scales)
		return true
	}
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
		if nt {
			fp8DecBF16NTAVX512(&bf[b0*bs], &src[b0*bs], m*bs, &c.t.decBF[0], &adds[0], bs)
		} else {
			fp8DecBF16AVX512(&bf[b0*bs], &src[b0*bs], m*bs, &c.t.decBF[0], &adds[0], bs)
		}
		for ; bad != 0; bad &= bad - 1 {
			b := b0 + bits.TrailingZeros64(bad)
			c.decodeBF16Blocks(bf[b*bs:(b+1)*bs], src[b*bs:(b+1)*bs], scales[b:b+1])
		}
	}
	if nt {
		storeFence()
	}
	return true
}

// hasLess reports whether a byte of x is below n (n ≤ 128).
// redoUncoveredScales decodes again, with the portable code, the blocks
// whose scale 2^k the scale-reading kernels do not cover (k outside
// [−117, 119], scale bytes outside [10, 246]: a decoded value could be
// subnormal or overflow), into bf (or f32 when bf is nil).
func (c *pow2Codec) redoUncoveredScales(bf []uint16, f32 []float32, src, scales []byte) {
	bs := c.bs
	for b := 0; b < len(scales); b++ {
		if b+8 <= len(scales) {
			x := binary.LittleEndian.Uint64(scales[b:])
			if !hasLess(x, 10) && !hasLess(^x, 9) {
				b += 7
				continue
			}
		}
		if s := scales[b]; s >= 10 && s <= 246 {
			continue
		}
		if bf != nil {
			c.decodeBF16Blocks(bf[b*bs:(b+1)*bs], src[b*bs:(b+1)*bs], scales[b:b+1])
		} else {
			c.decodeF32Blocks(f32[b*bs:(b+1)*bs], src[b*bs:(b+1)*bs], scales[b:b+1])
		}
	}
}

func hasLess(x uint64, n uint8) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x-ones*uint64(n))&^x&highs != 0
}

// Tables of the 16-bit-lane E2M1 encoder (see internal/asmgen): entry
// 2j + s is the magnitude code of the bf16 magnitudes t with t/32 = j +
// e2m1LutBase and (t mod 32 ≠ 0) = s; entry 64 is the base and 65 the sign
// limit (keep the sign of x < 0 when |x| > it, signed).
const e2m1LutBase = 0x1F3

// (72 entries: the float32-lane encoder loads eight words at entry 64.)
var e2m1LutRNE, e2m1LutUp [72]uint16

// initE2M1Lut fills the encoder tables by e2m1Mag (called by the init of
// the small tables).
func initE2M1Lut() {
	for i := range 64 {
		t := uint32(i/2+e2m1LutBase)<<5 | uint32(i%2)
		rne, up := e2m1Mag(keyMag(t << 16))
		e2m1LutRNE[i], e2m1LutUp[i] = uint16(rne), uint16(up)
	}
	e2m1LutRNE[64], e2m1LutUp[64] = e2m1LutBase, e2m1LutBase
	e2m1LutRNE[65], e2m1LutUp[65] = 0xFFFF, 0
	e2m1TabRNE = e2m1ByteTables(&e2m1LutRNE)
	e2m1TabUp = e2m1ByteTables(&e2m1LutUp)
}

// The AVX2 E2M1 encoders' tables (see internal/asmgen, e2m1EncodeY), from
// the 16-bit-lane tables: rows G[j] = lut[2j] for j < 16 and j ≥ 16, then
// H[j] = lut[2j+1] − lut[2j], each 16 bytes twice; the code of a bf16
// magnitude t is G[j] + s·H[j] (j = clamp(t/32 − base, 0, 31), s = t mod
// 32 ≠ 0 or a sticky bit), as e2m1LutCode.
var e2m1TabRNE, e2m1TabUp [4][32]uint8

// e2m1ByteTables derives the byte tables from a 16-bit-lane table.
func e2m1ByteTables(lut *[72]uint16) (p [4][32]uint8) {
	for j := range 32 {
		g, h := uint8(lut[2*j]), uint8(lut[2*j+1]-lut[2*j])
		for lane := range 2 {
			p[j/16][16*lane+j%16] = g
			p[2+j/16][16*lane+j%16] = h
		}
	}
	return p
}

// e2m1TabCode is the AVX2 encoders' code of the bf16 magnitude t (sticky:
// the float32 value is above t) in Go (tested against the tables).
func e2m1TabCode(p *[4][32]uint8, t uint16, sticky bool) uint8 {
	j := min(max(int(t>>5)-e2m1LutBase, 0), 31)
	g, h := p[j/16][j%16], p[2+j/16][j%16]
	if t&31 != 0 || sticky {
		return g + h
	}
	return g
}

// e2m1LutCode is the encoder's table lookup in Go (tested against the
// tables for every bf16 magnitude).
func e2m1LutCode(lut *[72]uint16, t uint16) uint16 {
	j := min(max(int(t>>5)-int(lut[64]), 0), 31)
	s := 0
	if t&31 != 0 {
		s = 1
	}
	return lut[2*j+s]
}

// ceilScales computes, for the ceil rules (SGLang fp4, RCEIL), the scales
// of m blocks from their float32 maxima in the kernel: scale bytes into
// scales, shifts e<<7 into sh[:64] and the E2M1 sign limits into sh[64:];
// it returns the blocks for the portable code (non-finite, or e outside
// [−100, hi]) and false for the floor rule, which it leaves to the caller.
func (c *pow2Codec) ceilScales(scales []byte, sh *[2 * asmChunk]int32, amax *[asmChunk]uint32, m int, hi int32) (uint64, bool) {
	f := func(x float32) int32 { return int32(math.Float32bits(x)) }
	var p [8]int32
	switch c.rule {
	case ruleSGLangFP4:
		p = [8]int32{f(0), f(6), f(1e-10), -1 << 30, 1 << 30}
	case ruleCeil:
		p = [8]int32{f(1e-30), f(c.maxElem), f(0), -127, 127}
	default:
		return 0, false
	}
	p[5], p[6] = -100, hi
	if !c.halfUp {
		p[7] = -1 // every sign kept
	}
	var sc [asmChunk]byte
	var badW [asmChunk / 16]uint16
	if useAVX2 {
		pow2ScalesAVX2(&sc[0], &sh[0], &badW[0], &amax[0], (m+15)&^15, &p[0])
	} else {
		pow2ScalesAVX512(&sc[0], &sh[0], &badW[0], &amax[0], (m+15)&^15, &p[0])
	}
	copy(scales, sc[:m])
	return (uint64(badW[0]) | uint64(badW[1])<<16 | uint64(badW[2])<<32 | uint64(badW[3])<<48) & (1<<m - 1), true
}

// amaxF32 writes the block maxima of m blocks of bs float32 values (bs a
// multiple of 16) as float32 bits.
func amaxF32(out *[asmChunk]uint32, src []float32, m, bs int) {
	if useAVX2 {
		amaxF32AVX2(&out[0], &src[0], m, bs)
		return
	}
	k := m &^ 15
	switch {
	case k == 0:
	case bs == 16:
		amaxF32x16b16AVX512(&out[0], &src[0], k)
	case bs == 32:
		amaxF32x16b32AVX512(&out[0], &src[0], k)
	case bs == 64:
		amaxF32x16b64AVX512(&out[0], &src[0], k)
	default:
		k = 0
	}
	if k < m {
		amaxF32AVX512(&out[k], &src[k*bs], m-k, bs)
	}
}

// amaxBF16 writes the block maxima of m blocks of bs bf16 values (bs a
// multiple of 16) as float32 bits.
func amaxBF16(out *[asmChunk]uint32, src []uint16, m, bs int) {
	switch {
	case useAVX2:
		k := m &^ 7
		switch {
		case k == 0:
		case bs == 16:
			amaxBF16x8b16AVX2(&out[0], &src[0], k)
		case bs == 32:
			amaxBF16x8b32AVX2(&out[0], &src[0], k)
		case bs == 64:
			amaxBF16x8b64AVX2(&out[0], &src[0], k)
		default:
			k = 0
		}
		if k < m {
			amaxBF16AVX2(&out[k], &src[k*bs], m-k, bs)
		}
	case bs%32 == 0:
		amaxBF16x32AVX512(&out[0], &src[0], m, bs)
	case bs == 16 && m > 1:
		amaxBF16x16AVX512(&out[0], &src[0], m&^1, bs)
		if m&1 != 0 {
			amaxBF16AVX512(&out[m-1], &src[(m-1)*bs], 1, bs)
		}
	default:
		amaxBF16AVX512(&out[0], &src[0], m, bs)
	}
}

// e2m1Dec holds the decoded values of every (scale byte, code) of a
// power-of-two E2M1 format, as float32 bits and as bf16 in 32-bit lanes.
type e2m1Dec struct {
	f32 [256][16]float32
	// pq holds the AVX2 decoder's multipliers: 2^14 for every scale
	// byte, then the scale bytes' values
	pq [512]float32
	bf [256][16]uint32
	lh [256][32]uint8 // the bf16 values' low bytes, then high bytes
}

var (
	e2m1DecOnce [2]sync.Once
	e2m1DecTabs [2]*e2m1Dec
)

// decTables returns the decode tables of c's scale convention.
func (c *pow2Codec) decTables() *e2m1Dec {
	i := 0
	if c.sglangScale {
		i = 1
	}
	e2m1DecOnce[i].Do(func() {
		t := new(e2m1Dec)
		for s := range 256 {
			f := c.scaleF32(uint8(s))
			t.pq[s], t.pq[256+s] = 1<<14, f
			for q := range 16 {
				v := e2m1F32[q] * f
				t.f32[s][q] = v
				t.bf[s][q] = uint32(BF16FromF32(v))
				t.lh[s][q], t.lh[s][16+q] = uint8(t.bf[s][q]), uint8(t.bf[s][q]>>8)
			}
		}
		e2m1DecTabs[i] = t
	})
	return e2m1DecTabs[i]
}

// encodeFP4Asm encodes all blocks of fp4_mx_block16 or mxfp4 from f32 (or
// bf16 when f32 is nil) and reports whether it did.
func (c *pow2Codec) encodeFP4Asm(dst, scales []byte, f32 []float32, bf []uint16) bool {
	if !(useAsm || useAVX2) || c.fp8 || (c.bs != 16 && c.bs%32 != 0) || len(scales) == 0 {
		return false
	}
	bs, nb := c.bs, len(scales)
	var amax [asmChunk]uint32
	var sh [2 * asmChunk]int32 // shifts e<<7, then the float32 sign limits
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		if f32 != nil {
			amaxF32(&amax, f32[b0*bs:], m, bs)
		} else {
			amaxBF16(&amax, bf[b0*bs:], m, bs)
		}
		var bad uint64
		ok := false
		if f32 != nil || c.rule == ruleSGLangFP4 {
			// bf16 maxima too: the ceil kernel's exponent is fp4Exp's
			// there (TestBlockExpBF16)
			bad, ok = c.ceilScales(scales[b0:b0+m], &sh, &amax, m, 16)
		}
		switch {
		case ok:
		case f32 == nil && c.rule != ruleCeil:
			bad = c.fp4IntRuleScales(scales[b0:b0+m], &sh, &amax, m)
		default:
			bad = c.fp4ExpScales(scales[b0:b0+m], &sh, &amax, m, f32 != nil)
		}
		h := bs / 2
		if bs == 16 && m&1 != 0 {
			bad |= 1 << (m - 1) // the pair kernels take two blocks per step
		}
		c.e2m1EncodeChunk(dst[b0*h:], f32, bf, b0, m, &sh)
		c.redoEncode(bad, b0, h, dst, scales, bf, f32)
	}
	return true
}

// fp4ExpScales sets the scales sc of the m blocks of one chunk from their
// maxima amax (of float32 input when isF32, else bf16) by blockExp or
// fp4Exp, and in sh the shifts e<<7 and, after asmChunk, the float32 sign
// limits. It returns the bit mask of the blocks the kernels cannot cover
// (redone by redoEncode).
func (c *pow2Codec) fp4ExpScales(sc []byte, sh *[2 * asmChunk]int32, amax *[asmChunk]uint32, m int, isF32 bool) uint64 {
	var bad uint64
	for i, a := range amax[:m] {
		if a >= 0x7F800000 {
			bad |= 1 << i
			continue
		}
		var e int
		if isF32 {
			e = c.blockExp(a)
		} else {
			e = c.fp4Exp(uint16(a >> 16))
		}
		if e < -100 || e > 16 {
			bad |= 1 << i
		}
		sc[i] = uint8(e + 127)
		sh[i] = int32(e) << 7
		// the sign of x·2^-e: kept unless it rounds to zero
		// (SGLang tests y < 0), that is unless |x| ≤ 2^(e−150)
		switch {
		case !c.halfUp:
			sh[asmChunk+i] = -1
		case e >= 1:
			sh[asmChunk+i] = 1 << (e - 1)
		default:
			sh[asmChunk+i] = 0
		}
	}
	return bad
}

// fp4IntRuleScales is fp4ExpScales for bf16 maxima under the integer
// rules of fp4Exp, inline: e = max(E + c0 + (f + r)>>7, lo) for amax =
// 1.f·2^E (the bf16 kernel keeps its sign rule in its table).
func (c *pow2Codec) fp4IntRuleScales(sc []byte, sh *[2 * asmChunk]int32, amax *[asmChunk]uint32, m int) uint64 {
	var bad uint64
	c0, r, lo := -127-c.emax, 0, -127
	if c.rule == ruleSGLangFP4 {
		c0, r, lo = -129, 63, -33
	}
	if useAVX2 {
		p := [5]int32{int32(c0), int32(r), int32(lo), -100, 16}
		var scA [asmChunk]byte
		var badW [asmChunk / 16]uint16
		intRuleScalesAVX2(&scA[0], &sh[0], &badW[0], &amax[0], (m+15)&^15, &p[0])
		copy(sc[:m], scA[:m])
		return (uint64(badW[0]) | uint64(badW[1])<<16 | uint64(badW[2])<<32 | uint64(badW[3])<<48) & (1<<m - 1)
	}
	sc = sc[:m]
	for i, a := range amax[:m] {
		h := int(a >> 16)
		e := max(h>>7+c0+(h&0x7F+r)>>7, lo)
		if h >= 0x7F80 || e < -100 || e > 16 {
			bad |= 1 << i
		}
		sc[i] = uint8(e + 127)
		sh[i] = int32(e) << 7
	}
	return bad
}

// e2m1EncodeChunk runs the e2m1 encode kernel that fits the CPU level,
// the input type and the block size on the m blocks from block b0, into
// dst (the chunk's first byte on). With 16-element blocks the kernels
// take pairs: an odd last block is left to redoEncode.
func (c *pow2Codec) e2m1EncodeChunk(dst []byte, f32 []float32, bf []uint16, b0, m int, sh *[2 * asmChunk]int32) {
	thrW, thrY := &e2m1LutRNE, &e2m1TabRNE
	if c.halfUp {
		thrW, thrY = &e2m1LutUp, &e2m1TabUp
	}
	bs := c.bs
	switch {
	case useAVX2 && f32 != nil && bs == 16:
		if m > 1 {
			e2m1ShiftEncF32x16AVX2(&dst[0], &f32[b0*bs], (m&^1)*bs, &sh[0], bs, &thrY[0][0])
		}
	case useAVX2 && f32 != nil:
		e2m1ShiftEncF32x32AVX2(&dst[0], &f32[b0*bs], m*bs, &sh[0], bs, &thrY[0][0])
	case useAVX2 && bs == 16 && m > 1 && c.halfUp:
		e2m1ShiftUpEncBF16x16AVX2(&dst[0], &bf[b0*bs], (m&^1)*bs, &sh[0], bs, &thrY[0][0])
	case useAVX2 && bs == 16 && m > 1:
		e2m1ShiftEncBF16x16AVX2(&dst[0], &bf[b0*bs], (m&^1)*bs, &sh[0], bs, &thrY[0][0])
	case useAVX2 && bs == 16:
	case useAVX2 && c.halfUp:
		e2m1ShiftUpEncBF16x32AVX2(&dst[0], &bf[b0*bs], m*bs, &sh[0], bs, &thrY[0][0])
	case useAVX2:
		e2m1ShiftEncBF16x32AVX2(&dst[0], &bf[b0*bs], m*bs, &sh[0], bs, &thrY[0][0])
	case f32 != nil && bs == 16:
		if m > 1 {
			e2m1ShiftEncF32x16AVX512(&dst[0], &f32[b0*bs], (m&^1)*bs, &sh[0], bs, &thrW[0])
		}
	case f32 != nil:
		e2m1ShiftEncF32x32AVX512(&dst[0], &f32[b0*bs], m*bs, &sh[0], bs, &thrW[0])
	case bs == 16:
		if m > 1 {
			e2m1ShiftEncBF16x16AVX512(&dst[0], &bf[b0*bs], (m&^1)*bs, &sh[0], bs, &thrW[0])
		}
	default:
		e2m1ShiftEncBF16x32AVX512(&dst[0], &bf[b0*bs], m*bs, &sh[0], bs, &thrW[0])
	}
}

// decodeFP4Asm decodes all blocks of fp4_mx_block16 or mxfp4 into bf16 (or
// float32 when bf is nil) and reports whether it did.
func (c *pow2Codec) decodeFP4Asm(bf []uint16, f32 []float32, src, scales []byte) bool {
	if !(useAsm || useAVX2) || c.fp8 || c.bs%16 != 0 || len(scales) == 0 {
		return false
	}
	t := c.decTables()
	n := len(scales) * c.bs
	nt := bf != nil && ntOut(bf)
	if useAVX2 {
		if bf != nil {
			e2m1DecBF16LH(bf, src, scales, &t.lh, c.bs, nt)
		} else {
			e2m1DecF32AVX2(&f32[0], &src[0], n, &scales[0], &t.pq[0], c.bs)
		}
		return true
	}
	if nt {
		e2m1DecBF16NTAVX512(&bf[0], &src[0], n, &scales[0], &t.bf[0][0], c.bs)
		storeFence()
	} else if bf != nil {
		e2m1DecBF16AVX512(&bf[0], &src[0], n, &scales[0], &t.bf[0][0], c.bs)
	} else {
		e2m1DecF32AVX512(&f32[0], &src[0], n, &scales[0], (*uint32)(unsafe.Pointer(&t.f32[0][0])), c.bs)
	}
	return true
}

// e2m1DecBF16LH decodes E2M1 blocks of bs (16, or a multiple of 32)
// into bf16 with the AVX2 byte-table kernels (lh: per scale byte, the
// values' low bytes then high bytes; nt: the NT kernels).
func e2m1DecBF16LH(bf []uint16, src, scales []byte, lh *[256][32]uint8, bs int, nt bool) {
	nb := len(scales)
	switch {
	case bs != 16 && nt:
		e2m1DecBF16x32NTAVX2(&bf[0], &src[0], nb*bs, &scales[0], &lh[0][0], bs)
		storeFence()
		return
	case bs != 16:
		e2m1DecBF16x32AVX2(&bf[0], &src[0], nb*bs, &scales[0], &lh[0][0], bs)
		return
	case nb > 1 && nt:
		e2m1DecBF16x16NTAVX2(&bf[0], &src[0], (nb&^1)*16, &scales[0], &lh[0][0], 16)
		storeFence()
	case nb > 1:
		e2m1DecBF16x16AVX2(&bf[0], &src[0], (nb&^1)*16, &scales[0], &lh[0][0], 16)
	}
	if nb&1 != 0 {
		// the last block alone: its 8 bytes through a 16-byte copy
		var in [16]byte
		var out [32]uint16
		b := nb - 1
		copy(in[:], src[8*b:8*b+8])
		two := [2]byte{scales[b], scales[b]}
		e2m1DecBF16x16AVX2(&out[0], &in[0], 32, &two[0], &lh[0][0], 16)
		copy(bf[16*b:16*b+16], out[:16])
	}
}

// encodeAsm encodes all nvfp4 blocks from f32 (or bf16 when f32 is nil)
// and reports whether it did.
func (c *nvfp4Codec) encodeAsm(dst, scales []byte, f32 []float32, bf []uint16) bool {
	if !(useAsm || useAVX2) || len(scales) == 0 {
		return false
	}
	nb := len(scales)
	var amax [asmChunk]uint32
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		if f32 != nil {
			amaxF32(&amax, f32[b0*16:], m, 16)
		} else {
			amaxBF16(&amax, bf[b0*16:], m, 16)
		}
		var os [asmChunk]float32
		var sc [asmChunk]byte
		var badW [asmChunk / 16]uint16
		p := [3]float32{c.invG, rcp6, c.g}
		nvfp4Scales(&sc[0], &os[0], &badW[0], &amax[0], (m+15)&^15, &c.t.enc[0], &p[0])
		copy(scales[b0:b0+m], sc[:m])
		// NaN maxima (fmaxf skips NaN) and infinite multipliers: the
		// portable code; so is an odd last block (two blocks per step)
		bad := (uint64(badW[0]) | uint64(badW[1])<<16 | uint64(badW[2])<<32 | uint64(badW[3])<<48) & (1<<m - 1)
		if m&1 != 0 {
			bad |= 1 << (m - 1)
		}
		if m > 1 && useAVX2 && f32 != nil {
			e2m1MulEncF32x16AVX2(&dst[b0*8], &f32[b0*16], (m&^1)*16, (*int32)(unsafe.Pointer(&os[0])), 16, &e2m1TabRNE[0][0])
		} else if m > 1 && useAVX2 {
			e2m1MulEncBF16x16AVX2(&dst[b0*8], &bf[b0*16], (m&^1)*16, (*int32)(unsafe.Pointer(&os[0])), 16, &e2m1TabRNE[0][0])
		} else if m > 1 && f32 != nil {
			e2m1MulEncF32x16AVX512(&dst[b0*8], &f32[b0*16], (m&^1)*16, (*int32)(unsafe.Pointer(&os[0])), 16, &e2m1LutRNE[0])
		} else if m > 1 {
			e2m1MulEncBF16x16AVX512(&dst[b0*8], &bf[b0*16], (m&^1)*16, (*int32)(unsafe.Pointer(&os[0])), 16, &e2m1LutRNE[0])
		}
		for ; bad != 0; bad &= bad - 1 {
			b := b0 + bits.TrailingZeros64(bad)
			if f32 != nil {
				c.encodeF32Blocks(dst[b*8:(b+1)*8], scales[b:b+1], f32[b*16:(b+1)*16])
			} else {
				c.encodeBlockBF16(dst[b*8:(b+1)*8], scales[b:b+1], bf[b*16:(b+1)*16])
			}
		}
	}
	return true
}

// decodeAsm decodes all nvfp4 blocks into bf16 (or float32 when bf is nil)
// and reports whether it did.
func (c *nvfp4Codec) decodeAsm(bf []uint16, f32 []float32, src, scales []byte) bool {
	if !(useAsm || useAVX2) || len(scales) == 0 {
		return false
	}
	n := 16 * len(scales)
	nt := bf != nil && ntOut(bf)
	if useAVX2 {
		if bf != nil {
			e2m1DecBF16LH(bf, src, scales, &c.dec.lh16, 16, nt)
		} else {
			e2m1DecF32AVX2(&f32[0], &src[0], n, &scales[0], &c.dec.pq[0], 16)
		}
		return true
	}
	if nt {
		e2m1DecBF16NTAVX512(&bf[0], &src[0], n, &scales[0], &c.dec.bf32[0][0], 16)
		storeFence()
	} else if bf != nil {
		e2m1DecBF16AVX512(&bf[0], &src[0], n, &scales[0], &c.dec.bf32[0][0], 16)
	} else {
		e2m1DecF32AVX512(&f32[0], &src[0], n, &scales[0], (*uint32)(unsafe.Pointer(&c.dec.f32[0][0])), 16)
	}
	return true
}

// encodeAsm encodes all groups of int8_g64 or int4_g32 from f32 (or bf16
// when f32 is nil) and reports whether it did.
func (c *intCodec) encodeAsm(dst, scales []byte, f32 []float32, bf []uint16) bool {
	if !(useAsm && c.g%16 == 0 || useAVX2 && c.g%32 == 0) || len(scales) == 0 {
		return false
	}
	g, nb := c.g, len(scales)/2
	var amax [asmChunk]uint32
	var div, rcp [asmChunk]float32
	var s16 [asmChunk]uint16
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		if f32 != nil {
			amaxF32(&amax, f32[b0*g:], m, g)
		} else {
			amaxBF16(&amax, bf[b0*g:], m, g)
		}
		// groupScale for the chunk (min(a/qmax, 65504), 1 for a zero
		// group, fp16 nearest even as FP16.Encode, NaN 0x7E00)
		qmax := c.qmax
		intScales(&s16[0], &div[0], &amax[0], (m+15)&^15, &qmax, &rcp[0])
		copy(scales[2*b0:2*(b0+m)], bytesOf(s16[:m]))
		switch {
		case useAVX2 && c.four && f32 != nil:
			int4EncF32AVX2(&dst[b0*g/2], &f32[b0*g], m*g, &div[0], g, &rcp[0])
		case useAVX2 && c.four:
			int4EncBF16AVX2(&dst[b0*g/2], &bf[b0*g], m*g, &div[0], g, &rcp[0])
		case useAVX2 && f32 != nil:
			int8EncF32AVX2(&dst[b0*g], &f32[b0*g], m*g, &div[0], g, &rcp[0])
		case useAVX2:
			int8EncBF16AVX2(&dst[b0*g], &bf[b0*g], m*g, &div[0], g, &rcp[0])
		case c.four && f32 != nil:
			int4EncF32AVX512(&dst[b0*g/2], &f32[b0*g], m*g, &div[0], g, &rcp[0])
		case c.four:
			int4EncBF16AVX512(&dst[b0*g/2], &bf[b0*g], m*g, &div[0], g, &rcp[0])
		case f32 != nil:
			int8EncF32AVX512(&dst[b0*g], &f32[b0*g], m*g, &div[0], g, &rcp[0])
		default:
			int8EncBF16AVX512(&dst[b0*g], &bf[b0*g], m*g, &div[0], g, &rcp[0])
		}
	}
	return true
}

// decodeAsm decodes all groups of int8_g64 or int4_g32 into bf16 (or
// float32 when bf is nil) and reports whether it did.
func (c *intCodec) decodeAsm(bf []uint16, f32 []float32, src, scales []byte) bool {
	if !(useAsm || useAVX2) || c.g%16 != 0 || len(scales) == 0 || useAVX2 && c.four && bf != nil && c.g != 32 {
		return false
	}
	g, nb := c.g, len(scales)/2
	nt := bf != nil && ntOut(bf)
	var mul [asmChunk]float32
	for b0 := 0; b0 < nb; b0 += asmChunk {
		m := min(asmChunk, nb-b0)
		var s16 [asmChunk]uint16
		copy(bytesOf(s16[:m]), scales[2*b0:2*(b0+m)])
		switch {
		case useAVX2:
			f32FromFP16AVX2(&mul[0], &s16[0], (m+15)&^15)
		default:
			f32FromFP16AVX512(&mul[0], &s16[0], (m+15)&^15)
		}
		switch {
		case useAVX2 && nt && c.four:
			int4DecBF16NTAVX2(&bf[b0*g], &src[b0*g/2], m*g, &mul[0], g)
		case useAVX2 && nt:
			int8DecBF16NTAVX2(&bf[b0*g], &src[b0*g], m*g, &mul[0], g)
		case nt && c.four:
			int4DecBF16NTAVX512(&bf[b0*g], &src[b0*g/2], m*g, &mul[0], g)
		case nt:
			int8DecBF16NTAVX512(&bf[b0*g], &src[b0*g], m*g, &mul[0], g)
		case useAVX2 && c.four && f32 != nil:
			int4DecF32AVX2(&f32[b0*g], &src[b0*g/2], m*g, &mul[0], g)
		case useAVX2 && c.four:
			int4DecBF16AVX2(&bf[b0*g], &src[b0*g/2], m*g, &mul[0], g)
		case useAVX2 && f32 != nil:
			int8DecF32AVX2(&f32[b0*g], &src[b0*g], m*g, &mul[0], g)
		case useAVX2:
			int8DecBF16AVX2(&bf[b0*g], &src[b0*g], m*g, &mul[0], g)
		case c.four && f32 != nil:
			int4DecF32AVX512(&f32[b0*g], &src[b0*g/2], m*g, &mul[0], g)
		case c.four:
			int4DecBF16AVX512(&bf[b0*g], &src[b0*g/2], m*g, &mul[0], g)
		case f32 != nil:
			int8DecF32AVX512(&f32[b0*g], &src[b0*g], m*g, &mul[0], g)
		default:
			int8DecBF16AVX512(&bf[b0*g], &src[b0*g], m*g, &mul[0], g)
		}
	}
	if nt {
		storeFence()
	}
	return true
}

// nvfp4Scales computes nvfp4 block scales with the kernel of the current
// level.
func nvfp4Scales(scales *byte, os *float32, bad *uint16, amax *uint32, m int, enc *uint8, p *float32) {
	if useAVX2 {
		nvfp4ScalesAVX2(scales, os, bad, amax, m, enc, p)
		return
	}
	nvfp4ScalesAVX512(scales, os, bad, amax, m, enc, p)
}

// intScales computes the fp16 scales of m integer groups (m a multiple of
// 16) with the kernel of the current level.
func intScales(s16 *uint16, div *float32, amax *uint32, m int, qmax *float32, rcp *float32) {
	if useAVX2 {
		intScalesAVX2(s16, div, amax, m, qmax, rcp)
		return
	}
	intScalesAVX512(s16, div, amax, m, qmax, rcp)
}

var (
	mxfp8ExpOnce sync.Once
	mxfp8Exp     *[1 << 15]int8
)

// expTableBF16 returns blockExpBF16 for every finite bf16 magnitude of the
// mxfp8 ceil rule (built on first use), or nil for other codecs.
func (c *pow2Codec) expTableBF16() *[1 << 15]int8 {
	if c.rule != ruleCeil || c.maxElem != 448 {
		return nil
	}
	mxfp8ExpOnce.Do(func() {
		t := new([1 << 15]int8)
		for a := range uint16(0x7F80) {
			t[a] = int8(c.blockExpBF16(a))
		}
		mxfp8Exp = t
	})
	return mxfp8Exp
}

// redoEncode encodes with the portable code the blocks a kernel left (bit
// i of bad is block b0+i): out bytes of output per block, from bf16 (or
// float32 when f32 is not nil).
func (c *pow2Codec) redoEncode(bad uint64, b0, out int, dst, scales []byte, bf []uint16, f32 []float32) {
	bs := c.bs
	for ; bad != 0; bad &= bad - 1 {
		b := b0 + bits.TrailingZeros64(bad)
		if f32 != nil {
			c.encodeF32Blocks(dst[b*out:(b+1)*out], scales[b:b+1], f32[b*bs:(b+1)*bs])
		} else {
			c.encodeBF16Blocks(dst[b*out:(b+1)*out], scales[b:b+1], bf[b*bs:(b+1)*bs])
		}
	}
}
