package quant

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/kvcfg/kvcfg/dtype"
)

// checkEncode validates the buffers of an encode of n elements.
func checkEncode(f dtype.Format, dst, scales []byte, n int) error {
	if err := checkCount(f, n); err != nil {
		return err
	}
	if int64(len(dst)) != f.DataBytes(int64(n)) || int64(len(scales)) != f.ScaleBytesFor(int64(n)) {
		return fmt.Errorf("%w: %s: %d elements need %d payload and %d scale bytes, got %d and %d",
			ErrLength, f.Name, n, f.DataBytes(int64(n)), f.ScaleBytesFor(int64(n)), len(dst), len(scales))
	}
	return nil
}

// checkDecode validates the buffers of a decode into n elements.
func checkDecode(f dtype.Format, src, scales []byte, n int) error {
	return checkEncode(f, src, scales, n)
}

func checkCount(f dtype.Format, n int) error {
	if f.BlockSize > 0 && n%f.BlockSize != 0 {
		return fmt.Errorf("%w: %s: %d elements is not a multiple of the block size %d", ErrLength, f.Name, n, f.BlockSize)
	}
	if f.ElementBits == 4 && n%2 != 0 {
		return fmt.Errorf("%w: %s: %d elements is odd (two 4-bit codes per byte)", ErrLength, f.Name, n)
	}
	return nil
}

// fp8Codec is an FP8 element format with an optional per-tensor scale.
type fp8Codec struct {
	format dtype.Format
	f      Float
	ov     Overflow
	scale  float32 // stored code = fp8(x / scale); 1 means none
	t      *fp8Tables
}

// FP8 returns the codec of a per-tensor-scaled FP8 KV cache: stored codes are
// fp8(x / scale) (scale is SGLang's k_scale / v_scale, 1 for none) and
// decoding multiplies by scale. elem is FP8E4M3FN, FP8E4M3FNUZ or FP8E5M2.
// For bf16 input x / scale is rounded to bf16 first, as SGLang's
// cache.div_(k_scale) in the model dtype does; float32 input is divided in
// float32. Its Format is the KV format fp8_e4m3 (with Element FP8E4M3FNUZ
// for FNUZ) or fp8_e5m2.
func FP8(elem dtype.DType, scale float32, ov Overflow) (Codec, error) {
	var f Float
	var name string
	switch elem {
	case dtype.FP8E4M3FN:
		f, name = E4M3FN, "fp8_e4m3"
	case dtype.FP8E4M3FNUZ:
		f, name = E4M3FNUZ, "fp8_e4m3"
	case dtype.FP8E5M2:
		f, name = E5M2, "fp8_e5m2"
	default:
		return nil, fmt.Errorf("%w FP8 element type %v (accepted: float8_e4m3fn, float8_e4m3fnuz, float8_e5m2)", ErrUnknown, elem)
	}
	format, err := dtype.LookupFormat(name)
	if err != nil {
		return nil, fmt.Errorf("quant: %w", err)
	}
	format.Element = elem
	return newFP8(format, f, scale, ov)
}

func newFP8(format dtype.Format, f Float, scale float32, ov Overflow) (*fp8Codec, error) {
	if scale == 0 {
		scale = 1
	}
	if !(scale > 0) || math.IsInf(float64(scale), 0) {
		return nil, fmt.Errorf("%w: fp8 scale %v must be positive and finite", ErrOption, scale)
	}
	if ov > SatFinite {
		return nil, fmt.Errorf("%w: overflow policy %d", ErrOption, ov)
	}
	return &fp8Codec{format: format, f: f, ov: ov, scale: scale, t: fp8TablesFor(f, ov)}, nil
}

func (c *fp8Codec) Format() dtype.Format { return c.format }

func (c *fp8Codec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	c.encodeF32(dst, scales, src)
	return nil
}

// encodeF32 is EncodeF32 on checked buffers (EncodeRowsF32 checks once).
func (c *fp8Codec) encodeF32(dst, scales []byte, src []float32) {
	enc := &c.t.enc
	dst = dst[:len(src)]
	if c.scale == 1 {
		if done := encodeFP8F32Lanes(dst, src, c.f); done > 0 {
			dst, src = dst[done:], src[done:]
		}
		done := encodeFP8F32Asm(dst, src, c.t)
		dst, src = dst[done:], src[done:]
		for i, x := range src {
			dst[i] = enc[keyF32(math.Float32bits(x))]
		}
		return
	}
	s := c.scale
	for i, x := range src {
		dst[i] = enc[keyF32(math.Float32bits(x/s))]
	}
}

