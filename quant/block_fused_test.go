package quant

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// fusedInputs returns float32 blocks (bs each) of every kind the fused
// encoders must get right: N(0, σ) over a wide range of σ, outliers, zero
// and all-negative-zero blocks, float32 subnormals, tiny and huge blocks
// (scales at both ends of the exponent range), random bit patterns, E2M1
// and E4M3 decision points with and without sticky bits, and NaN / ±Inf
// sprinkled into some blocks.
func fusedInputs(rng *rand.Rand, nb, bs int) []float32 {
	x := make([]float32, nb*bs)
	for b := range nb {
		blk := x[b*bs : (b+1)*bs]
		sigma := math.Ldexp(1, rng.IntN(260)-130)
		kind := rng.IntN(16)
		for i := range blk {
			v := float32(rng.NormFloat64() * sigma)
			switch kind {
			case 0:
				v = 0
			case 1:
				v = float32(math.Copysign(0, -1))
			case 2:
				v = math.Float32frombits(rng.Uint32() & 0x807FFFFF) // subnormals
			case 3:
				v = math.Float32frombits(rng.Uint32())
			case 4:
				v = float32(rng.NormFloat64() * 1e38)
			case 5:
				v = float32(rng.NormFloat64() * 1e-36)
			case 6, 7:
				// decision points: E2M1 (0.25 … 5) and E4M3 midpoints
				// times a power of two, ± one ulp
				var d float64
				if kind == 6 {
					d = float64(e2m1Bounds[rng.IntN(len(e2m1Bounds))])
				} else {
					d = (float64(rng.IntN(16)) + 16.5) / 16
				}
				u := math.Float32bits(float32(math.Ldexp(d, rng.IntN(40)-20)))
				u += uint32(rng.IntN(3)) - 1
				v = math.Float32frombits(u | uint32(rng.IntN(2))<<31)
			case 8:
				if rng.IntN(8) == 0 {
					v = float32(rng.NormFloat64() * 1e-40)
				}
			}
			if rng.IntN(200) == 0 {
				v *= 1000
			}
			blk[i] = v
		}
		if kind == 9 || kind == 10 {
			specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -float32(math.NaN())}
			blk[rng.IntN(bs)] = specials[rng.IntN(len(specials))]
		}
	}
	return x
}

// encodeAsmAndPortable encodes x with the current kernels (got) and with
// the portable code (want).
func encodeAsmAndPortable(t *testing.T, c Codec, x []float32) (got, gotS, want, wantS []byte) {
	t.Helper()
	f, n := c.Format(), int64(len(x))
	got, gotS = make([]byte, f.DataBytes(n)), make([]byte, f.ScaleBytesFor(n))
	if err := c.EncodeF32(got, gotS, x); err != nil {
		t.Fatal(err)
	}
	want, wantS = make([]byte, len(got)), make([]byte, len(gotS))
	withAsm(t, false, func(t *testing.T) {
		if err := c.EncodeF32(want, wantS, x); err != nil {
			t.Fatal(err)
		}
	})
	return got, gotS, want, wantS
}

