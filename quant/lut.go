package quant

import (
	"math"
	"sync"
)

// Lookup tables. Every narrow-float midpoint (the rounding decision points
// of FP8 and E2M1) has at most five significant bits, so it lies on the
// bf16 grid. A float32 x therefore rounds like its top 16 bits t when its
// low 16 bits are zero, and like "t plus a tiny amount" otherwise. Tables
// indexed by t and one sticky bit are exact for every float32 input (checked
// over all 2^32 inputs by TestLongF32).

// keyF32 returns the 17-bit table index of a float32 bit pattern: the top 16
// bits plus a sticky bit (1 when any low bit is set) at bit 16.
func keyF32(u uint32) uint32 { return u>>16 | (u&0xFFFF+0xFFFF)>>16<<16 }

// keyMag returns the 16-bit index of a magnitude (sign bit clear): its top
// 15 bits plus a sticky bit at bit 15.
func keyMag(a uint32) uint32 { return a>>16 | (a&0xFFFF+0xFFFF)>>16<<15 }

// fp8Tables are the encode and decode tables of one FP8 format and policy.
type fp8Tables struct {
	enc   [1 << 17]uint8 // keyF32 → code
	dec   [256]float32
	decBF [256]uint16 // exact bf16 of each code (NaN → 0x7FC0)
	// decBFScaled adds k<<7 to decBF for finite nonzero codes: the mask.
	nzBF [256]uint16
	// decHi is the top half of each dec value (the low half is zero for
	// every FP8 value and NaN), for the assembly float32 decoder.
	decHi [256]uint16
	kpW   [32]uint16 // assembly encoder parameters (fp8KernParams)
}

var (
	fp8Once [numFloats][2]sync.Once
	fp8Tabs [numFloats][2]*fp8Tables
)

func fp8TablesFor(f Float, ov Overflow) *fp8Tables {
	fp8Once[f][ov].Do(func() {
		t := new(fp8Tables)
		for k := range uint32(1 << 17) {
			u := (k & 0xFFFF) << 16
			if k>>16 != 0 {
				u |= 1
			}
			t.enc[k] = uint8(f.Encode(math.Float32frombits(u), ov))
		}
		for c := range 256 {
			v := f.Decode(uint16(c))
			t.dec[c] = v
			t.decBF[c] = BF16FromF32(v)
			t.decHi[c] = uint16(math.Float32bits(v) >> 16)
			if a := math.Float32bits(v) & 0x7FFFFFFF; a != 0 && a < 0x7F800000 {
				t.nzBF[c] = 0xFFFF
			}
		}
		fp8KernParams(&t.kpW, f, &t.enc)
		fp8Tabs[f][ov] = t
	})
	return fp8Tabs[f][ov]
}

// e2m1Tables are the 64 Ki-entry E2M1 tables (256 KiB), built on first use
// by a block codec rather than at the start of every process that links
// quant (kvcfg plan never encodes).
type e2m1Tables struct {
	// rne and up are indexed by keyMag: round-to-nearest-even with
	// saturation (OCP, NVIDIA) and SGLang's ">= midpoint" rule (ties away
	// from zero).
	rne, up [1 << 16]uint8
	// shiftRNE and shiftUp are the power-of-two encoder's tables (see
	// fp4enc.go).
	shiftRNE, shiftUp [1 << 16]uint8
}

// e2m1Big returns the E2M1 tables, building them on the first call.
var e2m1Big = sync.OnceValue(func() *e2m1Tables {
	t := new(e2m1Tables)
	t.buildMag()
	t.buildShift()
	return t
})

// e2m1 pairs: byte → two bf16 values (low nibble in the low half) and the
// mask of lanes holding a nonzero magnitude.
var e2m1PairBF, e2m1PairNZ [256]uint32

// e2m1Bounds are the decision thresholds between neighbouring E2M1
// magnitudes.
var e2m1Bounds = [7]float32{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0}

// e2m1HalfUpSlow is SGLang's element rule: count(|y| >= b).
func e2m1HalfUpSlow(a float32) uint8 {
	var n uint8
	for _, b := range e2m1Bounds {
		if a >= b {
			n++
		}
	}
	return n
}

// e2m1Mag returns the E2M1 magnitude codes (RNE, SGLang's rule) of the
// magnitudes with table index k = keyMag: the rule the tables hold, one key
// at a time.
func e2m1Mag(k uint32) (rne, up uint8) {
	a := (k&0x7FFF)<<16 | k>>15
	if a > 0x7F800000 {
		// Only nvfp4 can reach this (a NaN element in a finite block):
		// cvt.rn.satfinite.e2m1x2 behaviour on NaN is unverified; we
		// saturate to the maximum magnitude.
		return 7, 7
	}
	x := math.Float32frombits(a)
	n := 0 // bounds strictly below the magnitude
	for n < len(e2m1Bounds) && x > e2m1Bounds[n] {
		n++
	}
	rne, up = uint8(n), uint8(n)
	if n < len(e2m1Bounds) && x == e2m1Bounds[n] {
		up++ // SGLang: >= the midpoint goes up
		if n%2 == 1 {
			rne++ // a tie goes to the even code
		}
	}
	return rne, up
}

