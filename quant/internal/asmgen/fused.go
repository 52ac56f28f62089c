package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Fused block encoders: block maxima, ceil-rule scales and the element
// encode of float32 input in one call, sixteen blocks per group, so that a
// short row (a pool's scattered KV row of a few thousand values) pays one
// call and reads its data from memory once (the second pass over a group
// of 16 blocks finds it in L1).

// fusedChunk is the number of groups whose scales are computed before
// their elements are encoded.
const fusedChunk = 4

// Scale stages of the fused encoders.
const (
	scalePow2 = iota // ceil-rule power-of-two scales (pow2Scales)
	scaleNV          // nvfp4's E4M3 block scales (nvfp4Scales)
	scaleInt         // int8_g64 / int4_g32 fp16 group scales (intScales)
)

func fused() {
	fusedOdd = GLOBL("fusedOddWords", RODATA|NOPTR)
	for i := range 32 {
		DATA(2*i, U16(uint16(2*i+1)))
	}
	fusedPow2F32("mxfp8EncF32Fused", 32, false, false, scalePow2)
	fusedPow2F32("fp4HalfUpEncF32Fused", 16, true, true, scalePow2)
	fusedPow2F32("nvfp4EncF32Fused", 16, true, false, scaleNV)
	fusedPow2F32("int8EncF32Fused", 64, false, false, scaleInt)
	fusedPow2F32("int4EncF32Fused", 32, true, false, scaleInt)
	fp8DecodeF16("fp8ScaledDecE4M3FNF32AVX512", fp8Formats[0], true, true)
	fp8EncodeLanes("e4m3EncF32LanesAVX512", 3, 7, 448)
	fp8EncodeLanes("e5m2EncF32LanesAVX512", 2, 15, 57344)
}

