// Command asmgen generates quant's AVX-512 and AVX2 kernels (kernels_amd64.s and
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
	"fmt"
	"math"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	fp8EncodeW("fp8EncF32AVX512", true)
	fp8EncodeW("fp8EncBF16AVX512", false)
	fp8Decode("fp8DecBF16AVX512")
	for _, g := range fp8Formats {
		fp8DecodeF16("fp8Dec"+g.name+"F32AVX512", g, false, true)
	}
	bf16FromF32()
	f32FromBF16()
	fp16FromF32("fp16FromF32AVX512", false)
	fp16FromF32("fp16FromBF16AVX512", true)
	f32FromFP16()
	amax("amaxF32AVX512", false)
	amax("amaxBF16AVX512", true)
	for _, k := range []int{1, 2, 4} {
		amaxTree(k)
	}
	int4DecodeBF16()
	pow2Scales()
	intScales()
	fused()
	nvfp4Scales()
	amaxW("amaxBF16x16AVX512", true)
	amaxW("amaxBF16x32AVX512", false)
	e2m1EncodeW("e2m1ShiftEncBF16x16AVX512", true)
	e2m1EncodeW("e2m1ShiftEncBF16x32AVX512", false)
	e2m1EncodeWF("e2m1ShiftEncF32x16AVX512", false, false, true)
	e2m1EncodeWF("e2m1ShiftEncF32x32AVX512", false, false, false)
	e2m1EncodeWF("e2m1MulEncF32x16AVX512", false, true, true)
	e2m1EncodeWF("e2m1MulEncBF16x16AVX512", true, true, true)
	for _, bf16 := range []bool{false, true} {
		in := "F32"
		if bf16 {
			in = "BF16"
		}
		e2m1Decode("e2m1Dec"+in+"AVX512", bf16)
		intEncode("int8Enc"+in+"AVX512", bf16, false)
		intEncode("int4Enc"+in+"AVX512", bf16, true)
		intDecode("int8Dec"+in+"AVX512", bf16, false)
		if !bf16 {
			intDecode("int4Dec"+in+"AVX512", bf16, true)
		}
	}
	genAVX2()
	fusedAVX2()
	// the NT variants of the bf16 decoders
	ntStores = true
	fp8Decode("fp8DecBF16AVX512")
	e2m1Decode("e2m1DecBF16AVX512", true)
	intDecode("int8DecBF16AVX512", true, false)
	int4DecodeBF16()
	for _, g := range fp8Formats {
		fp8DecodeY("fp8Dec"+g.name+"BF16AVX2", g, false)
	}
	fp8DecodeY("fp8ScaledDecE4M3FNBF16AVX2", fp8Formats[0], true)
	intDecodeY("int8DecBF16AVX2", true, false)
	int4DecodeBF16Y()
	e2m1DecodeBF16Y("e2m1DecBF16x16AVX2", true)
	e2m1DecodeBF16Y("e2m1DecBF16x32AVX2", false)
	ntStores = false
	storeFence()
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

// pfDist is how far ahead of its loads a streaming kernel prefetches, in
// bytes of its source: the hardware prefetchers of the Xeon VM left the
// bf16 → fp8 encoder at half its in-cache speed on 64 MiB inputs, and a
// PREFETCHT0 this far ahead doubled it.
const pfDist = 2048

// prefetchAhead prefetches the lines pfDist bytes past the step bytes a
// loop step reads at src (one line when the step reads less than one).
func prefetchAhead(src reg.Register, step int) {
	for off := 0; off < max(step, 1); off += 64 {
		PREFETCHT0(Mem{Base: src, Disp: pfDist + off})
	}
}

// ntStores makes the bf16 decoders' generators emit non-temporal stores
// (VMOVNTDQ, which needs a destination aligned to the store's width): the
// NT variants, which quant picks for large aligned outputs (and follows
// with one storeFence) and which skip the read-for-ownership of every
// output line (bf16 output is two or four times the bytes read).
var ntStores bool

// storeNT emits VMOVNTDQ v → m and reports true under ntStores; the
// caller emits its usual store otherwise.
func storeNT(v Op, m Mem) bool {
	if ntStores {
		VMOVNTDQ(v, m)
	}
	return ntStores
}

