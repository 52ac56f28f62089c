package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/kvcfg/kvcfg/dtype"
)

// ScaleRule selects how a power-of-two block scale is derived from the
// block's largest magnitude amax.
type ScaleRule uint8

const (
	// ScaleDefault picks the rule of the format's KV reference: ScaleCeil
	// for mxfp8 (SGLang) and ScaleFloor for mxfp4 (OCP).
	ScaleDefault ScaleRule = iota
	// ScaleCeil is SGLang's / NVIDIA's RCEIL-style rule: the smallest power
	// of two X with amax/X ≤ the element maximum, computed as
	// ceil(log2(max(amax, 1e-30) / max_elem)) and clamped to the E8M0 range.
	// Elements never clip.
	ScaleCeil
	// ScaleFloor is the OCP MX v1.0 rule: floor(log2(amax)) − emax_elem,
	// clamped below at −127; elements above the maximum saturate.
	ScaleFloor
)

// String returns "ceil", "floor" or "default".
func (r ScaleRule) String() string {
	switch r {
	case ScaleCeil:
		return "ceil"
	case ScaleFloor:
		return "floor"
	}
	return "default"
}

// ParseScaleRule reads "ceil", "floor" or "" / "default".
func ParseScaleRule(s string) (ScaleRule, error) {
	switch s {
	case "", "default":
		return ScaleDefault, nil
	case "ceil", "rceil":
		return ScaleCeil, nil
	case "floor":
		return ScaleFloor, nil
	}
	return ScaleDefault, fmt.Errorf("%w scale rule %q (accepted: ceil, floor)", ErrUnknown, s)
}

// scale derivations of pow2Codec
const (
	ruleSGLangFP4 = iota // ceil(log2(max(amax/6, 1e-10))), SGLang fp4_mx_block16
	ruleCeil             // ceil(log2(max(amax,1e-30)/max_elem)) clamped to [-127,127]
	ruleFloor            // floor(log2(amax)) - emax, >= -127
)

// pow2Codec is a block format with one power-of-two uint8 scale per block:
// fp4_mx_block16 (SGLang), OCP mxfp4 and mxfp8.
type pow2Codec struct {
	format  dtype.Format
	bs      int
	fp8     bool // E4M3 elements (mxfp8); otherwise E2M1
	rule    int
	maxElem float32 // 6 or 448
	emax    int     // exponent of the element's largest power of two (2 or 8)
	halfUp  bool    // SGLang: every E2M1 midpoint rounds away from zero
	// sglangScale: the scale byte is a plain uint8 exponent (0xFF decodes
	// as 2^128 = +Inf, as SGLang's float math does) rather than E8M0 (0xFF
	// is NaN).
	sglangScale bool
	t           *fp8Tables // E4M3 satfinite tables for mxfp8
}

func (c *pow2Codec) Format() dtype.Format { return c.format }

// nonFiniteScale is the scale code written for a block holding NaN or
// ±Inf: it decodes to NaN (E8M0) or +Inf (SGLang) times every code.
const nonFiniteScale = 0xFF

// blockExp returns the scale exponent e (X = 2^e) for the block maximum
// magnitude bits amax (float32, sign clear, finite).
func (c *pow2Codec) blockExp(amax uint32) int {
	switch c.rule {
	case ruleSGLangFP4:
		q := math.Float32frombits(amax) / 6
		if q < 1e-10 {
			q = 1e-10
		}
		return ceilLog2(q)
	case ruleCeil:
		a := math.Float32frombits(amax)
		if a < 1e-30 {
			a = 1e-30
		}
		return min(max(ceilLog2(a/c.maxElem), -127), 127)
	default:
		return max(int(amax>>23)-127-c.emax, -127)
	}
}

// blockExpBF16 is blockExp for a bf16 amax, without float division: for an
// 8-bit significand 1.f·2^E, amax/6 is never within float32 rounding of a
// power of two unless it is one (f = 0.5), so ceil(log2(fl(amax/6))) =
// E − 2 + (f > 0.5); the 1e-10 clamp becomes max(·, −33). Checked against
// blockExp for every bf16 magnitude (TestBlockExpBF16).
func (c *pow2Codec) blockExpBF16(a uint16) int {
	switch c.rule {
	case ruleSGLangFP4:
		e := int(a>>7) - 127 - 2
		if a&0x7F > 64 {
			e++
		}
		return max(e, -33)
	case ruleFloor:
		return max(int(a>>7)-127-c.emax, -127)
	}
	return c.blockExp(uint32(a) << 16)
}

// ceilLog2 returns ceil(log2(q)) exactly for a positive normal float32 q.
func ceilLog2(q float32) int {
	u := math.Float32bits(q)
	e := int(u>>23) - 127
	if u&0x7FFFFF != 0 {
		e++
	}
	return e
}