// buildMag fills rne and up as e2m1Mag does, by the bounds in one pass
// (TestE2M1TablesMatchEncode checks every key against Encode).
// Magnitudes ascend with the key within each sticky half, so the bound
// index only moves forward: one or two comparisons per key.
func (t *e2m1Tables) buildMag() {
	for sticky := range uint32(2) {
		n := 0 // bounds strictly below the magnitude
		for m := range uint32(1 << 15) {
			k := m | sticky<<15
			a := m<<16 | sticky
			if a > 0x7F800000 {
				t.rne[k], t.up[k] = 7, 7 // as e2m1Mag
				continue
			}
			x := math.Float32frombits(a)
			for n < len(e2m1Bounds) && x > e2m1Bounds[n] {
				n++
			}
			rne, up := uint8(n), uint8(n)
			if n < len(e2m1Bounds) && x == e2m1Bounds[n] {
				up++
				if n%2 == 1 {
					rne++
				}
			}
			t.rne[k], t.up[k] = rne, up
		}
	}
}

func init() {
	for b := range 256 {
		lo, hi := b&0xF, b>>4
		e2m1PairBF[b] = uint32(BF16FromF32(e2m1F32[lo])) | uint32(BF16FromF32(e2m1F32[hi]))<<16
		if lo&7 != 0 {
			e2m1PairNZ[b] |= 1
		}
		if hi&7 != 0 {
			e2m1PairNZ[b] |= 1 << 16
		}
	}
}

// Small E2M1 classification tables for bf16 inputs scaled by an exact power
// of two: index = clamp(t − e2m1SmallBase, 0, e2m1SmallTop), t the bf16
// magnitude bits of y = |x|·2^-e. Index 0 (y just below 0.25 or smaller) is
// code 0; the top index (y above 5.0) is code 7.
const (
	e2m1SmallBase = 0x3E7F // bf16 bits just below 0.25
	e2m1SmallTop  = 0x40A0 - e2m1SmallBase + 1
)

// Every index from e2m1SmallTop to 1023 holds 7, so callers need no upper
// clamp when y < 16 (always true: |y| ≤ 8 for both scale rules).
var e2m1SmallRNE, e2m1SmallUp [1024]uint8

func init() {
	for i := range 1024 {
		if i >= e2m1SmallTop {
			e2m1SmallRNE[i], e2m1SmallUp[i] = 7, 7
			continue
		}
		e2m1SmallRNE[i], e2m1SmallUp[i] = e2m1Mag(keyMag(uint32(e2m1SmallBase+i) << 16))
	}
	initE2M1Lut()
}

// clampLow returns max(t, 0) without a branch.
func clampLow(t int32) int32 { return t &^ (t >> 31) }

// maxMag16 returns the largest magnitude bits (sign cleared) of bf16
// values, without data-dependent branches.
func maxMag16(x []uint16) int32 {
	if w := asU64Const(x); w != nil {
		return maxMag16SWAR(w)
	}
	var m0, m1 int32
	for len(x) >= 2 {
		a0, a1 := int32(x[0]&0x7FFF), int32(x[1]&0x7FFF)
		d0, d1 := a0-m0, a1-m1
		m0 += d0 &^ (d0 >> 31)
		m1 += d1 &^ (d1 >> 31)
		x = x[2:]
	}
	if len(x) == 1 {
		a := int32(x[0] & 0x7FFF)
		d := a - m0
		m0 += d &^ (d >> 31)
	}
	d := m1 - m0
	return m0 + d&^(d>>31)
}

// maxMag32 returns the largest magnitude bits of float32 values (NaN
// payloads compare above Inf), without data-dependent branches.
func maxMag32(x []float32) uint32 {
	var m0, m1 int64
	for len(x) >= 2 {
		a0, a1 := int64(math.Float32bits(x[0])&0x7FFFFFFF), int64(math.Float32bits(x[1])&0x7FFFFFFF)
		d0, d1 := a0-m0, a1-m1
		m0 += d0 &^ (d0 >> 63)
		m1 += d1 &^ (d1 >> 63)
		x = x[2:]
	}
	if len(x) == 1 {
		a := int64(math.Float32bits(x[0]) & 0x7FFFFFFF)
		d := a - m0
		m0 += d &^ (d >> 63)
	}
	d := m1 - m0
	return uint32(m0 + d&^(d>>63))
}

// maxMag16SWAR is maxMag16 on four bf16 lanes per uint64: with the sign bits
// cleared, (a | 0x8000) − m has its lane's top bit set exactly when a ≥ m,
// and no lane borrows from its neighbour.
func maxMag16SWAR(w []uint64) int32 {
	const lo15, hi = 0x7FFF7FFF7FFF7FFF, 0x8000800080008000
	var m0, m1 uint64
	for len(w) >= 2 {
		a0, a1 := w[0]&lo15, w[1]&lo15
		k0 := ((a0 | hi) - m0) & hi >> 15 * 0xFFFF
		k1 := ((a1 | hi) - m1) & hi >> 15 * 0xFFFF
		m0 = a0&k0 | m0&^k0
		m1 = a1&k1 | m1&^k1
		w = w[2:]
	}
	if len(w) == 1 {
		a := w[0] & lo15
		k := ((a | hi) - m0) & hi >> 15 * 0xFFFF
		m0 = a&k | m0&^k
	}
	k := ((m1 | hi) - m0) & hi >> 15 * 0xFFFF
	m := m1&k | m0&^k
	r := max(uint16(m), uint16(m>>16), uint16(m>>32), uint16(m>>48))
	return int32(r)
}

// asU64Const views a bf16 slice as uint64 words of four elements for
// reading, or returns nil (big-endian, misaligned, or not a multiple of 4).
func asU64Const(d []uint16) []uint64 { return asU64(d) }
