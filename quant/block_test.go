package quant

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcfg/kvcfg/dtype"
)

// Slow block references, written from the block recipes of docs/quant.md#block-formats with
// float64 log2 and plain comparisons; the codecs use integer exponent
// arithmetic and lookup tables instead.

var (
	refE2M1 = newRef(E2M1)
	refE4M3 = newRef(E4M3FN)
	refFP16 = newRef(FP16)
)

func refLog2(x float32) float64 { return math.Log2(float64(x)) }

func maxAbs(x []float32) float32 {
	var m float32
	for _, v := range x {
		m = max(m, float32(math.Abs(float64(v))))
	}
	return m
}

// refBlock16 is SGLang's FP4MXBlock16KVQuantizeUtil.batched_quantize for
// one block.
func refBlock16(x []float32) (codes []uint8, scale uint8) {
	q := maxAbs(x) / 6
	q = max(q, float32(1e-10))
	e := int(math.Ceil(refLog2(q)))
	d := float32(math.Ldexp(1, e))
	for _, v := range x {
		y := v / d
		var c uint8
		for _, b := range []float32{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0} {
			if float32(math.Abs(float64(y))) >= b {
				c++
			}
		}
		if y < 0 {
			c |= 8
		}
		codes = append(codes, c)
	}
	return codes, uint8(e + 127)
}

// refMX is the OCP floor rule or SGLang's ceil rule with E2M1 (emax 2,
// max 6) or E4M3 (emax 8, max 448) elements.
func refMX(x []float32, fp8, ceil bool) (codes []uint8, scale uint8) {
	amax := maxAbs(x)
	emax, maxe, ref := 2, float32(6), refE2M1
	if fp8 {
		emax, maxe, ref = 8, 448, refE4M3
	}
	var e int
	if ceil {
		a := max(amax, float32(1e-30))
		e = min(max(int(math.Ceil(refLog2(a/maxe))), -127), 127)
	} else {
		e = -127
		if amax != 0 {
			e = max(int(math.Floor(refLog2(amax)))-emax, -127)
		}
	}
	d := float32(math.Ldexp(1, e))
	for _, v := range x {
		y := v / d
		y = min(max(y, -maxe), maxe)
		codes = append(codes, uint8(ref.encode(y, SatFinite)))
	}
	return codes, uint8(e + 127)
}

// refNVFP4 is flashinfer's KV convention with exact reciprocals.
func refNVFP4(x []float32, g float32) (codes []uint8, scale uint8) {
	vecMax := maxAbs(x)
	sf := (1 / g) * (vecMax * (1 / float32(6)))
	sf8 := refE4M3.encode(sf, SatFinite)
	var os float32
	if vecMax != 0 {
		os = 1 / (E4M3FN.Decode(sf8) * g)
	}
	for _, v := range x {
		y := v * os
		if y != y { // 0·Inf when sf8 underflows: our documented choice, +6
			codes = append(codes, 7)
			continue
		}
		codes = append(codes, uint8(refE2M1.encode(y, SatFinite)))
	}
	return codes, uint8(sf8)
}

// refInt is SGLang PR #37798's int8_g64 (qmax 127) / int4_g32 (qmax 7).
func refInt(x []float32, qmax float32) (codes []int, scale uint16) {
	a := maxAbs(x)
	s := float32(1)
	if a > 0 {
		s = min(a/qmax, 65504)
	}
	s16 := refFP16.encode(s, NonSat)
	sf := FP16.Decode(s16)
	for _, v := range x {
		q := math.RoundToEven(float64(v / sf))
		codes = append(codes, int(min(max(q, float64(-qmax)), float64(qmax))))
	}
	return codes, s16
}