func (c *pow2Codec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	c.encodeF32(dst, scales, src)
	return nil
}

// encodeF32 is EncodeF32 on checked buffers (EncodeRowsF32 checks once).
func (c *pow2Codec) encodeF32(dst, scales []byte, src []float32) {
	if n := c.encodeF32Fused(dst, scales, src); n > 0 {
		if n == len(scales) {
			return
		}
		out := c.bs
		if !c.fp8 {
			out /= 2
		}
		dst, scales, src = dst[n*out:], scales[n:], src[n*c.bs:]
	}
	if c.encodeFP8Asm(dst, scales, src, nil) || c.encodeFP4Asm(dst, scales, src, nil) {
		return
	}
	c.encodeF32Blocks(dst, scales, src)
}

// encodeF32Blocks is the portable encoder of whole blocks (buffers checked).
func (c *pow2Codec) encodeF32Blocks(dst, scales []byte, src []float32) {
	bs := c.bs
	for b := range len(src) / bs {
		blk := src[b*bs : b*bs+bs]
		amax := maxMag32(blk)
		if c.fp8 {
			out := dst[b*bs : b*bs+bs]
			if amax >= 0x7F800000 {
				scales[b] = nonFiniteScale
				clear(out)
				continue
			}
			e := c.blockExp(amax)
			scales[b] = uint8(e + 127)
			inv := pow2(-e)
			enc := &c.t.enc
			for i, x := range blk {
				out[i] = enc[keyF32(math.Float32bits(x*inv))]
			}
			continue
		}
		out := dst[b*bs/2 : b*bs/2+bs/2]
		if amax >= 0x7F800000 {
			scales[b] = nonFiniteScale
			clear(out)
			continue
		}
		e := c.blockExp(amax)
		scales[b] = uint8(e + 127)
		inv := pow2(-e)
		tab := &e2m1Big().rne
		if c.halfUp {
			tab = &e2m1Big().up
		}
		for j := range out {
			y0 := math.Float32bits(blk[2*j] * inv)
			y1 := math.Float32bits(blk[2*j+1] * inv)
			out[j] = (tab[keyMag(y0&0x7FFFFFFF)] | c.sign4(y0)) | (tab[keyMag(y1&0x7FFFFFFF)]|c.sign4(y1))<<4
		}
	}
}

// sign4 returns the E2M1 sign bit (0x8) of a scaled element y: set for
// negative y, except that SGLang tests y < 0, so -0 gets no sign.
func (c *pow2Codec) sign4(y uint32) uint8 {
	if c.halfUp {
		return uint8(y>>31&((y&0x7FFFFFFF+0x7FFFFFFF)>>31)) << 3
	}
	return uint8(y>>31) << 3
}

func (c *pow2Codec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	if c.encodeFP8Asm(dst, scales, nil, src) || c.encodeFP4Asm(dst, scales, nil, src) {
		return nil
	}
	if !c.fp8 && (c.bs == 16 || c.bs == 32) {
		c.encodeFP4BF16Table(dst, scales, src)
		return nil
	}
	c.encodeBF16Blocks(dst, scales, src)
	return nil
}

// encodeBF16Blocks is the portable encoder of whole blocks (buffers
// checked).
func (c *pow2Codec) encodeBF16Blocks(dst, scales []byte, src []uint16) {
	bs := c.bs
	for b := range len(src) / bs {
		blk := src[b*bs : b*bs+bs]
		amax16 := uint16(maxMag16(blk))
		if c.fp8 {
			out := dst[b*bs : b*bs+bs]
			if amax16 >= 0x7F80 {
				scales[b] = nonFiniteScale
				clear(out)
				continue
			}
			e := c.blockExpBF16(amax16)
			scales[b] = uint8(e + 127)
			enc := (*[1 << 16]uint8)(c.t.enc[:1<<16])
			if e >= -100 {
				// y = x·2^-e ≤ 512 in magnitude: its bf16 bits are
				// a − e·128 when y is normal; smaller y encode to ±0, as
				// any t ≤ 0x7F does.
				e128 := int32(e << 7)
				out = out[:len(blk)]
				for i, x := range blk {
					t := clampLow(int32(x&0x7FFF) - e128)
					out[i] = enc[uint16(t)|x&0x8000]
				}
				continue
			}
			inv := pow2(-e)
			for i, x := range blk {
				// x·2^-e is a bf16 value unless it underflows, and then its
				// top bits still encode to ±0.
				out[i] = enc[math.Float32bits(BF16ToF32(x)*inv)>>16]
			}
			continue
		}
		out := dst[b*bs/2 : b*bs/2+bs/2]
		if amax16 >= 0x7F80 {
			scales[b] = nonFiniteScale
			clear(out)
			continue
		}
		e := c.blockExpBF16(amax16)
		scales[b] = uint8(e + 127)
		if e >= -100 && e <= 16 {
			// Fast path: y = x·2^-e is exact and nonzero for nonzero x, and
			// its bf16 magnitude bits are a − e·128 whenever y ≥ 2^-126;
			// smaller y (including every subnormal x) lands below 0.25.
			c.encodeBlockFP4Fast(out, blk, e)
			continue
		}
		c.encodeBlockFP4Slow(out, blk, e)
	}
}

