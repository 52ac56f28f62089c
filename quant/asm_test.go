package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// withAsm runs fn with the assembly kernels switched on (the current
// level, or the best one when the current is portable) or off; on builds or
// CPUs without them "on" is skipped.
func withAsm(t *testing.T, on bool, fn func(t *testing.T)) {
	t.Helper()
	if on && bestLevel == levelPortable {
		t.Skip("no assembly kernels in this build or on this CPU")
	}
	l := levelPortable
	if on {
		l = asmLevel
		if l == levelPortable {
			l = bestLevel
		}
	}
	withLevel(l, fn)(t)
}

// withAVX512 runs fn with the AVX-512 kernels (the tests of kernels that
// have no AVX2 variant); on builds or CPUs without them it is skipped.
func withAVX512(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	if bestLevel != levelAVX512 {
		t.Skip("no AVX-512 kernels in this build or on this CPU")
	}
	withLevel(levelAVX512, fn)(t)
}

// withAsmLevels runs fn once per assembly level of this CPU and build
// (AVX-512, AVX2), as subtests; with none it is skipped.
func withAsmLevels(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	if bestLevel == levelPortable {
		t.Skip("no assembly kernels in this build or on this CPU")
	}
	if bestLevel == levelAVX512 {
		t.Run("avx512", withLevel(levelAVX512, fn))
	}
	if hasAVX2 {
		t.Run("avx2", withLevel(levelAVX2, fn))
	}
}

// withLevel returns fn run with the kernels of level l.
func withLevel(l int, fn func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) {
		old := asmLevel
		setLevel(l)
		defer setLevel(old)
		fn(t)
	}
}

// asmInputsF32 returns float32 inputs: every bf16 pattern exactly, and
// again with random low bits (the sticky cases), plus random bit patterns.
func asmInputsF32() []float32 {
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 0, 3<<16+16)
	for b := range 1 << 16 {
		x = append(x, math.Float32frombits(uint32(b)<<16))
	}
	for b := range 1 << 16 {
		x = append(x, math.Float32frombits(uint32(b)<<16|uint32(rng.IntN(1<<16))))
	}
	for range 1<<16 + 16 {
		x = append(x, math.Float32frombits(rng.Uint32()))
	}
	return x
}

// TestAsmFP8 checks the assembly FP8 encoders (bf16 and float32 input, every
// format and overflow policy) against the tables, and the decoders on every
// code, through the codecs.
func TestAsmFP8(t *testing.T) {
	withAsm(t, true, func(t *testing.T) {
		bf := make([]uint16, 1<<16)
		for i := range bf {
			bf[i] = uint16(i)
		}
		xf := asmInputsF32()
		codes := make([]byte, 256*4)
		for i := range codes {
			codes[i] = byte(i)
		}
		for _, f := range []Float{E4M3FN, E5M2, E4M3FNUZ} {
			for _, ov := range []Overflow{NonSat, SatFinite} {
				tab := fp8TablesFor(f, ov)
				cc, err := FP8(f.DType(), 1, ov)
				if err != nil {
					t.Fatal(err)
				}
				c := cc.(*fp8Codec)
				got := make([]byte, len(bf))
				if err := c.EncodeBF16(got, nil, bf); err != nil {
					t.Fatal(err)
				}
				for i, b := range bf {
					if got[i] != tab.enc[b] {
						t.Fatalf("%v/%v: bf16 %#04x encodes to %#02x, want %#02x", f, ov, b, got[i], tab.enc[b])
					}
				}
				got = make([]byte, len(xf))
				if err := c.EncodeF32(got, nil, xf); err != nil {
					t.Fatal(err)
				}
				for i, x := range xf {
					if w := tab.enc[keyF32(math.Float32bits(x))]; got[i] != w {
						t.Fatalf("%v/%v: f32 %#08x encodes to %#02x, want %#02x", f, ov, math.Float32bits(x), got[i], w)
					}
				}
				d := make([]uint16, len(codes))
				df := make([]float32, len(codes))
				if err := c.DecodeBF16(d, codes, nil); err != nil {
					t.Fatal(err)
				}
				if err := c.DecodeF32(df, codes, nil); err != nil {
					t.Fatal(err)
				}
				for i, q := range codes {
					if d[i] != tab.decBF[q] || math.Float32bits(df[i]) != math.Float32bits(tab.dec[q]) {
						t.Fatalf("%v: code %#02x decodes to %#04x / %#08x, want %#04x / %#08x", f, q, d[i], math.Float32bits(df[i]), tab.decBF[q], math.Float32bits(tab.dec[q]))
					}
				}
			}
		}
	})
}