// refEncode runs the reference of a named format over whole blocks and
// returns payload and scale bytes in memory order.
func refEncode(name string, x []float32) (payload, scales []byte) {
	pack4 := func(c []uint8) {
		for j := 0; j < len(c); j += 2 {
			payload = append(payload, c[j]|c[j+1]<<4)
		}
	}
	switch name {
	case "fp4_mx_block16":
		for b := 0; b < len(x); b += 16 {
			c, s := refBlock16(x[b : b+16])
			pack4(c)
			scales = append(scales, s)
		}
	case "mxfp4", "mxfp4_ceil":
		for b := 0; b < len(x); b += 32 {
			c, s := refMX(x[b:b+32], false, name == "mxfp4_ceil")
			pack4(c)
			scales = append(scales, s)
		}
	case "mxfp8", "mxfp8_ocp":
		for b := 0; b < len(x); b += 32 {
			c, s := refMX(x[b:b+32], true, name == "mxfp8")
			payload = append(payload, c...)
			scales = append(scales, s)
		}
	case "nvfp4":
		for b := 0; b < len(x); b += 16 {
			c, s := refNVFP4(x[b:b+16], 1)
			pack4(c)
			scales = append(scales, s)
		}
	case "int8_g64":
		for b := 0; b < len(x); b += 64 {
			c, s := refInt(x[b:b+64], 127)
			for _, q := range c {
				payload = append(payload, byte(int8(q)))
			}
			scales = append(scales, byte(s), byte(s>>8))
		}
	case "int4_g32":
		for b := 0; b < len(x); b += 32 {
			c, s := refInt(x[b:b+32], 7)
			for j := 0; j < len(c); j += 2 {
				payload = append(payload, byte(c[j]+8)|byte(c[j+1]+8)<<4)
			}
			scales = append(scales, byte(s), byte(s>>8))
		}
	case "fp8_e4m3":
		for _, v := range x {
			payload = append(payload, byte(refE4M3.encode(v, NonSat)))
		}
	}
	return payload, scales
}

// refDecode dequantizes with the reference formulas into float32.
func refDecode(name string, payload, scales []byte, n int) []float32 {
	out := make([]float32, n)
	e2 := func(i int) uint8 { return payload[i/2] >> (4 * (i % 2)) & 0xF }
	for i := range out {
		switch name {
		case "fp4_mx_block16":
			out[i] = E2M1.Decode(uint16(e2(i))) * float32(math.Ldexp(1, int(scales[i/16])-127))
		case "mxfp4", "mxfp4_ceil":
			out[i] = E2M1.Decode(uint16(e2(i))) * DecodeE8M0(scales[i/32])
		case "mxfp8", "mxfp8_ocp":
			out[i] = E4M3FN.Decode(uint16(payload[i])) * DecodeE8M0(scales[i/32])
		case "nvfp4":
			out[i] = E2M1.Decode(uint16(e2(i))) * E4M3FN.Decode(uint16(scales[i/16]))
		case "int8_g64":
			out[i] = float32(int8(payload[i])) * FP16ToF32(uint16(scales[2*(i/64)])|uint16(scales[2*(i/64)+1])<<8)
		case "int4_g32":
			out[i] = float32(int(e2(i))-8) * FP16ToF32(uint16(scales[2*(i/32)])|uint16(scales[2*(i/32)+1])<<8)
		case "fp8_e4m3":
			out[i] = E4M3FN.Decode(uint16(payload[i]))
		}
	}
	return out
}

var refCodecs = map[string]Options{
	"fp4_mx_block16": {}, "mxfp4": {}, "mxfp4_ceil": {Rule: ScaleCeil}, "mxfp8": {},
	"mxfp8_ocp": {Rule: ScaleFloor}, "nvfp4": {}, "int8_g64": {}, "int4_g32": {}, "fp8_e4m3": {},
}