// encodeBlockFP4Slow encodes one E2M1 block of bf16 values with scale 2^e
// by float multiplication (any e).
func (c *pow2Codec) encodeBlockFP4Slow(out []byte, blk []uint16, e int) {
	tab := e2m1Big()
	{
		inv := pow2(-e)
		if c.halfUp {
			for j := range out {
				y0 := math.Float32bits(BF16ToF32(blk[2*j]) * inv)
				y1 := math.Float32bits(BF16ToF32(blk[2*j+1]) * inv)
				a0, a1 := y0&0x7FFFFFFF, y1&0x7FFFFFFF
				s0 := y0 >> 31 & ((a0 + 0x7FFFFFFF) >> 31)
				s1 := y1 >> 31 & ((a1 + 0x7FFFFFFF) >> 31)
				out[j] = tab.up[keyMag(a0)] | uint8(s0)<<3 | (tab.up[keyMag(a1)]|uint8(s1)<<3)<<4
			}
			return
		}
		for j := range out {
			y0 := math.Float32bits(BF16ToF32(blk[2*j]) * inv)
			y1 := math.Float32bits(BF16ToF32(blk[2*j+1]) * inv)
			out[j] = tab.rne[keyMag(y0&0x7FFFFFFF)] | uint8(y0>>31)<<3 | (tab.rne[keyMag(y1&0x7FFFFFFF)]|uint8(y1>>31)<<3)<<4
		}
	}
}

// scaleF32 returns the decode factor of a scale byte.
func (c *pow2Codec) scaleF32(s uint8) float32 {
	if c.sglangScale {
		return pow2(int(s) - 127)
	}
	return e8m0F32(s)
}

func (c *pow2Codec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	c.decodeF32(dst, src, scales)
	return nil
}

// decodeF32 is DecodeF32 on checked buffers (DecodeRowsF32 checks once).
func (c *pow2Codec) decodeF32(dst []float32, src, scales []byte) {
	if c.decodeFP8Asm(nil, dst, src, scales) || c.decodeFP4Asm(nil, dst, src, scales) {
		return
	}
	c.decodeF32Blocks(dst, src, scales)
}

// decodeF32Blocks is the portable float32 decoder of whole blocks.
func (c *pow2Codec) decodeF32Blocks(dst []float32, src, scales []byte) {
	bs := c.bs
	for b, s := range scales {
		f := c.scaleF32(s)
		out := dst[b*bs : b*bs+bs]
		if c.fp8 {
			dec := &c.t.dec
			for i, q := range src[b*bs : b*bs+bs] {
				out[i] = dec[q] * f
			}
			continue
		}
		for j, q := range src[b*bs/2 : b*bs/2+bs/2] {
			out[2*j] = e2m1F32[q&0xF] * f
			out[2*j+1] = e2m1F32[q>>4] * f
		}
	}
}

func (c *pow2Codec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	if c.decodeFP8Asm(dst, nil, src, scales) || c.decodeFP4Asm(dst, nil, src, scales) {
		return nil
	}
	c.decodeBF16Blocks(dst, src, scales)
	return nil
}