// TestAsmFusedEncode checks the fused float32 encoders (every block
// format, so that the ones without a fused kernel are covered too) against
// the portable block encoder, on lengths with and without a tail of
// blocks outside the 16-block groups.
func TestAsmFusedEncode(t *testing.T) {
	withAsmLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		type tc struct {
			name string
			o    Options
		}
		var cases []tc
		for _, name := range []string{"mxfp8", "fp4_mx_block16", "mxfp4", "nvfp4", "int8_g64", "int4_g32"} {
			cases = append(cases, tc{name, Options{}})
		}
		// mxfp8 with OCP's floor rule, mxfp4 with the ceil rule; nvfp4
		// global scales of a calibrated checkpoint and at both ends
		cases = append(cases, tc{"mxfp8", Options{Rule: ScaleFloor}}, tc{"mxfp4", Options{Rule: ScaleCeil}},
			tc{"nvfp4", Options{Scale: 3.7 / (448 * 6)}}, tc{"nvfp4", Options{Scale: 1e-30}}, tc{"nvfp4", Options{Scale: 1e30}})
		for _, cs := range cases {
			name := cs.name
			c, err := New(name, cs.o)
			if err != nil {
				t.Fatal(err)
			}
			f := c.Format()
			bs := f.BlockSize
			for _, nb := range []int{1, 15, 16, 17, 32, 48, 100, 16 * fusedGroups, 16*fusedGroups + 16, 16*fusedGroups + 5, 3000} {
				x := fusedInputs(rng, nb, bs)
				got, gotS, want, wantS := encodeAsmAndPortable(t, c, x)
				for b := range nb {
					sb := len(gotS) / nb
					db := len(got) / nb
					if string(got[b*db:(b+1)*db]) != string(want[b*db:(b+1)*db]) || string(gotS[b*sb:(b+1)*sb]) != string(wantS[b*sb:(b+1)*sb]) {
						t.Fatalf("%s %+v, %d blocks: block %d (input %v)\n got % x / % x\nwant % x / % x", name, cs.o, nb, b, x[b*bs:(b+1)*bs],
							got[b*db:(b+1)*db], gotS[b*sb:(b+1)*sb], want[b*db:(b+1)*db], wantS[b*sb:(b+1)*sb])
					}
				}
			}
		}
	})
}

// TestAsmFusedRanges runs the fused encoders on one block pattern at every
// scale exponent (block maxima 2^-149 … 2^127), each block also holding
// values that round to zero, subnormal results and negative zeros.
func TestAsmFusedRanges(t *testing.T) {
	withAsmLevels(t, func(t *testing.T) {
		for _, name := range []string{"mxfp8", "fp4_mx_block16", "nvfp4", "int8_g64", "int4_g32"} {
			c := codecFor(t, name)
			f := c.Format()
			bs := f.BlockSize
			var x []float32
			for e := -149; e <= 127; e++ {
				blk := make([]float32, bs)
				for i := range blk {
					u := math.Float32bits(float32(math.Ldexp(1, e)))
					switch i % 4 {
					case 0:
						u += uint32(i) << 18
					case 1:
						u = (u - uint32(i)<<23) | 0x80000000
					case 2:
						u >>= uint(i)
					case 3:
						u = 0x80000000 | uint32(i)
					}
					if u&0x7F800000 == 0x7F800000 {
						u = 0
					}
					blk[i] = math.Float32frombits(u)
				}
				x = append(x, blk...)
			}
			for len(x)%(16*bs) != 0 {
				x = append(x, 0)
			}
			got, gotS, want, wantS := encodeAsmAndPortable(t, c, x)
			compareBytes(t, name+" payload", want, got)
			compareBytes(t, name+" scales", wantS, gotS)
		}
	})
}

// TestAsmFusedIntBoundaries runs the fused integer encoders on quotients
// at and around every rounding boundary: groups whose scale s is an exact
// fp16 value (one element is s·qmax) holding (k + ½)·s, one and a few ulps
// either side, and (k ± ¼)·s for every k in [−qmax−1, qmax]. The kernels
// multiply by RN(1/s) and must send every near tie to the exact division.
func TestAsmFusedIntBoundaries(t *testing.T) {
	withAsmLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		for _, name := range []string{"int8_g64", "int4_g32"} {
			c := codecFor(t, name)
			f := c.Format()
			bs := f.BlockSize
			qmax := 127
			if name == "int4_g32" {
				qmax = 7
			}
			var x []float32
			for len(x) < 64*16*bs {
				// s: an fp16 value (11 significant bits) from 2^-14 to 2^15
				s := float32(math.Ldexp(float64(1024+rng.IntN(1024)), rng.IntN(30)-24))
				blk := make([]float32, bs)
				blk[0] = s * float32(qmax)
				if rng.IntN(2) == 0 {
					blk[0] = -blk[0]
				}
				for i := 1; i < bs; i++ {
					k := float32(rng.IntN(2*qmax+2) - qmax - 1)
					v := (k + 0.5) * s
					switch rng.IntN(6) {
					case 1:
						v = math.Nextafter32(v, float32(math.Inf(1)))
					case 2:
						v = math.Nextafter32(v, float32(math.Inf(-1)))
					case 3:
						v = math.Float32frombits(math.Float32bits(v) + uint32(rng.IntN(8)))
					case 4:
						v = (k + 0.25) * s
					case 5:
						v = (k + 0.75) * s
					}
					blk[i] = v
				}
				x = append(x, blk...)
			}
			got, gotS, want, wantS := encodeAsmAndPortable(t, c, x)
			compareBytes(t, name+" payload", want, got)
			compareBytes(t, name+" scales", wantS, gotS)
		}
	})
}