func (c *fp8Codec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	enc := (*[1 << 16]uint8)(c.t.enc[:1<<16])
	dst = dst[:len(src)]
	if c.scale == 1 {
		done := encodeFP8BF16Asm(dst, src, c.t)
		dst, src = dst[done:], src[done:]
		for i, b := range src {
			dst[i] = enc[b]
		}
		return nil
	}
	s := c.scale
	for i, b := range src {
		dst[i] = enc[BF16FromF32(BF16ToF32(b)/s)]
	}
	return nil
}

func (c *fp8Codec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	c.decodeF32(dst, src, scales)
	return nil
}

// decodeF32 is DecodeF32 on checked buffers (DecodeRowsF32 checks once).
func (c *fp8Codec) decodeF32(dst []float32, src, scales []byte) {
	dec := &c.t.dec
	src = src[:len(dst)]
	if c.scale == 1 {
		done := decodeFP8F32Asm(dst, src, c.t)
		dst, src = dst[done:], src[done:]
		for i, b := range src {
			dst[i] = dec[b]
		}
		return
	}
	s := c.scale
	for i, b := range src {
		dst[i] = dec[b] * s
	}
}

func (c *fp8Codec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	src = src[:len(dst)]
	if c.scale == 1 {
		dec := &c.t.decBF
		done := decodeFP8BF16Asm(dst, src, c.t)
		dst, src = dst[done:], src[done:]
		if d64 := asU64(dst); d64 != nil {
			src = src[:4*len(d64)]
			for j := range d64 {
				s4 := src[4*j : 4*j+4]
				d64[j] = uint64(dec[s4[0]]) | uint64(dec[s4[1]])<<16 | uint64(dec[s4[2]])<<32 | uint64(dec[s4[3]])<<48
			}
			return nil
		}
		for i, b := range src {
			dst[i] = dec[b]
		}
		return nil
	}
	dec, s := &c.t.dec, c.scale
	for i, b := range src {
		dst[i] = BF16FromF32(dec[b] * s)
	}
	return nil
}

// wideCodec stores float32, bf16 or fp16 little-endian.
type wideCodec struct {
	format dtype.Format
	f      Float // BF16, FP16, or 0 for float32
}

func (c *wideCodec) Format() dtype.Format { return c.format }

func (c *wideCodec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	c.encodeF32(dst, scales, src)
	return nil
}

// encodeF32 is EncodeF32 on checked buffers (EncodeRowsF32 checks once).
func (c *wideCodec) encodeF32(dst, scales []byte, src []float32) {
	switch c.f {
	case BF16:
		if d := u16s(dst); d != nil {
			done := wideAsm(d, src, bf16FromF32AVX512, bf16FromF32AVX2)
			for i, x := range src[done:] {
				d[done+i] = BF16FromF32(x)
			}
			return
		}
		for i, x := range src {
			put16(dst[2*i:], BF16FromF32(x))
		}
	case FP16:
		if d := u16s(dst); d != nil {
			done := wideAsm(d, src, fp16FromF32AVX512, fp16FromF32AVX2)
			for i, x := range src[done:] {
				d[done+i] = FP16.Encode(x, NonSat)
			}
			return
		}
		for i, x := range src {
			put16(dst[2*i:], FP16.Encode(x, NonSat))
		}
	default:
		for i, x := range src {
			put32(dst[4*i:], math.Float32bits(x))
		}
	}
}

func (c *wideCodec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	switch c.f {
	case BF16:
		if d := u16s(dst); d != nil {
			copy(d, src)
			return nil
		}
		for i, b := range src {
			put16(dst[2*i:], b)
		}
	case FP16:
		if d := u16s(dst); d != nil {
			done := wideAsm(d, src, fp16FromBF16AVX512, fp16FromBF16AVX2)
			for i, b := range src[done:] {
				d[done+i] = FP16.Encode(BF16ToF32(b), NonSat)
			}
			return nil
		}
		for i, b := range src {
			put16(dst[2*i:], FP16.Encode(BF16ToF32(b), NonSat))
		}
	default:
		for i, b := range src {
			put32(dst[4*i:], uint32(b)<<16)
		}
	}
	return nil
}