func codecFor(t testing.TB, name string) Codec {
	t.Helper()
	o := refCodecs[name]
	base := name
	switch name {
	case "mxfp4_ceil":
		base = "mxfp4"
	case "mxfp8_ocp":
		base = "mxfp8"
	}
	c, err := New(base, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kvData returns n bf16 values shaped like KV activations: Gaussian with a
// per-block spread from 2^-40 to 2^40, a few outliers, zeros, zero blocks
// and subnormals.
func kvData(rng *rand.Rand, n int) []uint16 {
	out := make([]uint16, n)
	for b := 0; b < n; b += 16 {
		sigma := math.Ldexp(1, rng.IntN(81)-40)
		kind := rng.IntN(20)
		for i := b; i < min(b+16, n); i++ {
			v := rng.NormFloat64() * sigma
			switch {
			case kind == 0:
				v = 0
			case kind == 1:
				v = rng.NormFloat64() * 1e-39 // subnormals
			case rng.IntN(50) == 0:
				v *= 100
			case rng.IntN(30) == 0:
				v = 0
			}
			out[i] = BF16FromF32(float32(v))
		}
	}
	return out
}

// TestCodecsMatchReference compares every block codec with its slow
// reference on random bf16 KV-like data and on random float32 data, in both
// encode paths and both decode paths.
func TestCodecsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 64 * 2048
	bf := kvData(rng, n)
	x := make([]float32, n)
	for i, b := range bf {
		x[i] = BF16ToF32(b)
	}
	xf := make([]float32, n) // float32 inputs with random low bits
	for i := range xf {
		xf[i] = x[i] * (1 + float32(rng.Float64())*0x1p-9)
	}
	for name := range refCodecs {
		t.Run(name, func(t *testing.T) {
			c := codecFor(t, name)
			f := c.Format()
			for _, in := range []struct {
				label string
				x     []float32
				bf    []uint16
			}{{"bf16", x, bf}, {"f32", xf, nil}} {
				wantP, wantS := refEncode(name, in.x)
				p := make([]byte, f.DataBytes(n))
				s := make([]byte, f.ScaleBytesFor(n))
				if err := c.EncodeF32(p, s, in.x); err != nil {
					t.Fatal(err)
				}
				compareBytes(t, in.label+" EncodeF32 payload", wantP, p)
				compareBytes(t, in.label+" EncodeF32 scales", wantS, s)
				if in.bf != nil {
					p2 := make([]byte, len(p))
					s2 := make([]byte, len(s))
					if err := c.EncodeBF16(p2, s2, in.bf); err != nil {
						t.Fatal(err)
					}
					compareBytes(t, "EncodeBF16 payload", wantP, p2)
					compareBytes(t, "EncodeBF16 scales", wantS, s2)
				}
				want := refDecode(name, p, s, n)
				got := make([]float32, n)
				if err := c.DecodeF32(got, p, s); err != nil {
					t.Fatal(err)
				}
				gotBF := make([]uint16, n)
				if err := c.DecodeBF16(gotBF, p, s); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("%s DecodeF32[%d] = %v, want %v", in.label, i, got[i], want[i])
					}
					if w := BF16FromF32(want[i]); gotBF[i] != w {
						t.Fatalf("%s DecodeBF16[%d] = %#04x, want %#04x", in.label, i, gotBF[i], w)
					}
				}
			}
		})
	}
}

func compareBytes(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: first difference at byte %d: got %#02x, want %#02x", what, i, got[i], want[i])
		}
	}
}

// TestAllScaleBytesDecode decodes every scale byte with random payloads:
// the fast exponent-add paths against float multiplication.
func TestAllScaleBytesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range []string{"fp4_mx_block16", "mxfp4", "mxfp8", "nvfp4"} {
		c := codecFor(t, name)
		f := c.Format()
		nb := 256
		n := nb * f.BlockSize
		p := make([]byte, f.DataBytes(int64(n)))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		s := make([]byte, nb)
		for i := range s {
			s[i] = byte(i)
		}
		want := refDecode(name, p, s, n)
		got := make([]float32, n)
		gotBF := make([]uint16, n)
		if err := c.DecodeF32(got, p, s); err != nil {
			t.Fatal(err)
		}
		if err := c.DecodeBF16(gotBF, p, s); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%s: DecodeF32[%d] (scale %#x) = %v, want %v", name, i, s[i/f.BlockSize], got[i], want[i])
			}
			if w := BF16FromF32(want[i]); gotBF[i] != w {
				t.Fatalf("%s: DecodeBF16[%d] (scale %#x) = %#04x, want %#04x", name, i, s[i/f.BlockSize], gotBF[i], w)
			}
		}
	}
}