// TestAsmIntBoundariesBF16 runs the bf16 integer encoders (whose groups
// take the products by RN(1/s) and fall back to the quotients) on groups
// whose scale is a power of two, so that the quotients of bf16 inputs land
// exactly on half-integers (every tie of rint), and on the bf16 values next
// to them, at every level against the portable encoder; a group of
// power-of-two scale with random values and a NaN group ride along.
func TestAsmIntBoundariesBF16(t *testing.T) {
	withAsmLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(43, 44))
		for _, name := range []string{"int8_g64", "int4_g32"} {
			c := codecFor(t, name)
			f := c.Format()
			bs := f.BlockSize
			qmax := 127
			if name == "int4_g32" {
				qmax = 7
			}
			var x []uint16
			for g := 0; len(x) < 64*16*bs; g++ {
				// even groups: s = 2^e, the fp16 scale of a group whose
				// maximum is qmax·s (every quotient of a tie exact); odd
				// groups: the scale of a random maximum (11 significant
				// bits, so the quotients come near the ties without
				// reaching them)
				e := rng.IntN(30) - 14
				s := math.Ldexp(1, e)
				blk := make([]uint16, bs)
				blk[0] = BF16FromF32(float32(float64(qmax) * s))
				if g%2 == 1 {
					blk[0] = BF16FromF32(float32(float64(qmax) * s * (1 + rng.Float64())))
					_, sv := c.(*intCodec).groupScale(uint32(blk[0]) << 16)
					s = float64(sv)
				}
				if rng.IntN(2) == 0 {
					blk[0] |= 0x8000
				}
				for i := 1; i < bs; i++ {
					k := rng.IntN(2*qmax+2) - qmax - 1
					v := BF16FromF32(float32((float64(k) + 0.5) * s)) // even groups: exact, 2k+1 has at most 8 bits
					switch rng.IntN(4) {
					case 1:
						v++
					case 2:
						v--
					case 3:
						v = BF16FromF32(float32(float64(k)*s + rng.Float64()*s))
					}
					blk[i] = v
				}
				if g%97 == 5 {
					blk[bs/2] = 0x7FC1 // NaN: a NaN scale, every code 0
				}
				x = append(x, blk...)
			}
			n := int64(len(x))
			got, gotS := make([]byte, f.DataBytes(n)), make([]byte, f.ScaleBytesFor(n))
			if err := c.EncodeBF16(got, gotS, x); err != nil {
				t.Fatal(err)
			}
			want, wantS := make([]byte, len(got)), make([]byte, len(gotS))
			withAsm(t, false, func(t *testing.T) {
				if err := c.EncodeBF16(want, wantS, x); err != nil {
					t.Fatal(err)
				}
			})
			compareBytes(t, name+" payload", want, got)
			compareBytes(t, name+" scales", wantS, gotS)
		}
	})
}

