package quant

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
)

// Overflow is the policy for finite values beyond a format's largest finite
// value and for ±Inf inputs when narrowing.
type Overflow uint8

const (
	// NonSat is the OCP / ml_dtypes / PyTorch ≤ 2.11 behaviour: overflow
	// gives NaN for E4M3FN (sign kept), Inf for E5M2, bf16 and fp16, and the
	// single NaN 0x80 for E4M3FNUZ. NaN inputs keep their sign (E5M2 emits
	// ml_dtypes' quiet NaN 0x7E; PyTorch emits 0x7F there).
	NonSat Overflow = iota
	// SatFinite is NVIDIA's __NV_SATFINITE / cvt.rn.satfinite: finite
	// overflow and ±Inf give ±max finite, NaN gives the canonical NaN with
	// the sign dropped (0x7F for both FP8 formats).
	SatFinite
)

// String returns "nonsat" or "satfinite".
func (o Overflow) String() string {
	switch o {
	case NonSat:
		return "nonsat"
	case SatFinite:
		return "satfinite"
	}
	return fmt.Sprintf("overflow(%d)", uint8(o))
}

// ParseOverflow reads "nonsat" or "satfinite".
func ParseOverflow(s string) (Overflow, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "nonsat", "":
		return NonSat, nil
	case "satfinite", "sat":
		return SatFinite, nil
	}
	return NonSat, fmt.Errorf("%w overflow policy %q (accepted: nonsat, satfinite)", ErrUnknown, s)
}

// Errors reported by the codecs. Every error of the package wraps one of them.
var (
	// ErrUnknown reports an unknown format, dtype or option name.
	ErrUnknown = errors.New("quant: unknown")
	// ErrLength reports buffers whose lengths do not match each other or
	// the format's block geometry; nothing is written in that case.
	ErrLength = errors.New("quant: buffer length mismatch")
	// ErrOption reports an invalid codec option (scale, rule).
	ErrOption = errors.New("quant: invalid option")
)

// Float is a narrow floating-point element format. Every narrowing from
// float32 goes through one integer round-to-nearest-even routine,
// parameterised by the format (Float.Encode).
type Float uint8

// The element formats.
const (
	E4M3FN   Float = iota + 1 // OCP FP8 E4M3 (torch.float8_e4m3fn): max 448, NaN 0x7F/0xFF, no Inf
	E5M2                      // OCP FP8 E5M2 (torch.float8_e5m2): IEEE-like, max 57344
	E4M3FNUZ                  // FP8 E4M3 with bias 8 (torch.float8_e4m3fnuz): max 240, NaN 0x80 only, no -0
	E2M1                      // OCP FP4 E2M1: values 0..6, no Inf, no NaN
	BF16                      // bfloat16
	FP16                      // IEEE binary16
	numFloats
)

type floatParams struct {
	name   string
	bits   int    // total bits
	mant   int    // mantissa bits
	bias   int    // exponent bias
	maxMag uint32 // magnitude code of the largest finite value
	dt     dtype.DType
}

var floats = [numFloats]floatParams{
	E4M3FN:   {"fp8_e4m3fn", 8, 3, 7, 0x7E, dtype.FP8E4M3FN},
	E5M2:     {"fp8_e5m2", 8, 2, 15, 0x7B, dtype.FP8E5M2},
	E4M3FNUZ: {"fp8_e4m3fnuz", 8, 3, 8, 0x7F, dtype.FP8E4M3FNUZ},
	E2M1:     {"fp4_e2m1", 4, 1, 1, 0x7, dtype.FP4E2M1x2},
	BF16:     {"bf16", 16, 7, 127, 0x7F7F, dtype.BFloat16},
	FP16:     {"fp16", 16, 10, 15, 0x7BFF, dtype.Float16},
}

func (f Float) valid() bool { return f > 0 && f < numFloats }

// String returns the format name used in the test vectors ("fp8_e4m3fn").
func (f Float) String() string {
	if !f.valid() {
		return fmt.Sprintf("float(%d)", uint8(f))
	}
	return floats[f].name
}

// Bits returns the width of one code in bits.
func (f Float) Bits() int {
	if !f.valid() {
		return 0
	}
	return floats[f].bits
}

// DType returns the tensor element type of the format.
func (f Float) DType() dtype.DType {
	if !f.valid() {
		return dtype.Invalid
	}
	return floats[f].dt
}

// MaxFinite returns the largest finite value of the format.
func (f Float) MaxFinite() float32 { return f.Decode(uint16(floats[f].maxMag)) }

