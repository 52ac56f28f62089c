package quant

import (
	"math"

	"github.com/kvcfg/kvcfg/dtype"
)

// intCodec is SGLang PR #37798's symmetric grouped integer KV: per group of
// g channels an fp16 scale s = fp16(min(amax > 0 ? amax/qmax : 1, 65504))
// and codes q = clamp(rint(x / float(s)), -qmax, qmax) with IEEE division
// and ties to even. int8_g64 stores q as int8; int4_g32 stores q+8 as
// nibbles, even channel in the low nibble. Decoding is q·float(s) in
// float32.
//
// Cases the reference leaves open, documented here: a group holding NaN gets
// the fp16 NaN scale 0x7E00 and codes 0 (it decodes to NaN); a group whose
// scale underflows to fp16 zero codes nonzero elements as ±qmax and zeros
// as 0.
type intCodec struct {
	format dtype.Format
	g      int
	qmax   float32 // 127 or 7
	four   bool
}

func (c *intCodec) Format() dtype.Format { return c.format }

// groupScale returns the fp16 scale code and its value for a group with
// largest magnitude bits amax (NaN above 0x7F800000).
func (c *intCodec) groupScale(amax uint32) (uint16, float32) {
	if amax > 0x7F800000 {
		return 0x7E00, float32(math.NaN())
	}
	s := float32(1)
	if amax > 0 {
		s = min(math.Float32frombits(amax)/c.qmax, 65504)
	}
	s16 := fp16FromPos(s)
	return s16, fp16ToF32(s16)
}

// quantize returns rint(x/s) clamped to ±qmax as an integer.
func (c *intCodec) quantize(x, s float32) int32 {
	q := x / s
	if q != q {
		return 0
	}
	q = min(max(q, -c.qmax), c.qmax)
	// round half to even: exact for |q| < 2^22
	const magic = 12582912 // 1.5·2^23
	r := float32(float32(q+magic) - magic)
	return int32(r)
}

func (c *intCodec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	c.encodeF32(dst, scales, src)
	return nil
}

// encodeF32 is EncodeF32 on checked buffers (EncodeRowsF32 checks once).
func (c *intCodec) encodeF32(dst, scales []byte, src []float32) {
	if n := c.encodeF32Fused(dst, scales, src); n > 0 {
		if 2*n == len(scales) {
			return
		}
		dst, scales, src = dst[int(c.format.DataBytes(int64(n*c.g))):], scales[2*n:], src[n*c.g:]
	}
	if c.encodeAsm(dst, scales, src, nil) {
		return
	}
	g := c.g
	for b := range len(src) / g {
		blk := src[b*g : b*g+g]
		var amax uint32
		for _, x := range blk {
			amax = max(amax, math.Float32bits(x)&0x7FFFFFFF)
		}
		s16, s := c.groupScale(amax)
		put16(scales[2*b:], s16)
		c.encodeGroup(dst, b, blk, s)
	}
}

func (c *intCodec) encodeGroup(dst []byte, b int, blk []float32, s float32) {
	g := c.g
	if c.four {
		out := dst[b*g/2 : b*g/2+g/2]
		for j := range out {
			out[j] = uint8(c.quantize(blk[2*j], s)+8) | uint8(c.quantize(blk[2*j+1], s)+8)<<4
		}
		return
	}
	out := dst[b*g : b*g+g]
	for i, x := range blk {
		out[i] = uint8(int8(c.quantize(x, s)))
	}
}

func (c *intCodec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	if c.encodeAsm(dst, scales, nil, src) {
		return nil
	}
	g := c.g
	var buf [64]float32
	for b := range len(src) / g {
		blk := buf[:g]
		var amax uint32
		for i, x := range src[b*g : b*g+g] {
			blk[i] = BF16ToF32(x)
			amax = max(amax, uint32(x&0x7FFF)<<16)
		}
		s16, s := c.groupScale(amax)
		put16(scales[2*b:], s16)
		c.encodeGroup(dst, b, blk, s)
	}
	return nil
}

func (c *intCodec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	c.decodeF32(dst, src, scales)
	return nil
}

// decodeF32 is DecodeF32 on checked buffers (DecodeRowsF32 checks once).
func (c *intCodec) decodeF32(dst []float32, src, scales []byte) {
	if c.decodeAsm(nil, dst, src, scales) {
		return
	}
	g := c.g
	for b := range len(dst) / g {
		s := fp16ToF32(get16(scales[2*b:]))
		out := dst[b*g : b*g+g]
		if c.four {
			for j, q := range src[b*g/2 : b*g/2+g/2] {
				out[2*j] = float32(int32(q&0xF)-8) * s
				out[2*j+1] = float32(int32(q>>4)-8) * s
			}
			continue
		}
		for i, q := range src[b*g : b*g+g] {
			out[i] = float32(int8(q)) * s
		}
	}
}

func (c *intCodec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	if c.decodeAsm(dst, nil, src, scales) {
		return nil
	}
	g := c.g
	var t [16]uint16
	d64 := asU64(dst)
	for b := range len(dst) / g {
		s := fp16ToF32(get16(scales[2*b:]))
		out := dst[b*g : b*g+g]
		if c.four {
			for i := range t {
				t[i] = BF16FromF32(float32(i-8) * s)
			}
			if d64 != nil {
				out64 := (*[8]uint64)(d64[b*8:])
				in := (*[16]byte)(src[b*16:])
				for j := range out64 {
					q0, q1 := in[2*j], in[2*j+1]
					out64[j] = uint64(t[q0&0xF]) | uint64(t[q0>>4])<<16 | uint64(t[q1&0xF])<<32 | uint64(t[q1>>4])<<48
				}
				continue
			}
			for j, q := range src[b*g/2 : b*g/2+g/2] {
				out[2*j], out[2*j+1] = t[q&0xF], t[q>>4]
			}
			continue
		}
		for i, q := range src[b*g : b*g+g] {
			out[i] = BF16FromF32(float32(int8(q)) * s)
		}
	}
	return nil
}

// fp16FromPos is FP16.Encode(s, NonSat) with a fast path for s in the
// normal fp16 range (the usual group scale).
func fp16FromPos(s float32) uint16 {
	u := math.Float32bits(s)
	if u >= 0x38800000 && u < 0x477FF000 {
		r := u - 112<<23
		return uint16((r + 0xFFF + r>>13&1) >> 13)
	}
	return FP16.Encode(s, NonSat)
}
