package main

// AVX2 variants of the kernels, for amd64 CPUs without AVX-512 (AVX2, FMA
// and F16C: x86-64-v3). They keep the contracts of the AVX-512 kernels
// (the same whole-vector and block sizes, the same results bit for bit)
// with 256-bit registers, vector masks instead of mask registers and
// VPBLENDVB instead of masked moves. Only the first sixteen vector
// registers are encodable without EVEX: quant's TestAVX2KernelsVEXOnly
// checks the generated code for that. Constants are 32-byte RODATA values
// used as memory operands, which keeps the register pressure down.

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func genAVX2() {
	for _, g := range fp8Formats {
		fp8EncodeY("fp8Enc"+g.name+"F32AVX2", g, true, false)
		fp8EncodeY("fp8Enc"+g.name+"BF16AVX2", g, false, false)
	}
	fp8EncodeY("fp8ScaledEncE4M3FNF32AVX2", fp8Formats[0], true, true)
	fp8EncodeY("fp8ScaledEncE4M3FNBF16AVX2", fp8Formats[0], false, true)
	for _, g := range fp8Formats {
		fp8DecodeY("fp8Dec"+g.name+"BF16AVX2", g, false)
		fp8DecodeF16("fp8Dec"+g.name+"F32AVX2", g, false, false)
	}
	fp8DecodeY("fp8ScaledDecE4M3FNBF16AVX2", fp8Formats[0], true)
	fp8DecodeF16("fp8ScaledDecE4M3FNF32AVX2", fp8Formats[0], true, false)
	bf16FromF32Y()
	f32FromBF16Y()
	fp16FromF32Y("fp16FromF32AVX2", false)
	fp16FromF32Y("fp16FromBF16AVX2", true)
	f32FromFP16Y()
	amaxY("amaxF32AVX2", false)
	amaxWY()
	for _, k := range []int{1, 2, 4} {
		amaxTreeWY(k)
	}
	pow2ScalesY()
	intRuleScalesY()
	intScalesY()
	nvfp4ScalesY()
	e2m1EncodeY("e2m1ShiftEncBF16x16AVX2", true, false, true, true)
	e2m1EncodeY("e2m1ShiftEncBF16x32AVX2", true, false, false, true)
	e2m1EncodeY("e2m1ShiftUpEncBF16x16AVX2", true, false, true, false)
	e2m1EncodeY("e2m1ShiftUpEncBF16x32AVX2", true, false, false, false)
	e2m1EncodeY("e2m1ShiftEncF32x16AVX2", false, false, true, true)
	e2m1EncodeY("e2m1ShiftEncF32x32AVX2", false, false, false, true)
	e2m1EncodeY("e2m1MulEncF32x16AVX2", false, true, true, true)
	e2m1EncodeY("e2m1MulEncBF16x16AVX2", true, true, true, true)
	for _, bf16 := range []bool{false, true} {
		in := "F32"
		if bf16 {
			in = "BF16"
		}
		intEncodeY("int8Enc"+in+"AVX2", bf16, false)
		intEncodeY("int4Enc"+in+"AVX2", bf16, true)
		intDecodeY("int8Dec"+in+"AVX2", bf16, false)
		if bf16 {
			int4DecodeBF16Y()
			e2m1DecodeBF16Y("e2m1DecBF16x16AVX2", true)
			e2m1DecodeBF16Y("e2m1DecBF16x32AVX2", false)
		} else {
			intDecodeY("int4Dec"+in+"AVX2", bf16, true)
			e2m1DecodeF16Y("e2m1DecF32AVX2")
		}
	}
}

var yConsts = map[string]Mem{}

