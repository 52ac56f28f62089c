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
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	fp8Encode("fp8EncF32AVX512", false)
	fp8EncodeW("fp8EncBF16AVX512")
	fp8Decode("fp8DecBF16AVX512", false)
	fp8Decode("fp8DecF32AVX512", true)
	bf16FromF32()
	f32FromBF16()
	fp16FromF32("fp16FromF32AVX512", false)
	fp16FromF32("fp16FromBF16AVX512", true)
	f32FromFP16()
	amax("amaxF32AVX512", false)
	amax("amaxBF16AVX512", true)
	amaxW("amaxBF16x16AVX512", true)
	amaxW("amaxBF16x32AVX512", false)
	e2m1EncodeW("e2m1ShiftEncBF16x16AVX512", true)
	e2m1EncodeW("e2m1ShiftEncBF16x32AVX512", false)
	for _, bf16 := range []bool{false, true} {
		in := "F32"
		if bf16 {
			in = "BF16"
		}
		if !bf16 {
			e2m1Encode("e2m1ShiftEnc"+in+"AVX512", bf16, false)
		}
		e2m1Encode("e2m1MulEnc"+in+"AVX512", bf16, true)
		e2m1Decode("e2m1Dec"+in+"AVX512", bf16)
		intEncode("int8Enc"+in+"AVX512", bf16, false)
		intEncode("int4Enc"+in+"AVX512", bf16, true)
		intDecode("int8Dec"+in+"AVX512", bf16, false)
		intDecode("int4Dec"+in+"AVX512", bf16, true)
	}
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

// loadF32 loads 16 float32 (or bf16, widened) values at src into a new
// register and advances src.
func loadF32(src reg.Register, bf16 bool) reg.VecVirtual {
	u := ZMM()
	if bf16 {
		VPMOVZXWD(Mem{Base: src}, u)
		VPSLLD(U8(16), u, u)
		ADDQ(U8(32), src)
	} else {
		VMOVDQU32(Mem{Base: src}, u)
		ADDQ(U8(64), src)
	}
	return u
}

// packNibbles stores 16 dword codes (0..15) as 8 bytes, even element in
// the low nibble, and advances dst.
func packNibbles(v reg.VecVirtual, dst reg.Register) {
	t := ZMM()
	VPSRLQ(U8(28), v, t)
	VPORQ(t, v, v)
	VPMOVQB(v, Mem{Base: dst})
	ADDQ(U8(8), dst)
}

// unpackNibbles loads 8 bytes at src as 16 dword nibbles (low nibble
// first) into a new register and advances src.
func unpackNibbles(src reg.Register, mask reg.VecVirtual) reg.VecVirtual {
	b := ZMM()
	VPMOVZXBQ(Mem{Base: src}, b)
	t := ZMM()
	VPSLLQ(U8(28), b, t)
	VPORQ(t, b, b)
	VPANDQ(mask, b, b)
	ADDQ(U8(8), src)
	return b
}

