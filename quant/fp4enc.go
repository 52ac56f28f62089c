package quant

import (
	"encoding/binary"
	"unsafe"
)

// Pure-Go E2M1 block encoder for bf16 input with a power-of-two scale 2^e
// (fp4_mx_block16, mxfp4): y = x·2^-e is exact, and for −100 ≤ e ≤ 16 its
// bf16 bits are x − e·128 whenever y is normal; smaller y (including every
// subnormal x) lies below 0.25 and encodes to magnitude 0. One 64 Ki-entry
// byte table indexed by the 16-bit difference uint16(x − off), off =
// e·128 + e2m1SmallBase, gives the whole 4-bit code (sign included) with no
// clamping: both scale rules bound |y| by 8, so the difference of a
// magnitude lands in one of four disjoint ranges (see initE2M1Shift).

// e2m1ShiftRNE and e2m1ShiftUp map uint16(x − off) to the E2M1 code of
// x·2^-e, with round-to-nearest-even (OCP) or SGLang's ties-away rule. The
// SGLang table codes every negative y, −0 included, with the sign bit;
// callers clear it for −0 (SGLang tests y < 0). They are the shiftRNE and
// shiftUp fields of e2m1Tables, built on first use.

// Ranges of the index uint16(x − off): d = |x| − off lies in [−0x467F,
// 0x281] for −100 ≤ e ≤ 16 and |y| ≤ 8.
const (
	e2m1ShiftPosEnd = 0x3000 // [0, 0x3000): sign 0, d = index
	e2m1ShiftNegPos = 0x8000 // [0x3000, 0x8000): sign 1, d < 0; [0x8000, 0xB000): sign 1, d = index − 0x8000
	e2m1ShiftNegEnd = 0xB000 // [0xB000, 0x10000): sign 0, d < 0
)

// buildShift fills the shift tables from the small tables (built at init,
// before any caller can reach e2m1Big).
func (t *e2m1Tables) buildShift() {
	for i := range 1 << 16 {
		d, s := -1, uint8(0)
		switch {
		case i < e2m1ShiftPosEnd:
			d = i
		case i < e2m1ShiftNegPos:
			s = 8
		case i < e2m1ShiftNegEnd:
			d, s = i-e2m1ShiftNegPos, 8
		}
		if d < 0 { // y below the bf16 value just under 0.25: magnitude 0
			t.shiftRNE[i], t.shiftUp[i] = s, s
			continue
		}
		d = min(d, len(e2m1SmallRNE)-1) // every index ≥ e2m1SmallTop is 7
		t.shiftRNE[i], t.shiftUp[i] = e2m1SmallRNE[d]|s, e2m1SmallUp[d]|s
	}
}

// SWAR maximum of four 15-bit lanes per uint64 (sign bits cleared): with
// lanes ≤ 0x7FFF, (a | 0x8000) − m sets a lane's top bit exactly when
// a ≥ m, and no lane borrows from its neighbour.
const lo15x4, hi1x4 = 0x7FFF7FFF7FFF7FFF, 0x8000800080008000

// swarMax returns the lane-wise maximum of a and m.
func swarMax(a, m uint64) uint64 {
	k := ((a | hi1x4) - m) & hi1x4 >> 15 * 0xFFFF
	return a&k | m&^k
}

// swarHMax returns the largest of the four lanes of m.
func swarHMax(m uint64) uint16 {
	m = swarMax(m, m>>32)
	return uint16(swarMax(m, m>>16))
}

// bytesOf views bf16 values as their bytes (native order).
func bytesOf(x []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}

// amaxBF16x16 returns the largest magnitude bits of 16 bf16 values.
func amaxBF16x16(x *[16]uint16) uint16 {
	m0, m1 := x[0]&0x7FFF, x[1]&0x7FFF
	m2, m3 := x[2]&0x7FFF, x[3]&0x7FFF
	for i := 4; i < 16; i += 4 {
		m0 = max(m0, x[i]&0x7FFF)
		m1 = max(m1, x[i+1]&0x7FFF)
		m2 = max(m2, x[i+2]&0x7FFF)
		m3 = max(m3, x[i+3]&0x7FFF)
	}
	return max(m0, m1, m2, m3)
}