// cData returns a 32-byte RODATA value of eight dwords.
func cData(v [8]uint32) Mem {
	name := "avx2c"
	for _, x := range v {
		name += fmt.Sprintf("%08x", x)
	}
	if v == [8]uint32{v[0], v[0], v[0], v[0], v[0], v[0], v[0], v[0]} {
		name = fmt.Sprintf("avx2c%08x", v[0])
	}
	if m, ok := yConsts[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for i, x := range v {
		DATA(4*i, U32(x))
	}
	yConsts[name] = m
	return m
}

// cY is a 32-bit constant in every dword of a 32-byte value.
func cY(v uint32) Mem { return cData([8]uint32{v, v, v, v, v, v, v, v}) }

// cW is a 16-bit constant in every word.
func cW(v uint16) Mem { return cY(uint32(v) | uint32(v)<<16) }

// rowY is row i of a parameter block of 32-byte rows.
func rowY(p reg.Register, i int) Mem { return Mem{Base: p, Disp: 32 * i} }

// packDW packs two registers of eight dwords (each ≤ 0xFFFF) into one of
// sixteen words in order.
func packDW(lo, hi reg.VecVirtual) reg.VecVirtual {
	r := YMM()
	VPACKUSDW(hi, lo, r)
	VPERMQ(U8(0xD8), r, r)
	return r
}

// bf16RoundY rounds eight float32 (bits) to bf16 in the low halves of the
// dwords (nearest even, NaN 0x7FC0), in place.
func bf16RoundY(u reg.VecVirtual) {
	l, a := YMM(), YMM()
	VPSRLD(U8(16), u, l)
	VPAND(cY(1), l, l)
	VPADDD(cY(0x7FFF), l, l)
	VPADDD(u, l, l)
	VPSRLD(U8(16), l, l)
	VPAND(cY(0x7FFFFFFF), u, a)
	VPCMPGTD(cY(0x7F800000), a, a)
	VPBLENDVB(a, cY(0x7FC0), l, u)
}

// loadF32Y loads eight float32 (or bf16, widened) values at src+8·i
// elements into a new register.
func loadF32Y(src reg.Register, i int, bf16 bool) reg.VecVirtual {
	u := YMM()
	if bf16 {
		VPMOVZXWD(Mem{Base: src, Disp: 16 * i}, u)
		VPSLLD(U8(16), u, u)
	} else {
		VMOVDQU(Mem{Base: src, Disp: 32 * i}, u)
	}
	return u
}

// nibblesY loads four bytes at m as eight dword nibbles (low nibble first).
func nibblesY(m Mem) reg.VecVirtual {
	b, t := YMM(), YMM()
	VPMOVZXBQ(m, b)
	VPSLLQ(U8(28), b, t)
	VPOR(t, b, b)
	VPAND(cData([8]uint32{15, 15, 15, 15, 15, 15, 15, 15}), b, b)
	return b
}

// fp8Geom is the geometry of an FP8 format, baked into its AVX2 encoder.
type fp8Geom struct {
	name    string
	mant    int    // mantissa bits
	bias    int    // exponent bias
	ovT     uint16 // first magnitude code that is not finite
	negZero bool   // the format has −0
}

var fp8Formats = []fp8Geom{
	{"E4M3FN", 3, 7, 0x7F, true},
	{"E5M2", 2, 15, 0x7C, true},
	{"E4M3FNUZ", 3, 8, 0x80, false},
}

// fp8EncodeY emits func(dst *byte, src *T, n int, shifts *int32, bs int, p *uint16):
// fp8EncodeW's contract (bs a multiple of 32; with scaled, shifts[b] is
// the block scale as e<<7, otherwise shifts is not read) for one format
// with AVX2, 32 elements per step in two halves of sixteen 16-bit lanes.
// p points at 16 words whose bytes 0..5 (and 16..21) are the codes of
// +Inf, −Inf, +NaN, −NaN, +overflow, −overflow.
//
// Normal results round the bf16 bits in integer lanes (drop 7 − m bits,
// nearest even, the carry going into the exponent); results below the
// normal range come from the FPU without a branch: |x| + 2^(24 − bias − m)
// in float32 rounds |x| to a multiple of the format's subnormal step, and
// the low bits of the sum are the code (float32 input keeps its sticky low
// half, so the rounding is exact). Lanes that may overflow or are not
// finite take a branch to codes from p.
func fp8EncodeY(name string, g fp8Geom, f32, scaled bool) {
	sig := "func(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16)"
	if f32 {
		sig = "func(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " encodes bf16 or float32 (by name) to " + g.name + " by integer and FPU round-to-nearest-even with AVX2, 32 elements per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	shifts := Load(Param("shifts"), GP64())
	bs := Load(Param("bs"), GP64())
	p := Load(Param("p"), GP64())
	zero := YMM()
	VPXOR(zero, zero, zero)

	Label(name + "_block")
	var shift reg.VecVirtual
	if scaled {
		shift = YMM()
		VPBROADCASTW(Mem{Base: shifts}, shift)
	}
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	if f32 {
		prefetchAhead(src, 128)
	} else {
		prefetchAhead(src, 64)
	}
	var codes, us [2]reg.VecVirtual
	var rare []func()
	for h := range 2 {
		u := YMM()
		var stOne reg.VecVirtual
		if f32 {
			// top halves as bf16 and the sticky bit (low half nonzero)
			x0, x1, t := YMM(), YMM(), YMM()
			VMOVDQU(Mem{Base: src, Disp: 64 * h}, x0)
			VMOVDQU(Mem{Base: src, Disp: 64*h + 32}, x1)
			VPSRLD(U8(16), x0, u)
			VPSRLD(U8(16), x1, t)
			VPACKUSDW(t, u, u)
			VPERMQ(U8(0xD8), u, u)
			VPAND(cY(0xFFFF), x0, x0)
			VPMINUD(cY(1), x0, x0)
			VPAND(cY(0xFFFF), x1, x1)
			VPMINUD(cY(1), x1, x1)
			stOne = packDW(x0, x1)
		} else {
			VMOVDQU(Mem{Base: src, Disp: 32 * h}, u)
		}
		lbl := fmt.Sprintf("%s_h%d", name, h)
		var fix func()
		codes[h], fix = fp8EncHalfY(lbl, g, u, stOne, shift, zero, p)
		rare = append(rare, fix)
		us[h] = u
	}
	// bytes, and the signs by VPACKSSWB (bit 7 survives the saturation):
	// kept for nonzero codes, and for zero where −0 exists
	sg := YMM()
	VPACKUSWB(codes[1], codes[0], codes[0])
	VPACKSSWB(us[1], us[0], sg)
	VPAND(cY(0x80808080), sg, sg)
	if !g.negZero {
		z := YMM()
		VPCMPEQB(zero, codes[0], z)
		VPANDN(sg, z, sg)
	}
	VPOR(sg, codes[0], codes[0])
	VPERMQ(U8(0xD8), codes[0], codes[0])
	VMOVDQU(codes[0], Mem{Base: dst})
	if f32 {
		ADDQ(U8(128), src)
	} else {
		ADDQ(U8(64), src)
	}
	ADDQ(U8(32), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	if scaled {
		ADDQ(U8(4), shifts)
	}
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
	for _, fix := range rare {
		fix()
	}
}

// fp8EncHalfY encodes sixteen bf16 words u (stOne: 1 in lanes with a
// sticky bit, float32 input only; shift: the block's e<<7 or nil) and
// returns the codes without their sign as words (the caller ORs the sign
// in; the codes of overflow and non-finite lanes already hold theirs), and
// the out-of-line code of the rare lanes (to be emitted after the
// function's RET).
func fp8EncHalfY(lbl string, g fp8Geom, u, stOne, shift, zero reg.VecVirtual, p reg.Register) (reg.VecVirtual, func()) {
	drop := 7 - g.mant
	off := uint16(127-g.bias) << 7
	half := uint16(1) << (drop - 1)
	normMin := uint16(128-g.bias) << 7
	ovB := off + g.ovT<<drop - half // smallest |x| bits that can round to ovT
	magic := uint32(127+24-g.bias-g.mant) << 23

	a0 := YMM()
	VPAND(cW(0x7FFF), u, a0)
	a := a0
	if shift != nil {
		a = YMM()
		VPSUBW(shift, a0, a)
		VPMAXSW(zero, a, a)
	}
	// normal result: drop bits with round-to-nearest-even
	t, lsb := YMM(), YMM()
	VPSUBW(cW(off), a, t)
	VPSRLW(U8(drop), t, lsb)
	VPAND(cW(1), lsb, lsb)
	if stOne != nil {
		VPOR(stOne, lsb, lsb)
	}
	VPADDW(cW(half-1), t, t)
	VPADDW(lsb, t, t)
	VPSRLW(U8(drop), t, t)
	// below the normal range: the FPU rounds to the subnormal step
	lo, hi := YMM(), YMM()
	st := zero
	if stOne != nil {
		st = stOne
	}
	VPUNPCKLWD(a, st, lo) // dwords a<<16 | sticky
	VPUNPCKHWD(a, st, hi)
	VADDPS(cY(magic), lo, lo)
	VADDPS(cY(magic), hi, hi)
	VPSUBD(cY(magic), lo, lo)
	VPSUBD(cY(magic), hi, hi)
	mag, kNorm := YMM(), YMM()
	VPACKUSDW(hi, lo, mag)
	VPCMPGTW(cW(normMin-1), a, kNorm)
	VPBLENDVB(kNorm, t, mag, mag)
	// lanes that may overflow, or are not finite: out of line
	kr := YMM()
	VPCMPGTW(cW(ovB-1), a, kr)
	if shift != nil {
		nf := YMM()
		VPCMPGTW(cW(0x7F7F), a0, nf)
		VPOR(nf, kr, kr)
	}
	VPTEST(kr, kr)
	JNZ(LabelRef(lbl + "_rare"))
	Label(lbl + "_done")

	fix := func() {
		Label(lbl + "_rare")
		// overflow and non-finite inputs: the codes from the table in p,
		// sign included
		kOv, kNF := YMM(), YMM()
		VPCMPGTW(cW(g.ovT-1), mag, kOv)
		VPCMPGTW(cW(0x7F7F), a0, kNF)
		idx, i4, spec, ov := YMM(), YMM(), YMM(), YMM()
		VPSRLW(U8(15), u, idx)
		VPOR(cW(0x8004), idx, i4) // high bytes 0x80: VPSHUFB writes 0
		VMOVDQU(Mem{Base: p}, spec)
		VPSHUFB(i4, spec, ov)
		VPBLENDVB(kOv, ov, mag, mag)
		kNaN := YMM()
		VPCMPGTW(cW(0x7F80), a0, kNaN)
		if stOne != nil {
			// a float32 NaN may have the top half of Inf
			s := YMM()
			VPCMPGTW(zero, stOne, s)
			VPAND(kNF, s, s)
			VPOR(s, kNaN, kNaN)
		}
		VPAND(cW(2), kNaN, kNaN)
		VPOR(kNaN, idx, idx)
		VPOR(cW(0x8000), idx, idx)
		VPSHUFB(idx, spec, ov)
		VPBLENDVB(kNF, ov, mag, mag)
		// these codes hold their sign (a NaN's may not be the input's):
		// clear it in u, from which the caller takes the others
		VPOR(kNF, kOv, kOv)
		VPANDN(u, kOv, u)
		JMP(LabelRef(lbl + "_done"))
	}
	return mag, fix
}

// fp8DecodeY emits func(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int):
// fp8Decode's contract (n a positive multiple of bs, bs of 32; with
// scaled, block b's values are multiplied by 2^k, k = scales[b] − 127 in
// [−117, 119], by adding k<<7 to the bf16 bits of every finite nonzero
// value; blocks with other k are left to the caller; without scaled,
// scales is not read) for one format with AVX2, 32 codes per step, into
// bf16 (every FP8 value is exact in bf16; float32 output takes
// fp8DecodeF16). Magnitude codes from 16 up shift into bf16 bits
// (exponent rebiased); the sixteen smallest (the subnormals among them)
// come from two VPSHUFB tables of their bf16 bytes; Inf and NaN codes take
// tab[code] lane by lane, out of line.
func fp8DecodeY(name string, g fp8Geom, scaled bool) {
	name = ntName(name)
	TEXT(name, NOSPLIT, "func(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int)")
	Pragma("noescape")
	Doc(name + " decodes " + g.name + " codes in integer lanes with AVX2, 32 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	tab := Load(Param("tab"), GP64())
	adds := Load(Param("scales"), GP64())
	bs := Load(Param("bs"), GP64())
	// the bf16 bits of the sixteen smallest magnitudes, low and high bytes
	var tl, th [8]uint32
	for m := range 16 {
		var v float64
		if e := m >> g.mant; e == 0 {
			v = math.Ldexp(float64(m), 1-g.bias-g.mant)
		} else {
			v = math.Ldexp(1+float64(m&(1<<g.mant-1))/float64(int(1)<<g.mant), e-g.bias)
		}
		b := math.Float32bits(float32(v)) >> 16
		tl[m/4] |= (b & 0xFF) << (8 * (m % 4))
		th[m/4] |= (b >> 8) << (8 * (m % 4))
	}
	for i := range 4 {
		tl[4+i], th[4+i] = tl[i], th[i]
	}
	TL, TH := YMM(), YMM()
	VMOVDQU(cData(tl), TL)
	VMOVDQU(cData(th), TH)
	zero := YMM()
	VPXOR(zero, zero, zero)
	off := uint16(127-g.bias) << 7

	Label(name + "_block")
	var add reg.VecVirtual
	if scaled {
		k := GP64()
		MOVBQZX(Mem{Base: adds}, k)
		SUBQ(U8(127), k)
		SHLQ(U8(7), k)
		add = YMM()
		VMOVD(k.As32(), add.AsX())
		VPBROADCASTW(add.AsX(), add)
	}
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	prefetchAhead(src, 32)
	var fixes []func()
	for h := range 2 {
		c, m, w, lo, hi, big := YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
		VPMOVZXBW(Mem{Base: src, Disp: 16 * h}, c)
		VPAND(cW(0x7F), c, m)
		VPSLLW(U8(7-g.mant), m, w)
		VPADDW(cW(off), w, w)
		VPSHUFB(m, TL, lo)
		VPSHUFB(m, TH, hi)
		VPSLLW(U8(8), hi, hi)
		VPOR(hi, lo, lo)
		VPCMPGTW(cW(15), m, big)
		VPBLENDVB(big, w, lo, w)
		if scaled {
			z := YMM()
			VPCMPEQW(zero, m, z)
			VPANDN(add, z, z)
			VPADDW(z, w, w)
		}
		sg := YMM()
		VPSLLW(U8(8), c, sg)
		VPAND(cW(0x8000), sg, sg)
		VPOR(sg, w, w)
		sp := YMM()
		switch g.name {
		case "E4M3FN":
			VPCMPEQW(cW(0x7F), m, sp)
		case "E5M2":
			VPCMPGTW(cW(0x7B), m, sp)
		default:
			VPCMPEQW(cW(0x80), c, sp)
		}
		if !storeNT(w, Mem{Base: dst, Disp: 32 * h}) {
			VMOVDQU(w, Mem{Base: dst, Disp: 32 * h})
		}
		lbl := fmt.Sprintf("%s_h%d", name, h)
		VPTEST(sp, sp)
		JNZ(LabelRef(lbl + "_fix"))
		Label(lbl + "_next")
		fixes = append(fixes, func() {
			// Inf and NaN codes: the table value, lane by lane
			Label(lbl + "_fix")
			msk := GP64()
			VPMOVMSKB(sp, msk.As32())
			ANDQ(U32(0x55555555), msk)
			Label(lbl + "_fixlane")
			lane, code, v, t := GP64(), GP64(), GP64(), GP64()
			BSFQ(msk, lane)
			SHRQ(U8(1), lane)
			MOVBQZX(Mem{Base: src, Index: lane, Scale: 1, Disp: 16 * h}, code)
			MOVWQZX(Mem{Base: tab, Index: code, Scale: 2}, v)
			MOVW(v.As16(), Mem{Base: dst, Index: lane, Scale: 2, Disp: 32 * h})
			LEAQ(Mem{Base: msk, Disp: -1}, t)
			ANDQ(t, msk)
			JNZ(LabelRef(lbl + "_fixlane"))
			JMP(LabelRef(lbl + "_next"))
		})
	}
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	if scaled {
		INCQ(adds)
	}
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
	for _, f := range fixes {
		f()
	}
}

// bf16FromF32Y is bf16FromF32 with AVX2.
func bf16FromF32Y() {
	name := "bf16FromF32AVX2"
	TEXT(name, NOSPLIT, "func(dst *uint16, src *float32, n int)")
	Pragma("noescape")
	Doc(name + " rounds float32 to bf16 (nearest even, NaN 0x7FC0) with AVX2, 16 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label(name + "_loop")
	u0 := loadF32Y(src, 0, false)
	u1 := loadF32Y(src, 1, false)
	bf16RoundY(u0)
	bf16RoundY(u1)
	VMOVDQU(packDW(u0, u1), Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// f32FromBF16Y is f32FromBF16 with AVX2.
func f32FromBF16Y() {
	name := "f32FromBF16AVX2"
	TEXT(name, NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Pragma("noescape")
	Doc(name + " widens bf16 to float32 with AVX2, 16 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label(name + "_loop")
	for i := range 2 {
		u := loadF32Y(src, i, true)
		VMOVDQU(u, Mem{Base: dst, Disp: 32 * i})
	}
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// fp16FromF32Y is fp16FromF32 with AVX2 and F16C.
func fp16FromF32Y(name string, bf16 bool) {
	sig := "func(dst *uint16, src *float32, n int)"
	if bf16 {
		sig = "func(dst *uint16, src *uint16, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " rounds float32 or bf16 (by name) to fp16 (nearest even, NaN 0x7E00 with sign) with AVX2, 16 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label(name + "_loop")
	var k, s [2]reg.VecVirtual
	h := YMM()
	for i := range 2 {
		u := loadF32Y(src, i, bf16)
		if i == 0 {
			VCVTPS2PH(U8(0), u, h.AsX())
		} else {
			hx := XMM()
			VCVTPS2PH(U8(0), u, hx)
			VINSERTI128(U8(1), hx, h, h)
		}
		k[i], s[i] = YMM(), YMM()
		VPAND(cY(0x7FFFFFFF), u, k[i])
		VPCMPGTD(cY(0x7F800000), k[i], k[i])
		VPSRLD(U8(16), u, s[i])
		VPAND(cY(0x8000), s[i], s[i])
		VPOR(cY(0x7E00), s[i], s[i])
	}
	km := YMM()
	VPACKSSDW(k[1], k[0], km)
	VPERMQ(U8(0xD8), km, km)
	sw := packDW(s[0], s[1])
	VPBLENDVB(km, sw, h, h)
	VMOVDQU(h, Mem{Base: dst})
	if bf16 {
		ADDQ(U8(32), src)
	} else {
		ADDQ(U8(64), src)
	}
	ADDQ(U8(32), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// f32FromFP16Y is f32FromFP16 with F16C.
func f32FromFP16Y() {
	name := "f32FromFP16AVX2"
	TEXT(name, NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Pragma("noescape")
	Doc(name + " widens fp16 to float32 with F16C, 16 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label(name + "_loop")
	for i := range 2 {
		u := YMM()
		VCVTPH2PS(Mem{Base: src, Disp: 16 * i}, u)
		VMOVUPS(u, Mem{Base: dst, Disp: 32 * i})
	}
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// amaxY is amax with AVX2 (bs a multiple of 16).
func amaxY(name string, bf16 bool) {
	sig := "func(out *uint32, src *float32, nb int, bs int)"
	if bf16 {
		sig = "func(out *uint32, src *uint16, nb int, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " writes the largest magnitude bits of each block of float32 or bf16 (by name) values with AVX2.")
	out := Load(Param("out"), GP64())
	src := Load(Param("src"), GP64())
	nb := Load(Param("nb"), GP64())
	bs := Load(Param("bs"), GP64())
	Label(name + "_block")
	m0, m1 := YMM(), YMM()
	VPXOR(m0, m0, m0)
	VPXOR(m1, m1, m1)
	cnt := GP64()
	MOVQ(bs, cnt)
	Label(name + "_loop")
	if bf16 {
		prefetchAhead(src, 32)
	} else {
		prefetchAhead(src, 64)
	}
	for i, m := range []reg.VecVirtual{m0, m1} {
		u := loadF32Y(src, i, bf16)
		VPAND(cY(0x7FFFFFFF), u, u)
		VPMAXUD(u, m, m)
	}
	if bf16 {
		ADDQ(U8(32), src)
	} else {
		ADDQ(U8(64), src)
	}
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	VPMAXUD(m1, m0, m0)
	x, t := XMM(), XMM()
	VEXTRACTI128(U8(1), m0, x)
	VPMAXUD(m0.AsX(), x, x)
	VPSHUFD(U8(0x4E), x, t)
	VPMAXUD(t, x, x)
	VPSHUFD(U8(0xB1), x, t)
	VPMAXUD(t, x, x)
	VMOVD(x, Mem{Base: out})
	ADDQ(U8(4), out)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// amaxWY emits func(out *uint32, src *uint16, nb int, bs int) for bf16
// blocks of bs (a multiple of 16) in 16-bit lanes: the block's largest
// magnitude by VPMAXUW, then VPHMINPOSUW on the complement; out[b] as
// float32 bits (bf16 bits << 16).
func amaxWY() {
	name := "amaxBF16AVX2"
	TEXT(name, NOSPLIT, "func(out *uint32, src *uint16, nb int, bs int)")
	Pragma("noescape")
	Doc(name + " writes the largest magnitude bits of each block of bf16 values with AVX2, 16 lanes per step.")
	out := Load(Param("out"), GP64())
	src := Load(Param("src"), GP64())
	nb := Load(Param("nb"), GP64())
	bs := Load(Param("bs"), GP64())
	mask := YMM()
	VMOVDQU(cW(0x7FFF), mask)
	Label(name + "_block")
	prefetchAhead(src, 32)
	m := YMM()
	VPAND(Mem{Base: src}, mask, m)
	ADDQ(U8(32), src)
	cnt := GP64()
	MOVQ(bs, cnt)
	SUBQ(U8(16), cnt)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_loop")
	prefetchAhead(src, 32)
	u := YMM()
	VPAND(Mem{Base: src}, mask, u)
	VPMAXUW(u, m, m)
	ADDQ(U8(32), src)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_reduce")
	x := XMM()
	VEXTRACTI128(U8(1), m, x)
	VPMAXUW(m.AsX(), x, x)
	VPXOR(cW(0xFFFF), x, x) // the complement's minimum is the maximum
	VPHMINPOSUW(x, x)
	r := GP32()
	VMOVD(x, r)
	NOTL(r)
	SHLL(U8(16), r)
	MOVL(r, Mem{Base: out})
	ADDQ(U8(4), out)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// amaxTreeWY emits func(out *uint32, src *uint16, nb int): the largest
// magnitudes of bf16 blocks of 16·k, eight blocks per step (nb a positive
// multiple of 8): each block's vector maximum, then a three-level shuffle
// tree that leaves the eight maxima in one register (as float32 bits).
func amaxTreeWY(k int) {
	name := fmt.Sprintf("amaxBF16x8b%dAVX2", 16*k)
	TEXT(name, NOSPLIT, "func(out *uint32, src *uint16, nb int)")
	Pragma("noescape")
	Doc(name + " writes the largest magnitude bits of bf16 blocks with AVX2, eight blocks per step.")
	out := Load(Param("out"), GP64())
	src := Load(Param("src"), GP64())
	nb := Load(Param("nb"), GP64())
	mask, perm := YMM(), YMM()
	VMOVDQU(cW(0x7FFF), mask)
	VMOVDQU(cData([8]uint32{0, 4, 2, 6, 1, 5, 3, 7}), perm)
	Label(name + "_group")
	prefetchAhead(src, 256*k)
	var v [8]reg.VecVirtual
	for b := range v {
		v[b] = YMM()
		VPAND(Mem{Base: src, Disp: 32 * k * b}, mask, v[b])
		for i := 1; i < k; i++ {
			t := YMM()
			VPAND(Mem{Base: src, Disp: 32 * (k*b + i)}, mask, t)
			VPMAXUW(t, v[b], v[b])
		}
	}
	// lanes of two blocks: [A.lo B.lo] and [A.hi B.hi]
	var r [4]reg.VecVirtual
	for i := range r {
		x, y := YMM(), YMM()
		VPERM2I128(U8(0x20), v[2*i+1], v[2*i], x)
		VPERM2I128(U8(0x31), v[2*i+1], v[2*i], y)
		VPMAXUW(y, x, x)
		r[i] = x
	}
	// quadwords of four blocks: [A C | B D] and [E G | F H]
	var q [2]reg.VecVirtual
	for i := range q {
		x, y := YMM(), YMM()
		VPUNPCKLQDQ(r[2*i+1], r[2*i], x)
		VPUNPCKHQDQ(r[2*i+1], r[2*i], y)
		VPMAXUW(y, x, x)
		t := YMM()
		VPSHUFD(U8(0xB1), x, t)
		VPMAXUW(t, x, x)
		VPSRLD(U8(16), x, t)
		VPMAXUW(t, x, x)
		q[i] = x
	}
	// even dwords of the first, odd of the second: A E C G B F D H
	m := YMM()
	VPBLENDD(U8(0xAA), q[1], q[0], m)
	VPSLLD(U8(16), m, m)
	VPERMD(m, perm, m)
	VMOVDQU(m, Mem{Base: out})
	ADDQ(U8(32), out)
	ADDQ(U32(256*k), src)
	SUBQ(U8(8), nb)
	JNZ(LabelRef(name + "_group"))
	VZEROUPPER()
	RET()
}

// lowBytes gathers byte 0 of each dword of v into bytes 0..3 (lane 0) and
// 4..7 (lane 1) of the result's low quadword.
func lowBytes(v reg.VecVirtual) reg.VecVirtual {
	sel := cData([8]uint32{0x0C080400, 0x80808080, 0x80808080, 0x80808080, 0x80808080, 0x0C080400, 0x80808080, 0x80808080})
	VPSHUFB(sel, v, v)
	x := XMM()
	VEXTRACTI128(U8(1), v, x)
	VPOR(v.AsX(), x, x)
	return x
}

// pow2ScalesY is pow2Scales with AVX2.
func pow2ScalesY() {
	name := "pow2ScalesAVX2"
	TEXT(name, NOSPLIT, "func(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32)")
	Pragma("noescape")
	Doc(name + " computes ceil-rule block scales, shifts and sign limits from block maxima with AVX2, 16 per step.")
	scales := Load(Param("scales"), GP64())
	sh := Load(Param("sh"), GP64())
	bad := Load(Param("bad"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	p := Load(Param("p"), GP64())
	k := newPow2KY(p)
	ztOr := YMM()
	VPBROADCASTD(Mem{Base: p, Disp: 28}, ztOr)
	Label(name + "_loop")
	bits := GP64()
	XORQ(bits, bits)
	for h := range 2 {
		a := YMM()
		VMOVDQU(Mem{Base: amax, Disp: 32 * h}, a)
		x := k.exp(a, scales, bits, h)
		// shifts, sign limits
		s7 := YMM()
		VPSLLD(U8(7), x, s7)
		VMOVDQU(s7, Mem{Base: sh, Disp: 32 * h})
		one, zt := YMM(), YMM()
		VMOVDQU(cY(1), one)
		VPSUBD(one, x, x)
		VPSLLVD(x, one, zt)
		VPOR(ztOr, zt, zt)
		VMOVDQU(zt, Mem{Base: sh, Disp: 256 + 32*h})
	}
	MOVW(bits.As16(), Mem{Base: bad})
	ADDQ(U8(64), amax)
	ADDQ(U8(64), sh)
	ADDQ(U8(16), scales)
	ADDQ(U8(2), bad)
	SUBQ(U8(16), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// intRuleScalesY emits func(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32):
// the integer block-exponent rules of bf16 maxima (OCP's floor rule and
// SGLang's bf16 rule) for m maxima (float32 bits of bf16 values; m a
// positive multiple of 16): e = max(E + p[0] + (f + p[1])>>7, p[2]) for
// the bf16 bits h = E<<7 | f, the scale byte e+127, sh[b] = e<<7, and bit
// b of the words at bad for h ≥ 0x7F80 or e outside [p[3], p[4]].
func intRuleScalesY() {
	name := "intRuleScalesAVX2"
	TEXT(name, NOSPLIT, "func(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32)")
	Pragma("noescape")
	Doc(name + " computes integer-rule block scales and shifts from bf16 block maxima with AVX2, 16 per step.")
	scales := Load(Param("scales"), GP64())
	sh := Load(Param("sh"), GP64())
	bad := Load(Param("bad"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	p := Load(Param("p"), GP64())
	bc := func(i int) reg.VecVirtual {
		z := YMM()
		VPBROADCASTD(Mem{Base: p, Disp: 4 * i}, z)
		return z
	}
	c0, r, lo, badLo, badHi := bc(0), bc(1), bc(2), bc(3), bc(4)
	Label(name + "_loop")
	bits := GP64()
	XORQ(bits, bits)
	for h := range 2 {
		a, x, f := YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: amax, Disp: 32 * h}, a)
		VPSRLD(U8(16), a, a)
		VPSRLD(U8(7), a, x)
		VPADDD(c0, x, x)
		VPAND(cY(0x7F), a, f)
		VPADDD(r, f, f)
		VPSRLD(U8(7), f, f)
		VPADDD(f, x, x)
		VPMAXSD(lo, x, x)
		k0 := YMM()
		VPCMPGTD(cY(0x7F7F), a, k0)
		storeExpY(k0, x, badLo, badHi, scales, bits, h)
		VPSLLD(U8(7), x, x)
		VMOVDQU(x, Mem{Base: sh, Disp: 32 * h})
	}
	MOVW(bits.As16(), Mem{Base: bad})
	ADDQ(U8(64), amax)
	ADDQ(U8(64), sh)
	ADDQ(U8(16), scales)
	ADDQ(U8(2), bad)
	SUBQ(U8(16), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// intScalesY is intScales with AVX2 and F16C.
func intScalesY() {
	name := "intScalesAVX2"
	TEXT(name, NOSPLIT, "func(s16 *uint16, div *float32, amax *uint32, m int, qmax *float32, rcp *float32)")
	Pragma("noescape")
	Doc(name + " computes the fp16 scales of integer groups from their maxima with AVX2, 8 per step.")
	s16 := Load(Param("s16"), GP64())
	div := Load(Param("div"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	qp := Load(Param("qmax"), GP64())
	rcp := Load(Param("rcp"), GP64())
	q := YMM()
	VBROADCASTSS(Mem{Base: qp}, q)
	Label(name + "_loop")
	a := YMM()
	VMOVDQU(Mem{Base: amax}, a)
	f := intScaleY(a, q, Mem{Base: s16})
	VMOVUPS(f, Mem{Base: div})
	// RN(1/s) for intEncodeY's products
	r := YMM()
	VMOVUPS(cY(0x3F800000), r)
	VDIVPS(f, r, r)
	VMOVUPS(r, Mem{Base: rcp})
	ADDQ(U8(32), amax)
	ADDQ(U8(32), div)
	ADDQ(U8(32), rcp)
	ADDQ(U8(16), s16)
	SUBQ(U8(8), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// intEncodeY emits func(dst *byte, src *T, n int, div *float32, bs int, rcp *float32):
// intEncode's contract with AVX2, 32 elements per step (bs a multiple of
// 32). A group whose div is finite and positive (the common case: div is
// the fp16 scale of the group's largest magnitude) first takes the
// products by rcp[b] = RN(1/div[b]) as intEncode does, and is redone with
// VDIVPS when a product lies within 2^-14 of a half-integer or is not
// finite; any other group takes a loop of quotients that gives NaN
// quotients the code 0.
func intEncodeY(name string, bf16, four bool) {
	sig := "func(dst *byte, src *float32, n int, div *float32, bs int, rcp *float32)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, div *float32, bs int, rcp *float32)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " quantizes float32 or bf16 (by name) groups to symmetric integers with AVX2, 32 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	div := Load(Param("div"), GP64())
	bs := Load(Param("bs"), GP64())
	rcp := Load(Param("rcp"), GP64())
	qmax := float32(127)
	if four {
		qmax = 7
	}
	perm := YMM()
	VMOVDQU(cData([8]uint32{0, 4, 1, 5, 2, 6, 3, 7}), perm)
	zero := XMM()
	VXORPS(zero, zero, zero)
	src0, dst0, cnt := GP64(), GP64(), GP64()

	Label(name + "_block")
	d := YMM()
	VBROADCASTSS(Mem{Base: div}, d)
	MOVQ(bs, cnt)
	UCOMISS(zero, d.AsX())
	JBE(LabelRef(name + "_slow")) // d ≤ 0 or NaN
	UCOMISS(cY(math.Float32bits(math.MaxFloat32)), d.AsX())
	JA(LabelRef(name + "_slow")) // d = +Inf
	r := YMM()
	VBROADCASTSS(Mem{Base: rcp}, r)
	MOVQ(src, src0)
	MOVQ(dst, dst0)
	far := YMM()
	VPXOR(far, far, far)

	// mode: 0 the products (far), 1 the quotients, 2 the quotients with
	// NaN → 0
	body := func(loop string, mode int) {
		Label(loop)
		var q [4]reg.VecVirtual
		for i := range 4 {
			q[i] = loadF32Y(src, i, bf16)
			var k reg.VecVirtual
			if mode == 0 {
				// k = rint(p); |p − k| (exact) into the running maximum
				// as integer bits (NaN above every finite value)
				t := YMM()
				VMULPS(r, q[i], q[i])
				VROUNDPS(U8(8), q[i], t) // nearest even, no precision exception
				VSUBPS(t, q[i], q[i])
				VANDPS(cY(0x7FFFFFFF), q[i], q[i])
				VPMAXUD(q[i], far, far)
				q[i] = t
			} else {
				VDIVPS(d, q[i], q[i])
			}
			if mode == 2 {
				k = YMM()
				VCMPPS(U8(7), q[i], q[i], k) // ordered: not NaN
			}
			VMAXPS(cY(f32bits(-qmax)), q[i], q[i])
			VMINPS(cY(f32bits(qmax)), q[i], q[i])
			VCVTPS2DQ(q[i], q[i]) // round to nearest even (MXCSR default)
			if k != nil {
				VPAND(k, q[i], q[i])
			}
		}
		// 32 bytes in order: e0..e3 of each register in lane 0, e4..e7
		// in lane 1, gathered by VPERMD
		VPACKSSDW(q[1], q[0], q[0])
		VPACKSSDW(q[3], q[2], q[2])
		VPACKSSWB(q[2], q[0], q[0])
		VPERMD(q[0], perm, q[0])
		if four {
			// q+8 nibbles, two per byte
			VPADDB(cY(0x08080808), q[0], q[0])
			VPMADDUBSW(cY(0x10011001), q[0], q[0]) // b0 + 16·b1
			VPACKUSWB(q[0], q[0], q[0])
			VPERMQ(U8(0x08), q[0], q[0])
			VMOVDQU(q[0].AsX(), Mem{Base: dst})
			ADDQ(U8(16), dst)
		} else {
			VMOVDQU(q[0], Mem{Base: dst})
			ADDQ(U8(32), dst)
		}
		if bf16 {
			ADDQ(U8(64), src)
		} else {
			ADDQ(U8(128), src)
		}
		SUBQ(U8(32), cnt)
		JNZ(LabelRef(loop))
	}
	body(name+"_fast", 0)
	// a lane with |p − k| ≥ 0.5 − 2^-14 (or NaN): the group again
	VPCMPGTD(cY(f32bits(0.5-1.0/16384)-1), far, far)
	VPTEST(far, far)
	JNZ(LabelRef(name + "_exact"))
	Label(name + "_next")
	ADDQ(U8(4), div)
	ADDQ(U8(4), rcp)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()

	Label(name + "_exact")
	MOVQ(src0, src)
	MOVQ(dst0, dst)
	MOVQ(bs, cnt)
	body(name+"_loop", 1)
	JMP(LabelRef(name + "_next"))

	body(name+"_slow", 2)
	JMP(LabelRef(name + "_next"))
}

// intDecodeY is intDecode with AVX2, 16 per step. For bf16 output a group
// with a finite multiplier (every product finite) rounds without the NaN
// test; other groups take a loop with it.
func intDecodeY(name string, bf16, four bool) {
	name = ntName(name)
	sig := "func(dst *float32, src *byte, n int, mul *float32, bs int)"
	if bf16 {
		sig = "func(dst *uint16, src *byte, n int, mul *float32, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " dequantizes symmetric integer groups into float32 or bf16 (by name) with AVX2, 16 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	mul := Load(Param("mul"), GP64())
	bs := Load(Param("bs"), GP64())

	Label(name + "_block")
	m := YMM()
	VBROADCASTSS(Mem{Base: mul}, m)
	cnt := GP64()
	MOVQ(bs, cnt)
	if bf16 {
		a := XMM()
		VANDPS(cY(0x7FFFFFFF), m.AsX(), a)
		UCOMISS(cY(math.Float32bits(math.MaxFloat32)), a)
		JA(LabelRef(name + "_slow")) // ±Inf
		JP(LabelRef(name + "_slow")) // NaN (unordered)
	}
	body := func(loop string, nan bool) {
		Label(loop)
		var v [2]reg.VecVirtual
		for i := range 2 {
			var q reg.VecVirtual
			if four {
				q = nibblesY(Mem{Base: src, Disp: 4 * i})
				VPSUBD(cY(8), q, q)
			} else {
				q = YMM()
				VPMOVSXBD(Mem{Base: src, Disp: 8 * i}, q)
			}
			VCVTDQ2PS(q, q)
			VMULPS(m, q, q)
			switch {
			case bf16 && nan:
				bf16RoundY(q)
			case bf16:
				l := YMM()
				VPSRLD(U8(16), q, l)
				VPAND(cY(1), l, l)
				VPADDD(cY(0x7FFF), l, l)
				VPADDD(l, q, q)
				VPSRLD(U8(16), q, q)
			default:
				VMOVUPS(q, Mem{Base: dst, Disp: 32 * i})
			}
			v[i] = q
		}
		if bf16 {
			if o := packDW(v[0], v[1]); !storeNT(o, Mem{Base: dst}) {
				VMOVDQU(o, Mem{Base: dst})
			}
			ADDQ(U8(32), dst)
		} else {
			ADDQ(U8(64), dst)
		}
		if four {
			ADDQ(U8(8), src)
		} else {
			ADDQ(U8(16), src)
		}
		SUBQ(U8(16), cnt)
		JNZ(LabelRef(loop))
	}
	body(name+"_loop", false)
	Label(name + "_next")
	ADDQ(U8(4), mul)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
	if bf16 {
		body(name+"_slow", true)
		JMP(LabelRef(name + "_next"))
	}
}

// The AVX2 E2M1 encoders' tables (quant.e2m1Tab*): the code of a bf16
// magnitude t is lut[2j + s] of the 16-bit-lane table (j = clamp(t/32 −
// base, 0, 31), s = t mod 32 ≠ 0 or a sticky bit), computed in bytes as
// G[j] + s·H[j] with G[j] = lut[2j] and H[j] = lut[2j+1] − lut[2j]; rows
// of 16 bytes, twice (one copy per 128-bit lane): G for j < 16, G for
// j ≥ 16, H for j < 16, H for j ≥ 16.
//
// The key is read from tp = max(t − sh − e2m1KeyBase, 0) (one saturating
// subtraction for the block shift and the base): j = tp/32, s = tp mod 32
// ≠ 0 or the float32 low half ≠ 0.
const e2m1KeyBase = 0x1F3 << 5

// e2m1EncodeY emits the contracts of e2m1EncodeW (bf16, shift) and
// e2m1EncodeWF (float32 input, or bf16 with mul) with AVX2: 32 elements
// per step in two halves of sixteen 16-bit lanes, then bytes; with pair
// (bs = 16) the halves are blocks b and b+1, otherwise both are block b
// (bs a multiple of 32). tab points at the byte tables above. The bf16
// shift encoder keeps the sign of every x < 0 (signAll, the RNE table) or
// of every x < 0 but −0 (SGLang's rule, the half-up table). With mul
// (nvfp4) the key, the sticky bit and the sign come from the product's
// float32 bits as in fusedPow2F32Y's nvfp4 step.
func e2m1EncodeY(name string, bf16, mul, pair, signAll bool) {
	sig := "func(dst *byte, src *float32, n int, blk *int32, bs int, tab *uint8)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, blk *int32, bs int, tab *uint8)"
	}
	f32in := !bf16 || mul // the float32 path (bf16 widened when multiplied)
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " encodes float32 or bf16 (by name) blocks to E2M1 with a per-block shift or multiplier (by name) through byte tables with AVX2, 32 elements per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	blk := Load(Param("blk"), GP64())
	bs := Load(Param("bs"), GP64())
	p := Load(Param("tab"), GP64())
	perm := YMM()
	VMOVDQU(cData([8]uint32{0, 4, 1, 5, 2, 6, 3, 7}), perm)
	var tb [4]reg.VecVirtual
	for i := range tb {
		tb[i] = YMM()
		VMOVDQU(rowY(p, i), tb[i])
	}
	next := 0
	if pair {
		next = 4
	}

	Label(name + "_block")
	cnt := GP64()
	MOVQ(bs, cnt)
	if pair {
		ADDQ(bs, cnt)
	}
	// the shifts plus the key base: max(a − sh − e2m1KeyBase, 0) in one
	// saturating subtraction
	var off [2]reg.VecVirtual
	if !mul {
		for h := range 2 {
			if h == 1 && !pair {
				off[1] = off[0]
				break
			}
			off[h] = YMM()
			VPBROADCASTW(Mem{Base: blk, Disp: next * h}, off[h])
			VPADDW(cW(e2m1KeyBase), off[h], off[h])
		}
	}

	var zero reg.VecVirtual
	if mul && bf16 {
		zero = YMM()
		VPXOR(zero, zero, zero)
	}

	Label(name + "_loop")
	var jw, sw, uw [2]reg.VecVirtual
	for h := range 2 {
		d := next * h // this half's block entry
		if mul {
			// y = x·os in float32 (bf16 widened in lane order: the
			// VPACKSSDWs restore it), then fusedPow2F32Y's nvfp4 step: u,
			// bits 31–21 of y sign-extended (sign, exponent, two mantissa
			// bits: the key after the base), and the sticky bits 20–0,
			// not all zero where a word is nonzero (signed saturation
			// keeps them so)
			var x0, x1 reg.VecVirtual
			if bf16 {
				w := YMM()
				VMOVDQU(Mem{Base: src, Disp: 32 * h}, w)
				x0, x1 = YMM(), YMM()
				VPUNPCKHWD(w, zero, x1)
				VPUNPCKLWD(w, zero, x0)
			} else {
				x0, x1 = loadF32Y(src, 2*h, false), loadF32Y(src, 2*h+1, false)
			}
			os := YMM()
			VBROADCASTSS(Mem{Base: blk, Disp: d}, os)
			VMULPS(os, x0, x0)
			VMULPS(os, x1, x1)
			u, t, st := YMM(), YMM(), YMM()
			VPSRAD(U8(21), x0, u)
			VPSRAD(U8(21), x1, t)
			VPACKSSDW(t, u, u)
			VPSLLD(U8(11), x0, x0)
			VPSLLD(U8(11), x1, x1)
			VPACKSSDW(x1, x0, st)
			if !bf16 {
				VPERMQ(U8(0xD8), u, u)
				VPERMQ(U8(0xD8), st, st)
			}
			a := YMM()
			VPAND(cW(0x3FF), u, a)
			VPSUBUSW(cW(e2m1KeyBase>>5), a, a)
			jw[h], sw[h], uw[h] = a, st, u
			continue
		}
		u := YMM()
		var stOne, kSign reg.VecVirtual
		if f32in {
			// the float32 values (bf16 widened in lane order: VPACKUSDW
			// below restores it), their top halves, and s: the bits below
			// the key's step (t mod 32 and the low half) are not all zero
			var x0, x1 reg.VecVirtual
			if bf16 {
				w := YMM()
				VMOVDQU(Mem{Base: src, Disp: 32 * h}, w)
				x0, x1 = YMM(), YMM()
				VPXOR(x0, x0, x0)
				VPUNPCKHWD(w, x0, x1)
				VPUNPCKLWD(w, x0, x0)
			} else {
				x0, x1 = loadF32Y(src, 2*h, false), loadF32Y(src, 2*h+1, false)
			}
			if mul {
				os := YMM()
				VBROADCASTSS(Mem{Base: blk, Disp: d}, os)
				VMULPS(os, x0, x0)
				VMULPS(os, x1, x1)
			} else {
				zt, k0, k1 := YMM(), YMM(), YMM()
				VPBROADCASTD(Mem{Base: blk, Disp: 256 + d}, zt)
				VPAND(cY(0x7FFFFFFF), x0, k0)
				VPCMPGTD(zt, k0, k0)
				VPAND(cY(0x7FFFFFFF), x1, k1)
				VPCMPGTD(zt, k1, k1)
				kSign = YMM()
				VPACKSSDW(k1, k0, kSign)
				if !bf16 {
					VPERMQ(U8(0xD8), kSign, kSign)
				}
			}
			t := YMM()
			VPSRLD(U8(16), x0, u)
			VPSRLD(U8(16), x1, t)
			VPACKUSDW(t, u, u)
			VPAND(cY(0x1FFFFF), x0, x0)
			VPMINUD(cY(1), x0, x0)
			VPAND(cY(0x1FFFFF), x1, x1)
			VPMINUD(cY(1), x1, x1)
			stOne = YMM()
			VPACKUSDW(x1, x0, stOne)
			if !bf16 {
				VPERMQ(U8(0xD8), u, u)
				VPERMQ(U8(0xD8), stOne, stOne)
			}
		} else {
			VMOVDQU(Mem{Base: src, Disp: 32 * h}, u)
		}
		a, tp := YMM(), YMM()
		VPAND(cW(0x7FFF), u, a)
		if mul {
			VPSUBUSW(cW(e2m1KeyBase), a, tp)
		} else {
			VPSUBUSW(off[h], a, tp)
		}
		jw[h] = YMM()
		VPSRLW(U8(5), tp, jw[h])
		if stOne != nil {
			sw[h] = stOne
		} else {
			sw[h] = YMM()
			VPAND(cW(31), tp, sw[h])
			VPMINUW(cW(1), sw[h], sw[h])
		}
		// the sign bit, where it is kept
		switch {
		case kSign != nil:
			VPAND(kSign, u, u)
		case !f32in && !signAll:
			VPSIGNW(a, u, u) // none for a zero magnitude
		}
		uw[h] = u
	}
	// bytes, lane 0: elements 0–7 and 16–23; lane 1: 8–15 and 24–31
	j, sb, sg := YMM(), YMM(), YMM()
	VPACKUSWB(jw[1], jw[0], j)
	if mul {
		VPACKSSWB(sw[1], sw[0], sb) // any nonzero byte: sticky
	} else {
		VPACKUSWB(sw[1], sw[0], sb) // 0 or 1
	}
	VPACKSSWB(uw[1], uw[0], sg)
	VPMINUB(cY(0x1F1F1F1F), j, j)
	ia, ib := YMM(), YMM()
	VPADDUSB(cY(0x70707070), j, ia) // j < 16: j, else ≥ 0x80 (VPSHUFB writes 0)
	VPSUBB(cY(0x10101010), j, ib)   // j ≥ 16: j − 16, else negative
	g, hh, t := YMM(), YMM(), YMM()
	VPSHUFB(ia, tb[0], g)
	VPSHUFB(ib, tb[1], t)
	VPOR(t, g, g)
	VPSHUFB(ia, tb[2], hh)
	VPSHUFB(ib, tb[3], t)
	VPOR(t, hh, hh)
	VPMINUB(sb, hh, hh) // H is 0 or 1
	VPADDB(hh, g, g)
	VPOR(cY(0x08080808), g, t)
	VPBLENDVB(sg, t, g, g)
	// two codes per byte, even element low (VPMADDUBSW: b0 + 16·b1);
	// VPERMD restores the order
	VPMADDUBSW(cY(0x10011001), g, g)
	VPACKUSWB(g, g, g)
	VPERMD(g, perm, g)
	VMOVDQU(g.AsX(), Mem{Base: dst})
	if f32in && !bf16 {
		ADDQ(U8(128), src)
	} else {
		ADDQ(U8(64), src)
	}
	ADDQ(U8(16), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	if pair {
		ADDQ(U8(8), blk)
		SUBQ(bs, n)
	} else {
		ADDQ(U8(4), blk)
	}
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// nvfp4ScalesY is nvfp4Scales with AVX2 (VPGATHERDD from the E4M3 table).
func nvfp4ScalesY() {
	name := "nvfp4ScalesAVX2"
	TEXT(name, NOSPLIT, "func(scales *byte, os *float32, bad *uint16, amax *uint32, m int, enc *uint8, p *float32)")
	Pragma("noescape")
	Doc(name + " computes nvfp4 block scales and element multipliers from block maxima with AVX2, 16 per step.")
	scales := Load(Param("scales"), GP64())
	os := Load(Param("os"), GP64())
	bad := Load(Param("bad"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	enc := Load(Param("enc"), GP64())
	p := Load(Param("p"), GP64())
	invG, rcp6, g := YMM(), YMM(), YMM()
	VBROADCASTSS(Mem{Base: p}, invG)
	VBROADCASTSS(Mem{Base: p, Disp: 4}, rcp6)
	VBROADCASTSS(Mem{Base: p, Disp: 8}, g)
	Label(name + "_loop")
	bits := GP64()
	XORQ(bits, bits)
	for h := range 2 {
		a, sf, key, t := YMM(), YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: amax, Disp: 32 * h}, a)
		VMULPS(rcp6, a, sf)
		VMULPS(sf, invG, sf)
		VPAND(cY(0xFFFF), sf, key)
		VPMINUD(cY(1), key, key)
		VPSLLD(U8(16), key, key)
		VPSRLD(U8(16), sf, t)
		VPOR(t, key, key)
		all, c := YMM(), YMM()
		VPCMPEQD(all, all, all)
		VPXOR(c, c, c)
		VPGATHERDD(all, Mem{Base: enc, Index: key, Scale: 1}, c)
		VPAND(cY(0xFF), c, c)
		b := YMM()
		VMOVDQA(c, b)
		VMOVQ(lowBytes(b), Mem{Base: scales, Disp: 8 * h})
		o := nvMultiplierY(a, c, g, bits, h)
		VMOVUPS(o, Mem{Base: os, Disp: 32 * h})
	}
	MOVW(bits.As16(), Mem{Base: bad})
	ADDQ(U8(2), bad)
	ADDQ(U8(64), amax)
	ADDQ(U8(64), os)
	ADDQ(U8(16), scales)
	SUBQ(U8(16), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// int4DecodeBF16Y emits func(dst *uint16, src *byte, n int, mul *float32, bs int):
// int4 groups of bs = 32 codes (q+8 nibbles) to bf16 with AVX2: per group
// the 16 possible values bf16((q−8)·mul[b]) (nearest even, NaN 0x7FC0)
// form a table, split into its low and high bytes, and two VPSHUFB look up
// 32 codes.
func int4DecodeBF16Y() {
	name := ntName("int4DecBF16AVX2")
	TEXT(name, NOSPLIT, "func(dst *uint16, src *byte, n int, mul *float32, bs int)")
	Pragma("noescape")
	Doc(name + " dequantizes int4 groups of 32 into bf16 through a per-group table with AVX2.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	mul := Load(Param("mul"), GP64())
	Load(Param("bs"), GP64())
	var q0, q1 [8]uint32
	for i := range 8 {
		q0[i] = math.Float32bits(float32(i - 8))
		q1[i] = math.Float32bits(float32(i))
	}
	split := cData([8]uint32{0x06040200, 0x0E0C0A08, 0x07050301, 0x0F0D0B09, 0x06040200, 0x0E0C0A08, 0x07050301, 0x0F0D0B09})
	Label(name + "_loop")
	// the group's table
	m, v0, v1 := YMM(), YMM(), YMM()
	VBROADCASTSS(Mem{Base: mul}, m)
	VMULPS(cData(q0), m, v0)
	VMULPS(cData(q1), m, v1)
	// NaN products only from a NaN or infinite multiplier: the NaN test
	// only then
	ax := XMM()
	VANDPS(cY(0x7FFFFFFF), m.AsX(), ax)
	UCOMISS(cY(math.Float32bits(math.MaxFloat32)), ax)
	JA(LabelRef(name + "_nan")) // ±Inf
	JP(LabelRef(name + "_nan")) // NaN (unordered)
	for _, v := range []reg.VecVirtual{v0, v1} {
		l := YMM()
		VPSRLD(U8(16), v, l)
		VPAND(cY(1), l, l)
		VPADDD(cY(0x7FFF), l, l)
		VPADDD(l, v, v)
		VPSRLD(U8(16), v, v)
	}
	Label(name + "_table")
	w := packDW(v0, v1)
	VPSHUFB(split, w, w) // per lane: low bytes, then high bytes
	tl, th := YMM(), YMM()
	VPERMQ(U8(0x88), w, tl)
	VPERMQ(U8(0xDD), w, th)
	lookupBF16Y(nibbleIdxY(src), tl, th, dst)
	ADDQ(U8(4), mul)
	ADDQ(U8(16), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(32), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()

	Label(name + "_nan")
	bf16RoundY(v0)
	bf16RoundY(v1)
	JMP(LabelRef(name + "_table"))
}

// nibbleIdxY loads 16 bytes at src as 32 byte nibbles (low nibble first;
// elements 0–15 in lane 0, 16–31 in lane 1).
func nibbleIdxY(src reg.Register) reg.VecVirtual {
	x, hx, t := XMM(), XMM(), XMM()
	VMOVDQU(Mem{Base: src}, x)
	VPSRLW(U8(4), x, hx)
	VPAND(cY(0x0F0F0F0F), x, x)
	VPAND(cY(0x0F0F0F0F), hx, hx)
	idx := YMM()
	VPUNPCKLBW(hx, x, idx.AsX())
	VPUNPCKHBW(hx, x, t)
	VINSERTI128(U8(1), t, idx, idx)
	return idx
}

// lookupBF16Y looks the 32 byte indices up in the low- and high-byte
// tables and stores the 32 bf16 words at dst in order.
func lookupBF16Y(idx, tl, th reg.VecVirtual, dst reg.Register) {
	lo, hi := YMM(), YMM()
	VPSHUFB(idx, tl, lo)
	VPSHUFB(idx, th, hi)
	a, b := YMM(), YMM()
	VPUNPCKLBW(hi, lo, a) // words of elements 0–7 and 16–23
	VPUNPCKHBW(hi, lo, b) // 8–15 and 24–31
	o := YMM()
	VPERM2I128(U8(0x20), b, a, o)
	if !storeNT(o, Mem{Base: dst}) {
		VMOVDQU(o, Mem{Base: dst})
	}
	VPERM2I128(U8(0x31), b, a, o)
	if !storeNT(o, Mem{Base: dst, Disp: 32}) {
		VMOVDQU(o, Mem{Base: dst, Disp: 32})
	}
}

// e2m1DecodeBF16Y emits func(dst *uint16, src *byte, n int, scales *byte, tab *uint8, bs int):
// n E2M1 codes (two per byte) to bf16 with AVX2, 32 per step: block b
// looks its codes up with VPSHUFB in the 16 low bytes at tab + 32·scales[b]
// and the 16 high bytes after them. pair: bs = 16, blocks b and b+1 in the
// two lanes of one step (n a multiple of 32); otherwise bs a multiple of 32.
func e2m1DecodeBF16Y(name string, pair bool) {
	name = ntName(name)
	TEXT(name, NOSPLIT, "func(dst *uint16, src *byte, n int, scales *byte, tab *uint8, bs int)")
	Pragma("noescape")
	Doc(name + " decodes E2M1 blocks to bf16 through VPSHUFB tables of the scale's values with AVX2, 32 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	scales := Load(Param("scales"), GP64())
	tab := Load(Param("tab"), GP64())
	bs := Load(Param("bs"), GP64())
	Label(name + "_block")
	tl, th := YMM(), YMM()
	s := GP64()
	MOVBQZX(Mem{Base: scales}, s)
	SHLQ(U8(5), s)
	ADDQ(tab, s)
	cnt := GP64()
	MOVQ(bs, cnt)
	if pair {
		s1 := GP64()
		MOVBQZX(Mem{Base: scales, Disp: 1}, s1)
		SHLQ(U8(5), s1)
		ADDQ(tab, s1)
		VMOVDQU(Mem{Base: s}, tl.AsX())
		VINSERTI128(U8(1), Mem{Base: s1}, tl, tl)
		VMOVDQU(Mem{Base: s, Disp: 16}, th.AsX())
		VINSERTI128(U8(1), Mem{Base: s1, Disp: 16}, th, th)
		ADDQ(bs, cnt)
	} else {
		VBROADCASTI128(Mem{Base: s}, tl)
		VBROADCASTI128(Mem{Base: s, Disp: 16}, th)
	}
	Label(name + "_loop")
	idx := nibbleIdxY(src)
	lookupBF16Y(idx, tl, th, dst)
	ADDQ(U8(16), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	if pair {
		ADDQ(U8(2), scales)
		SUBQ(bs, n)
	} else {
		INCQ(scales)
	}
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// orBadBitsY ORs the sign bits of the eight dwords of k (the bad blocks
// of half h of sixteen) into bits 8h..8h+7 of bits.
func orBadBitsY(k reg.VecVirtual, bits reg.Register, h int) {
	r := GP64()
	VMOVMSKPS(k, r.As32())
	if h == 1 {
		SHLQ(U8(8), r)
	}
	ORQ(r, bits)
}

// pow2KY holds pow2Scales' parameters p[0..6] broadcast (pre, div, post,
// lo, hi, badLo, badHi) for pow2ExpY.
type pow2KY struct{ pre, div, post, lo, hi, badLo, badHi reg.VecVirtual }

func newPow2KY(p reg.Register) *pow2KY {
	bc := func(i int) reg.VecVirtual {
		z := YMM()
		VPBROADCASTD(Mem{Base: p, Disp: 4 * i}, z)
		return z
	}
	return &pow2KY{bc(0), bc(1), bc(2), bc(3), bc(4), bc(5), bc(6)}
}

// exp returns the ceil-rule exponents e of the eight block maxima a of
// half h (pow2Scales), stores their scale bytes e+127 at scales+8h and ORs
// the bad blocks (a ≥ Inf, e outside [badLo, badHi]) into bits.
func (k *pow2KY) exp(a reg.VecVirtual, scales, bits reg.Register, h int) reg.VecVirtual {
	q, x, f := YMM(), YMM(), YMM()
	VMAXPS(a, k.pre, q)
	VDIVPS(k.div, q, q)
	VMAXPS(k.post, q, q)
	VPSRLD(U8(23), q, x)
	VPSUBD(cY(127), x, x)
	VPAND(cY(0x7FFFFF), q, f)
	VPMINUD(cY(1), f, f)
	VPADDD(f, x, x)
	VPMAXSD(k.lo, x, x)
	VPMINSD(k.hi, x, x)
	k0 := YMM()
	VPCMPGTD(cY(0x7F7FFFFF), a, k0)
	storeExpY(k0, x, k.badLo, k.badHi, scales, bits, h)
	return x
}

// storeExpY stores the scale bytes e+127 of the eight block exponents x of
// half h at scales+8h and ORs into bits the blocks of bad (dwords all
// ones) and those with e outside [badLo, badHi].
func storeExpY(bad, x, badLo, badHi reg.VecVirtual, scales, bits reg.Register, h int) {
	k := YMM()
	VPCMPGTD(x, badLo, k)
	VPOR(k, bad, bad)
	VPCMPGTD(badHi, x, k)
	VPOR(k, bad, bad)
	orBadBitsY(bad, bits, h)
	b := YMM()
	VPADDD(cY(127), x, b)
	VMOVQ(lowBytes(b), Mem{Base: scales, Disp: 8 * h})
}

// nvMultiplierY returns the element multipliers a ≠ 0 ? 1/(float(c)·g) :
// 0 of the eight block maxima a of half h with E4M3 scale codes c
// (nvfp4Scales) and ORs the bad blocks (a NaN maximum, an infinite
// multiplier) into bits.
func nvMultiplierY(a, c, g reg.VecVirtual, bits reg.Register, h int) reg.VecVirtual {
	// the E4M3 value of the code: normal codes shift into float32 bits,
	// subnormal ones are code·2^-9
	v, sub, nm := YMM(), YMM(), YMM()
	VPSLLD(U8(20), c, v)
	VPADDD(cY(120<<23), v, v)
	VCVTDQ2PS(c, sub)
	VMULPS(cY(0x3B000000), sub, sub)
	VMOVDQU(cY(8), nm)
	VPCMPGTD(c, nm, nm) // code < 8
	VPBLENDVB(nm, sub, v, v)
	VMULPS(g, v, v)
	o := YMM()
	VMOVDQU(cY(0x3F800000), o)
	VDIVPS(v, o, o)
	// 0 for a zero maximum
	z := YMM()
	VPXOR(z, z, z)
	VPCMPEQD(z, a, z)
	VPANDN(o, z, o)
	// blocks for the portable code: a NaN maximum, an infinite multiplier
	k0, k1 := YMM(), YMM()
	VPCMPGTD(cY(0x7F800000), a, k0)
	VPCMPGTD(cY(0x7F7FFFFF), o, k1)
	VPOR(k1, k0, k0)
	orBadBitsY(k0, bits, h)
	return o
}

// intScaleY stores at dst the fp16 scales of the eight group maxima a
// (intScales: min(a/q, 65504), 1 for a zero group, nearest even, NaN
// 0x7E00; q holds qmax) and returns their float32 values.
func intScaleY(a, q reg.VecVirtual, dst Mem) reg.VecVirtual {
	s, kz := YMM(), YMM()
	VDIVPS(q, a, s)
	VMINPS(cY(math.Float32bits(65504)), s, s)
	VPXOR(kz, kz, kz)
	VPCMPEQD(kz, a, kz)
	VPBLENDVB(kz, cY(0x3F800000), s, s)
	hw := XMM()
	VCVTPS2PH(U8(0), s, hw)
	kn, kh := YMM(), XMM()
	VPCMPGTD(cY(0x7F800000), a, kn)
	VEXTRACTI128(U8(1), kn, kh)
	VPACKSSDW(kh, kn.AsX(), kh)
	VPBLENDVB(kh, cW(0x7E00), hw, hw)
	VMOVDQU(hw, dst)
	f := YMM()
	VCVTPH2PS(hw, f)
	return f
}

// fp8DecodeF16 is fp8DecodeY's float32 decoder (the same contract)
// through F16C, 32 codes per step, with AVX2 (z false: two registers of
// sixteen binary16 words) or AVX-512 (z: one of 32): the sign and
// magnitude bits of each code go into the bits of a binary16 whose value
// is the code's value times 2^(bias−15) (subnormal codes land on binary16
// subnormals, which VCVTPH2PS widens without a microcode assist),
// VCVTPH2PS widens it exactly, and one VMULPS by 2^(15−bias) (times the
// block's 2^k when scaled; k in [−117, 119] keeps every product normal and
// finite, so nothing rounds) restores the value. E5M2 is the top byte of
// a binary16, so its unscaled decoder has no multiply. Inf and NaN codes
// take tab[code] lane by lane, out of line, as in fp8DecodeY. (The
// VPERMI2W of fp8Decode's table is three µops on Intel cores; this form
// has none.)
func fp8DecodeF16(name string, g fp8Geom, scaled, z bool) {
	level, vec, per := "AVX2 and F16C", YMM, 16
	if z {
		level, vec, per = "AVX-512", ZMM, 32
	}
	TEXT(name, NOSPLIT, "func(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int)")
	Pragma("noescape")
	Doc(name + " decodes " + g.name + " codes to float32 through binary16 with " + level + ", 32 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	tab := Load(Param("tab"), GP64())
	adds := Load(Param("scales"), GP64())
	bs := Load(Param("bs"), GP64())
	shift := 10 - g.mant // the exponent's low bit onto binary16's
	base := 15 - g.bias  // binary16 value = code value · 2^-base
	var mul, keep reg.VecVirtual
	switch {
	case scaled:
		mul = vec()
	case base != 0 && z:
		mul = konst(uint32(127+base) << 23)
	case base != 0:
		mul = vec()
		VMOVDQU(cY(uint32(127+base)<<23), mul)
	}
	if shift != 8 {
		// sign-extended, a code's sign lands on bits 15 and 14; bit 14 is
		// the exponent's top bit, always 0 here
		if z {
			keep = konstW(0xBFFF)
		} else {
			keep = YMM()
			VMOVDQU(cW(0xBFFF), keep)
		}
	}

	Label(name + "_block")
	if scaled {
		// 2^(k+base) with k = scale − 127: float32 bits (scale+base) << 23
		k := GP64()
		MOVBQZX(Mem{Base: adds}, k)
		ADDQ(U8(base), k)
		SHLQ(U8(23), k)
		if z {
			VPBROADCASTD(k.As32(), mul)
		} else {
			VMOVD(k.As32(), mul.AsX())
			VPBROADCASTD(mul.AsX(), mul)
		}
	}
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	for h := range 32 / per {
		w := vec()
		if shift == 8 {
			// the code is the top byte of its binary16
			VPMOVZXBW(Mem{Base: src, Disp: 16 * h}, w)
			VPSLLW(U8(8), w, w)
		} else {
			VPMOVSXBW(Mem{Base: src, Disp: 16 * h}, w)
			VPSLLW(U8(shift), w, w)
			if z {
				VPANDD(keep, w, w)
			} else {
				VPAND(keep, w, w)
			}
		}
		lo, hi := vec(), vec()
		if z {
			hy := YMM()
			VCVTPH2PS(w.AsY(), lo)
			VEXTRACTI64X4(U8(1), w, hy)
			VCVTPH2PS(hy, hi)
		} else {
			hx := XMM()
			VCVTPH2PS(w.AsX(), lo)
			VEXTRACTI128(U8(1), w, hx)
			VCVTPH2PS(hx, hi)
		}
		if mul != nil {
			VMULPS(mul, lo, lo)
			VMULPS(mul, hi, hi)
		}
		VMOVUPS(lo, Mem{Base: dst, Disp: 4 * per * h})
		VMOVUPS(hi, Mem{Base: dst, Disp: 4*per*h + 2*per})
	}
	// Inf and NaN codes of the step
	sp := YMM()
	VMOVDQU(Mem{Base: src}, sp)
	switch g.name {
	case "E4M3FN":
		VPOR(cY(0x80808080), sp, sp)
		VPCMPEQB(cY(0xFFFFFFFF), sp, sp)
	case "E5M2":
		VPAND(cY(0x7F7F7F7F), sp, sp)
		VPCMPGTB(cY(0x7B7B7B7B), sp, sp)
	default:
		VPCMPEQB(cY(0x80808080), sp, sp)
	}
	VPTEST(sp, sp)
	JNZ(LabelRef(name + "_fix"))
	Label(name + "_next")
	ADDQ(U8(32), src)
	ADDQ(U8(128), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	if scaled {
		INCQ(adds)
	}
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()

	// Inf and NaN codes: the table value (the top half of the float32),
	// lane by lane
	Label(name + "_fix")
	msk := GP64()
	VPMOVMSKB(sp, msk.As32())
	Label(name + "_fixlane")
	lane, code, v, t := GP64(), GP64(), GP64(), GP64()
	BSFQ(msk, lane)
	MOVBQZX(Mem{Base: src, Index: lane, Scale: 1}, code)
	MOVWQZX(Mem{Base: tab, Index: code, Scale: 2}, v)
	SHLQ(U8(16), v)
	MOVL(v.As32(), Mem{Base: dst, Index: lane, Scale: 4})
	LEAQ(Mem{Base: msk, Disp: -1}, t)
	ANDQ(t, msk)
	JNZ(LabelRef(name + "_fixlane"))
	JMP(LabelRef(name + "_next"))
}

// e2m1DecodeF16Y emits func(dst *float32, src *byte, n int, scales *byte, mul *float32, bs int):
// n E2M1 codes (two per byte, even element low; n a positive multiple of
// bs, bs a multiple of 16) into float32, block b's values being
// (e·P)·Q with e the code's value, P = mul[s] and Q = mul[256+s] for its
// scale byte s = scales[b]. Each code's sign and magnitude go into the
// bits of a binary16 whose value is e·2^-14 (code 1, 0.5, is a binary16
// subnormal), VCVTPH2PS widens it exactly, and two VMULPS apply P and Q:
// with P = 2^14 and Q the block scale, or P = 2^14 times an E4M3 scale
// (exact) and Q a global scale, the products are the reference's own
// float32 multiplications, so every result (NaN, overflow and subnormal
// ones too) is the same bit for bit. 16 codes per step.
func e2m1DecodeF16Y(name string) {
	TEXT(name, NOSPLIT, "func(dst *float32, src *byte, n int, scales *byte, mul *float32, bs int)")
	Pragma("noescape")
	Doc(name + " decodes E2M1 blocks to float32 through binary16 with AVX2 and F16C, 16 per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	scales := Load(Param("scales"), GP64())
	mul := Load(Param("mul"), GP64())
	bs := Load(Param("bs"), GP64())
	// each byte into the high byte of the two words of its codes (lane 0:
	// bytes 0–3, lane 1: bytes 4–7 of the broadcast quadword)
	var sel [8]uint32
	for l := range 2 {
		for i := range 4 {
			b := uint32(4*l + i)
			w := 0x80 | b<<8 // word: low byte zero, high byte b
			sel[4*l+i] = w | w<<16
		}
	}
	shuf, shl, keep := YMM(), YMM(), YMM()
	VMOVDQU(cData(sel), shuf)
	// even words (the low nibble) shift four more: ·16
	VMOVDQU(cY(0x00010010), shl)
	VMOVDQU(cW(0x8E00), keep)

	Label(name + "_block")
	s := GP64()
	MOVBQZX(Mem{Base: scales}, s)
	p, q := YMM(), YMM()
	VBROADCASTSS(Mem{Base: mul, Index: s, Scale: 4}, p)
	VBROADCASTSS(Mem{Base: mul, Index: s, Scale: 4, Disp: 1024}, q)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	w := YMM()
	VPBROADCASTQ(Mem{Base: src}, w)
	VPSHUFB(shuf, w, w)
	VPMULLW(shl, w, w)
	// the nibble on bits 15–12: its sign stays on 15, its magnitude goes
	// to 11–9 (exponent's low two bits, mantissa's top bit)
	VPSRAW(U8(3), w, w)
	VPAND(keep, w, w)
	lo, hi, hx := YMM(), YMM(), XMM()
	VCVTPH2PS(w.AsX(), lo)
	VEXTRACTI128(U8(1), w, hx)
	VCVTPH2PS(hx, hi)
	VMULPS(p, lo, lo)
	VMULPS(p, hi, hi)
	VMULPS(q, lo, lo)
	VMULPS(q, hi, hi)
	VMOVUPS(lo, Mem{Base: dst})
	VMOVUPS(hi, Mem{Base: dst, Disp: 32})
	ADDQ(U8(8), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	INCQ(scales)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}