// e2m1Encode emits func(dst *byte, src *T, n int, blk *int32, bs int, thr *uint32):
// n elements (a positive multiple of bs, bs of 16) to E2M1 codes two per
// byte. Block b has the pair blk[2b], blk[2b+1] = (v, zt): with mul, y =
// x·float32frombits(v); otherwise |y| bits = max(|x| bits − v, 0) (v = e<<23
// for a scale 2^e). The magnitude code is the number of thr[0..6] (float32
// bits) at or below |y|; the sign bit is set when x is negative and its
// magnitude bits exceed zt (signed; −1 keeps every sign).
func e2m1Encode(name string, bf16, mul bool) {
	sig := "func(dst *byte, src *float32, n int, blk *int32, bs int, thr *uint32)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, blk *int32, bs int, thr *uint32)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " encodes float32 or bf16 (by name) blocks to E2M1 with a per-block shift or multiplier (by name), 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	blk := Load(Param("blk"), GP64())
	bs := Load(Param("bs"), GP64())
	thr := Load(Param("thr"), GP64())
	var T [7]reg.VecVirtual
	for i := range T {
		T[i] = bcast(thr, i)
	}
	absMask := konst(0x7FFFFFFF)
	one := konst(1)
	eight := konst(8)
	zero := ZMM()
	VPXORD(zero, zero, zero)

	Label(name + "_block")
	v, zt := ZMM(), ZMM()
	VPBROADCASTD(Mem{Base: blk}, v)
	VPBROADCASTD(Mem{Base: blk, Disp: 4}, zt)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	u := loadF32(src, bf16)
	a := ZMM()
	if mul {
		VMULPS(v, u, u)
		VPANDD(absMask, u, a)
	} else {
		VPANDD(absMask, u, a)
	}
	kSign := K()
	VPCMPD(U8(6), zt, a, kSign) // |x| > zt (signed)
	if !mul {
		VPSUBD(v, a, a)
		VPMAXSD(zero, a, a)
	}
	code := ZMM()
	VPXORD(code, code, code)
	for i := range T {
		k := K()
		VPCMPUD(U8(5), T[i], a, k) // a >= thr
		VPADDD(one, code, k, code)
	}
	kNeg := K()
	VPCMPD(U8(1), zero, u, kNeg) // x < 0 (as signed bits)
	KANDW(kNeg, kSign, kSign)
	VPORD(eight, code, kSign, code)
	packNibbles(code, dst)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	ADDQ(U8(8), blk)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// e2m1Decode emits func(dst *T, src *byte, n int, scales *byte, tab *uint32, bs int):
// n elements (a positive multiple of bs, bs of 16) from E2M1 codes two per
// byte; block b looks its codes up in the 16 dwords at tab + 64·scales[b]
// (float32 bits, or bf16 values in the low halves).
func e2m1Decode(name string, bf16 bool) {
	sig := "func(dst *float32, src *byte, n int, scales *byte, tab *uint32, bs int)"
	if bf16 {
		sig = "func(dst *uint16, src *byte, n int, scales *byte, tab *uint32, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " decodes E2M1 blocks through a 16-entry table per scale byte into float32 or bf16 (by name), 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	scales := Load(Param("scales"), GP64())
	tab := Load(Param("tab"), GP64())
	bs := Load(Param("bs"), GP64())
	nib := ZMM()
	t64 := GP64()
	MOVQ(U64(0x0000000F0000000F), t64)
	VPBROADCASTQ(t64, nib)

	Label(name + "_block")
	s := GP64()
	MOVBQZX(Mem{Base: scales}, s)
	SHLQ(U8(6), s)
	tb := ZMM()
	VMOVDQU32(Mem{Base: tab, Index: s, Scale: 1}, tb)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	idx := unpackNibbles(src, nib)
	VPERMD(tb, idx, idx)
	if bf16 {
		VPMOVDW(idx, Mem{Base: dst})
		ADDQ(U8(32), dst)
	} else {
		VMOVDQU32(idx, Mem{Base: dst})
		ADDQ(U8(64), dst)
	}
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	INCQ(scales)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// intEncode emits func(dst *byte, src *T, n int, div *float32, bs int):
// n elements (a positive multiple of bs, bs of 16) in groups of bs; group
// b's codes are clamp(rint(x / div[b]), ±qmax) (NaN quotients give 0),
// stored as int8, or as q+8 nibbles two per byte (four).
func intEncode(name string, bf16, four bool) {
	sig := "func(dst *byte, src *float32, n int, div *float32, bs int)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, div *float32, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " quantizes float32 or bf16 (by name) groups to symmetric integers, 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	div := Load(Param("div"), GP64())
	bs := Load(Param("bs"), GP64())
	qmax := float32(127)
	if four {
		qmax = 7
	}
	hi := konst(f32bits(qmax))
	lo := konst(f32bits(-qmax))
	eight := konst(8)

	Label(name + "_block")
	d := ZMM()
	VBROADCASTSS(Mem{Base: div}, d)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	u := loadF32(src, bf16)
	VDIVPS(d, u, u)
	kOrd := K()
	VCMPPS(U8(7), u, u, kOrd) // ordered: not NaN
	VMAXPS(lo, u, u)
	VMINPS(hi, u, u)
	q := ZMM()
	VPXORD(q, q, q)
	VCVTPS2DQ(u, kOrd, q) // round to nearest even (MXCSR default)
	if four {
		VPADDD(eight, q, q)
		packNibbles(q, dst)
	} else {
		VPMOVDB(q, Mem{Base: dst})
		ADDQ(U8(16), dst)
	}
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	ADDQ(U8(4), div)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// intDecode emits func(dst *T, src *byte, n int, mul *float32, bs int):
// q·mul[b] in float32 for every code of group b (int8, or q+8 nibbles),
// stored as float32 or rounded to bf16 (nearest even, NaN 0x7FC0).
func intDecode(name string, bf16, four bool) {
	sig := "func(dst *float32, src *byte, n int, mul *float32, bs int)"
	if bf16 {
		sig = "func(dst *uint16, src *byte, n int, mul *float32, bs int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " dequantizes symmetric integer groups into float32 or bf16 (by name), 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	mul := Load(Param("mul"), GP64())
	bs := Load(Param("bs"), GP64())
	eight := konst(8)
	nib := ZMM()
	t64 := GP64()
	MOVQ(U64(0x0000000F0000000F), t64)
	VPBROADCASTQ(t64, nib)
	absMask := konst(0x7FFFFFFF)
	inf := konst(0x7F800000)
	r7 := konst(0x7FFF)
	one := konst(1)
	nan := konst(0x7FC0)

	Label(name + "_block")
	m := ZMM()
	VBROADCASTSS(Mem{Base: mul}, m)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	var q reg.VecVirtual
	if four {
		q = unpackNibbles(src, nib)
		VPSUBD(eight, q, q)
	} else {
		q = ZMM()
		VPMOVSXBD(Mem{Base: src}, q)
		ADDQ(U8(16), src)
	}
	VCVTDQ2PS(q, q)
	VMULPS(m, q, q)
	if bf16 {
		l := ZMM()
		VPSRLD(U8(16), q, l)
		VPANDD(one, l, l)
		VPADDD(r7, l, l)
		VPADDD(q, l, l)
		VPSRLD(U8(16), l, l)
		a := ZMM()
		VPANDD(absMask, q, a)
		k := K()
		VPCMPUD(U8(6), inf, a, k)
		VMOVDQA32(nan, k, l)
		VPMOVDW(l, Mem{Base: dst})
		ADDQ(U8(32), dst)
	} else {
		VMOVUPS(q, Mem{Base: dst})
		ADDQ(U8(64), dst)
	}
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	ADDQ(U8(4), mul)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

func f32bits(f float32) uint32 { return math.Float32bits(f) }

// Indices of the 16-bit-lane fp8 encode parameters (uint16 each).
const (
	wOff = iota
	wDrop
	wHalfM1
	wNormMin
	wSubK
	wOvT
	wZeroSign
	wSpec = 16 // 16 words: +Inf, −Inf, +NaN, −NaN, +overflow, −overflow
)

// bcastW broadcasts the uint16 at p+2*i into a new register.
func bcastW(p reg.Register, i int) reg.VecVirtual {
	z := ZMM()
	VPBROADCASTW(Mem{Base: p, Disp: 2 * i}, z)
	return z
}

// fp8EncodeW emits func(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16):
// fp8Encode for bf16 input in 16-bit lanes, 32 per step (bs a multiple of
// 32); shifts[b] is the block scale 2^e as e<<7 (only its low 16 bits are
// read).
func fp8EncodeW(name string) {
	TEXT(name, NOSPLIT, "func(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16)")
	Pragma("noescape")
	Doc(name + " encodes bf16 to FP8 by integer round-to-nearest-even, 32 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	shifts := Load(Param("shifts"), GP64())
	bs := Load(Param("bs"), GP64())
	p := Load(Param("p"), GP64())

	absMask := konstW(0x7FFF)
	off := bcastW(p, wOff)
	drop := bcastW(p, wDrop)
	halfM1 := bcastW(p, wHalfM1)
	normMin := bcastW(p, wNormMin)
	subK := bcastW(p, wSubK)
	ovT := bcastW(p, wOvT)
	zeroSign := bcastW(p, wZeroSign)
	spec := ZMM()
	VMOVDQU16(Mem{Base: p, Disp: 2 * wSpec}, spec.AsY())
	one := konstW(1)
	two := konstW(2)
	four := konstW(4)
	c15 := konstW(15)
	mant := konstW(0x7F)
	impl := konstW(0x80)
	inf := konstW(0x7F80)
	c80 := konstW(0x80)
	zero := ZMM()
	VPXORD(zero, zero, zero)

	Label(name + "_block")
	shift := ZMM()
	VPBROADCASTW(Mem{Base: shifts}, shift)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	u := ZMM()
	VMOVDQU16(Mem{Base: src}, u)
	a0 := ZMM()
	VPANDD(absMask, u, a0)
	a := ZMM()
	VPSUBW(shift, a0, a)
	VPMAXSW(zero, a, a)
	sgn := ZMM()
	VPSRLW(U8(8), u, sgn)
	VPANDD(c80, sgn, sgn)

	t := ZMM()
	VPSUBW(off, a, t)
	lsb := ZMM()
	VPSRLVW(drop, t, lsb)
	VPANDD(one, lsb, lsb)
	VPADDW(halfM1, t, t)
	VPADDW(lsb, t, t)
	VPSRLVW(drop, t, t)

	sh := ZMM()
	VPSRLW(U8(7), a, sh)
	VPSUBW(sh, subK, sh)
	VPMINUW(c15, sh, sh)
	sg := ZMM()
	VPANDD(mant, a, sg)
	VPORD(impl, sg, sg)
	h := ZMM()
	VPSLLVW(sh, one, h)
	VPSRLW(U8(1), h, h)
	VPSUBW(one, h, h)
	l2 := ZMM()
	VPSRLVW(sh, sg, l2)
	VPANDD(one, l2, l2)
	VPADDW(h, sg, sg)
	VPADDW(l2, sg, sg)
	VPSRLVW(sh, sg, sg)

	kNorm := K()
	VPCMPUW(U8(5), normMin, a, kNorm)
	mag := ZMM()
	VPBLENDMW(t, sg, kNorm, mag)

	// sign: kept for nonzero magnitudes, and for zero where −0 exists
	// (word-masked move: VPORD masks are per dword)
	se := ZMM()
	VPANDD(zeroSign, sgn, se)
	kNZ := K()
	VPTESTMW(mag, mag, kNZ)
	VMOVDQU16(sgn, kNZ, se)
	code := ZMM()
	VPORD(se, mag, code)

	idx := ZMM()
	VPSRLW(U8(7), sgn, idx)
	kOv := K()
	VPCMPUW(U8(5), ovT, mag, kOv)
	idx4 := ZMM()
	VPORD(four, idx, idx4)
	VPERMW(spec, idx4, kOv, code)
	kNF := K()
	VPCMPUW(U8(5), inf, a0, kNF)
	kNaN := K()
	VPCMPUW(U8(6), inf, a0, kNaN)
	VPORD(two, idx, idx4)
	VMOVDQU16(idx4, kNaN, idx)
	VPERMW(spec, idx, kNF, code)

	VPMOVWB(code, Mem{Base: dst})

	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	ADDQ(U8(4), shifts)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// amaxW emits func(out *uint32, src *uint16, nb int, bs int) for bf16 in
// 16-bit lanes: pair, bs = 16 (two blocks per 32-lane step; nb even);
// otherwise bs a multiple of 32. out[b] is the largest magnitude of block
// b as float32 bits (bf16 bits << 16).
func amaxW(name string, pair bool) {
	TEXT(name, NOSPLIT, "func(out *uint32, src *uint16, nb int, bs int)")
	Pragma("noescape")
	Doc(name + " writes the largest magnitude bits of each block of bf16 values, 32 lanes per step.")
	out := Load(Param("out"), GP64())
	src := Load(Param("src"), GP64())
	nb := Load(Param("nb"), GP64())
	bs := Load(Param("bs"), GP64())
	absMask := konstW(0x7FFF)
	Label(name + "_block")
	m := ZMM()
	VPXORD(m, m, m)
	cnt := GP64()
	MOVQ(bs, cnt)
	if pair {
		ADDQ(bs, cnt)
	}
	Label(name + "_loop")
	u := ZMM()
	VPANDD(Mem{Base: src}, absMask, u)
	VPMAXUW(u, m, m)
	ADDQ(U8(64), src)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	t := ZMM()
	if !pair {
		VSHUFI64X2(U8(0x4E), m, m, t)
		VPMAXUW(t, m, m)
	}
	VSHUFI64X2(U8(0xB1), m, m, t)
	VPMAXUW(t, m, m)
	VPSHUFD(U8(0x4E), m, t)
	VPMAXUW(t, m, m)
	VPSHUFD(U8(0xB1), m, t)
	VPMAXUW(t, m, m)
	VPSRLD(U8(16), m, t)
	VPMAXUW(t, m, m)
	r := GP32()
	VMOVD(m.AsX(), r)
	SHLL(U8(16), r)
	MOVL(r, Mem{Base: out})
	if pair {
		hi := ZMM()
		VEXTRACTI64X4(U8(1), m, hi.AsY())
		VMOVD(hi.AsX(), r)
		SHLL(U8(16), r)
		MOVL(r, Mem{Base: out, Disp: 4})
		ADDQ(U8(8), out)
		SUBQ(U8(2), nb)
	} else {
		ADDQ(U8(4), out)
		DECQ(nb)
	}
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}

// e2m1EncodeW emits func(dst *byte, src *uint16, n int, sh *int32, bs int, lut *uint16):
// the E2M1 shift encoder for bf16 in 16-bit lanes, 32 per step. |y| bits
// t = max(|x| − sh[b], 0) (sh[b] = e<<7, low 16 bits read); every E2M1
// decision point is a multiple of 32 in bf16 bits, so the code is
// lut[2j + (t mod 32 ≠ 0)], j = clamp(t/32 − lut[64], 0, 31) (lut[0..63]
// the codes, lut[64] the base); the sign (x < 0) is set when |x| > lut[65]
// (0 for SGLang's rule, which keeps no sign on ±0; 0xFFFF otherwise: every
// sign). pair: bs = 16, two blocks per step; otherwise bs a multiple of 32.
func e2m1EncodeW(name string, pair bool) {
	TEXT(name, NOSPLIT, "func(dst *byte, src *uint16, n int, sh *int32, bs int, lut *uint16)")
	Pragma("noescape")
	Doc(name + " encodes bf16 blocks to E2M1 with a per-block exponent shift through a 64-entry table, 32 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	sh := Load(Param("sh"), GP64())
	bs := Load(Param("bs"), GP64())
	lut := Load(Param("lut"), GP64())
	L0, L1 := ZMM(), ZMM()
	VMOVDQU16(Mem{Base: lut}, L0)
	VMOVDQU16(Mem{Base: lut, Disp: 64}, L1)
	base := bcastW(lut, 64)
	zt := bcastW(lut, 65)
	absMask := konstW(0x7FFF)
	one := konstW(1)
	c31 := konstW(31)
	c8 := konstW(8)
	zero := ZMM()
	VPXORD(zero, zero, zero)
	kHi := K()
	if pair {
		t := GP32()
		MOVL(U32(0xFFFF0000), t)
		KMOVD(t, kHi)
	}

	Label(name + "_block")
	v := ZMM()
	VPBROADCASTW(Mem{Base: sh}, v)
	cnt := GP64()
	MOVQ(bs, cnt)
	if pair {
		v2 := ZMM()
		VPBROADCASTW(Mem{Base: sh, Disp: 4}, v2)
		VMOVDQU16(v2, kHi, v)
		ADDQ(bs, cnt)
	}

	Label(name + "_loop")
	u := ZMM()
	VMOVDQU16(Mem{Base: src}, u)
	a0 := ZMM()
	VPANDD(absMask, u, a0)
	a := ZMM()
	VPSUBW(v, a0, a)
	VPMAXSW(zero, a, a)
	j := ZMM()
	VPSRLW(U8(5), a, j)
	VPSUBW(base, j, j)
	VPMAXSW(zero, j, j)
	VPMINSW(c31, j, j)
	l := ZMM()
	VPANDD(c31, a, l)
	VPMINUW(one, l, l)
	VPADDW(j, j, j)
	VPADDW(l, j, j)
	VPERMI2W(L1, L0, j)
	// sign: x < 0 and |x| > zt (signed)
	kSign := K()
	VPCMPW(U8(6), zt, a0, kSign)
	s8 := ZMM()
	VPSRLW(U8(12), u, s8)
	VPANDD(c8, s8, s8)
	VPADDW(s8, j, kSign, j)
	t := ZMM()
	VPSRLD(U8(12), j, t)
	VPORD(t, j, j)
	VPMOVDB(j, Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(16), dst)
	SUBQ(U8(32), cnt)
	JNZ(LabelRef(name + "_loop"))
	if pair {
		ADDQ(U8(8), sh)
		SUBQ(bs, n)
	} else {
		ADDQ(U8(4), sh)
	}
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()
}
