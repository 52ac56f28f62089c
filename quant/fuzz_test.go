package quant

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// FuzzElement: every element encoder agrees with the slow reference, the
// table path agrees with Encode, decoded values are a nearest neighbour of
// x (|decoded − x| ≤ half a step) unless x overflows, and codes round-trip.
func FuzzElement(f *testing.F) {
	for _, u := range []uint32{0, 0x80000000, 0x3f880000, 0x43e80000, 0x43e80001, 0x7f800000,
		0xff800000, 0x7fc00001, 0xffbfffff, 0x00000001, 0x3a800000, 0x47700000, 0x7f7fffff} {
		f.Add(u, false)
		f.Add(u, true)
	}
	refs := map[Float]*refFormat{}
	for _, fl := range allFloats {
		refs[fl] = newRef(fl)
	}
	f.Fuzz(func(t *testing.T, u uint32, sat bool) {
		ov := NonSat
		if sat {
			ov = SatFinite
		}
		x := math.Float32frombits(u)
		for _, fl := range allFloats {
			c := fl.Encode(x, ov)
			if want := refs[fl].encode(x, ov); c != want {
				t.Fatalf("%v/%v: Encode(%#08x) = %#x, reference %#x", fl, ov, u, c, want)
			}
			if fl.Bits() == 8 {
				if lut := uint16(fp8TablesFor(fl, ov).enc[keyF32(u)]); lut != c {
					t.Fatalf("%v/%v: table(%#08x) = %#x, Encode %#x", fl, ov, u, lut, c)
				}
			}
			d := fl.Decode(c)
			if x != x || math.IsInf(float64(x), 0) || math.Abs(float64(x)) > float64(fl.MaxFinite()) {
				continue
			}
			if d != d || math.IsInf(float64(d), 0) {
				// only overflow past max + half a step may do this
				continue
			}
			// nearest: no code of the format is strictly closer to x
			err := math.Abs(float64(d) - float64(x))
			for k := range 1 << min(fl.Bits(), 16) {
				v := fl.Decode(uint16(k))
				if v == v && !math.IsInf(float64(v), 0) && math.Abs(float64(v)-float64(x)) < err {
					t.Fatalf("%v: Encode(%v) decodes to %v but %v is closer", fl, x, d, v)
				}
				if fl.Bits() == 16 {
					break // 65,536 candidates per input is too slow; the reference covers it
				}
			}
			if fl.Encode(d, ov) != c && !(fl == E4M3FNUZ && c == 0) {
				t.Fatalf("%v: code %#x does not round-trip", fl, c)
			}
		}
		e := EncodeE8M0(x)
		if x > 0 && !math.IsInf(float64(x), 0) && e != 0xFF {
			d := float64(DecodeE8M0(e))
			if r := float64(x) / d; x >= 0x1p-127 && (r < 0.75 || r >= 1.5) {
				t.Fatalf("E8M0(%v) = 2^%d, ratio %v", x, int(e)-127, r)
			}
		}
	})
}

// FuzzBlocks feeds arbitrary float32 data (NaN payloads, ±Inf, subnormals)
// to every block codec: no panic, EncodeBF16 agrees with EncodeF32 on
// bf16-representable data, each finite element decodes to a nearest point of
// its block's grid unless clipped, and bad lengths are errors.
func FuzzBlocks(f *testing.F) {
	seed := make([]byte, 4*64)
	for i := range 64 {
		binary.LittleEndian.PutUint32(seed[4*i:], math.Float32bits(float32(i-32)*0.37))
	}
	f.Add(seed, uint8(0), false)
	f.Add(seed[:8], uint8(3), true)
	nan := append([]byte(nil), seed...)
	binary.LittleEndian.PutUint32(nan[20:], 0x7fc00001)
	f.Add(nan, uint8(1), false)
	inf := append([]byte(nil), seed...)
	binary.LittleEndian.PutUint32(inf[40:], 0xff800000)
	f.Add(inf, uint8(2), true)
	names := []string{"fp4_mx_block16", "mxfp4", "mxfp4_ceil", "mxfp8", "mxfp8_ocp", "nvfp4", "int8_g64", "int4_g32", "fp8_e4m3"}
	f.Fuzz(func(t *testing.T, data []byte, which uint8, truncate bool) {
		name := names[int(which)%len(names)]
		c := codecFor(t, name)
		fm := c.Format()
		n := 64 * ((len(data)/4 + 63) / 64)
		if n == 0 {
			n = 64
		}
		x := make([]float32, n)
		bf := make([]uint16, n)
		for i := range x {
			if 4*i+4 <= len(data) {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			if truncate {
				x[i] = BF16ToF32(uint16(math.Float32bits(x[i]) >> 16))
			}
			bf[i] = uint16(math.Float32bits(x[i]) >> 16)
		}
		p := make([]byte, fm.DataBytes(int64(n)))
		s := make([]byte, fm.ScaleBytesFor(int64(n)))
		if err := c.EncodeF32(p, s, x); err != nil {
			t.Fatal(err)
		}
		if truncate && name != "fp8_e4m3" {
			p2, s2 := make([]byte, len(p)), make([]byte, len(s))
			if err := c.EncodeBF16(p2, s2, bf); err != nil {
				t.Fatal(err)
			}
			// NaN payloads may differ in the element path only where the
			// block is non-finite, and there both write zeros.
			compareBytes(t, name+" EncodeBF16 vs EncodeF32 payload", p, p2)
			compareBytes(t, name+" EncodeBF16 vs EncodeF32 scales", s, s2)
		}
		wantP, wantS := refEncode(name, x)
		if finiteAll(x) || name == "fp8_e4m3" {
			compareBytes(t, name+" payload vs reference", wantP, p)
			compareBytes(t, name+" scales vs reference", wantS, s)
		}
		out := make([]float32, n)
		if err := c.DecodeF32(out, p, s); err != nil {
			t.Fatal(err)
		}
		if name != "fp8_e4m3" {
			checkNearest(t, c, name, x, out, s)
		}
		// the bf16 decoders (tables, exponent arithmetic, SIMD) agree with
		// rounding the float32 decode
		outBF := make([]uint16, n)
		if err := c.DecodeBF16(outBF, p, s); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if w := BF16FromF32(out[i]); outBF[i] != w {
				t.Fatalf("%s: DecodeBF16[%d] = %#04x, bf16(DecodeF32) = %#04x", name, i, outBF[i], w)
			}
		}
		// wrong lengths: errors, no panic
		if err := c.EncodeF32(p[:len(p)-1], s, x); !errors.Is(err, ErrLength) {
			t.Fatalf("short payload: %v", err)
		}
		if err := c.DecodeBF16(make([]uint16, n+1), p, s); !errors.Is(err, ErrLength) {
			t.Fatalf("long dst: %v", err)
		}
	})
}

