package quant

import (
	"math"

	"github.com/kvcfg/kvcfg/dtype"
)

// nvfp4Codec is NVIDIA's two-level FP4 in the KV-cache convention of
// flashinfer's nvfp4_kv_quantize (used by SGLang --kv-cache-dtype nvfp4):
// E2M1 data, one E4M3 (UE4M3) scale per 16 elements and a per-tensor float32
// global scale g in the *decode* direction (value = e2m1 · e4m3 · g; SGLang
// passes the checkpoint's k_scale / v_scale, calibrated as amax/(448·6), or
// 1.0). Per block: sf = (1/g)·(vecMax·(1/6)), sf8 = e4m3_satfinite(sf),
// outputScale = vecMax ≠ 0 ? 1/(float(sf8)·g) : 0, code = e2m1 RNE
// satfinite(x·outputScale). All reciprocals are exact float32 divisions (the
// GPU uses rcp.approx, which can differ by one ulp at ties).
type nvfp4Codec struct {
	format dtype.Format
	g      float32 // decode-direction global scale
	invG   float32
	t      *fp8Tables // E4M3 satfinite
	dec    *nvfp4Dec  // decoded values per (scale byte, code)
}

// nvfp4Dec holds (e2m1 · e4m3(s)) · g for every scale byte s and code, as
// float32 and bf16; a codec has one global scale, so this is built once.
type nvfp4Dec struct {
	f32 [256][16]float32
	bf  [256][16]uint16
	// lh16[s] holds the low bytes, then the high bytes, of the bf16
	// values of all 16 codes (the AVX2 decoder's tables)
	lh16 [256][32]uint8
	// bf32 is bf in 32-bit lanes, for the assembly decoder.
	bf32 [256][16]uint32
	// pq holds the AVX2 decoder's multipliers: e4m3(s)·2^14 (exact) for
	// every scale byte s, then g
	pq [512]float32
}

func newNVFP4(f dtype.Format, g float32) *nvfp4Codec {
	c := &nvfp4Codec{format: f, g: g, invG: 1 / g, t: fp8TablesFor(E4M3FN, SatFinite), dec: new(nvfp4Dec)}
	for s := range 256 {
		c.blockTable(&c.dec.f32[s], uint8(s))
		c.dec.pq[s], c.dec.pq[256+s] = e4m3fnF32[s]*(1<<14), g
		for i, v := range c.dec.f32[s] {
			c.dec.bf[s][i] = BF16FromF32(v)
			c.dec.bf32[s][i] = uint32(c.dec.bf[s][i])
			c.dec.lh16[s][i], c.dec.lh16[s][16+i] = uint8(c.dec.bf[s][i]), uint8(c.dec.bf[s][i]>>8)
		}
	}
	return c
}

const rcp6 = float32(1.0 / 6)

func (c *nvfp4Codec) Format() dtype.Format { return c.format }

// blockScale returns the E4M3 scale code and the element multiplier of a
// block with largest magnitude vecMax (NaN elements ignored, as fmaxf does).
func (c *nvfp4Codec) blockScale(vecMax float32) (uint8, float32) {
	sf := c.invG * (vecMax * rcp6)
	sf8 := c.t.enc[keyF32(math.Float32bits(sf))] // E4M3 RNE satfinite
	if vecMax == 0 {
		return sf8, 0
	}
	return sf8, 1 / (e4m3fnF32[sf8] * c.g)
}

func (c *nvfp4Codec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	c.encodeF32(dst, scales, src)
	return nil
}

// encodeF32 is EncodeF32 on checked buffers (EncodeRowsF32 checks once).
func (c *nvfp4Codec) encodeF32(dst, scales []byte, src []float32) {
	if n := c.encodeF32Fused(dst, scales, src); n > 0 {
		if n == len(scales) {
			return
		}
		dst, scales, src = dst[8*n:], scales[n:], src[16*n:]
	}
	if c.encodeAsm(dst, scales, src, nil) {
		return
	}
	c.encodeF32Blocks(dst, scales, src)
}

// encodeF32Blocks is the portable float32 encoder of whole blocks.
func (c *nvfp4Codec) encodeF32Blocks(dst, scales []byte, src []float32) {
	tab := &e2m1Big().rne
	for b := range len(src) / 16 {
		blk := src[b*16 : b*16+16]
		var amax uint32
		for _, x := range blk {
			if a := math.Float32bits(x) & 0x7FFFFFFF; a <= 0x7F800000 {
				amax = max(amax, a)
			}
		}
		sf8, os := c.blockScale(math.Float32frombits(amax))
		scales[b] = sf8
		out := dst[b*8 : b*8+8]
		for j := range out {
			out[j] = nvCode(tab, blk[2*j]*os) | nvCode(tab, blk[2*j+1]*os)<<4
		}
	}
}