// TestForKVFormats: each KV codec's Format is dtype's, the one source of
// storage geometry.
func TestForKVFormats(t *testing.T) {
	for _, name := range dtype.FormatNames() {
		t.Run(name, func(t *testing.T) {
			c, err := ForKV(name)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := dtype.LookupFormat(name)
			if diff := cmp.Diff(want, c.Format()); diff != "" {
				t.Errorf("Format() mismatch (-dtype +codec):\n%s", diff)
			}
		})
	}
	if _, err := ForKV("fp8_e4m3fn"); !errors.Is(err, dtype.ErrUnknown) {
		t.Errorf("ForKV(element name) error = %v, want dtype.ErrUnknown", err)
	}
	if _, err := New("nope", Options{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("New(nope) error = %v, want ErrUnknown", err)
	}
	c, err := FP8(dtype.FP8E4M3FNUZ, 2, SatFinite)
	if err != nil {
		t.Fatal(err)
	}
	if f := c.Format(); f.Name != "fp8_e4m3" || f.Element != dtype.FP8E4M3FNUZ || f.ElementBits != 8 {
		t.Errorf("FP8(fnuz).Format() = %+v", f)
	}
	if _, err := FP8(dtype.BFloat16, 1, NonSat); !errors.Is(err, ErrUnknown) {
		t.Errorf("FP8(bf16) error = %v", err)
	}
	if _, err := New("fp8_e4m3", Options{Scale: -1, Overflow: 7}); !errors.Is(err, ErrOption) {
		t.Errorf("bad options error = %v", err)
	}
}

// TestFP8Scale: per-tensor scale divides in bf16 for bf16 input (SGLang's
// cache.div_(k_scale)) and multiplies on decode.
func TestFP8Scale(t *testing.T) {
	c, err := FP8(dtype.FP8E4M3FN, 0.5, NonSat)
	if err != nil {
		t.Fatal(err)
	}
	src := []uint16{BF16FromF32(1), BF16FromF32(-100), BF16FromF32(300)}
	dst := make([]byte, 3)
	if err := c.EncodeBF16(dst, nil, src); err != nil {
		t.Fatal(err)
	}
	// 1/0.5 = 2 → 0x40; -200 lies between -192 (0xf4) and -208 (0xf5):
	// the midpoint ties to even 0xf4; 600 overflows → NaN 0x7f (nonsat).
	if diff := cmp.Diff([]byte{0x40, 0xf4, 0x7f}, dst); diff != "" {
		t.Errorf("EncodeBF16 (-want +got):\n%s", diff)
	}
	out := make([]float32, 3)
	if err := c.DecodeF32(out, dst, nil); err != nil {
		t.Fatal(err)
	}
	if out[0] != 1 || out[1] != -96 || out[2] == out[2] {
		t.Errorf("DecodeF32 = %v", out)
	}
}

// TestLengthErrors: mismatched buffers are errors and nothing is written.
func TestLengthErrors(t *testing.T) {
	for _, name := range append(dtype.FormatNames(), "fp8_e4m3fn", "fp8_e4m3fnuz", "e8m0", "fp4_e2m1") {
		c, err := New(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Format()
		n := 64
		good := func() ([]byte, []byte) {
			return make([]byte, f.DataBytes(int64(n))), make([]byte, f.ScaleBytesFor(int64(n)))
		}
		cases := []struct {
			dP, dS, dN int
		}{{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, -1}}
		if f.BlockSize == 0 {
			cases = cases[:2]
			cases = append(cases, struct{ dP, dS, dN int }{0, 1, 0})
		}
		for _, tc := range cases {
			p, s := good()
			p = make([]byte, len(p)+tc.dP)
			s = make([]byte, len(s)+tc.dS)
			for i := range p {
				p[i] = 0xAB
			}
			src := make([]float32, n+tc.dN)
			for i := range src {
				src[i] = 1
			}
			err := c.EncodeF32(p, s, src)
			if !errors.Is(err, ErrLength) {
				t.Errorf("%s %+v: EncodeF32 error = %v, want ErrLength", name, tc, err)
			}
			err = c.EncodeBF16(p, s, make([]uint16, n+tc.dN))
			if !errors.Is(err, ErrLength) {
				t.Errorf("%s %+v: EncodeBF16 error = %v", name, tc, err)
			}
			for i := range p {
				if p[i] != 0xAB {
					t.Fatalf("%s %+v: payload written on error", name, tc)
				}
			}
			if err := c.DecodeF32(make([]float32, n+tc.dN), p, s); !errors.Is(err, ErrLength) {
				t.Errorf("%s %+v: DecodeF32 error = %v", name, tc, err)
			}
			if err := c.DecodeBF16(make([]uint16, n+tc.dN), p, s); !errors.Is(err, ErrLength) {
				t.Errorf("%s %+v: DecodeBF16 error = %v", name, tc, err)
			}
		}
	}
}

// TestNonFiniteBlocks: NaN / Inf in a power-of-two block gives scale 0xFF
// and a block that decodes to NaN; other blocks are unaffected.
func TestNonFiniteBlocks(t *testing.T) {
	for _, name := range []string{"fp4_mx_block16", "mxfp4", "mxfp8"} {
		c := codecFor(t, name)
		f := c.Format()
		n := 2 * f.BlockSize
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i)
			}
			x[3] = bad
			p := make([]byte, f.DataBytes(int64(n)))
			s := make([]byte, 2)
			if err := c.EncodeF32(p, s, x); err != nil {
				t.Fatal(err)
			}
			if s[0] != 0xFF {
				t.Errorf("%s: scale of non-finite block = %#x", name, s[0])
			}
			out := make([]float32, n)
			if err := c.DecodeF32(out, p, s); err != nil {
				t.Fatal(err)
			}
			for i := range f.BlockSize {
				if out[i] == out[i] {
					t.Errorf("%s(%v): decoded[%d] = %v, want NaN", name, bad, i, out[i])
					break
				}
			}
			if out[n-1] != out[n-1] {
				t.Errorf("%s: finite block decoded to NaN", name)
			}
		}
	}
}