// TestAsmWide checks the bf16 and fp16 kernels against the scalar
// conversions: every 16-bit pattern and the float32 inputs.
func TestAsmWide(t *testing.T) {
	withAsm(t, true, func(t *testing.T) {
		xf := asmInputsF32()
		bf := make([]uint16, 1<<16)
		for i := range bf {
			bf[i] = uint16(i)
		}
		for _, name := range []string{"bf16", "fp16"} {
			c, err := New(name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 2*len(xf))
			if err := c.EncodeF32(p, nil, xf); err != nil {
				t.Fatal(err)
			}
			for i, x := range xf {
				want := BF16FromF32(x)
				if name == "fp16" {
					want = FP16.Encode(x, NonSat)
				}
				if got := get16(p[2*i:]); got != want {
					t.Fatalf("%s: EncodeF32(%#08x) = %#04x, want %#04x", name, math.Float32bits(x), got, want)
				}
			}
			p = make([]byte, 2*len(bf))
			if err := c.EncodeBF16(p, nil, bf); err != nil {
				t.Fatal(err)
			}
			for i, b := range bf {
				want := b
				if name == "fp16" {
					want = FP16.Encode(BF16ToF32(b), NonSat)
				}
				if got := get16(p[2*i:]); got != want {
					t.Fatalf("%s: EncodeBF16(%#04x) = %#04x, want %#04x", name, b, got, want)
				}
			}
			// decode every 16-bit pattern
			for i, b := range bf {
				put16(p[2*i:], b)
			}
			df := make([]float32, len(bf))
			if err := c.DecodeF32(df, p, nil); err != nil {
				t.Fatal(err)
			}
			for i, b := range bf {
				want := BF16ToF32(b)
				if name == "fp16" {
					want = fp16ToF32(b)
				}
				if math.Float32bits(df[i]) != math.Float32bits(want) {
					t.Fatalf("%s: DecodeF32(%#04x) = %#08x, want %#08x", name, b, math.Float32bits(df[i]), math.Float32bits(want))
				}
			}
		}
	})
}

// TestPortablePaths reruns the codec cross-checks with the assembly kernels
// switched off, so the portable Go code is tested on machines that have
// them (CI also runs the package with -tags purego).
func TestPortablePaths(t *testing.T) {
	if asmLevel == levelPortable {
		t.Skip("the portable paths are what the other tests ran")
	}
	withAsm(t, false, codecChecks)
}

// codecChecks runs the codec cross-checks (references, scale bytes,
// non-finite blocks, vectors, the C reference, FP8 scales) at the level
// set.
func codecChecks(t *testing.T) {
	t.Run("CodecsMatchReference", TestCodecsMatchReference)
	t.Run("AllScaleBytesDecode", TestAllScaleBytesDecode)
	t.Run("NonFiniteBlocks", TestNonFiniteBlocks)
	t.Run("Vectors", TestVectors)
	t.Run("CRef", TestCRef)
	t.Run("FP8Scale", TestFP8Scale)
}

// TestAVX2Level reruns the assembly and codec cross-checks with the AVX2
// kernels, so that they are tested on AVX-512 machines too (where the
// other tests ran the AVX-512 ones).
func TestAVX2Level(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 kernels in this build or on this CPU")
	}
	if asmLevel == levelAVX2 {
		t.Skip("the AVX2 paths are what the other tests ran")
	}
	withLevel(levelAVX2, func(t *testing.T) {
		if !useAVX2 {
			t.Fatal("AVX2 level not selected")
		}
		t.Run("AsmFP8", TestAsmFP8)
		t.Run("AsmWide", TestAsmWide)
		t.Run("AsmBlockScales", TestAsmBlockScales)
		t.Run("AsmBlockMaxima", TestAsmBlockMaxima)
		t.Run("AsmE2M1TinySigns", TestAsmE2M1TinySigns)
		codecChecks(t)
		t.Run("FP4ShiftTables", TestFP4ShiftTables)
		t.Run("FP4DecodeOddBlocks", TestFP4DecodeOddBlocks)
		t.Run("NVFP4DecodeOddBlocks", TestNVFP4DecodeOddBlocks)
		t.Run("IntDecodeAllScales", TestIntDecodeAllScales)
		t.Run("EncodeRowsF32", TestEncodeRowsF32)
	})(t)
}

// TestFP16FromPos checks the group-scale fast path against FP16.Encode.
func TestFP16FromPos(t *testing.T) {
	for _, x := range asmInputsF32() {
		if got, want := fp16FromPos(x), FP16.Encode(x, NonSat); got != want {
			t.Fatalf("fp16FromPos(%#08x) = %#04x, want %#04x", math.Float32bits(x), got, want)
		}
	}
}