func finiteAll(x []float32) bool {
	for _, v := range x {
		if v != v || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}

// checkNearest asserts the documented error bound block by block: every
// element of a finite block decodes to a point of the block's grid
// (element values × block factor) that is nearest to x, up to one float32
// rounding of the scaled value for non-power-of-two scales, except elements
// clipped at the largest grid point.
func checkNearest(t *testing.T, c Codec, name string, x, out []float32, scales []byte) {
	t.Helper()
	fm := c.Format()
	bs := fm.BlockSize
	for b := 0; b < len(x); b += bs {
		blk := x[b : b+bs]
		if !finiteAll(blk) {
			continue
		}
		// the grid: decode every code with this block's scale
		var grid []float64
		switch {
		case fm.ElementBits == 4 && fm.Scale != 0 && name != "int4_g32":
			for code := range 16 {
				p := []byte{byte(code)}
				o := make([]float32, bs)
				pp := make([]byte, bs/2)
				pp[0] = p[0]
				_ = c.DecodeF32(o, pp, scales[b/bs:b/bs+1])
				grid = append(grid, float64(o[0]))
			}
		case name == "int4_g32":
			sf := float64(FP16ToF32(uint16(scales[2*(b/bs)]) | uint16(scales[2*(b/bs)+1])<<8))
			for q := -7; q <= 7; q++ {
				grid = append(grid, float64(q)*sf)
			}
		case name == "int8_g64":
			sf := float64(FP16ToF32(uint16(scales[2*(b/bs)]) | uint16(scales[2*(b/bs)+1])<<8))
			for q := -127; q <= 127; q++ {
				grid = append(grid, float64(q)*sf)
			}
		default: // mxfp8
			f := DecodeE8M0(scales[b/bs])
			for code := range 256 {
				if v := E4M3FN.Decode(uint16(code)); v == v {
					grid = append(grid, float64(v*f))
				}
			}
		}
		var gmax float64
		for _, g := range grid {
			gmax = max(gmax, math.Abs(g))
		}
		if math.IsInf(gmax, 0) {
			continue // 6·2^127 and friends exceed float32: decodes to ±Inf by design
		}
		for i, v := range blk {
			d := float64(out[b+i])
			xv := float64(v)
			if math.Abs(xv) >= gmax {
				if math.Abs(d) != gmax && !(math.Abs(xv) == gmax && d == xv) {
					// clipped elements land on ±max (or an exact value)
					if name != "int8_g64" && name != "int4_g32" || math.Abs(d) < gmax*0.99 {
						t.Fatalf("%s: clipped %v decoded to %v, grid max %v", name, xv, d, gmax)
					}
				}
				continue
			}
			best := math.Inf(1)
			for _, g := range grid {
				best = min(best, math.Abs(g-xv))
			}
			slack := 0.0
			if name == "nvfp4" || name == "int8_g64" || name == "int4_g32" {
				slack = math.Abs(xv)*0x1p-20 + 1e-45 // x·outputScale or x/s rounds once
			}
			if got := math.Abs(d - xv); got > best+slack {
				t.Fatalf("%s: block %d elem %d: x=%v decoded %v (error %v), nearest grid error %v", name, b/bs, i, xv, d, got, best)
			}
		}
	}
}
