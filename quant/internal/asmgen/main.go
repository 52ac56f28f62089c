// Command asmgen generates quant's AVX-512 kernels (kernels_amd64.s and
// their Go declarations) with avo. It is its own module so that the kvcfg
// module does not depend on avo. Run it through `go generate ./quant/`;
// quant's TestGeneratedAsmUpToDate (with KVCFG_ASMGEN=1, as CI sets it)
// regenerates into a temporary directory and fails on any difference.
//
// Every kernel works on whole vectors (16 elements for 32-bit lanes, 32
// for 16-bit lanes); the Go callers check buffers, hand over whole vectors
// and finish tails and rare cases (non-finite or extreme-scale blocks) with
// the portable code, which stays the reference.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	fp8Encode("fp8EncF32AVX512", false)
	fp8Encode("fp8EncBF16AVX512", true)
	fp8Decode("fp8DecBF16AVX512", false)
	fp8Decode("fp8DecF32AVX512", true)
	bf16FromF32()
	f32FromBF16()
	fp16FromF32("fp16FromF32AVX512", false)
	fp16FromF32("fp16FromBF16AVX512", true)
	f32FromFP16()
	amax("amaxF32AVX512", false)
	amax("amaxBF16AVX512", true)
	Generate()
}

// bcast broadcasts the uint32 at p+4*i into a new register.
func bcast(p reg.Register, i int) reg.VecVirtual {
	z := ZMM()
	VPBROADCASTD(Mem{Base: p, Disp: 4 * i}, z)
	return z
}

// konst broadcasts a 32-bit constant into a new register.
func konst(v uint32) reg.VecVirtual {
	t := GP32()
	MOVL(U32(v), t)
	z := ZMM()
	VPBROADCASTD(t, z)
	return z
}

// konstW broadcasts a 16-bit constant into a new register.
func konstW(v uint16) reg.VecVirtual {
	t := GP32()
	MOVL(U32(uint32(v)), t)
	z := ZMM()
	VPBROADCASTW(t, z)
	return z
}

// Indices of the fp8 encode parameters (quant.fp8EncParams, uint32 each).
const (
	pOff      = iota // (127 − bias) << 23
	pDrop            // 23 − mantissa bits
	pHalfM1          // 1 << (drop − 1) − 1
	pNormMin         // (128 − bias) << 23: smallest input with a normal result
	pSubK            // drop + 128 − bias: subnormal shift = subK − exponent
	pOvT             // first magnitude code that is not finite
	pZeroSign        // 0x80 when the format has −0, else 0
	pSpec            // 8 codes: +Inf, −Inf, +NaN, −NaN, +overflow, −overflow
)