// TestE2M1Lut checks the 16-bit-lane encoder's table against the E2M1
// tables for every bf16 magnitude.
func TestE2M1Lut(t *testing.T) {
	for a := range uint32(0x7F81) {
		k := keyMag(a << 16)
		if got, want := e2m1LutCode(&e2m1LutRNE, uint16(a)), uint16(e2m1Big().rne[k]); got != want {
			t.Fatalf("RNE %#04x: %d, want %d", a, got, want)
		}
		if got, want := e2m1LutCode(&e2m1LutUp, uint16(a)), uint16(e2m1Big().up[k]); got != want {
			t.Fatalf("half up %#04x: %d, want %d", a, got, want)
		}
	}
}

// TestE2M1ByteTables checks the AVX2 encoders' byte tables against the
// E2M1 tables for every bf16 magnitude, with and without a sticky bit (a
// float32 value just above it).
func TestE2M1ByteTables(t *testing.T) {
	big := e2m1Big()
	for a := range uint32(0x7F80) {
		for _, st := range []uint32{0, 1} {
			k := keyMag(a<<16 | st)
			if got, want := e2m1TabCode(&e2m1TabRNE, uint16(a), st != 0), big.rne[k]; got != want {
				t.Fatalf("RNE %#04x sticky %d: %d, want %d", a, st, got, want)
			}
			if got, want := e2m1TabCode(&e2m1TabUp, uint16(a), st != 0), big.up[k]; got != want {
				t.Fatalf("half up %#04x sticky %d: %d, want %d", a, st, got, want)
			}
		}
	}
}

// TestAsmBlockScales checks the scale kernels (ceil-rule exponents, nvfp4
// scales and multipliers) against the portable functions on float32 block
// maxima of every exponent, near powers of two and at random.
func TestAsmBlockScales(t *testing.T) {
	withAsm(t, true, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		var vals []uint32
		for e := range uint32(255) {
			for _, m := range []uint32{0, 1, 0x3FFFFF, 0x400000, 0x400001, 0x200000, 0x7FFFFF, rng.Uint32() & 0x7FFFFF} {
				vals = append(vals, e<<23|m)
			}
		}
		for range 4096 {
			vals = append(vals, rng.Uint32()&0x7F7FFFFF)
		}
		for len(vals)%asmChunk != 0 {
			vals = append(vals, 0)
		}
		nv := codecFor(t, "nvfp4").(*nvfp4Codec)
		for _, name := range []string{"fp4_mx_block16", "mxfp8", "mxfp4_ceil"} {
			c := codecFor(t, name).(*pow2Codec)
			for i := 0; i < len(vals); i += asmChunk {
				var amax [asmChunk]uint32
				var sh [2 * asmChunk]int32
				sc := make([]byte, asmChunk)
				copy(amax[:], vals[i:])
				bad, ok := c.ceilScales(sc, &sh, &amax, asmChunk, 16)
				if !ok {
					t.Fatalf("%s: no kernel", name)
				}
				for j, a := range amax {
					want := c.blockExp(a)
					if int(int8(sc[j]-127)) != want && want >= -127 && want <= 128 || int(sh[j]>>7) != want {
						t.Fatalf("%s: exponent of %#08x = %d (%#02x), want %d", name, a, sh[j]>>7, sc[j], want)
					}
					if wantBad := a >= 0x7F800000 || want < -100 || want > 16; (bad>>j&1 != 0) != wantBad {
						t.Fatalf("%s: block with maximum %#08x: bad = %v", name, a, !wantBad)
					}
					zt := int32(-1)
					if c.halfUp {
						zt = 0
						if want >= 1 {
							zt = 1 << (want - 1)
						}
					}
					if want <= 30 && sh[asmChunk+j] != zt {
						t.Fatalf("%s: sign limit of e = %d: %d, want %d", name, want, sh[asmChunk+j], zt)
					}
				}
			}
		}
		for _, name := range []string{"int8_g64", "int4_g32"} {
			c := codecFor(t, name).(*intCodec)
			for i := 0; i < len(vals); i += asmChunk {
				var amax [asmChunk]uint32
				var s16 [asmChunk]uint16
				var div, rcp [asmChunk]float32
				copy(amax[:], vals[i:])
				amax[1] = 0x7FC00000 // a NaN group
				amax[2] = 0x7F800000 // an infinite maximum
				q := c.qmax
				intScales(&s16[0], &div[0], &amax[0], asmChunk, &q, &rcp[0])
				for j, a := range amax {
					w16, w := c.groupScale(a)
					if s16[j] != w16 || math.Float32bits(div[j]) != math.Float32bits(w) && w == w {
						t.Fatalf("%s: scale of %#08x = %#04x %v, want %#04x %v", name, a, s16[j], div[j], w16, w)
					}
					if r := 1 / div[j]; math.Float32bits(rcp[j]) != math.Float32bits(r) && r == r {
						t.Fatalf("%s: reciprocal of the scale %v of %#08x = %v, want %v", name, div[j], a, rcp[j], r)
					}
				}
			}
		}
		p := [3]float32{nv.invG, rcp6, nv.g}
		for i := 0; i < len(vals); i += asmChunk {
			var amax [asmChunk]uint32
			var os [asmChunk]float32
			var sc [asmChunk]byte
			copy(amax[:], vals[i:])
			var bad [asmChunk / 16]uint16
			nvfp4Scales(&sc[0], &os[0], &bad[0], &amax[0], asmChunk, &nv.t.enc[0], &p[0])
			for j, a := range amax {
				s, o := nv.blockScale(math.Float32frombits(a))
				isBad := bad[j/16]>>(j%16)&1 != 0
				if sc[j] != s || math.Float32bits(os[j]) != math.Float32bits(o) || isBad != (o > math.MaxFloat32) {
					t.Fatalf("nvfp4: scale of %#08x = %#02x, %v; want %#02x, %v", a, sc[j], os[j], s, o)
				}
			}
		}
	})
}