// storeFence emits func storeFence(): SFENCE, which the Go side calls once
// after a decode's NT kernels (not in each kernel: the chunked callers
// make many calls, and a fence per call drained the write-combining
// buffers every few KiB).
func storeFence() {
	TEXT("storeFence", NOSPLIT, "func()")
	Doc("storeFence orders the non-temporal stores before it (SFENCE).")
	SFENCE()
	RET()
}

// ntName is name with "NT" before its level suffix (AVX512, AVX2) under
// ntStores.
func ntName(name string) string {
	if !ntStores {
		return name
	}
	for _, l := range []string{"AVX512", "AVX2"} {
		if strings.HasSuffix(name, l) {
			return strings.TrimSuffix(name, l) + "NT" + l
		}
	}
	panic("ntName: no level suffix in " + name)
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

// fp8Decode emits func(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int):
// n codes (n a positive multiple of bs, bs of 32) looked up in a 256-entry
// table of bf16 words; in block b, adds[b] (a block scale 2^k as k<<7) is
// added to every word of a finite nonzero value. (Float32 output takes
// fp8DecodeF16.)
func fp8Decode(name string) {
	name = ntName(name)
	TEXT(name, NOSPLIT, "func(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int)")
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
	prefetchAhead(src, 32)
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
	if !storeNT(w, Mem{Base: dst}) {
		VMOVDQU16(w, Mem{Base: dst})
	}
	ADDQ(U8(64), dst)
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
	narrowStore(VPMOVDW, l, Mem{Base: dst}, 32)
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
	narrowStore(VPMOVDW, h, Mem{Base: dst}, 32)
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
	if bf16 {
		prefetchAhead(src, 32)
	} else {
		prefetchAhead(src, 64)
	}
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
	narrowStore(VPMOVQB, v, Mem{Base: dst}, 8)
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

// e2m1Decode emits func(dst *T, src *byte, n int, scales *byte, tab *uint32, bs int):
// n elements (a positive multiple of bs, bs of 16) from E2M1 codes two per
// byte; block b looks its codes up in the 16 dwords at tab + 64·scales[b]
// (float32 bits, or bf16 values in the low halves).
func e2m1Decode(name string, bf16 bool) {
	name = ntName(name)
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
		narrowStore(VPMOVDW, idx, Mem{Base: dst}, 32)
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

// intEncode emits func(dst *byte, src *T, n int, div *float32, bs int, rcp *float32):
// n elements (a positive multiple of bs, bs of 16) in groups of bs; group
// b's codes are clamp(rint(x / div[b]), ±qmax) (NaN quotients give 0),
// stored as int8, or as q+8 nibbles two per byte (four). A group first
// takes the products p = x·rcp[b] (rcp[b] = RN(1/div[b])) in place of the
// quotients (see intConsts.step: rint(p) = rint(x/div[b]) whenever p is
// farther than 2^-14 from a half-integer); a group with a lane closer
// than that, or a product that is not finite, is redone with VDIVPS.
func intEncode(name string, bf16, four bool) {
	sig := "func(dst *byte, src *float32, n int, div *float32, bs int, rcp *float32)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, div *float32, bs int, rcp *float32)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " quantizes float32 or bf16 (by name) groups to symmetric integers, 16 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	div := Load(Param("div"), GP64())
	bs := Load(Param("bs"), GP64())
	rcp := Load(Param("rcp"), GP64())
	e := newIntConsts(four)
	store := func(q reg.VecVirtual) {
		if four {
			VPADDD(e.eight, q, q)
			packNibbles(q, dst)
		} else {
			narrowStore(VPMOVDB, q, Mem{Base: dst}, 16)
			ADDQ(U8(16), dst)
		}
	}
	src0, dst0, cnt := GP64(), GP64(), GP64()

	Label(name + "_block")
	r := ZMM()
	VBROADCASTSS(Mem{Base: rcp}, r)
	MOVQ(src, src0)
	MOVQ(dst, dst0)
	far := ZMM()
	VPXORD(far, far, far)
	MOVQ(bs, cnt)
	Label(name + "_fast")
	store(e.product(loadF32(src, bf16), r, far))
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_fast"))
	e.nearTie(far, name+"_exact")
	Label(name + "_next")
	ADDQ(U8(4), div)
	ADDQ(U8(4), rcp)
	SUBQ(bs, n)
	JNZ(LabelRef(name + "_block"))
	VZEROUPPER()
	RET()

	// the group again with the quotients
	Label(name + "_exact")
	MOVQ(src0, src)
	MOVQ(dst0, dst)
	MOVQ(bs, cnt)
	d := ZMM()
	VBROADCASTSS(Mem{Base: div}, d)
	Label(name + "_loop")
	store(e.quotient(loadF32(src, bf16), d))
	SUBQ(U8(16), cnt)
	JNZ(LabelRef(name + "_loop"))
	JMP(LabelRef(name + "_next"))
}

// intDecode emits func(dst *T, src *byte, n int, mul *float32, bs int):
// q·mul[b] in float32 for every code of group b (int8, or q+8 nibbles),
// stored as float32 or rounded to bf16 (nearest even, NaN 0x7FC0).
func intDecode(name string, bf16, four bool) {
	name = ntName(name)
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
		narrowStore(VPMOVDW, l, Mem{Base: dst}, 32)
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
func fp8EncodeW(name string, f32 bool) {
	sig := "func(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16)"
	if f32 {
		sig = "func(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " encodes bf16 or float32 (by name) to FP8 by integer round-to-nearest-even, 32 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	shifts := Load(Param("shifts"), GP64())
	bs := Load(Param("bs"), GP64())
	p := Load(Param("p"), GP64())

	absMask := konstW(0x7FFF)
	off := bcastW(p, wOff)
	dropX := ZMM()
	VPMOVZXWQ(Mem{Base: p, Disp: 2 * wDrop}, dropX.AsX()) // the shift count, zero-extended
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
	var low16, odd reg.VecVirtual
	if f32 {
		low16 = konst(0xFFFF)
		// word indices of the top halves of 32 dwords in two registers
		odd = ZMM()
		perm := GLOBL(name+"Odd", RODATA|NOPTR)
		for i := range 32 {
			DATA(2*i, U16(uint16(2*i+1)))
		}
		VMOVDQU16(perm, odd)
	}

	Label(name + "_block")
	shift := ZMM()
	VPBROADCASTW(Mem{Base: shifts}, shift)
	cnt := GP64()
	MOVQ(bs, cnt)

	Label(name + "_loop")
	if f32 {
		prefetchAhead(src, 128)
	} else {
		prefetchAhead(src, 64)
	}
	u := ZMM()
	kSticky := K()
	if f32 {
		// float32: the top halves as bf16 and a sticky mask (low half
		// nonzero). Every FP8 decision point lies on the bf16 grid, so
		// rounding the top half with the sticky bit ORed into the
		// round-to-even bit is exact.
		lo, hi := ZMM(), ZMM()
		VMOVDQU32(Mem{Base: src}, lo)
		VMOVDQU32(Mem{Base: src, Disp: 64}, hi)
		VMOVDQA64(odd, u)
		VPERMI2W(hi, lo, u)
		k0, k1 := K(), K()
		VPTESTMD(low16, lo, k0)
		VPTESTMD(low16, hi, k1)
		KUNPCKWD(k0, k1, kSticky) // k1 high, k0 low
	} else {
		VMOVDQU16(Mem{Base: src}, u)
	}
	a0 := ZMM()
	VPANDD(absMask, u, a0)
	a := ZMM()
	VPSUBW(shift, a0, a)
	VPMAXSW(zero, a, a)
	sgn := ZMM()
	VPSRLW(U8(8), u, sgn)
	VPANDD(c80, sgn, sgn)

	// normal result: drop bits with round-to-nearest-even
	t := ZMM()
	VPSUBW(off, a, t)
	lsb := ZMM()
	VPSRLW(dropX.AsX(), t, lsb)
	VPANDD(one, lsb, lsb)
	if f32 {
		VMOVDQU16(one, kSticky, lsb)
	}
	VPADDW(halfM1, t, t)
	VPADDW(lsb, t, t)
	VPSRLW(dropX.AsX(), t, t)

	// lanes below the normal range: nonzero ones need the subnormal
	// rounding (rare in scaled blocks: branched over when none has)
	kNorm := K()
	VPCMPUW(U8(5), normMin, a, kNorm)
	mag := ZMM()
	VMOVDQU16_Z(t, kNorm, mag)
	kNZa, kSub := K(), K()
	VPTESTMW(a, a, kNZa)
	KANDND(kNZa, kNorm, kSub) // ¬normal ∧ nonzero
	KORTESTD(kSub, kSub)
	JZ(LabelRef(name + "_signs"))

	// subnormal result: the significand shifted by subK − exponent
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
	if f32 {
		VMOVDQU16(one, kSticky, l2)
	}
	VPADDW(h, sg, sg)
	VPADDW(l2, sg, sg)
	VPSRLVW(sh, sg, sg)
	VMOVDQU16(sg, kSub, mag)

	Label(name + "_signs")

	// sign: kept for nonzero magnitudes, and for zero where −0 exists
	// (word-masked move: VPORD masks are per dword)
	se := ZMM()
	VPANDD(zeroSign, sgn, se)
	kNZ := K()
	VPTESTMW(mag, mag, kNZ)
	VMOVDQU16(sgn, kNZ, se)
	code := ZMM()
	VPORD(se, mag, code)

	// overflow and non-finite inputs (rare: branched over) take codes
	// from the spec table
	kOv := K()
	VPCMPUW(U8(5), ovT, mag, kOv) // mag >= ovT
	kNF := K()
	VPCMPUW(U8(5), inf, a0, kNF) // |x| >= Inf
	kAny := K()
	KORD(kOv, kNF, kAny)
	KORTESTD(kAny, kAny)
	JZ(LabelRef(name + "_store"))
	idx := ZMM()
	VPSRLW(U8(7), sgn, idx)
	idx4 := ZMM()
	VPORD(four, idx, idx4)
	VPERMW(spec, idx4, kOv, code)
	kNaN := K()
	VPCMPUW(U8(6), inf, a0, kNaN) // |x| > Inf
	if f32 {
		// a float32 NaN may have the top half of Inf
		KANDD(kSticky, kNF, kAny)
		KORD(kAny, kNaN, kNaN)
	}
	VPORD(two, idx, idx4)
	VMOVDQU16(idx4, kNaN, idx)
	VPERMW(spec, idx, kNF, code)

	Label(name + "_store")
	narrowStore(VPMOVWB, code, Mem{Base: dst}, 32)

	if f32 {
		ADDQ(U8(128), src)
	} else {
		ADDQ(U8(64), src)
	}
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
	prefetchAhead(src, 64)
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
	narrowStore(VPMOVDB, j, Mem{Base: dst}, 16)
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

// amaxTree emits func(out *uint32, src *float32, nb int): amax of float32
// blocks of 16·k sixteen at a time (nb a positive multiple of 16): each block's vector maximum, then a four-level shuffle tree that
// reduces sixteen vectors into one vector of sixteen maxima.
func amaxTree(k int) {
	name := fmt.Sprintf("amaxF32x16b%dAVX512", 16*k)
	TEXT(name, NOSPLIT, "func(out *uint32, src *float32, nb int)")
	Pragma("noescape")
	Doc(name + " writes the largest magnitude bits of float32 blocks, sixteen blocks per step.")
	out := Load(Param("out"), GP64())
	src := Load(Param("src"), GP64())
	nb := Load(Param("nb"), GP64())
	perm := GLOBL(name+"Perm", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15} {
		DATA(4*i, U32(v))
	}
	absMask := konst(0x7FFFFFFF)
	idx := ZMM()
	VMOVDQU32(perm, idx)

	Label(name + "_group")
	var v [16]reg.VecVirtual
	for b := range v {
		prefetchAhead(src, 64*k)
		v[b] = ZMM()
		VPANDD(Mem{Base: src}, absMask, v[b])
		for i := 1; i < k; i++ {
			t := ZMM()
			VPANDD(Mem{Base: src, Disp: 64 * i}, absMask, t)
			VPMAXUD(t, v[b], v[b])
		}
		ADDQ(U32(64*k), src)
	}
	level := func(in []reg.VecVirtual, shuf func(imm uint8, b, a, dst reg.VecVirtual), lo, hi uint8) []reg.VecVirtual {
		var outv []reg.VecVirtual
		for i := 0; i < len(in); i += 2 {
			x, y := ZMM(), ZMM()
			shuf(lo, in[i+1], in[i], x)
			shuf(hi, in[i+1], in[i], y)
			VPMAXUD(y, x, x)
			outv = append(outv, x)
		}
		return outv
	}
	shufi := func(imm uint8, b, a, dst reg.VecVirtual) { VSHUFI64X2(U8(imm), b, a, dst) }
	shufps := func(imm uint8, b, a, dst reg.VecVirtual) { VSHUFPS(U8(imm), b, a, dst) }
	r := level(v[:], shufi, 0x44, 0xEE)
	r = level(r, shufi, 0x88, 0xDD)
	r = level(r, shufps, 0x88, 0xDD)
	r = level(r, shufps, 0x88, 0xDD)
	res := ZMM()
	VPERMD(r[0], idx, res)
	VMOVDQU32(res, Mem{Base: out})
	ADDQ(U8(64), out)
	SUBQ(U8(16), nb)
	JNZ(LabelRef(name + "_group"))
	VZEROUPPER()
	RET()
}

// pow2Scales emits func(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32):
// for m block maxima (float32 bits; m a positive multiple of 16, at most
// 64) the ceil-rule scale exponent e = clamp(ceil(log2(max(max(a, p[0]) /
// p[1], p[2]))), p[3], p[4]) (p[0..2] float32; SGLang's fp4 rule and RCEIL,
// with the divisions the portable code does), and from it the scale byte
// e+127, sh[b] = e<<7, sh[64+b] = (e ≥ 1 ? 1<<(e−1) : 0) | p[7] (the sign
// limit of the E2M1 encoder), and bit b of the words at bad for a
// non-finite maximum or e outside [p[5], p[6]].
func pow2Scales() {
	name := "pow2ScalesAVX512"
	TEXT(name, NOSPLIT, "func(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32)")
	Pragma("noescape")
	Doc(name + " computes ceil-rule block scales, shifts and sign limits from block maxima, 16 per step.")
	scales := Load(Param("scales"), GP64())
	sh := Load(Param("sh"), GP64())
	bad := Load(Param("bad"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	p := Load(Param("p"), GP64())
	ztOr := bcast(p, 7)
	one := konst(1)
	c127 := konst(127)
	k := newPow2K(p, one, c127)
	Label(name + "_loop")
	a := ZMM()
	VMOVDQU32(Mem{Base: amax}, a)
	x := k.exp(a, scales, bad)
	// shifts, sign limits
	s7 := ZMM()
	VPSLLD(U8(7), x, s7)
	VMOVDQU32(s7, Mem{Base: sh})
	em1 := ZMM()
	VPSUBD(one, x, em1)
	zt := ZMM()
	VPSLLVD(em1, one, zt)
	VPORD(ztOr, zt, zt)
	VMOVDQU32(zt, Mem{Base: sh, Disp: 256})
	ADDQ(U8(64), amax)
	ADDQ(U8(64), sh)
	ADDQ(U8(16), scales)
	ADDQ(U8(2), bad)
	SUBQ(U8(16), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// nvfp4Scales emits func(scales *byte, os *float32, bad *uint16, amax *uint32, m int, enc *uint8, p *float32):
// nvfp4 block scales for m block maxima (m a positive multiple of 16): sf
// = p[0]·(a·p[1]), sf8 = enc[keyF32(sf)] (the E4M3 satfinite table),
// os = a ≠ 0 ? 1/(float(sf8)·p[2]) : 0; bit i of the words at bad is set
// for a NaN maximum or an infinite multiplier.
func nvfp4Scales() {
	name := "nvfp4ScalesAVX512"
	TEXT(name, NOSPLIT, "func(scales *byte, os *float32, bad *uint16, amax *uint32, m int, enc *uint8, p *float32)")
	Pragma("noescape")
	Doc(name + " computes nvfp4 block scales and element multipliers from block maxima, 16 per step.")
	scales := Load(Param("scales"), GP64())
	os := Load(Param("os"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	enc := Load(Param("enc"), GP64())
	p := Load(Param("p"), GP64())
	invG, rcp6, g := bcast(p, 0), bcast(p, 1), bcast(p, 2)
	low := konst(0xFFFF)
	one := konst(1)
	b8 := konst(0xFF)
	k := newNVK(g)
	bad := Load(Param("bad"), GP64())
	Label(name + "_loop")
	a := ZMM()
	VMOVDQU32(Mem{Base: amax}, a)
	sf := ZMM()
	VMULPS(rcp6, a, sf)
	VMULPS(sf, invG, sf)
	key := ZMM()
	VPANDD(low, sf, key)
	VPMINUD(one, key, key)
	VPSLLD(U8(16), key, key)
	t := ZMM()
	VPSRLD(U8(16), sf, t)
	VPORD(t, key, key)
	k1 := K()
	KXNORW(k1, k1, k1)
	c := ZMM()
	VPXORD(c, c, c)
	VPGATHERDD(Mem{Base: enc, Index: key, Scale: 1}, k1, c)
	VPANDD(b8, c, c)
	narrowStore(VPMOVDB, c, Mem{Base: scales}, 16)
	o := k.multiplier(a, c, bad)
	VMOVDQU32(o, Mem{Base: os})
	ADDQ(U8(2), bad)
	ADDQ(U8(64), amax)
	ADDQ(U8(64), os)
	ADDQ(U8(16), scales)
	SUBQ(U8(16), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// e2m1EncodeWF emits func(dst *byte, src *T, n int, blk *int32, bs int, lut *uint16):
// the E2M1 table encoder of e2m1EncodeW for float32 input (or bf16 with
// mul), 32 lanes per step. The float32 values (times the block multiplier
// float32frombits(blk[b]) with mul) are split into their top halves and a
// sticky mask (low half nonzero; exact, every decision point lying on the
// bf16 grid); without mul the top halves are lowered by blk[b] (e<<7), and
// the sign of a negative value is kept when its float32 magnitude bits
// exceed blk[64+b] (signed); with mul every sign is kept. pair: bs = 16,
// blocks b and b+1 in one step; otherwise bs a multiple of 32.
func e2m1EncodeWF(name string, bf16, mul, pair bool) {
	sig := "func(dst *byte, src *float32, n int, blk *int32, bs int, lut *uint16)"
	if bf16 {
		sig = "func(dst *byte, src *uint16, n int, blk *int32, bs int, lut *uint16)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " encodes float32 or bf16 (by name) blocks to E2M1 with a per-block shift or multiplier (by name) through a table, 32 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	blk := Load(Param("blk"), GP64())
	bs := Load(Param("bs"), GP64())
	lut := Load(Param("lut"), GP64())
	L0, L1 := ZMM(), ZMM()
	VMOVDQU16(Mem{Base: lut}, L0)
	VMOVDQU16(Mem{Base: lut, Disp: 64}, L1)
	base := bcastW(lut, 64)
	absMaskW := konstW(0x7FFF)
	absMask := konst(0x7FFFFFFF)
	low16 := konst(0xFFFF)
	one := konstW(1)
	c31 := konstW(31)
	c8 := konstW(8)
	zero := ZMM()
	VPXORD(zero, zero, zero)
	odd := ZMM()
	perm := GLOBL(name+"Odd", RODATA|NOPTR)
	for i := range 32 {
		DATA(2*i, U16(uint16(2*i+1)))
	}
	VMOVDQU16(perm, odd)
	kHi := K()
	if pair {
		t := GP32()
		MOVL(U32(0xFFFF0000), t)
		KMOVD(t, kHi)
	}
	next := 0
	if pair {
		next = 4 // dense: the second block of the pair is the next entry
	}

	Label(name + "_block")
	var shW, os0, os1, zt0, zt1 reg.VecVirtual
	if mul {
		os0, os1 = ZMM(), ZMM()
		VPBROADCASTD(Mem{Base: blk}, os0)
		VPBROADCASTD(Mem{Base: blk, Disp: next}, os1)
	} else {
		shW = ZMM()
		VPBROADCASTW(Mem{Base: blk}, shW)
		if pair {
			t := ZMM()
			VPBROADCASTW(Mem{Base: blk, Disp: next}, t)
			VMOVDQU16(t, kHi, shW)
		}
		zt0, zt1 = ZMM(), ZMM()
		VPBROADCASTD(Mem{Base: blk, Disp: 256}, zt0)
		VPBROADCASTD(Mem{Base: blk, Disp: 256 + next}, zt1)
	}
	cnt := GP64()
	MOVQ(bs, cnt)
	if pair {
		ADDQ(bs, cnt)
	}

	Label(name + "_loop")
	lo, hi := ZMM(), ZMM()
	if bf16 {
		VPMOVZXWD(Mem{Base: src}, lo)
		VPMOVZXWD(Mem{Base: src, Disp: 32}, hi)
		VPSLLD(U8(16), lo, lo)
		VPSLLD(U8(16), hi, hi)
		ADDQ(U8(64), src)
	} else {
		VMOVDQU32(Mem{Base: src}, lo)
		VMOVDQU32(Mem{Base: src, Disp: 64}, hi)
		ADDQ(U8(128), src)
	}
	kSign := K()
	if mul {
		VMULPS(os0, lo, lo)
		VMULPS(os1, hi, hi)
	} else {
		al, ah := ZMM(), ZMM()
		VPANDD(absMask, lo, al)
		VPANDD(absMask, hi, ah)
		k0, k1 := K(), K()
		VPCMPD(U8(6), zt0, al, k0)
		VPCMPD(U8(6), zt1, ah, k1)
		KUNPCKWD(k0, k1, kSign)
	}
	u := ZMM()
	VMOVDQA64(odd, u)
	VPERMI2W(hi, lo, u)
	kSticky := K()
	{
		k0, k1 := K(), K()
		VPTESTMD(low16, lo, k0)
		VPTESTMD(low16, hi, k1)
		KUNPCKWD(k0, k1, kSticky)
	}
	kNeg := K()
	VPMOVW2M(u, kNeg)
	if !mul {
		KANDD(kNeg, kSign, kNeg)
	}
	a := ZMM()
	VPANDD(absMaskW, u, a)
	if !mul {
		VPSUBW(shW, a, a)
		VPMAXSW(zero, a, a)
	}
	j := ZMM()
	VPSRLW(U8(5), a, j)
	VPSUBW(base, j, j)
	VPMAXSW(zero, j, j)
	VPMINSW(c31, j, j)
	l := ZMM()
	VPANDD(c31, a, l)
	VPMINUW(one, l, l)
	VMOVDQU16(one, kSticky, l)
	VPADDW(j, j, j)
	VPADDW(l, j, j)
	VPERMI2W(L1, L0, j)
	VPADDW(c8, j, kNeg, j)
	t := ZMM()
	VPSRLD(U8(12), j, t)
	VPORD(t, j, j)
	narrowStore(VPMOVDB, j, Mem{Base: dst}, 16)
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

// int4DecodeBF16 emits func(dst *uint16, src *byte, n int, mul *float32, bs int):
// int4 groups of bs = 32 codes (q+8 nibbles) to bf16: per group the 16
// possible values bf16((q−8)·mul[b]) (nearest even, NaN 0x7FC0) form a
// table, and one VPERMW looks up 32 codes.
func int4DecodeBF16() {
	name := ntName("int4DecBF16AVX512")
	TEXT(name, NOSPLIT, "func(dst *uint16, src *byte, n int, mul *float32, bs int)")
	Pragma("noescape")
	Doc(name + " dequantizes int4 groups of 32 into bf16 through a per-group table, 32 lanes per step.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	mul := Load(Param("mul"), GP64())
	Load(Param("bs"), GP64())
	q := ZMM()
	qs := GLOBL(name+"Q", RODATA|NOPTR)
	for i := range 16 {
		DATA(4*i, U32(math.Float32bits(float32(i-8))))
	}
	VMOVUPS(qs, q)
	absMask := konst(0x7FFFFFFF)
	inf := konst(0x7F800000)
	r7 := konst(0x7FFF)
	one := konst(1)
	nan := konst(0x7FC0)
	lo4 := konst(0x0F)
	hi4 := konst(0xF0)
	Label(name + "_loop")
	// table: bf16((i−8)·s) in the low 16 words
	v := ZMM()
	VBROADCASTSS(Mem{Base: mul}, v)
	VMULPS(v, q, v)
	l := ZMM()
	VPSRLD(U8(16), v, l)
	VPANDD(one, l, l)
	VPADDD(r7, l, l)
	VPADDD(v, l, l)
	VPSRLD(U8(16), l, l)
	a := ZMM()
	VPANDD(absMask, v, a)
	k := K()
	VPCMPUD(U8(6), inf, a, k)
	VMOVDQA32(nan, k, l)
	tab := ZMM()
	VPMOVDW(l, tab.AsY())
	// 16 bytes → 32 word nibbles, low nibble first
	b := ZMM()
	VPMOVZXBD(Mem{Base: src}, b)
	h := ZMM()
	VPANDD(hi4, b, h)
	VPSLLD(U8(12), h, h)
	VPANDD(lo4, b, b)
	VPORD(h, b, b)
	VPERMW(tab, b, b)
	if !storeNT(b, Mem{Base: dst}) {
		VMOVDQU16(b, Mem{Base: dst})
	}
	ADDQ(U8(4), mul)
	ADDQ(U8(16), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(32), n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// intScales emits func(s16 *uint16, div *float32, amax *uint32, m int, qmax *float32, rcp *float32):
// the fp16 group scales of m group maxima (float32 bits; m a positive
// multiple of 16): s = a > 0 ? min(a / qmax, 65504) : 1, rounded to fp16
// (nearest even; a NaN maximum gives 0x7E00), that scale widened back to
// float32 in div, and RN(1/s) in rcp (intEncode's multipliers).
func intScales() {
	name := "intScalesAVX512"
	TEXT(name, NOSPLIT, "func(s16 *uint16, div *float32, amax *uint32, m int, qmax *float32, rcp *float32)")
	Pragma("noescape")
	Doc(name + " computes the fp16 scales of integer groups from their maxima, 16 per step.")
	s16 := Load(Param("s16"), GP64())
	div := Load(Param("div"), GP64())
	amax := Load(Param("amax"), GP64())
	m := Load(Param("m"), GP64())
	qp := Load(Param("qmax"), GP64())
	rcp := Load(Param("rcp"), GP64())
	k := newIntScaleK(qp)
	Label(name + "_loop")
	a := ZMM()
	VMOVDQU32(Mem{Base: amax}, a)
	f := k.scale(a, Mem{Base: s16})
	VMOVUPS(f, Mem{Base: div})
	// RN(1/s) for intEncode's products
	r := ZMM()
	VDIVPS(f, k.oneF, r)
	VMOVUPS(r, Mem{Base: rcp})
	ADDQ(U8(64), amax)
	ADDQ(U8(64), div)
	ADDQ(U8(64), rcp)
	ADDQ(U8(32), s16)
	SUBQ(U8(16), m)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// narrowStore narrows a register with op (VPMOVWB, VPMOVDW, VPMOVDB,
// VPMOVQB) into a register and stores the n bytes with a plain move: the
// memory forms of these instructions are slow on some CPUs (AMD Zen 4/5).
func narrowStore(op func(...Op), src reg.VecVirtual, m Mem, n int) {
	t := ZMM()
	switch n {
	case 32:
		op(src, t.AsY())
		if !storeNT(t.AsY(), m) {
			VMOVDQU32(t.AsY(), m)
		}
	case 16:
		op(src, t.AsX())
		if !storeNT(t.AsX(), m) {
			VMOVDQU32(t.AsX(), m)
		}
	default:
		op(src, t.AsX())
		VMOVQ(t.AsX(), m)
	}
}