// decodeBF16Blocks is the scalar decoder of whole blocks (buffers checked).
func (c *pow2Codec) decodeBF16Blocks(dst []uint16, src, scales []byte) {
	bs := c.bs
	d64 := asU64(dst)
	for b, s := range scales {
		k := int(s) - 127
		out := dst[b*bs : b*bs+bs]
		if c.fp8 {
			in := src[b*bs : b*bs+bs]
			// E4M3 magnitudes span bf16 exponents 118..135: adding k keeps
			// them normal for k in [-117, 119].
			if k < -117 || k > 119 {
				f, dec := c.scaleF32(s), &c.t.dec
				for i, q := range in {
					out[i] = BF16FromF32(dec[q] * f)
				}
				continue
			}
			dec, nz := &c.t.decBF, &c.t.nzBF
			d := uint16(int16(k) << 7)
			if d64 != nil {
				out64 := d64[b*bs/4 : b*bs/4+bs/4]
				in = in[:4*len(out64)]
				for j := range out64 {
					q := (*[4]byte)(in[4*j:])
					out64[j] = uint64(dec[q[0]]+d&nz[q[0]]) | uint64(dec[q[1]]+d&nz[q[1]])<<16 |
						uint64(dec[q[2]]+d&nz[q[2]])<<32 | uint64(dec[q[3]]+d&nz[q[3]])<<48
				}
				continue
			}
			for i, q := range in {
				out[i] = dec[q] + d&nz[q]
			}
			continue
		}
		in := src[b*bs/2 : b*bs/2+bs/2]
		// E2M1 magnitudes 0.5..6 span bf16 exponents 126..129.
		if d64 != nil && k >= -125 && k <= 125 {
			out64 := d64[b*bs/4 : b*bs/4+bs/4]
			in = in[:2*len(out64)]
			if k >= 0 {
				d := uint32(k) << 7
				for j := range out64 {
					q0, q1 := in[2*j], in[2*j+1]
					out64[j] = uint64(e2m1PairBF[q0]+e2m1PairNZ[q0]*d) | uint64(e2m1PairBF[q1]+e2m1PairNZ[q1]*d)<<32
				}
			} else {
				d := uint32(-k) << 7
				for j := range out64 {
					q0, q1 := in[2*j], in[2*j+1]
					out64[j] = uint64(e2m1PairBF[q0]-e2m1PairNZ[q0]*d) | uint64(e2m1PairBF[q1]-e2m1PairNZ[q1]*d)<<32
				}
			}
			continue
		}
		switch {
		case k >= 0 && k <= 125:
			d := uint32(k) << 7
			for j, q := range in {
				p := e2m1PairBF[q] + e2m1PairNZ[q]*d
				out[2*j], out[2*j+1] = uint16(p), uint16(p>>16)
			}
		case k < 0 && k >= -125:
			d := uint32(-k) << 7
			for j, q := range in {
				p := e2m1PairBF[q] - e2m1PairNZ[q]*d
				out[2*j], out[2*j+1] = uint16(p), uint16(p>>16)
			}
		default:
			f := c.scaleF32(s)
			for j, q := range in {
				out[2*j] = BF16FromF32(e2m1F32[q&0xF] * f)
				out[2*j+1] = BF16FromF32(e2m1F32[q>>4] * f)
			}
		}
	}
}

// encodeBlockFP4Fast encodes one E2M1 block of bf16 values with scale 2^e,
// -100 ≤ e ≤ 16, by integer exponent arithmetic and a small table: no
// float math and no data-dependent branches.
func (c *pow2Codec) encodeBlockFP4Fast(out []byte, blk []uint16, e int) {
	off := int32(e<<7 + e2m1SmallBase)
	blk = blk[:2*len(out)]
	if c.halfUp {
		tab := &e2m1SmallUp
		for len(out) >= 4 {
			o := (*[4]byte)(out)
			x := (*[8]uint16)(blk)
			for j := range 4 {
				b0, b1 := x[2*j], x[2*j+1]
				a0, a1 := int32(b0&0x7FFF), int32(b1&0x7FFF)
				i0, i1 := clampLow(a0-off), clampLow(a1-off)
				// SGLang tests y < 0: -0 gets no sign bit
				s0 := uint8(b0>>15) & uint8((a0+0x7FFF)>>15)
				s1 := uint8(b1>>15) & uint8((a1+0x7FFF)>>15)
				o[j] = tab[i0&1023] | s0<<3 | (tab[i1&1023]|s1<<3)<<4
			}
			out, blk = out[4:], blk[8:]
		}
		return
	}
	tab := &e2m1SmallRNE
	for len(out) >= 4 {
		o := (*[4]byte)(out)
		x := (*[8]uint16)(blk)
		for j := range 4 {
			b0, b1 := x[2*j], x[2*j+1]
			i0 := clampLow(int32(b0&0x7FFF) - off)
			i1 := clampLow(int32(b1&0x7FFF) - off)
			o[j] = tab[i0&1023] | uint8(b0>>15)<<3 | (tab[i1&1023]|uint8(b1>>15)<<3)<<4
		}
		out, blk = out[4:], blk[8:]
	}
}

// littleEndian is true on little-endian machines, where a uint64 store of
// four bf16 lanes writes them in element order.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// asU64 views a bf16 slice as uint64 words of four elements, or returns nil
// when it cannot (big-endian machine, misaligned or odd length).
func asU64(d []uint16) []uint64 {
	if !littleEndian || len(d) == 0 || len(d)%4 != 0 || uintptr(unsafe.Pointer(&d[0]))%8 != 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&d[0])), len(d)/4)
}