// TestAsmE2M1TinySigns checks SGLang's "y < 0" sign rule for float32
// inputs whose scaled value rounds to zero (|x| at and around 2^(e−150)),
// and the float32 sticky bits at every E2M1 decision point, against the
// reference.
func TestAsmE2M1TinySigns(t *testing.T) {
	for _, name := range []string{"fp4_mx_block16", "mxfp4", "nvfp4"} {
		c := codecFor(t, name)
		bs := c.Format().BlockSize
		var x []float32
		for e := -2; e <= 16; e++ {
			blk := make([]float32, bs)
			blk[0] = float32(math.Ldexp(5.9, e+2))
			for i := 1; i < bs; i++ {
				var u uint32
				switch i % 4 {
				case 0:
					u = 1 << max(e-1, 0)
				case 1:
					u = 1<<max(e-1, 0) + 1
				case 2:
					u = 1<<max(e-1, 0) - 1
				default:
					// a decision point of E2M1 times 2^e, plus a sticky bit
					b := e2m1Bounds[i%7]
					u = math.Float32bits(float32(math.Ldexp(float64(b), e))) + uint32(i%2)
				}
				blk[i] = math.Float32frombits(u | 0x80000000)
			}
			x = append(x, blk...)
		}
		for len(x)%64 != 0 {
			x = append(x, 0)
		}
		want, wantS := refEncode(name, x)
		for _, on := range []bool{true, false} {
			if on && bestLevel == levelPortable {
				continue
			}
			withAsm(t, on, func(t *testing.T) {
				p := make([]byte, len(want))
				s := make([]byte, len(wantS))
				if err := c.EncodeF32(p, s, x); err != nil {
					t.Fatal(err)
				}
				compareBytes(t, name+" payload", want, p)
				compareBytes(t, name+" scales", wantS, s)
			})
		}
	}
}

// TestAsmBlockMaxima checks the block-maximum kernels (bf16 and float32
// input, every block size the codecs use, every chunk length) against a
// scalar maximum, on data with NaN, Inf and negative values.
func TestAsmBlockMaxima(t *testing.T) {
	withAsm(t, true, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		bf := make([]uint16, 64*asmChunk)
		f := make([]float32, len(bf))
		for i := range bf {
			bf[i] = uint16(rng.Uint32())
			if rng.IntN(4) != 0 {
				bf[i] &= 0xBFFF // mostly finite
			}
			f[i] = math.Float32frombits(uint32(bf[i])<<16 | rng.Uint32()&0xFFFF)
		}
		for _, bs := range []int{16, 32, 64} {
			for m := 1; m <= asmChunk; m++ {
				var gotB, gotF [asmChunk]uint32
				amaxBF16(&gotB, bf, m, bs)
				amaxF32(&gotF, f, m, bs)
				for b := range m {
					var wb, wf uint32
					for i := b * bs; i < (b+1)*bs; i++ {
						wb = max(wb, uint32(bf[i]&0x7FFF)<<16)
						wf = max(wf, math.Float32bits(f[i])&0x7FFFFFFF)
					}
					if gotB[b] != wb || gotF[b] != wf {
						t.Fatalf("bs %d, %d blocks: block %d maxima %#08x / %#08x, want %#08x / %#08x", bs, m, b, gotB[b], gotF[b], wb, wf)
					}
				}
			}
		}
	})
}