func (c *nvfp4Codec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := checkEncode(c.format, dst, scales, len(src)); err != nil {
		return err
	}
	if c.encodeAsm(dst, scales, nil, src) {
		return nil
	}
	c.encodeBlockBF16(dst, scales, src)
	return nil
}

// encodeBlockBF16 encodes whole blocks of bf16 (scalar path).
func (c *nvfp4Codec) encodeBlockBF16(dst, scales []byte, src []uint16) {
	tab := &e2m1Big().rne
	for b := range len(src) / 16 {
		blk := src[b*16 : b*16+16]
		amax := uint16(maxMag16(blk))
		nan := amax > 0x7F80
		if nan { // NaN elements do not count (fmaxf)
			amax = 0
			for _, x := range blk {
				if a := x & 0x7FFF; a <= 0x7F80 {
					amax = max(amax, a)
				}
			}
		}
		sf8, os := c.blockScale(BF16ToF32(amax))
		scales[b] = sf8
		out := (*[8]byte)(dst[b*8:])
		x := (*[16]uint16)(blk)
		if nan || os > math.MaxFloat32 {
			for j := range out {
				out[j] = nvCode(tab, BF16ToF32(x[2*j])*os) | nvCode(tab, BF16ToF32(x[2*j+1])*os)<<4
			}
			continue
		}
		// finite scale, no NaN: every y is a number
		for j := range out {
			y0 := math.Float32bits(BF16ToF32(x[2*j]) * os)
			y1 := math.Float32bits(BF16ToF32(x[2*j+1]) * os)
			out[j] = tab[keyMag(y0&0x7FFFFFFF)] | uint8(y0>>31)<<3 | (tab[keyMag(y1&0x7FFFFFFF)]|uint8(y1>>31)<<3)<<4
		}
	}
}

// blockTable fills the 16 decoded values of a block scale:
// (e2m1 · float(sf8)) · g in float32 (the first product is exact).
func (c *nvfp4Codec) blockTable(t *[16]float32, sf8 uint8) {
	sf := e4m3fnF32[sf8]
	for i := range t {
		t[i] = e2m1F32[i] * sf * c.g
	}
}

func (c *nvfp4Codec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	c.decodeF32(dst, src, scales)
	return nil
}

// decodeF32 is DecodeF32 on checked buffers (DecodeRowsF32 checks once).
func (c *nvfp4Codec) decodeF32(dst []float32, src, scales []byte) {
	if c.decodeAsm(nil, dst, src, scales) {
		return
	}
	for b, s := range scales {
		t := &c.dec.f32[s]
		out := (*[16]float32)(dst[b*16:])
		for j, q := range (*[8]byte)(src[b*8:]) {
			out[2*j], out[2*j+1] = t[q&0xF], t[q>>4]
		}
	}
}

func (c *nvfp4Codec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := checkDecode(c.format, src, scales, len(dst)); err != nil {
		return err
	}
	if c.decodeAsm(dst, nil, src, scales) {
		return nil
	}
	d64 := asU64(dst)
	for b, s := range scales {
		t := &c.dec.bf[s]
		in := (*[8]byte)(src[b*8:])
		if d64 != nil {
			out64 := (*[4]uint64)(d64[b*4:])
			for j := range out64 {
				q0, q1 := in[2*j], in[2*j+1]
				out64[j] = uint64(t[q0&0xF]) | uint64(t[q0>>4])<<16 | uint64(t[q1&0xF])<<32 | uint64(t[q1>>4])<<48
			}
			continue
		}
		out := (*[16]uint16)(dst[b*16:])
		for j, q := range in {
			out[2*j], out[2*j+1] = t[q&0xF], t[q>>4]
		}
	}
	return nil
}

// nvCode is cvt.rn.satfinite.e2m1 of one scaled element. NaN (0·Inf when
// the block scale underflows to zero, or a NaN input) gives +6 (0x7): the
// GPU's behaviour there is unverified.
func nvCode(tab *[1 << 16]uint8, y float32) uint8 {
	u := math.Float32bits(y)
	a := u & 0x7FFFFFFF
	if a > 0x7F800000 {
		return 7
	}
	return tab[keyMag(a)] | uint8(u>>31)<<3
}