// fusedPow2F32 emits func(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16):
// ng groups of sixteen blocks of bs float32 values (bs 16 or 32). Per
// group: the block maxima (as amaxTree), the ceil-rule exponents e of
// pow2Scales (p[0..4]: pre, div, post as float32 bits, lo, hi), the scale
// bytes e+127, bit b of the group's word at bad for a non-finite maximum
// or e outside [p[5], p[6]] (the multiplier 2^-e must be a normal
// float32), then every element y = x·2^-e (the float32 product the
// portable code forms) encoded: E4M3 (fp4 false) by integer
// round-to-nearest-even of the float32 bits for normal results and a
// magic-number addition for subnormal ones; E2M1 (fp4) likewise, with
// SGLang's rounding (halfUp: every midpoint away from zero, by two
// additions rounding down; sign when y < 0) or round-to-nearest-even
// (sign bit of y), saturating at 6.
//
// With scaleNV (nvfp4; p holds invG, rcp6, g as float32) the scales and
// multipliers are nvfp4Scales' (the E4M3 code computed, not gathered) and
// the elements E2M1 round-to-nearest-even through the table at lut (as
// e2m1EncodeWF); bad marks a NaN maximum or an infinite multiplier.
//
// With scaleInt (int8_g64, bs 64; int4_g32, bs 32 with fp4; p[0] is qmax
// as float32) the fp16 scales of intScales go to scales (two bytes per
// group), and the codes are intEncode's: clamp(rint(x / s), ±qmax), NaN
// → 0, int8 bytes or q+8 nibbles; no block is left to the portable code.
func fusedPow2F32(name string, bs int, fp4, halfUp bool, stage int) {
	name += fmt.Sprintf("B%dAVX512", bs)
	k := bs / 16
	TEXT(name, NOSPLIT, "func(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16)")
	Pragma("noescape")
	switch stage {
	case scaleNV:
		Doc(name + " encodes groups of sixteen float32 blocks to nvfp4: maxima, scales and elements in one call.")
	case scaleInt:
		Doc(name + " quantizes sixteen float32 groups at a time to symmetric integers: maxima, scales and codes in one call.")
	default:
		Doc(name + " encodes groups of sixteen float32 blocks with ceil-rule power-of-two scales: maxima, scales and elements in one call.")
	}
	dst := Load(Param("dst"), GP64())
	scales := Load(Param("scales"), GP64())
	bad := Load(Param("bad"), GP64())
	src := Load(Param("src"), GP64())
	ng := Load(Param("ng"), GP64())
	p := Load(Param("p"), GP64())
	var lut reg.Register
	if stage == scaleNV {
		lut = Load(Param("lut"), GP64())
	}
	// the multipliers (or the integer scales) of a chunk; for the integer
	// codes also the reciprocals of the scales, 64·fusedChunk bytes further
	frame := 64 * fusedChunk
	if stage == scaleInt {
		frame *= 2
	}
	inv := AllocLocal(frame)
	invP := GP64()

	absMask := konst(0x7FFFFFFF)
	one := konst(1)
	c127 := konst(127)
	perm := GLOBL(name+"Perm", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15} {
		DATA(4*i, U32(v))
	}
	idx := ZMM()
	VMOVDQU32(perm, idx)

	// element encoder constants
	var normC, normMin, magic, lowMask, signC, quarter, seven, zero reg.VecVirtual
	switch {
	case stage != scalePow2:
	case fp4:
		if halfUp {
			normC = konst(uint32(0x200000 - 0x3F000000 + 1<<32))
			quarter = konst(0x3E800000) // 0.25
		} else {
			normC = konst(uint32(0x1FFFFF - 0x3F000000 + 1<<32))
		}
		normMin = konst(0x3F800000) // 1.0: smallest normal E2M1 magnitude
		magic = konst(0x4A800000)   // 2^22: its ulp is 0.5
		if !halfUp {
			seven = konst(7)
		}
		signC = konst(8)
		zero = ZMM()
		VPXORD(zero, zero, zero)
		lowMask = konst(0xF)
	default:
		normC = konst(uint32(0x7FFFF - 120<<23 + 1<<32))
		normMin = konst(121 << 23) // 2^-6
		magic = konst(0x46800000)  // 2^14: its ulp is 2^-9
		signC = konst(0x80)
		lowMask = konst(0xF)
	}

	Label(name + "_chunk")
	// up to fusedChunk groups: first all their scales (independent work
	// for the out-of-order core), then their elements
	nc, s0, gc := chunkStart(ng, src, invP, inv)
	Label(name + "_group")
	// pass 1: the sixteen block maxima (amaxTree)
	blockMax := func(b int) reg.VecVirtual {
		v := ZMM()
		VPANDD(Mem{Base: s0, Disp: 64 * k * b}, absMask, v)
		for i := 1; i < k; i++ {
			t := ZMM()
			VPANDD(Mem{Base: s0, Disp: 64*k*b + 64*i}, absMask, t)
			VPMAXUD(t, v, v)
		}
		return v
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
	// the first level as the blocks are read: fewer live registers
	var r []reg.VecVirtual
	for b := 0; b < 16; b += 2 {
		r = append(r, level([]reg.VecVirtual{blockMax(b), blockMax(b + 1)}, shufi, 0x44, 0xEE)...)
	}
	r = level(r, shufi, 0x88, 0xDD)
	r = level(r, shufps, 0x88, 0xDD)
	r = level(r, shufps, 0x88, 0xDD)
	a := ZMM()
	VPERMD(r[0], idx, a)

	var m reg.VecVirtual
	switch stage {
	case scaleNV:
		m = nvScaleStage(a, p, scales, bad)
	case scaleInt:
		m = newIntScaleK(p).scale(a, Mem{Base: scales})
		MOVW(U16(0), Mem{Base: bad})
	default:
		m = pow2ScaleStage(a, p, scales, bad, one, c127)
	}
	VMOVDQU32(m, Mem{Base: invP})
	if stage == scaleInt {
		// r = RN(1/s) for intConsts.code's products (s = 0 gives +Inf,
		// whose products send the step to the exact division)
		r := ZMM()
		VMOVDQA32(konst(0x3F800000), r)
		VDIVPS(m, r, r)
		VMOVUPS(r, Mem{Base: invP, Disp: 64 * fusedChunk})
	}
	ADDQ(U8(64), invP)
	ADDQ(U32(64*k*16), s0)
	if stage == scaleInt {
		ADDQ(U8(32), scales)
	} else {
		ADDQ(U8(16), scales)
	}
	ADDQ(U8(2), bad)
	DECQ(gc)
	JNZ(LabelRef(name + "_group"))

	// pass 2: four vectors (64 elements) per step
	LEAQ(inv, invP)
	cnt := GP64()
	MOVQ(nc, cnt)
	SHLQ(U8(map[int]uint8{1: 2, 2: 3, 4: 4}[k]), cnt) // 4, 8 or 16 steps per group
	var nl *nvLut
	var ic *intConsts
	switch stage {
	case scaleNV:
		nl = newNVLut(lut)
	case scaleInt:
		ic = newIntConsts(fp4)
	}
	Label(name + "_enc")
	if stage == scaleNV {
		// E2M1 round-to-nearest-even through the 16-bit-lane table of
		// e2m1EncodeWF (its multiplier form), two blocks per half step
		for h := range 2 {
			nl.step(src, dst, invP, h)
		}
		ADDQ(U8(32), dst)
	} else if stage == scaleInt {
		// the codes from the products by RN(1/s); a step with a lane near
		// a rounding boundary is redone by the exact division after RET
		ic.step(name, src, dst, invP, idx, k, true)
		Label(name + "_join")
		if fp4 {
			ADDQ(U8(32), dst)
		} else {
			ADDQ(U8(64), dst)
		}
	} else {
		e := &lanes{fp4, halfUp, absMask, normC, normMin, magic, lowMask, signC, quarter, seven, zero, one, 0}
		var ys, ms, codes [4]reg.VecVirtual
		var kSub [4]reg.OpmaskVirtual
		for i := range codes {
			w := ZMM()
			VPBROADCASTD(Mem{Base: invP, Disp: 4 * (i / k)}, w)
			ys[i] = ZMM()
			VMULPS(Mem{Base: src, Disp: 64 * i}, w, ys[i])
			ms[i], codes[i], kSub[i] = e.normal(ys[i])
		}
		if !fp4 {
			// E4M3 subnormal results are rare in a scaled block (|x| below
			// 2^-14 of the block maximum): branched over when none has one
			ka, kb := K(), K()
			KORW(kSub[1], kSub[0], ka)
			KORW(kSub[3], kSub[2], kb)
			KORTESTW(kb, ka)
			JZ(LabelRef(name + "_signs"))
		}
		for i := range codes {
			e.sub(ms[i], codes[i], kSub[i])
		}
		if !fp4 {
			Label(name + "_signs")
		}
		for i := range codes {
			e.sign(ys[i], codes[i])
		}
		out := packCodes(codes, idx)
		if fp4 {
			t := ZMM()
			VPSRLW(U8(4), out, t)
			VPORD(t, out, out)
			narrowStore(VPMOVWB, out, Mem{Base: dst}, 32)
			ADDQ(U8(32), dst)
		} else {
			VMOVDQU32(out, Mem{Base: dst})
			ADDQ(U8(64), dst)
		}
	}
	ADDQ(U32(256), src)
	ADDQ(U8(4*(4/k)), invP)
	DECQ(cnt)
	JNZ(LabelRef(name + "_enc"))
	TESTQ(ng, ng)
	JNZ(LabelRef(name + "_chunk"))
	VZEROUPPER()
	RET()
	if stage == scaleInt {
		// the exact step: x / s with VDIVPS, for a step with a quotient
		// near a rounding boundary (or not finite)
		Label(name + "_exact")
		ic.step(name, src, dst, invP, idx, k, false)
		JMP(LabelRef(name + "_join"))
	}
}

// lanes holds the element encoder's constants (see fusedPow2F32).
type lanes struct {
	fp4, halfUp                                                               bool
	absMask, normC, normMin, magic, lowMask, signC, quarter, seven, zero, one reg.VecVirtual
	drop                                                                      uint8 // mantissa bits dropped (0: 20 for E4M3, 22 for E2M1)
}

// normal returns |y| and the codes of the lanes with a normal result, and
// the mask of the other lanes.
func (e *lanes) normal(y reg.VecVirtual) (m, c reg.VecVirtual, kSub reg.OpmaskVirtual) {
	m = ZMM()
	VPANDD(e.absMask, y, m)
	// drop the low mantissa bits, rounding
	c = ZMM()
	VPADDD(e.normC, m, c)
	drop := e.drop
	switch {
	case drop != 0:
	case e.fp4:
		drop = 22
	default:
		drop = 20
	}
	if !e.halfUp {
		l := ZMM()
		VPSRLD(U8(drop), m, l)
		VPANDD(e.one, l, l)
		VPADDD(l, c, c)
	}
	VPSRLD(U8(drop), c, c)
	if e.fp4 && !e.halfUp {
		// saturate at 6 (SGLang's ceil rule keeps |y| ≤ 6·(1+2^-24): no
		// clamp needed there)
		VPMINUD(e.seven, c, c)
	}
	kSub = K()
	VPCMPUD(U8(1), e.normMin, m, kSub) // m < normMin
	return m, c, kSub
}

// sub puts the codes of the lanes in kSub (subnormal results) into c: the
// magnitude plus a power of two whose ulp is the format's subnormal step
// leaves the code in the low bits.
func (e *lanes) sub(m, c reg.VecVirtual, kSub reg.OpmaskVirtual) {
	s := ZMM()
	if e.halfUp {
		VADDPS_RD_SAE(e.quarter, m, s)
		VADDPS_RD_SAE(e.magic, s, s)
	} else {
		VADDPS(e.magic, m, s)
	}
	VPANDD(e.lowMask, s, s)
	VMOVDQA32(s, kSub, c)
}

// sign adds the sign of y to the codes c.
func (e *lanes) sign(y, c reg.VecVirtual) {
	if e.halfUp {
		kNeg := K()
		VCMPPS(U8(1), e.zero, y, kNeg) // y < 0
		VPORD(e.signC, c, kNeg, c)
		return
	}
	sg := ZMM()
	if e.fp4 {
		VPSRLD(U8(28), y, sg)
	} else {
		VPSRLD(U8(24), y, sg)
	}
	VPTERNLOGD(U8(0xF8), e.signC, sg, c) // c | (sg & signC)
}

// pow2K holds the parameters and constants of pow2Exp (pow2Scales' p
// broadcast, then the mantissa mask, 1, 127 and +Inf).
type pow2K struct {
	pre, div, post, lo, hi, badLo, badHi, mant, one, c127, inf reg.VecVirtual
}

func newPow2K(p reg.Register, one, c127 reg.VecVirtual) *pow2K {
	return &pow2K{pre: bcast(p, 0), div: bcast(p, 1), post: bcast(p, 2), lo: bcast(p, 3), hi: bcast(p, 4),
		badLo: bcast(p, 5), badHi: bcast(p, 6), mant: konst(0x7FFFFF), one: one, c127: c127, inf: konst(0x7F800000)}
}

// exp returns the ceil-rule exponents e of sixteen block maxima a
// (pow2Scales) and stores their scale bytes e+127 at scales and the bad
// word (a ≥ Inf, e outside [badLo, badHi]) at bad.
func (k *pow2K) exp(a reg.VecVirtual, scales, bad reg.Register) reg.VecVirtual {
	q := ZMM()
	VMAXPS(a, k.pre, q)
	VDIVPS(k.div, q, q)
	VMAXPS(k.post, q, q)
	x := ZMM()
	VPSRLD(U8(23), q, x)
	VPSUBD(k.c127, x, x)
	f := ZMM()
	VPANDD(k.mant, q, f)
	VPMINUD(k.one, f, f)
	VPADDD(f, x, x)
	VPMAXSD(k.lo, x, x)
	VPMINSD(k.hi, x, x)
	k0, k1, k2 := K(), K(), K()
	VPCMPUD(U8(5), k.inf, a, k0)  // a >= Inf
	VPCMPD(U8(1), k.badLo, x, k1) // e < badLo
	VPCMPD(U8(6), k.badHi, x, k2) // e > badHi
	KORW(k1, k0, k0)
	KORW(k2, k0, k0)
	rb := GP32()
	KMOVW(k0, rb)
	MOVW(rb.As16(), Mem{Base: bad})
	sb := ZMM()
	VPADDD(k.c127, x, sb)
	narrowStore(VPMOVDB, sb, Mem{Base: scales}, 16)
	return x
}

// pow2ScaleStage stores the scale bytes and bad bits of sixteen block
// maxima a (pow2Scales; parameters loaded per group, for registers) and
// returns the multipliers 2^-e.
func pow2ScaleStage(a reg.VecVirtual, p, scales, bad reg.Register, one, c127 reg.VecVirtual) reg.VecVirtual {
	x := newPow2K(p, one, c127).exp(a, scales, bad)
	// the multipliers 2^-e as float32 bits (127 − e) << 23
	m := ZMM()
	VPSUBD(x, c127, m)
	VPSLLD(U8(23), m, m)
	return m
}

// nvScaleStage is pow2ScaleStage for nvfp4 (nvfp4Scales): the E4M3 scale
// codes of sf = invG·(a·rcp6) (E4M3 satfinite, computed as the table
// holds it), and
// the multipliers a ≠ 0 ? 1/(float(sf8)·g) : 0.
func nvScaleStage(a reg.VecVirtual, p, scales, bad reg.Register) reg.VecVirtual {
	invG, rcp6, g := bcast(p, 0), bcast(p, 1), bcast(p, 2)
	one := konst(1)
	sf := ZMM()
	VMULPS(rcp6, a, sf)
	VMULPS(sf, invG, sf)
	// E4M3 satfinite round-to-nearest-even of sf ≥ 0 (as the table): the
	// element encoder of mxfp8, saturated at 448 (code 0x7E)
	e := &lanes{absMask: konst(0x7FFFFFFF), normC: konst(uint32(0x7FFFF - 120<<23 + 1<<32)), normMin: konst(121 << 23),
		magic: konst(0x46800000), lowMask: konst(0xF), one: one}
	_, c, kSub0 := e.normal(sf)
	VPMINUD(konst(0x7E), c, c)
	e.sub(sf, c, kSub0)
	narrowStore(VPMOVDB, c, Mem{Base: scales}, 16)
	return newNVK(g).multiplier(a, c, bad)
}

// nvK holds the constants of nvK.multiplier: the global scale g, 1.0,
// +Inf, the E4M3 exponent bias, 2^-9, 8 and zero.
type nvK struct{ g, oneF, inf, e4m3Bias, twoM9, eight, zero reg.VecVirtual }

func newNVK(g reg.VecVirtual) *nvK {
	k := &nvK{g: g, oneF: konst(0x3F800000), inf: konst(0x7F800000), e4m3Bias: konst(120 << 23),
		twoM9: konst(0x3B000000), eight: konst(8), zero: ZMM()}
	VPXORD(k.zero, k.zero, k.zero)
	return k
}

// multiplier returns the element multipliers a ≠ 0 ? 1/(float(c)·g) : 0
// of sixteen block maxima a with E4M3 scale codes c (nvfp4Scales) and
// stores the bad word (a NaN maximum, an infinite multiplier) at bad.
func (k *nvK) multiplier(a, c reg.VecVirtual, bad reg.Register) reg.VecVirtual {
	// E4M3 value of the (nonnegative) code: normal codes shift into
	// float32 bits (exponent bias 7 → 127), subnormal ones are code·2^-9
	v := ZMM()
	VPSLLD(U8(20), c, v)
	VPADDD(k.e4m3Bias, v, v)
	sub := ZMM()
	VCVTDQ2PS(c, sub)
	VMULPS(k.twoM9, sub, sub)
	kSub := K()
	VPCMPUD(U8(1), k.eight, c, kSub) // code < 8
	VMOVDQA32(sub, kSub, v)
	VMULPS(k.g, v, v)
	o := ZMM()
	VDIVPS(v, k.oneF, o)
	kz := K()
	VPTESTNMD(a, a, kz)
	VMOVDQA32(k.zero, kz, o)
	// blocks for the portable code: a NaN maximum, an infinite multiplier
	kb, ki := K(), K()
	VPCMPUD(U8(6), k.inf, a, kb)
	VPCMPUD(U8(5), k.inf, o, ki)
	KORW(ki, kb, kb)
	r := GP32()
	KMOVW(kb, r)
	MOVW(r.As16(), Mem{Base: bad})
	return o
}

// fusedOdd holds the word indices of the top halves of 32 dwords.
var fusedOdd Mem

// nvLut holds the constants of nvLutStep.
type nvLut struct {
	L0, L1, base, absMaskW, low16, one, c31, c8, zero, odd reg.VecVirtual
}

func newNVLut(lut reg.Register) *nvLut {
	e := &nvLut{L0: ZMM(), L1: ZMM(), zero: ZMM(), odd: ZMM()}
	VMOVDQU16(Mem{Base: lut}, e.L0)
	VMOVDQU16(Mem{Base: lut, Disp: 64}, e.L1)
	e.base = bcastW(lut, 64)
	e.absMaskW = konstW(0x7FFF)
	e.low16 = konst(0xFFFF)
	e.one = konstW(1)
	e.c31 = konstW(31)
	e.c8 = konstW(8)
	VPXORD(e.zero, e.zero, e.zero)
	VMOVDQU16(fusedOdd, e.odd)
	return e
}

// step encodes 32 float32 elements (blocks 2h and 2h+1 of a step, at
// src+128h; multipliers at invP) into 16 bytes at dst+16h, as
// e2m1EncodeWF does with a multiplier (mul, pair).
func (e *nvLut) step(src, dst, invP reg.Register, h int) {
	os0, os1 := ZMM(), ZMM()
	VPBROADCASTD(Mem{Base: invP, Disp: 8 * h}, os0)
	VPBROADCASTD(Mem{Base: invP, Disp: 8*h + 4}, os1)
	lo, hi := ZMM(), ZMM()
	VMULPS(Mem{Base: src, Disp: 128 * h}, os0, lo)
	VMULPS(Mem{Base: src, Disp: 128*h + 64}, os1, hi)
	u := ZMM()
	VMOVDQA64(e.odd, u)
	VPERMI2W(hi, lo, u)
	kSticky := K()
	k0, k1 := K(), K()
	VPTESTMD(e.low16, lo, k0)
	VPTESTMD(e.low16, hi, k1)
	KUNPCKWD(k0, k1, kSticky)
	kNeg := K()
	VPMOVW2M(u, kNeg)
	a := ZMM()
	VPANDD(e.absMaskW, u, a)
	j := ZMM()
	VPSRLW(U8(5), a, j)
	VPSUBW(e.base, j, j)
	VPMAXSW(e.zero, j, j)
	VPMINSW(e.c31, j, j)
	l := ZMM()
	VPANDD(e.c31, a, l)
	VPMINUW(e.one, l, l)
	VMOVDQU16(e.one, kSticky, l)
	VPADDW(j, j, j)
	VPADDW(l, j, j)
	VPERMI2W(e.L1, e.L0, j)
	VPADDW(e.c8, j, kNeg, j)
	t := ZMM()
	VPSRLD(U8(12), j, t)
	VPORD(t, j, j)
	narrowStore(VPMOVDB, j, Mem{Base: dst, Disp: 16 * h}, 16)
}

// intScaleK holds the constants of intScale: qmax, 65504, 1.0, +Inf and
// the fp16 NaN.
type intScaleK struct{ q, maxS, oneF, inf, nan reg.VecVirtual }

func newIntScaleK(qmax reg.Register) *intScaleK {
	k := &intScaleK{q: ZMM(), maxS: konst(math.Float32bits(65504)), oneF: konst(0x3F800000), inf: konst(0x7F800000), nan: konst(0x7E00)}
	VBROADCASTSS(Mem{Base: qmax}, k.q)
	return k
}

// scale stores at dst the fp16 scales of sixteen group maxima a
// (intScales: min(a/qmax, 65504), 1 for a zero group, nearest even, NaN
// 0x7E00) and returns their float32 values.
func (k *intScaleK) scale(a reg.VecVirtual, dst Mem) reg.VecVirtual {
	s := ZMM()
	VDIVPS(k.q, a, s)
	VMINPS(k.maxS, s, s)
	kz := K()
	VPTESTNMD(a, a, kz)
	VMOVDQA32(k.oneF, kz, s)
	h := ZMM()
	VCVTPS2PH(U8(0), s, h.AsY())
	VPMOVZXWD(h.AsY(), h)
	kn := K()
	VPCMPUD(U8(6), k.inf, a, kn)
	VMOVDQA32(k.nan, kn, h)
	h16 := ZMM()
	VPMOVDW(h, h16.AsY())
	VMOVDQU32(h16.AsY(), dst)
	f := ZMM()
	VCVTPH2PS(h16.AsY(), f)
	return f
}

// intConsts holds the constants of the integer codes.
type intConsts struct {
	hi, lo, eight reg.VecVirtual
	abs, thr      reg.VecVirtual // |x| mask; 0.5 − 2^-14, step's limit
	four          bool
}

func newIntConsts(four bool) *intConsts {
	qmax := float32(127)
	if four {
		qmax = 7
	}
	e := &intConsts{hi: konst(math.Float32bits(qmax)), lo: konst(math.Float32bits(-qmax)), four: four,
		abs: konst(0x7FFFFFFF), thr: konst(f32bits(0.5 - 1.0/16384))}
	if four {
		e.eight = konst(8)
	}
	return e
}

// step writes the codes of one step (four vectors; k per group) to dst.
// With fast, the products p = x·r by r = RN(1/s) (at invP +
// 64·fusedChunk) take the place of the quotients x / s: d = RN(x/s) and p
// differ by less than 3·2^-24·|x/s|, so rint(d) = rint(p) whenever p is
// farther than 2^-14 from a half-integer and |x/s| < 2^8 (above it both
// clamp to ±qmax); a step with a lane closer than that, or with p not
// finite (x or r not finite: s = 0), jumps to name_exact, which redoes
// it with fast false.
func (e *intConsts) step(name string, src, dst, invP reg.Register, idx reg.VecVirtual, k int, fast bool) {
	var codes [4]reg.VecVirtual
	var far reg.VecVirtual
	if fast {
		far = ZMM()
		VPXORD(far, far, far)
	}
	for i := range codes {
		codes[i] = e.code(src, invP, i, k, far)
	}
	out := ZMM()
	if e.four {
		ab, cd := ZMM(), ZMM()
		VPACKUSDW(codes[1], codes[0], ab)
		VPACKUSDW(codes[3], codes[2], cd)
		VPACKUSWB(cd, ab, out)
		VPERMD(out, idx, out)
		t := ZMM()
		VPSRLW(U8(4), out, t)
		VPORD(t, out, out)
		narrowStore(VPMOVWB, out, Mem{Base: dst}, 32)
	} else {
		ab, cd := ZMM(), ZMM()
		VPACKSSDW(codes[1], codes[0], ab)
		VPACKSSDW(codes[3], codes[2], cd)
		VPACKSSWB(cd, ab, out)
		VPERMD(out, idx, out)
		VMOVDQU32(out, Mem{Base: dst})
	}
	if fast {
		e.nearTie(far, name+"_exact")
	}
}

// nearTie jumps to label when a lane of far (the running maximum of
// |p − rint(p)|) is at or over 0.5 − 2^-14, or NaN: then a product may
// round otherwise than its quotient.
func (e *intConsts) nearTie(far reg.VecVirtual, label string) {
	kf := K()
	VPCMPUD(U8(5), e.thr, far, kf) // not less than
	KORTESTW(kf, kf)
	JNZ(LabelRef(label))
}

// code returns the integer codes (q+8 for int4) of vector i of a step
// (its group's divisor at invP + 4·(i/k), its reciprocal 64·fusedChunk
// further), as intEncode computes them: from the quotient, or with far
// (not nil) from the product, |p − rint(p)| going into far's maximum.
func (e *intConsts) code(src, invP reg.Register, i, k int, far reg.VecVirtual) reg.VecVirtual {
	x := Mem{Base: src, Disp: 64 * i}
	var q reg.VecVirtual
	if far != nil {
		r := ZMM()
		VBROADCASTSS(Mem{Base: invP, Disp: 4*(i/k) + 64*fusedChunk}, r)
		q = e.product(x, r, far)
	} else {
		d, u := ZMM(), ZMM()
		VBROADCASTSS(Mem{Base: invP, Disp: 4 * (i / k)}, d)
		VMOVUPS(x, u)
		q = e.quotient(u, d)
	}
	if e.four {
		VPADDD(e.eight, q, q)
	}
	return q
}

// product returns the codes clamp(rint(p), ±qmax) of p = x·r (x a
// register or memory) and puts |p − rint(p)| (exact) into the running
// maximum far as integer bits (NaN above every finite value).
func (e *intConsts) product(x Op, r, far reg.VecVirtual) reg.VecVirtual {
	p, t, q := ZMM(), ZMM(), ZMM()
	VMULPS(x, r, p)
	VRNDSCALEPS(U8(8), p, t) // nearest even, no precision exception
	VSUBPS(t, p, p)
	VPANDD(e.abs, p, p)
	VPMAXUD(p, far, far)
	VMAXPS(e.lo, t, t)
	VMINPS(e.hi, t, t)
	VCVTPS2DQ(t, q)
	return q
}

// quotient returns the codes clamp(rint(u / d), ±qmax), NaN → 0; u is
// overwritten.
func (e *intConsts) quotient(u, d reg.VecVirtual) reg.VecVirtual {
	VDIVPS(d, u, u)
	kOrd := K()
	VCMPPS(U8(7), u, u, kOrd) // ordered: not NaN
	VMAXPS(e.lo, u, u)
	VMINPS(e.hi, u, u)
	q := ZMM()
	VPXORD(q, q, q)
	VCVTPS2DQ(u, kOrd, q) // round to nearest even (MXCSR default)
	return q
}

// fp8EncodeLanes emits func(dst *byte, src *float32, n int, p *uint32) int:
// the unscaled float32 → FP8 encoder (m mantissa bits, exponent bias b,
// largest finite value maxF; a format with −0) in 32-bit lanes, 64
// elements per step (n a multiple of 64), as the fused encoders encode
// E4M3: integer round-to-nearest-even of the float32 bits for normal
// results, a magic-number addition for subnormal ones. It stops before the
// first step holding a magnitude that rounds past maxF (or ±Inf, NaN),
// whose codes depend on the overflow policy, and returns the elements it
// encoded; the caller finishes with the 16-bit lane kernel.
func fp8EncodeLanes(name string, m, b int, maxF float64) {
	TEXT(name, NOSPLIT, "func(dst *byte, src *float32, n int) int")
	Pragma("noescape")
	Doc(name + " encodes float32 to FP8 in 32-bit lanes, 64 per step, up to the first step with an overflowing or non-finite value; it returns the elements done.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	drop := 23 - m
	// the first magnitude that rounds past maxF: maxF plus half its ulp
	ovT := math.Float32bits(float32(maxF + math.Ldexp(1, int(math.Floor(math.Log2(maxF)))-m-1)))
	e := &lanes{
		absMask: konst(0x7FFFFFFF),
		normC:   konst(uint32(1<<(drop-1) - 1 - (127-b)<<23 + 1<<32)),
		normMin: konst(uint32(128-b) << 23),            // the smallest normal: 2^(1−b)
		magic:   konst(uint32(127+(23-(b-1+m))) << 23), // 2^(23−(b−1+m)): its ulp is the subnormal step 2^(1−b−m)
		lowMask: konst(0xF),
		signC:   konst(0x80),
		one:     konst(1),
		drop:    uint8(drop),
	}
	ov := konst(ovT)
	perm := GLOBL(name+"Perm", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15} {
		DATA(4*i, U32(v))
	}
	idx := ZMM()
	VMOVDQU32(perm, idx)
	done := GP64()
	XORQ(done, done)

	Label(name + "_loop")
	var ys, codes [4]reg.VecVirtual
	var kOv [4]reg.OpmaskVirtual
	for i := range codes {
		ys[i] = ZMM()
		VMOVUPS(Mem{Base: src, Disp: 64 * i}, ys[i])
		var mg reg.VecVirtual
		var kSub reg.OpmaskVirtual
		mg, codes[i], kSub = e.normal(ys[i])
		e.sub(mg, codes[i], kSub)
		kOv[i] = K()
		VPCMPUD(U8(5), ov, mg, kOv[i]) // m >= ovT (NaN and ±Inf too)
	}
	ka, kb := K(), K()
	KORW(kOv[1], kOv[0], ka)
	KORW(kOv[3], kOv[2], kb)
	KORTESTW(kb, ka)
	JNZ(LabelRef(name + "_done"))
	for i := range codes {
		e.sign(ys[i], codes[i])
	}
	out := packCodes(codes, idx)
	VMOVDQU32(out, Mem{Base: dst})
	ADDQ(U8(64), dst)
	ADDQ(U32(256), src)
	ADDQ(U8(64), done)
	SUBQ(U8(64), n)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_done")
	Store(done, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// packCodes packs the byte codes of four vectors of dwords (unsigned
// saturation) into one vector in element order (idx: the dword order
// VPACKUSDW / VPACKUSWB leave).
func packCodes(codes [4]reg.VecVirtual, idx reg.VecVirtual) reg.VecVirtual {
	ab, cd, out := ZMM(), ZMM(), ZMM()
	VPACKUSDW(codes[1], codes[0], ab)
	VPACKUSDW(codes[3], codes[2], cd)
	VPACKUSWB(cd, ab, out)
	VPERMD(out, idx, out)
	return out
}

// chunkStart emits the head of a fused encoder's chunk: nc = min(ng,
// fusedChunk) groups taken from ng, s0 = src (pass 1's pointer), invP at
// the frame's buffer inv, and the group counter gc = nc.
func chunkStart(ng, src, invP reg.Register, inv Mem) (nc, s0, gc reg.GPVirtual) {
	nc, s0, gc = GP64(), GP64(), GP64()
	MOVQ(U32(fusedChunk), nc)
	CMPQ(ng, U8(fusedChunk))
	CMOVQLT(ng, nc)
	SUBQ(nc, ng)
	MOVQ(src, s0)
	LEAQ(inv, invP)
	MOVQ(nc, gc)
	return nc, s0, gc
}