// FloatFor returns the element format of an element type.
func FloatFor(d dtype.DType) (Float, error) {
	for f := Float(1); f < numFloats; f++ {
		if floats[f].dt == d && f != E2M1 || f == E2M1 && d == dtype.FP4E2M1x2 {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%w float element type %v", ErrUnknown, d)
}

// Encode narrows x to the format with round-to-nearest-even and the given
// overflow policy (docs/quant.md#encoding-from-float32). E2M1 always saturates (it has neither
// Inf nor NaN); it maps +NaN to 0x8 and -NaN to 0x0 as ml_dtypes does.
// bf16 and fp16 NaN follow PyTorch: 0x7FC0 for bf16 (sign dropped), 0x7E00
// with the sign for fp16.
func (f Float) Encode(x float32, ov Overflow) uint16 {
	if !f.valid() {
		return 0
	}
	p := &floats[f]
	u := math.Float32bits(x)
	s := uint16(u >> 31)
	a := u & 0x7FFFFFFF
	sbit := s << (p.bits - 1)
	if a > 0x7F800000 {
		return f.nan(s, ov)
	}
	var mag uint32
	over := a == 0x7F800000
	if !over {
		e := int(a >> 23)
		var sig uint32
		if e == 0 {
			e, sig = -126, a
		} else {
			e, sig = e-127, a&0x7FFFFF|1<<23
		}
		shift := 23 - p.mant
		te := e + p.bias
		if emin := 1 - p.bias; e < emin {
			shift += emin - e
			te = 0
		}
		if shift <= 25 {
			q := sig >> shift
			r := sig & (1<<shift - 1)
			h := uint32(1) << (shift - 1)
			if r > h || r == h && q&1 == 1 {
				q++
			}
			if te == 0 {
				mag = q
			} else {
				mag = uint32(te-1)<<p.mant + q
			}
		}
		over = mag > p.maxMag
	}
	if over {
		if ov == SatFinite || f == E2M1 {
			return sbit | uint16(p.maxMag)
		}
		switch f {
		case E4M3FN:
			return sbit | 0x7F
		case E5M2:
			return sbit | 0x7C
		case E4M3FNUZ:
			return 0x80
		case BF16:
			return sbit | 0x7F80
		case FP16:
			return sbit | 0x7C00
		}
	}
	if f == E4M3FNUZ && mag == 0 {
		return 0
	}
	return sbit | uint16(mag)
}

func (f Float) nan(s uint16, ov Overflow) uint16 {
	switch f {
	case E4M3FN:
		if ov == SatFinite {
			return 0x7F
		}
		return s<<7 | 0x7F
	case E5M2:
		if ov == SatFinite {
			return 0x7F
		}
		return s<<7 | 0x7E
	case E4M3FNUZ:
		return 0x80
	case E2M1:
		return (s ^ 1) << 3
	case BF16:
		return 0x7FC0
	case FP16:
		return s<<15 | 0x7E00
	}
	return 0
}

// Decode returns the exact float32 value of a code (bits above the format's
// width are ignored). NaN codes decode to a quiet NaN with the code's sign
// bit (E4M3FNUZ 0x80 decodes to 0xFFC00000); fp16 NaN keeps its payload.
func (f Float) Decode(c uint16) float32 {
	switch f {
	case E4M3FN:
		return e4m3fnF32[uint8(c)]
	case E5M2:
		return e5m2F32[uint8(c)]
	case E4M3FNUZ:
		return e4m3fnuzF32[uint8(c)]
	case E2M1:
		return e2m1F32[c&0xF]
	case BF16:
		return math.Float32frombits(uint32(c) << 16)
	case FP16:
		return fp16ToF32(c)
	}
	return float32(math.NaN())
}

// decodeSlow computes the value of a code from the format definition; it
// fills the lookup tables.
func (f Float) decodeSlow(c uint16) float32 {
	p := &floats[f]
	s := c >> (p.bits - 1) & 1
	mag := uint32(c) & (1<<(p.bits-1) - 1)
	sign := uint32(s) << 31
	ebits := p.bits - 1 - p.mant
	E := int(mag >> p.mant)
	M := mag & (1<<p.mant - 1)
	emaxField := 1<<ebits - 1
	switch {
	case f == E4M3FNUZ && c&0xFF == 0x80:
		return math.Float32frombits(0xFFC00000)
	case f == E4M3FN && mag == 0x7F:
		return math.Float32frombits(sign | 0x7FC00000)
	case (f == E5M2 || f == BF16 || f == FP16) && E == emaxField:
		if M == 0 {
			return math.Float32frombits(sign | 0x7F800000)
		}
		return math.Float32frombits(sign | 0x7FC00000)
	}
	var v float64
	if E == 0 {
		v = math.Ldexp(float64(M), 1-p.bias-p.mant)
	} else {
		v = math.Ldexp(float64(M|1<<p.mant), E-p.bias-p.mant)
	}
	return math.Float32frombits(sign | math.Float32bits(float32(v)))
}

var (
	e4m3fnF32   [256]float32
	e5m2F32     [256]float32
	e4m3fnuzF32 [256]float32
	e2m1F32     [16]float32
)

func init() {
	for c := range 256 {
		e4m3fnF32[c] = E4M3FN.decodeSlow(uint16(c))
		e5m2F32[c] = E5M2.decodeSlow(uint16(c))
		e4m3fnuzF32[c] = E4M3FNUZ.decodeSlow(uint16(c))
	}
	for c := range 16 {
		e2m1F32[c] = E2M1.decodeSlow(uint16(c))
	}
}

// fp16ToF32 widens an IEEE binary16 code exactly (NaN payload kept, quiet
// bit set).
func fp16ToF32(c uint16) float32 {
	s := uint32(c&0x8000) << 16
	e := uint32(c>>10) & 0x1F
	m := uint32(c & 0x3FF)
	switch {
	case e == 0x1F:
		if m == 0 {
			return math.Float32frombits(s | 0x7F800000)
		}
		return math.Float32frombits(s | 0x7FC00000 | m<<13)
	case e == 0:
		if m == 0 {
			return math.Float32frombits(s)
		}
		// subnormal: m·2^-24, exact in float32
		v := float32(m) * (1.0 / (1 << 24))
		return math.Float32frombits(s | math.Float32bits(v))
	}
	return math.Float32frombits(s | (e+112)<<23 | m<<13)
}

// BF16FromF32 rounds x to bfloat16 with round-to-nearest-even; every NaN
// becomes PyTorch's canonical 0x7FC0.
func BF16FromF32(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7FFFFFFF > 0x7F800000 {
		return 0x7FC0
	}
	return uint16((u + 0x7FFF + (u>>16)&1) >> 16)
}

// BF16ToF32 widens a bfloat16 bit pattern exactly.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// FP16FromF32 rounds x to IEEE binary16 with round-to-nearest-even
// (overflow to Inf, NaN as PyTorch: 0x7E00 with the sign).
func FP16FromF32(x float32) uint16 { return FP16.Encode(x, NonSat) }

// FP16ToF32 widens an IEEE binary16 bit pattern exactly.
func FP16ToF32(c uint16) float32 { return fp16ToF32(c) }

// EncodeE8M0 casts x to E8M0 (torch.float8_e8m0fnu / ml_dtypes): the
// exponent is rounded to nearest with ties up on the significand (1.5 → 2),
// 0, negatives, NaN, Inf and values rounding above 2^127 give 0xFF. Positive
// values below 2^-127 give 0x00 (the format has no zero). MX block scales
// never use this cast; they use floor or ceil of the exponent.
func EncodeE8M0(x float32) uint8 {
	u := math.Float32bits(x)
	if u == 0 || u>>31 != 0 || u >= 0x7F800000 {
		return 0xFF
	}
	e := int(u >> 23)
	frac := u & 0x7FFFFF
	if e == 0 { // float32 subnormal: normalise
		for frac&0x800000 == 0 {
			frac <<= 1
			e--
		}
		e++
		frac &= 0x7FFFFF
	}
	if frac >= 0x400000 { // RNE on a zero-bit mantissa: ties go up (1 is odd)
		e++
	}
	switch {
	case e > 254:
		return 0xFF
	case e < 0:
		return 0
	}
	return uint8(e)
}

// DecodeE8M0 returns 2^(c-127); 0xFF is NaN and 0x00 is the float32
// subnormal 2^-127.
func DecodeE8M0(c uint8) float32 { return e8m0F32(c) }

func e8m0F32(c uint8) float32 {
	switch c {
	case 0xFF:
		return math.Float32frombits(0x7FC00000)
	case 0:
		return math.Float32frombits(0x00400000)
	}
	return math.Float32frombits(uint32(c) << 23)
}

// pow2 returns 2^k as float32 for k in [-149, 127] (exact, subnormal below
// -126), +Inf above and 0 below.
func pow2(k int) float32 {
	switch {
	case k > 127:
		return float32(math.Inf(1))
	case k >= -126:
		return math.Float32frombits(uint32(k+127) << 23)
	case k >= -149:
		return math.Float32frombits(1 << uint(k+149))
	}
	return 0
}