func (c *wideCodec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	c.decodeF32(dst, src, scales)
	return nil
}

// decodeF32 is DecodeF32 on checked buffers (DecodeRowsF32 checks once).
func (c *wideCodec) decodeF32(dst []float32, src, scales []byte) {
	switch c.f {
	case BF16:
		if s := u16s(src); s != nil {
			done := wideAsm(dst, s, f32FromBF16AVX512, f32FromBF16AVX2)
			for i, b := range s[done:] {
				dst[done+i] = BF16ToF32(b)
			}
			return
		}
		for i := range dst {
			dst[i] = BF16ToF32(get16(src[2*i:]))
		}
	case FP16:
		if s := u16s(src); s != nil {
			done := wideAsm(dst, s, f32FromFP16AVX512, f32FromFP16AVX2)
			for i, b := range s[done:] {
				dst[done+i] = fp16ToF32(b)
			}
			return
		}
		for i := range dst {
			dst[i] = fp16ToF32(get16(src[2*i:]))
		}
	default:
		for i := range dst {
			dst[i] = math.Float32frombits(get32(src[4*i:]))
		}
	}
}

func (c *wideCodec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	switch c.f {
	case BF16:
		if s := u16s(src); s != nil {
			copy(dst, s)
			return nil
		}
		for i := range dst {
			dst[i] = get16(src[2*i:])
		}
	case FP16:
		for i := range dst {
			dst[i] = BF16FromF32(fp16ToF32(get16(src[2*i:])))
		}
	default:
		for i := range dst {
			dst[i] = BF16FromF32(math.Float32frombits(get32(src[4*i:])))
		}
	}
	return nil
}

// e2m1Codec packs FP4 E2M1 codes two per byte (even element in the low
// nibble), with no scale.
type e2m1Codec struct{ format dtype.Format }

func (c *e2m1Codec) Format() dtype.Format { return c.format }

func (c *e2m1Codec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	for j := range dst {
		dst[j] = uint8(E2M1.Encode(src[2*j], SatFinite)) | uint8(E2M1.Encode(src[2*j+1], SatFinite))<<4
	}
	return nil
}

func (c *e2m1Codec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	for j := range dst {
		dst[j] = uint8(E2M1.Encode(BF16ToF32(src[2*j]), SatFinite)) | uint8(E2M1.Encode(BF16ToF32(src[2*j+1]), SatFinite))<<4
	}
	return nil
}

func (c *e2m1Codec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	for j, b := range src {
		dst[2*j], dst[2*j+1] = e2m1F32[b&0xF], e2m1F32[b>>4]
	}
	return nil
}

func (c *e2m1Codec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	for j, b := range src {
		p := e2m1PairBF[b]
		dst[2*j], dst[2*j+1] = uint16(p), uint16(p>>16)
	}
	return nil
}

// e8m0Codec casts to E8M0 element by element (EncodeE8M0).
type e8m0Codec struct{ format dtype.Format }

func (c *e8m0Codec) Format() dtype.Format { return c.format }

func (c *e8m0Codec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	for i, x := range src {
		dst[i] = EncodeE8M0(x)
	}
	return nil
}

func (c *e8m0Codec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	for i, b := range src {
		dst[i] = EncodeE8M0(BF16ToF32(b))
	}
	return nil
}

func (c *e8m0Codec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	for i, b := range src[:len(dst)] {
		dst[i] = e8m0F32(b)
	}
	return nil
}

func (c *e8m0Codec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	for i, b := range src[:len(dst)] {
		dst[i] = BF16FromF32(e8m0F32(b))
	}
	return nil
}

func put16(b []byte, v uint16) { _ = b[1]; b[0], b[1] = byte(v), byte(v>>8) }
func get16(b []byte) uint16    { _ = b[1]; return uint16(b[0]) | uint16(b[1])<<8 }
func put32(b []byte, v uint32) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func get32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// u16s views little-endian 16-bit values stored in b as a []uint16, or
// returns nil (big-endian machine or misaligned b).
func u16s(b []byte) []uint16 {
	if !littleEndian || len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%2 != 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}