// fp4Exp returns the block exponent of a bf16 amax (finite) for the
// E2M1 pow2 codecs; blockExpBF16 without the float path for the two
// integer rules.
func (c *pow2Codec) fp4Exp(a uint16) int {
	switch c.rule {
	case ruleSGLangFP4:
		// ceil(log2(amax/6)) = E − 2 + (f > 0.5), at least −33
		return max(int(a>>7)-129+int((a&0x7F+63)>>7), -33)
	case ruleFloor:
		return max(int(a>>7)-127-c.emax, -127)
	}
	return c.blockExpBF16(a)
}

// encodeFP4BF16Table encodes all blocks of an E2M1 pow2 codec (bs 16 or
// 32) from bf16 with the shift tables. Buffers are checked by the caller.
func (c *pow2Codec) encodeFP4BF16Table(dst, scales []byte, src []uint16) {
	switch {
	case !littleEndian:
	case c.bs == 16 && c.halfUp && c.rule == ruleSGLangFP4:
		c.encodeBlock16Up(dst, scales, src)
		return
	case c.bs == 32 && !c.halfUp:
		c.encodeBlock32RNE(dst, scales, src)
		return
	}
	c.encodeFP4BF16Generic(dst, scales, src)
}

// encodeFP4BF16Generic is encodeFP4BF16Table for any byte order and rule.
func (c *pow2Codec) encodeFP4BF16Generic(dst, scales []byte, src []uint16) {
	tabs := e2m1Big()
	bs := c.bs
	nb := len(src) / bs
	scales = scales[:nb]
	dst = dst[:nb*bs/2]
	for b := range scales {
		blk := src[b*bs : b*bs+bs]
		out := dst[b*bs/2 : b*bs/2+bs/2]
		amax := amaxBF16x16((*[16]uint16)(blk))
		if bs == 32 {
			amax = max(amax, amaxBF16x16((*[16]uint16)(blk[16:])))
		}
		if amax >= 0x7F80 {
			scales[b] = nonFiniteScale
			clear(out)
			continue
		}
		e := c.fp4Exp(amax)
		scales[b] = uint8(e + 127)
		if e < -100 || e > 16 {
			c.encodeBlockFP4Slow(out, blk, e)
			continue
		}
		off := uint16(e<<7 + e2m1SmallBase)
		for h := 0; h < bs; h += 16 {
			x := (*[16]uint16)(blk[h:])
			o := (*[8]byte)(out[h/2:])
			if c.halfUp {
				encodeFP4x16Up(&tabs.shiftUp, o, x, off)
			} else {
				encodeFP4x16RNE(&tabs.shiftRNE, o, x, off)
			}
		}
	}
}

// encodeBlock16Up is fp4_mx_block16 (SGLang: 16-element blocks, ceil
// scale rule, ties away from zero).
func (c *pow2Codec) encodeBlock16Up(dst, scales []byte, src []uint16) {
	nb := len(src) / 16
	scales, dst = scales[:nb], dst[:8*nb]
	t := &e2m1Big().shiftUp
	sb := bytesOf(src)
	for b := range scales {
		w := (*[32]byte)(sb[32*b:])
		m := swarMax(binary.LittleEndian.Uint64(w[0:])&lo15x4, binary.LittleEndian.Uint64(w[8:])&lo15x4)
		m = swarMax(m, binary.LittleEndian.Uint64(w[16:])&lo15x4)
		m = swarMax(m, binary.LittleEndian.Uint64(w[24:])&lo15x4)
		amax := swarHMax(m)
		o := (*[8]byte)(dst[8*b:])
		if amax >= 0x7F80 {
			scales[b] = nonFiniteScale
			*o = [8]byte{}
			continue
		}
		// ceil(log2(amax/6)) = E − 2 + (f > 0.5), at least −33
		e := max(int(amax>>7)-129+int((amax&0x7F+63)>>7), -33)
		scales[b] = uint8(e + 127)
		if e > 16 {
			c.encodeBlockFP4Slow(o[:], src[16*b:16*b+16], e)
			continue
		}
		off := uint16(e<<7 + e2m1SmallBase)
		var r uint64
		for k := range 4 {
			v := binary.LittleEndian.Uint64(w[8*k:])
			v &= noNegZero(v)
			c := uint64(t[uint16(v)-off]) | uint64(t[uint16(v>>16)-off])<<4 |
				uint64(t[uint16(v>>32)-off])<<8 | uint64(t[uint16(v>>48)-off])<<12
			r |= c << (16 * k)
		}
		binary.LittleEndian.PutUint64(o[:], r)
	}
}