// fp8Encode emits func(dst *byte, src *T, n int, shifts *int32, bs int, p *uint32):
// n elements (n a positive multiple of bs, bs of 16) in blocks of bs; the
// magnitude bits of block b are lowered by shifts[b] (a block scale 2^e as
// e<<23, clamped at zero) before round-to-nearest-even into the FP8 format
// p describes. Non-finite inputs encode by p's special codes (callers redo
// non-finite blocks of scaled formats themselves).
func fp8Encode(name string, bf16 bool) {
	sig := "func(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint32)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint32)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " encodes float32 or bf16 (by name) to FP8 by integer round-to-nearest-even, 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	shifts := Load(Param("shifts"), GP64())
	bs := Load(Param("bs"), GP64())
	p := Load(Param("p"), GP64())

	absMask := konst(0x7FFFFFFF)
	off := bcast(p, pOff)
	drop := bcast(p, pDrop)
	halfM1 := bcast(p, pHalfM1)
	normMin := bcast(p, pNormMin)
	subK := bcast(p, pSubK)
	ovT := bcast(p, pOvT)
	zeroSign := bcast(p, pZeroSign)
	spec := ZMM()
	VMOVDQU32(Mem{Base: p, Disp: 4 * pSpec}, spec.AsY())
	one := konst(1)
	two := konst(2)
	four := konst(4)
	c31 := konst(31)
	mant := konst(0x7FFFFF)
	impl := konst(0x800000)
	inf := konst(0x7F800000)
	c80 := konst(0x80)
	zero := ZMM()
	VPXORD(zero, zero, zero)

	Label(name + "_block")
	shift := ZMM()
	VPBROADCASTD(Mem{Base: shifts}, shift)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	u := ZMM()
	if bf16 {
		VPMOVZXWD(Mem{Base: src}, u)
		VPSLLD(U8(16), u, u)
	} else {
		VMOVDQU32(Mem{Base: src}, u)
	}
	a0 := ZMM()
	VPANDD(absMask, u, a0)
	a := ZMM()
	VPSUBD(shift, a0, a)
	VPMAXSD(zero, a, a)
	sgn := ZMM()
	VPSRLD(U8(24), u, sgn)
	VPANDD(c80, sgn, sgn)

	// normal result: drop bits with round-to-nearest-even
	t := ZMM()
	VPSUBD(off, a, t)
	lsb := ZMM()
	VPSRLVD(drop, t, lsb)
	VPANDD(one, lsb, lsb)
	VPADDD(halfM1, t, t)
	VPADDD(lsb, t, t)
	VPSRLVD(drop, t, t)

	// subnormal result: the significand shifted by subK − exponent
	sh := ZMM()
	VPSRLD(U8(23), a, sh)
	VPSUBD(sh, subK, sh)
	VPMINUD(c31, sh, sh)
	sg := ZMM()
	VPANDD(mant, a, sg)
	VPORD(impl, sg, sg)
	h := ZMM()
	VPSLLVD(sh, one, h)
	VPSRLD(U8(1), h, h)
	VPSUBD(one, h, h)
	l2 := ZMM()
	VPSRLVD(sh, sg, l2)
	VPANDD(one, l2, l2)
	VPADDD(h, sg, sg)
	VPADDD(l2, sg, sg)
	VPSRLVD(sh, sg, sg)

	kNorm := K()
	VPCMPUD(U8(5), normMin, a, kNorm) // a >= normMin
	mag := ZMM()
	VPBLENDMD(t, sg, kNorm, mag)

	// sign: kept for nonzero magnitudes, and for zero where −0 exists
	code := ZMM()
	VPANDD(zeroSign, sgn, code)
	VPORD(mag, code, code)
	kNZ := K()
	VPTESTMD(mag, mag, kNZ)
	VPORD(sgn, mag, kNZ, code)

	// overflow and non-finite inputs take codes from the spec table
	idx := ZMM()
	VPSRLD(U8(7), sgn, idx)
	kOv := K()
	VPCMPUD(U8(5), ovT, mag, kOv) // mag >= ovT
	idx4 := ZMM()
	VPORD(four, idx, idx4)
	VPERMD(spec, idx4, kOv, code)
	kNF := K()
	VPCMPUD(U8(5), inf, a0, kNF) // a0 >= Inf
	kNaN := K()
	VPCMPUD(U8(6), inf, a0, kNaN) // a0 > Inf
	VPORD(two, idx, kNaN, idx)
	VPERMD(spec, idx, kNF, code)

	VPMOVDB(code, Mem{Base: dst})

	if bf16 {
		ADDQ(U8(32), src)
	} else {
		ADDQ(U8(64), src)
	}
	ADDQ(U8(16), dst)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	ADDQ(U8(4), shifts)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// fp8Decode emits func(dst *T, src *byte, n int, tab *uint16, adds *int32, bs int):
// n codes (n a positive multiple of bs, bs of 32) looked up in a 256-entry
// table of 16-bit words (the bf16 value, or the top half of the float32
// value); in block b, adds[b] (a block scale 2^k as k<<7) is added to every
// word of a finite nonzero value. With f32 each word w is stored as w<<16.
func fp8Decode(name string, f32 bool) {
	sig := "func(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int)"
	if f32 {
		sig = "func(dst *float32, src *byte, n int, tab *uint16, adds *int32, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " decodes FP8 codes through a 256-word table with VPERMI2W, 32 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	tab := Load(Param("tab"), GP64())
	adds := Load(Param("adds"), GP64())
	bs := Load(Param("bs"), GP64())
	var T [8]reg.VecVirtual
	for i := range T {
		T[i] = ZMM()
		VMOVDQU16(Mem{Base: tab, Disp: 64 * i}, T[i])
	}
	c40 := konstW(0x40)
	c80 := konstW(0x80)
	one := konstW(1)
	mag := konstW(0x7FFF)
	lim := konstW(0x7F7F)

	Label(name + "_block")
	add := ZMM()
	VPBROADCASTW(Mem{Base: adds}, add)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	idx := ZMM()
	VPMOVZXBW(Mem{Base: src}, idx)
	var q [4]reg.VecVirtual
	for i := range q {
		q[i] = ZMM()
		VMOVDQA64(idx, q[i])
		VPERMI2W(T[2*i+1], T[2*i], q[i])
	}
	k6, k7 := K(), K()
	VPTESTMW(c40, idx, k6)
	VPTESTMW(c80, idx, k7)
	VPBLENDMW(q[1], q[0], k6, q[0])
	VPBLENDMW(q[3], q[2], k6, q[2])
	VPBLENDMW(q[2], q[0], k7, q[0])
	w := q[0]
	// finite nonzero: 1 <= (w & 0x7FFF) <= 0x7F7F (as w − 1 < 0x7F7F)
	m := ZMM()
	VPANDD(mag, w, m)
	VPSUBW(one, m, m)
	kFin := K()
	VPCMPUW(U8(1), lim, m, kFin)
	VPADDW(add, w, kFin, w)
	if f32 {
		lo := ZMM()
		VPMOVZXWD(w.AsY(), lo)
		VPSLLD(U8(16), lo, lo)
		VMOVDQU32(lo, Mem{Base: dst})
		hi := ZMM()
		VEXTRACTI64X4(U8(1), w, hi.AsY())
		VPMOVZXWD(hi.AsY(), hi)
		VPSLLD(U8(16), hi, hi)
		VMOVDQU32(hi, Mem{Base: dst, Disp: 64})
		ADDQ(U8(128), dst)
	} else {
		VMOVDQU16(w, Mem{Base: dst})
		ADDQ(U8(64), dst)
	}
	ADDQ(U8(32), src)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	ADDQ(U8(4), adds)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// bf16FromF32 emits func(dst *uint16, src *float32, n int): round to
// nearest even, every NaN to 0x7FC0; n a positive multiple of 16.
func bf16FromF32() {
	TEXT("bf16FromF32AVX512", NOSPLIT, "func(dst *uint16, src *float32, n int)")
	Pragma("noescape")
	Doc("bf16FromF32AVX512 rounds float32 to bf16 (nearest even, NaN 0x7FC0), 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	absMask := konst(0x7FFFFFFF)
	inf := konst(0x7F800000)
	r7 := konst(0x7FFF)
	one := konst(1)
	nan := konst(0x7FC0)
	Label("bf16FromF32_loop")
	u := ZMM()
	VMOVDQU32(Mem{Base: src}, u)
	l := ZMM()
	VPSRLD(U8(16), u, l)
	VPANDD(one, l, l)
	VPADDD(r7, l, l)
	VPADDD(u, l, l)
	VPSRLD(U8(16), l, l)
	a := ZMM()
	VPANDD(absMask, u, a)
	k := K()
	VPCMPUD(U8(6), inf, a, k)
	VMOVDQA32(nan, k, l)
	VPMOVDW(l, Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef("bf16FromF32_loop"))
	VZEROUPPER()
	RET()
}

// f32FromBF16 emits func(dst *float32, src *uint16, n int); n a positive
// multiple of 16.
func f32FromBF16() {
	TEXT("f32FromBF16AVX512", NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Pragma("noescape")
	Doc("f32FromBF16AVX512 widens bf16 to float32, 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label("f32FromBF16_loop")
	u := ZMM()
	VPMOVZXWD(Mem{Base: src}, u)
	VPSLLD(U8(16), u, u)
	VMOVDQU32(u, Mem{Base: dst})
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef("f32FromBF16_loop"))
	VZEROUPPER()
	RET()
}

// fp16FromF32 emits func(dst *uint16, src *T, n int): VCVTPS2PH with
// round-to-nearest-even; NaN becomes 0x7E00 with the input's sign (as
// quant.FP16.Encode); n a positive multiple of 16.
func fp16FromF32(name string, bf16 bool) {
	sig := "func(dst *uint16, src *float32, n int)"
	if bf16 {
		sig = "func(dst *uint16, src *uint16, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " rounds float32 or bf16 (by name) to fp16 (nearest even, NaN 0x7E00 with sign), 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	absMask := konst(0x7FFFFFFF)
	inf := konst(0x7F800000)
	nan := konst(0x7E00)
	c8000 := konst(0x8000)
	Label(name + "_loop")
	u := ZMM()
	if bf16 {
		VPMOVZXWD(Mem{Base: src}, u)
		VPSLLD(U8(16), u, u)
	} else {
		VMOVDQU32(Mem{Base: src}, u)
	}
	h := ZMM()
	VCVTPS2PH(U8(0), u, h.AsY())
	VPMOVZXWD(h.AsY(), h)
	a := ZMM()
	VPANDD(absMask, u, a)
	k := K()
	VPCMPUD(U8(6), inf, a, k)
	s := ZMM()
	VPSRLD(U8(16), u, s)
	VPANDD(c8000, s, s)
	VPORD(nan, s, s)
	VMOVDQA32(s, k, h)
	VPMOVDW(h, Mem{Base: dst})
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

// f32FromFP16 emits func(dst *float32, src *uint16, n int): VCVTPH2PS is
// exact (NaN payload kept, quiet bit set); n a positive multiple of 16.
func f32FromFP16() {
	TEXT("f32FromFP16AVX512", NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Pragma("noescape")
	Doc("f32FromFP16AVX512 widens fp16 to float32, 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label("f32FromFP16_loop")
	u := ZMM()
	VCVTPH2PS(Mem{Base: src}, u)
	VMOVDQU32(u, Mem{Base: dst})
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JNZ(LabelRef("f32FromFP16_loop"))
	VZEROUPPER()
	RET()
}

// amax emits func(out *uint32, src *T, nb int, bs int): out[b] is the
// largest magnitude bits (sign cleared; NaN above Inf) of block b of bs
// elements (bs a multiple of 16); bf16 magnitudes come out as float32 bits.
func amax(name string, bf16 bool) {
	sig := "func(out *uint32, src *float32, nb int, bs int)"
	if bf16 {
		sig = "func(out *uint32, src *uint16, nb int, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " writes the largest magnitude bits of each block of float32 or bf16 (by name) values.")
	out := Load(Param("out"), GP64())
	src := Load(Param("src"), GP64())
	nb := Load(Param("nb"), GP64())
	bs := Load(Param("bs"), GP64())
	absMask := konst(0x7FFFFFFF)
	Label(name + "_block")
	m := ZMM()
	VPXORD(m, m, m)
	cnt := GP64()
	MOVQ(bs, cnt)
	Label(name + "_loop")
	u := ZMM()
	if bf16 {
		VPMOVZXWD(Mem{Base: src}, u)
		VPSLLD(U8(16), u, u)
		ADDQ(U8(32), src)
	} else {
		VMOVDQU32(Mem{Base: src}, u)
		ADDQ(U8(64), src)
	}
	VPANDD(absMask, u, u)
	VPMAXUD(u, m, m)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	t := ZMM()
	for _, imm := range []uint8{0x4E, 0xB1} {
		VSHUFI64X2(U8(imm), m, m, t)
		VPMAXUD(t, m, m)
	}
	for _, imm := range []uint8{0x4E, 0xB1} {
		VPSHUFD(U8(imm), m, t)
		VPMAXUD(t, m, m)
	}
	r := GP32()
	VMOVD(m.AsX(), r)
	MOVL(r, Mem{Base: out})
	ADDQ(U8(4), out)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}