func ExampleForKV() {
	c, _ := ForKV("fp4_mx_block16")
	src := []float32{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5, -6}
	f := c.Format()
	payload := make([]byte, f.DataBytes(int64(len(src))))
	scales := make([]byte, f.ScaleBytesFor(int64(len(src))))
	_ = c.EncodeF32(payload, scales, src)
	out := make([]float32, len(src))
	_ = c.DecodeF32(out, payload, scales)
	fmt.Printf("scale %#x payload %x\n%v\n", scales[0], payload, out)
	// Output:
	// scale 0x7f payload 21436577a9cbedff
	// [0.5 1 1.5 2 3 4 6 6 -0.5 -1 -1.5 -2 -3 -4 -6 -6]
}

// TestParallel: Parallel gives byte-identical results to the plain codec.
func TestParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n := 3*ChunkElements + 64*5
	bf := kvData(rng, n)
	for _, name := range []string{"fp4_mx_block16", "mxfp8", "nvfp4", "int4_g32", "fp8_e4m3", "bf16"} {
		c, err := ForKV(name)
		if err != nil {
			t.Fatal(err)
		}
		pc := Parallel(c, 3)
		f := c.Format()
		p1, s1 := make([]byte, f.DataBytes(int64(n))), make([]byte, f.ScaleBytesFor(int64(n)))
		p2, s2 := make([]byte, len(p1)), make([]byte, len(s1))
		if err := c.EncodeBF16(p1, s1, bf); err != nil {
			t.Fatal(err)
		}
		if err := pc.EncodeBF16(p2, s2, bf); err != nil {
			t.Fatal(err)
		}
		compareBytes(t, name+" payload", p1, p2)
		compareBytes(t, name+" scales", s1, s2)
		d1, d2 := make([]uint16, n), make([]uint16, n)
		_ = c.DecodeBF16(d1, p1, s1)
		if err := pc.DecodeBF16(d2, p1, s1); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(d1, d2); diff != "" {
			t.Fatalf("%s DecodeBF16 differs", name)
		}
		if err := pc.EncodeBF16(p2[1:], s2, bf); !errors.Is(err, ErrLength) {
			t.Errorf("%s: short payload error = %v", name, err)
		}
	}
}