// noNegZero returns a mask that clears the sign of the lanes of v that hold
// −0 (0x8000): SGLang codes −0 as +0.
func noNegZero(v uint64) uint64 {
	z := v ^ hi1x4 // −0 lanes become 0
	nz := ((z & lo15x4) + lo15x4 | z) & hi1x4
	return nz | lo15x4
}

// encodeBlock32RNE is mxfp4 (32-element blocks, round-to-nearest-even).
func (c *pow2Codec) encodeBlock32RNE(dst, scales []byte, src []uint16) {
	nb := len(src) / 32
	scales, dst = scales[:nb], dst[:16*nb]
	t := &e2m1Big().shiftRNE
	floor := c.rule == ruleFloor
	sb := bytesOf(src)
	for b := range scales {
		x := (*[32]uint16)(src[32*b:])
		w := (*[64]byte)(sb[64*b:])
		m0 := swarMax(binary.LittleEndian.Uint64(w[0:])&lo15x4, binary.LittleEndian.Uint64(w[8:])&lo15x4)
		m1 := swarMax(binary.LittleEndian.Uint64(w[16:])&lo15x4, binary.LittleEndian.Uint64(w[24:])&lo15x4)
		m0 = swarMax(m0, binary.LittleEndian.Uint64(w[32:])&lo15x4)
		m1 = swarMax(m1, binary.LittleEndian.Uint64(w[40:])&lo15x4)
		m0 = swarMax(m0, binary.LittleEndian.Uint64(w[48:])&lo15x4)
		m1 = swarMax(m1, binary.LittleEndian.Uint64(w[56:])&lo15x4)
		amax := swarHMax(swarMax(m0, m1))
		o := (*[16]byte)(dst[16*b:])
		if amax >= 0x7F80 {
			scales[b] = nonFiniteScale
			*o = [16]byte{}
			continue
		}
		var e int
		if floor {
			e = max(int(amax>>7)-129, -127)
		} else {
			e = c.blockExpBF16(amax)
		}
		scales[b] = uint8(e + 127)
		if e < -100 || e > 16 {
			c.encodeBlockFP4Slow(o[:], x[:], e)
			continue
		}
		off := uint16(e<<7 + e2m1SmallBase)
		for j := range o {
			o[j] = t[x[2*j]-off] | t[x[2*j+1]-off]<<4
		}
	}
}

// encodeFP4x16RNE encodes 16 bf16 values with round-to-nearest-even.
func encodeFP4x16RNE(t *[1 << 16]uint8, o *[8]byte, x *[16]uint16, off uint16) {
	for j := range o {
		o[j] = t[x[2*j]-off] | t[x[2*j+1]-off]<<4
	}
}

// encodeFP4x16Up encodes 16 bf16 values with SGLang's rule; −0 (0x8000)
// becomes +0 first.
func encodeFP4x16Up(t *[1 << 16]uint8, o *[8]byte, x *[16]uint16, off uint16) {
	for j := range o {
		a, b := x[2*j], x[2*j+1]
		a &^= uint16((uint32(a^0x8000)-1)>>16) & 0x8000
		b &^= uint16((uint32(b^0x8000)-1)>>16) & 0x8000
		o[j] = t[a-off] | t[b-off]<<4
	}
}