// TestAsmDecodeScaleBytes decodes rows of the block formats whose scale
// bytes are all neutral but one, of every value at every position (inside
// the eight-byte words the mxfp8 redo check reads and in the tail), at
// every assembly level against the portable decoder, bit for bit: the
// kernels' products must be the reference's own multiplications, NaN,
// overflowing and subnormal results included (nvfp4 also with the global
// scales of a calibrated checkpoint and at both ends).
func TestAsmDecodeScaleBytes(t *testing.T) {
	type tc struct {
		name string
		o    Options
	}
	cases := []tc{{"mxfp8", Options{}}, {"fp4_mx_block16", Options{}}, {"mxfp4", Options{}}, {"mxfp4", Options{Rule: ScaleCeil}},
		{"nvfp4", Options{}}, {"nvfp4", Options{Scale: 3.7 / (448 * 6)}}, {"nvfp4", Options{Scale: 1e-30}}, {"nvfp4", Options{Scale: 1e30}}}
	withAsmLevels(t, func(t *testing.T) {
		for _, cs := range cases {
			c, err := New(cs.name, cs.o)
			if err != nil {
				t.Fatal(err)
			}
			f := c.Format()
			neutral := byte(127) // 2^0 in E8M0
			if cs.name == "nvfp4" {
				neutral = 0x38 // 1.0 in E4M3
			}
			rng := rand.New(rand.NewPCG(31, 32))
			const nb = 19
			n := nb * f.BlockSize
			src := make([]byte, f.DataBytes(int64(n)))
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			copy(src, []byte{0x00, 0x08, 0x80, 0x88, 0x7F, 0xFF, 0x7E, 0xFE, 0x01, 0x81, 0x10, 0x90})
			got, want := make([]float32, n), make([]float32, n)
			scales := make([]byte, nb)
			for pos := range nb {
				for v := range 256 {
					for i := range scales {
						scales[i] = neutral
					}
					scales[pos] = byte(v)
					if err := c.DecodeF32(got, src, scales); err != nil {
						t.Fatal(err)
					}
					withAsm(t, false, func(t *testing.T) {
						if err := c.DecodeF32(want, src, scales); err != nil {
							t.Fatal(err)
						}
					})
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %+v: scale %#02x at block %d: value %d (code byte %#02x) decodes to %v (%#08x), want %v (%#08x)",
								cs.name, cs.o, v, pos, i, src[int64(i)*int64(len(src))/int64(n)], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	})
}

// TestAsmFP8Lanes checks the 32-bit lane FP8 encoders (unscaled E4M3FN and
// E5M2, both overflow policies) against the tables on every float32 input
// that stays in range (every bf16 pattern, again with random low bits, and
// random bit patterns, with those past the largest finite value left out so
// that the lane kernel does the whole input), and on inputs with an
// overflowing or non-finite value in the middle (the kernel stops there and
// the 16-bit lane kernel finishes).
func TestAsmFP8Lanes(t *testing.T) {
	withAsmLevels(t, func(t *testing.T) {
		for _, f := range []Float{E4M3FN, E5M2} {
			limit := float32(464)
			if f == E5M2 {
				limit = 61440
			}
			var in []float32
			for _, x := range asmInputsF32() {
				if a := float32(math.Abs(float64(x))); a < limit {
					in = append(in, x)
				}
			}
			in = in[:len(in)&^63]
			for _, ov := range []Overflow{NonSat, SatFinite} {
				tab := fp8TablesFor(f, ov)
				cc, err := FP8(f.DType(), 1, ov)
				if err != nil {
					t.Fatal(err)
				}
				if n := encodeFP8F32Lanes(make([]byte, len(in)), in, f); n != len(in) {
					t.Fatalf("%v: the lane kernel stopped at %d of %d in-range values", f, n, len(in))
				}
				for _, x := range [][]float32{in, withSpecials(in, limit)} {
					got := make([]byte, len(x))
					if err := cc.EncodeF32(got, nil, x); err != nil {
						t.Fatal(err)
					}
					for i, v := range x {
						if w := tab.enc[keyF32(math.Float32bits(v))]; got[i] != w {
							t.Fatalf("%v/%v: f32 %#08x (element %d) encodes to %#02x, want %#02x", f, ov, math.Float32bits(v), i, got[i], w)
						}
					}
				}
			}
		}
	})
}

// withSpecials returns a copy of x with overflowing and non-finite values
// at a few places.
func withSpecials(x []float32, limit float32) []float32 {
	y := append([]float32(nil), x...)
	specials := []float32{limit, -limit, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e30}
	for i, s := range specials {
		y[(i*len(y)/len(specials)+5*i+3)%len(y)] = s
	}
	return y
}

// TestE2M1TabUpNoSticky checks what the AVX2 fused fp4_mx_block16 encoder
// relies on: every decision point of the half-up E2M1 rounding is a key
// step of e2m1TabUp, so its H rows (the sticky bit's increments) are zero.
func TestE2M1TabUpNoSticky(t *testing.T) {
	for r := 2; r < 4; r++ {
		for i, h := range e2m1TabUp[r] {
			if h != 0 {
				t.Errorf("e2m1TabUp H row %d byte %d = %d, want 0", r-2, i, h)
			}
		}
	}
}

// TestE2M1TabRNESticky checks what the AVX2 fused nvfp4 encoder relies on:
// the sticky increments of e2m1TabRNE (its H rows) are 0 or 1, so the
// minimum with any nonzero sticky byte keeps them.
func TestE2M1TabRNESticky(t *testing.T) {
	for r := 2; r < 4; r++ {
		for i, h := range e2m1TabRNE[r] {
			if h > 1 {
				t.Errorf("e2m1TabRNE H row %d byte %d = %d, want 0 or 1", r-2, i, h)
			}
		}
	}
}

// alignedU16 returns n zeroed words starting on a 64-byte boundary, and
// the same count one word past it.
func alignedU16(n int) (aligned, off []uint16) {
	buf := make([]uint16, n+64)
	i := 0
	for uintptr(unsafe.Pointer(&buf[i]))%64 != 0 {
		i++
	}
	return buf[i : i+n], buf[i+1 : i+1+n]
}

// TestAsmDecodeBF16NonTemporal decodes every format to bf16 at every
// assembly level with the non-temporal kernels forced (ntMinBytes 0) into
// a 64-byte aligned buffer, and into one that is not (which must take the
// ordinary kernels: VMOVNTDQ would fault), against the portable decoder,
// with random payloads and scale bytes (so mxfp8's redone blocks and the
// FP8 NaN lanes are rewritten after the NT stores).
func TestAsmDecodeBF16NonTemporal(t *testing.T) {
	defer func(v int) { ntMinBytes = v }(ntMinBytes)
	ntMinBytes = 0
	names := []string{"fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "mxfp8", "fp4_mx_block16", "mxfp4", "nvfp4", "int8_g64", "int4_g32"}
	withAsmLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		for _, name := range names {
			c := codecFor(t, name)
			f := c.Format()
			for _, n := range []int{4096, 4160, 4160 + 16} {
				if n%max(f.BlockSize, 1) != 0 {
					continue
				}
				src := make([]byte, f.DataBytes(int64(n)))
				scales := make([]byte, f.ScaleBytesFor(int64(n)))
				for i := range src {
					src[i] = byte(rng.Uint32())
				}
				for i := range scales {
					scales[i] = byte(rng.Uint32())
				}
				want := make([]uint16, n)
				withAsm(t, false, func(t *testing.T) {
					if err := c.DecodeBF16(want, src, scales); err != nil {
						t.Fatal(err)
					}
				})
				a, u := alignedU16(n)
				for _, got := range [][]uint16{a, u} {
					if err := c.DecodeBF16(got, src, scales); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s, %d elements (aligned %v): DecodeBF16[%d] = %#04x, want %#04x", name, n, &got[0] == &a[0], i, got[i], want[i])
						}
					}
				}
			}
		}
	})
}