func TestShape(t *testing.T) {
	f, _ := dtype.LookupFormat("fp4_mx_block16")
	p, s, err := Shape(f, 4, 8, 128)
	if err != nil || p != 512 || s != 64 {
		t.Errorf("Shape = %d, %d, %v; want 512, 64", p, s, err)
	}
	if _, _, err := Shape(f, 4, 1, 24); !errors.Is(err, ErrLength) {
		t.Errorf("Shape(head_dim 24) error = %v", err)
	}
}

// TestBlockExpBF16: the division-free bf16 scale exponent equals the
// float32 formula for every bf16 magnitude, for every power-of-two codec.
func TestBlockExpBF16(t *testing.T) {
	for _, name := range []string{"fp4_mx_block16", "mxfp4", "mxfp4_ceil", "mxfp8", "mxfp8_ocp"} {
		c := codecFor(t, name).(*pow2Codec)
		for a := range uint16(0x7F80) {
			if got, want := c.blockExpBF16(a), c.blockExp(uint32(a)<<16); got != want {
				t.Fatalf("%s: blockExpBF16(%#04x) = %d, blockExp = %d", name, a, got, want)
			}
		}
	}
}

// TestQuantizeKV: a [2, 2, 32] tensor puts token t, head h, block b's scale
// at t·(heads·headDim/16) + h·2 + b and its payload at (t·2+h)·16 + b·8,
// as SGLang's [tokens, heads, head_dim/2] / [tokens, heads·head_dim/16].
func TestQuantizeKV(t *testing.T) {
	c, _ := ForKV("fp4_mx_block16")
	vec := []float32{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5, -6}
	src := make([]uint16, 2*2*32)
	// token 1, head 1, block 1 holds the vector; everything else is zero
	for i, v := range vec {
		src[(1*2+1)*32+16+i] = BF16FromF32(v)
	}
	p, s := make([]byte, 64), make([]byte, 8)
	if err := QuantizeKV(c, p, s, src, 2, 2, 32); err != nil {
		t.Fatal(err)
	}
	wantS := []byte{0x5e, 0x5e, 0x5e, 0x5e, 0x5e, 0x5e, 0x5e, 0x7f}
	if diff := cmp.Diff(wantS, s); diff != "" {
		t.Errorf("scales (-want +got):\n%s", diff)
	}
	if got := fmt.Sprintf("%x", p[(1*2+1)*16+8:]); got != "21436577a9cbedff" {
		t.Errorf("payload of token 1 head 1 block 1 = %s", got)
	}
	out := make([]uint16, len(src))
	if err := DequantizeKV(c, out, p, s, 2, 2, 32); err != nil {
		t.Fatal(err)
	}
	if BF16ToF32(out[(1*2+1)*32+16]) != 0.5 {
		t.Errorf("dequantized %v", BF16ToF32(out[(1*2+1)*32+16]))
	}
	if err := QuantizeKV(c, p, s, src, 2, 2, 16); !errors.Is(err, ErrLength) {
		t.Errorf("wrong shape error = %v", err)
	}
}
