package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The fused float32 block encoders of fused.go at the AVX2 level (sixteen
// vector registers, VEX encodings only, constants as memory operands).

func fusedAVX2() {
	fusedPow2F32Y("mxfp8EncF32Fused", 32, false, false, false)
	fusedPow2F32Y("fp4HalfUpEncF32Fused", 16, true, false, false)
	fusedPow2F32Y("nvfp4EncF32Fused", 16, true, true, false)
	fusedPow2F32Y("int8EncF32Fused", 64, false, false, true)
	fusedPow2F32Y("int4EncF32Fused", 32, true, false, true)
	fp8EncodeLanesY("e4m3EncF32LanesAVX2", 3, 7, 448)
	fp8EncodeLanesY("e5m2EncF32LanesAVX2", 2, 15, 57344)
}

// fusedPow2F32Y is fusedPow2F32 (stage scalePow2) with AVX2: the same
// contract and the same results bit for bit. E4M3 (fp4 false, bs 32) or
// SGLang's E2M1 (fp4 true, halfUp, bs 16). Elements: y = x·2^-e in
// float32; for E4M3 normal results by integer rounding of the float32
// bits, subnormal ones (|y| below the smallest normal) by adding 2^14
// (its ulp is the subnormal step) and keeping the low bits; for E2M1 the
// codes of fusedPow2F32's two additions rounding down (every midpoint
// away from zero) read from the half-up byte tables at lut
// (quant.e2m1TabUp) with the sign of y < 0.
//
// With nv (nvfp4, stage scaleNV; p holds invG, rcp6, g as float32) the
// scales and multipliers are nvScaleStage's and the elements E2M1
// round-to-nearest-even of y with the sign bit of y, saturating at 6 (the
// codes of e2m1EncodeWF's table), read as e2m1EncodeY reads them from the
// byte tables at lut (quant.e2m1TabRNE).
//
// With intg (int8_g64, bs 64; int4_g32, bs 32 with fp4; p[0] is qmax as
// float32) the fp16 group scales of intScalesY go to scales (two bytes
// per group) and the codes are intEncodeY's: clamp(rint(x / s), ±qmax),
// NaN → 0, int8 bytes or q+8 nibbles; no group is left to the portable
// code.
func fusedPow2F32Y(name string, bs int, fp4, nv, intg bool) {
	name += fmt.Sprintf("B%dAVX2", bs)
	TEXT(name, NOSPLIT, "func(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16)")
	Pragma("noescape")
	switch {
	case intg:
		Doc(name + " quantizes sixteen float32 groups at a time to symmetric integers with AVX2: maxima, scales and codes in one call.")
	case nv:
		Doc(name + " encodes groups of sixteen float32 blocks to nvfp4 with AVX2: maxima, scales and elements in one call.")
	default:
		Doc(name + " encodes groups of sixteen float32 blocks with ceil-rule power-of-two scales with AVX2: maxima, scales and elements in one call.")
	}
	dst := Load(Param("dst"), GP64())
	scales := Load(Param("scales"), GP64())
	bad := Load(Param("bad"), GP64())
	src := Load(Param("src"), GP64())
	ng := Load(Param("ng"), GP64())
	p := Load(Param("p"), GP64())
	// the multipliers (or the integer scales) of a chunk; for intg also
	// the reciprocals of the scales, 64·fusedChunk bytes further
	frame := 64 * fusedChunk
	if intg {
		frame *= 2
	}
	inv := AllocLocal(frame)
	invP := GP64()
	idx := cData([8]uint32{0, 4, 1, 5, 2, 6, 3, 7})
	absMask := cY(0x7FFFFFFF)
	yk := bs / 8 // vectors per block

	Label(name + "_chunk")
	// up to fusedChunk groups: first all their scales, then their elements
	nc, s0, gc := chunkStart(ng, src, invP, inv)
	Label(name + "_group")
	// pass 1: the block maxima, eight blocks per half through a
	// three-level shuffle tree (128-bit halves, then VSHUFPS twice) and
	// one VPERMD; then pow2Scales' arithmetic on each half
	absR := YMM()
	VMOVDQU(absMask, absR)
	blockMax := func(b int) reg.VecVirtual {
		v := YMM()
		VPAND(Mem{Base: s0, Disp: 4 * bs * b}, absR, v)
		for i := 1; i < yk; i++ {
			t := YMM()
			VPAND(Mem{Base: s0, Disp: 4*bs*b + 32*i}, absR, t)
			VPMAXUD(t, v, v)
		}
		return v
	}
	bits := GP64()
	XORQ(bits, bits)
	for h := range 2 {
		var r []reg.VecVirtual
		for b := 8 * h; b < 8*h+8; b += 2 {
			a, c := blockMax(b), blockMax(b+1)
			x, y := YMM(), YMM()
			VPERM2I128(U8(0x20), c, a, x)
			VPERM2I128(U8(0x31), c, a, y)
			VPMAXUD(y, x, x)
			r = append(r, x)
		}
		for len(r) > 1 {
			var o []reg.VecVirtual
			for i := 0; i < len(r); i += 2 {
				x, y := YMM(), YMM()
				VSHUFPS(U8(0x88), r[i+1], r[i], x)
				VSHUFPS(U8(0xDD), r[i+1], r[i], y)
				VPMAXUD(y, x, x)
				o = append(o, x)
			}
			r = o
		}
		a := YMM()
		VMOVDQU(idx, a)
		VPERMD(r[0], a, a)
		if nv {
			nvScaleStageY(a, p, scales, invP, bits, h)
			continue
		}
		if intg {
			intScaleStageY(a, p, scales, invP, h)
			continue
		}
		x := newPow2KY(p).exp(a, scales, bits, h)
		// the multipliers 2^-e as float32 bits (127 − e) << 23
		m := YMM()
		VMOVDQU(cY(127), m)
		VPSUBD(x, m, m)
		VPSLLD(U8(23), m, m)
		VMOVDQU(m, Mem{Base: invP, Disp: 32 * h})
	}
	MOVW(bits.As16(), Mem{Base: bad})
	ADDQ(U8(64), invP)
	ADDQ(U32(64*bs), s0)
	if intg {
		ADDQ(U8(32), scales)
	} else {
		ADDQ(U8(16), scales)
	}
	ADDQ(U8(2), bad)
	DECQ(gc)
	JNZ(LabelRef(name + "_group"))

	// pass 2: four vectors (32 elements: one E4M3 block) or eight (64
	// elements: four E2M1 blocks) per step
	LEAQ(inv, invP)
	cnt := GP64()
	MOVQ(nc, cnt)
	if intg {
		SHLQ(U8(4), cnt) // a group per step
	} else {
		// E2M1: 64 elements (four blocks) per step, 4 per group; E4M3:
		// 32 elements, 16 per group
		SHLQ(U8(map[int]uint8{16: 2, 32: 4}[bs]), cnt)
	}
	var tb [4]reg.VecVirtual
	if fp4 && !intg {
		nt := 2 // fp4 (half-up): the G rows only
		if nv {
			nt = 4
		}
		lut := Load(Param("lut"), GP64())
		for i := range nt {
			tb[i] = YMM()
			VMOVDQU(rowY(lut, i), tb[i])
		}
	}
	Label(name + "_enc")
	if intg {
		intStepY(name, src, dst, invP, bs, fp4, idx)
	} else {
		// the codes of the 32 elements at src+128k, one byte each, dwords in
		// the order of idx
		elems := func(k int) reg.VecVirtual {
			var codes [4]reg.VecVirtual
			// y_i = x·2^-e (w: the multiplier of the block of vector i)
			var w [2]reg.VecVirtual
			for b := range 4 / yk {
				w[b] = YMM()
				VPBROADCASTD(Mem{Base: invP, Disp: 4*b + 8*k}, w[b])
			}
			y := func(i int) reg.VecVirtual {
				v := YMM()
				VMULPS(Mem{Base: src, Disp: 128*k + 32*i}, w[i/yk], v)
				return v
			}
			ab, out := YMM(), YMM()
			if nv {
				// e2m1EncodeY's byte tables (lut, quant.e2m1TabRNE): in
				// 16-bit lanes the key j from the top half of |y|, a sticky
				// bit s for the bits below its step, the sign of y; then the
				// code G[j] + s·H[j] in bytes
				var jw, sw, uw [2]reg.VecVirtual
				for h := range 2 {
					x0, x1 := y(2*h), y(2*h+1)
					// u: bits 31–21 of y (sign, exponent, two mantissa
					// bits), sign-extended
					u, t := YMM(), YMM()
					VPSRAD(U8(21), x0, u)
					VPSRAD(U8(21), x1, t)
					VPACKSSDW(t, u, u)
					// the sticky bit: bits 20–0 of y, not all zero
					// (signed saturation keeps them nonzero)
					VPSLLD(U8(11), x0, x0)
					VPSLLD(U8(11), x1, x1)
					st := YMM()
					VPACKSSDW(x1, x0, st)
					a := YMM()
					VPAND(cW(0x3FF), u, a)
					VPSUBUSW(cW(e2m1KeyBase>>5), a, a)
					jw[h], sw[h], uw[h] = a, st, u
				}
				j, sb, sg := YMM(), YMM(), YMM()
				VPACKUSWB(jw[1], jw[0], j)
				VPACKSSWB(sw[1], sw[0], sb)
				VPACKSSWB(uw[1], uw[0], sg)
				VPMINUB(cY(0x1F1F1F1F), j, j)
				ia, ib := YMM(), YMM()
				VPADDUSB(cY(0x70707070), j, ia) // j < 16: j, else ≥ 0x80 (VPSHUFB writes 0)
				VPSUBB(cY(0x10101010), j, ib)   // j ≥ 16: j − 16, else negative
				hh, t := YMM(), YMM()
				VPSHUFB(ia, tb[0], out)
				VPSHUFB(ib, tb[1], t)
				VPOR(t, out, out)
				VPSHUFB(ia, tb[2], hh)
				VPSHUFB(ib, tb[3], t)
				VPOR(t, hh, hh)
				VPMINUB(sb, hh, hh) // H is 0 or 1, s any nonzero byte
				VPADDB(hh, out, out)
				VPOR(cY(0x08080808), out, t)
				VPBLENDVB(sg, t, out, out)
			} else if fp4 {
				// every decision point of SGLang's E2M1 (every midpoint up) is
				// a key step of e2m1EncodeY's half-up byte tables (lut,
				// quant.e2m1TabUp, whose H rows are zero): in 16-bit lanes the
				// key j from the top half of |y| alone, then the code G[j] in
				// bytes
				zero := YMM()
				VPXOR(zero, zero, zero)
				var jw, nw [2]reg.VecVirtual
				for h := range 2 {
					y0, y1 := y(2*h), y(2*h+1)
					// the key from bits 30–21 of y (exponent, two mantissa
					// bits)
					u, t := YMM(), YMM()
					VPSRAD(U8(21), y0, u)
					VPSRAD(U8(21), y1, t)
					VPACKSSDW(t, u, u)
					// sign when y < 0
					n0 := YMM()
					VCMPPS(U8(1), zero, y0, n0)
					VCMPPS(U8(1), zero, y1, y1)
					nw[h] = YMM()
					VPACKSSDW(y1, n0, nw[h])
					VPAND(cW(0x3FF), u, u)
					VPSUBUSW(cW(e2m1KeyBase>>5), u, u)
					jw[h] = u
				}
				j := YMM()
				VPACKUSWB(jw[1], jw[0], j)
				VPMINUB(cY(0x1F1F1F1F), j, j)
				ia, ib, t := YMM(), YMM(), YMM()
				VPADDUSB(cY(0x70707070), j, ia) // j < 16: j, else ≥ 0x80 (VPSHUFB writes 0)
				VPSUBB(cY(0x10101010), j, ib)   // j ≥ 16: j − 16, else negative
				VPSHUFB(ia, tb[0], out)
				VPSHUFB(ib, tb[1], t)
				VPOR(t, out, out)
				VPACKSSWB(nw[1], nw[0], ab)
				VPAND(cY(0x08080808), ab, ab)
				VPOR(ab, out, out)
			} else {
				var ys [4]reg.VecVirtual
				mn := YMM()
				for i := range codes {
					v := y(i)
					ys[i] = v
					m, c, l := YMM(), YMM(), YMM()
					VPAND(absMask, v, m)
					// normal results: round the float32 bits to 3 mantissa bits,
					// nearest even, and rebias
					VPADDD(cY(uint32(0x7FFFF-120<<23+1<<32)), m, c)
					VPSRLD(U8(20), m, l)
					VPAND(cY(1), l, l)
					VPADDD(l, c, c)
					VPSRLD(U8(20), c, c)
					if i == 0 {
						VMOVDQA(m, mn)
					} else {
						VPMINUD(m, mn, mn)
					}
					codes[i] = c
				}
				// |y| < 2^-6 (subnormal results) is rare in a scaled block (|x|
				// below 2^-14 of the block maximum): branched over when no lane
				// has one
				nm := YMM()
				VMOVDQU(cY(121<<23), nm)
				VPCMPGTD(mn, nm, mn)
				VPTEST(mn, mn)
				JZ(LabelRef(name + "_pack"))
				for i := range codes {
					m, s, l := YMM(), YMM(), YMM()
					VPAND(absMask, ys[i], m)
					VADDPS(cY(0x46800000), m, s) // 2^14: its ulp is 2^-9
					VPAND(cY(0xF), s, s)
					VPCMPGTD(m, nm, l)
					VPBLENDVB(l, s, codes[i], codes[i])
				}
				Label(name + "_pack")
				packSignedY(codes, ys, out)
			}
			return out
		}
		if fp4 {
			// two codes per byte, even element low (VPMADDUBSW: b0 +
			// 16·b1, within a dword, so before the dword order of idx);
			// then bytes: per lane four 16-bit units of each half, the
			// halves' lanes paired by VPERMQ and their units
			// interleaved into idx's order by VPSHUFB
			o0, o1 := elems(0), elems(1)
			VPMADDUBSW(cY(0x10011001), o0, o0)
			VPMADDUBSW(cY(0x10011001), o1, o1)
			VPACKUSWB(o1, o0, o0)
			VPERMQ(U8(0xD8), o0, o0)
			VPSHUFB(cData([8]uint32{0x09080100, 0x0B0A0302, 0x0D0C0504, 0x0F0E0706, 0x09080100, 0x0B0A0302, 0x0D0C0504, 0x0F0E0706}), o0, o0)
			VMOVDQU(o0, Mem{Base: dst})
			ADDQ(U8(32), dst)
			ADDQ(U8(16), invP)
			ADDQ(U32(256), src)
		} else {
			out, ab := elems(0), YMM()
			VMOVDQU(idx, ab)
			VPERMD(out, ab, out)
			VMOVDQU(out, Mem{Base: dst})
			ADDQ(U8(32), dst)
			ADDQ(U8(4), invP)
			ADDQ(U8(128), src)
		}
	}
	DECQ(cnt)
	JNZ(LabelRef(name + "_enc"))
	TESTQ(ng, ng)
	JNZ(LabelRef(name + "_chunk"))
	VZEROUPPER()
	RET()
	if intg {
		// the exact step: x / s with VDIVPS, for a step with a quotient
		// near a rounding boundary (or not finite)
		Label(name + "_exact")
		intCodesY(name, src, dst, invP, bs, fp4, idx, false)
		JMP(LabelRef(name + "_join"))
	}
}

// nvScaleStageY is nvScaleStage for the eight block maxima a of half h of
// a group: the E4M3 scale bytes (at scales+8h), the multipliers (at
// invP+32h) and the bad bits (ORed into bits, at bit 8h).
func nvScaleStageY(a reg.VecVirtual, p, scales, invP, bits reg.Register, h int) {
	bc := func(i int) reg.VecVirtual {
		z := YMM()
		VPBROADCASTD(Mem{Base: p, Disp: 4 * i}, z)
		return z
	}
	sf := YMM()
	VMULPS(bc(1), a, sf) // a·rcp6
	VMULPS(bc(0), sf, sf)
	// E4M3 satfinite round-to-nearest-even of sf ≥ 0
	c, l := YMM(), YMM()
	VPADDD(cY(uint32(0x7FFFF-120<<23+1<<32)), sf, c)
	VPSRLD(U8(20), sf, l)
	VPAND(cY(1), l, l)
	VPADDD(l, c, c)
	VPSRLD(U8(20), c, c)
	VPMINUD(cY(0x7E), c, c)
	s, nm := YMM(), YMM()
	VADDPS(cY(0x46800000), sf, s) // 2^14: its ulp is 2^-9
	VPAND(cY(0xF), s, s)
	VMOVDQU(cY(121<<23), nm)
	VPCMPGTD(sf, nm, nm) // sf < 2^-6
	VPBLENDVB(nm, s, c, c)
	b := YMM()
	VMOVDQA(c, b)
	VMOVQ(lowBytes(b), Mem{Base: scales, Disp: 8 * h})
	o := nvMultiplierY(a, c, bc(2), bits, h)
	VMOVDQU(o, Mem{Base: invP, Disp: 32 * h})
}

// intScaleStageY is intScalesY for the eight group maxima a of half h of
// a group: the fp16 scales (at scales+16h) and their float32 values, the
// divisors (at invP+32h).
func intScaleStageY(a reg.VecVirtual, p, scales, invP reg.Register, h int) {
	q := YMM()
	VBROADCASTSS(Mem{Base: p}, q)
	f := intScaleY(a, q, Mem{Base: scales, Disp: 16 * h})
	VMOVUPS(f, Mem{Base: invP, Disp: 32 * h})
	// r = RN(1/s) for intStepY's products (s = 0 gives +Inf, whose
	// products send the step to the exact division)
	r := YMM()
	VMOVUPS(cY(0x3F800000), r)
	VDIVPS(f, r, r)
	VMOVUPS(r, Mem{Base: invP, Disp: 32*h + 64*fusedChunk})
}

// intStepY encodes one group (bs 64: int8 bytes; bs 32 with four: q+8
// nibbles) with the products p = x·r, r = RN(1/s) (at invP+64·fusedChunk)
// in place of the quotients x / s: d = RN(x/s) and p differ by less than
// 3·2^-24·|x/s|, so rint(d) = rint(p) whenever p is farther than 2^-14
// from a half-integer and |x/s| < 2^8 (above it both clamp to ±qmax). A
// step with a lane closer than that, or with p not finite (x or r not
// finite: s = 0), is redone by the exact division (intCodesY at
// name_exact).
func intStepY(name string, src, dst, invP reg.Register, bs int, four bool, idx Mem) {
	intCodesY(name, src, dst, invP, bs, four, idx, true)
	Label(name + "_join")
	if four {
		ADDQ(U8(16*(bs/32)), dst)
	} else {
		ADDQ(U8(64), dst)
	}
	ADDQ(U8(4), invP)
	ADDQ(U32(4*bs), src)
}

// intCodesY writes the codes of the group at src to dst: with fast, from
// the products (and jumps to name_exact when a lane is near a boundary),
// else from the quotients; clamp(rint(q), ±qmax), NaN → 0.
func intCodesY(name string, src, dst, invP reg.Register, bs int, four bool, idx Mem, fast bool) {
	qmax := float32(127)
	if four {
		qmax = 7
	}
	d := YMM()
	if fast {
		VBROADCASTSS(Mem{Base: invP, Disp: 64 * fusedChunk}, d)
	} else {
		VBROADCASTSS(Mem{Base: invP}, d)
	}
	var far reg.VecVirtual
	if fast {
		far = YMM()
		VPXOR(far, far, far)
	}
	for half := range bs / 32 {
		var q [4]reg.VecVirtual
		for i := range 4 {
			q[i] = YMM()
			x := Mem{Base: src, Disp: 128*half + 32*i}
			if fast {
				// k = rint(p); |p − k| (exact) into the running maximum
				// as integer bits (NaN above every finite value)
				p, t := YMM(), YMM()
				VMULPS(x, d, p)
				VROUNDPS(U8(8), p, q[i]) // nearest even, no precision exception
				VSUBPS(q[i], p, t)
				VANDPS(cY(0x7FFFFFFF), t, t)
				VPMAXUD(t, far, far)
				VMAXPS(cY(f32bits(-qmax)), q[i], q[i])
				VMINPS(cY(f32bits(qmax)), q[i], q[i])
				VCVTPS2DQ(q[i], q[i])
				continue
			}
			VMOVUPS(x, q[i])
			VDIVPS(d, q[i], q[i])
			k := YMM()
			VCMPPS(U8(7), q[i], q[i], k) // ordered: not NaN
			VMAXPS(cY(f32bits(-qmax)), q[i], q[i])
			VMINPS(cY(f32bits(qmax)), q[i], q[i])
			VCVTPS2DQ(q[i], q[i]) // round to nearest even (MXCSR default)
			VPAND(k, q[i], q[i])
		}
		VPACKSSDW(q[1], q[0], q[0])
		VPACKSSDW(q[3], q[2], q[2])
		VPACKSSWB(q[2], q[0], q[0])
		perm := YMM()
		VMOVDQU(idx, perm)
		VPERMD(q[0], perm, q[0])
		if four {
			VPADDB(cY(0x08080808), q[0], q[0])
			VPMADDUBSW(cY(0x10011001), q[0], q[0]) // b0 + 16·b1
			hi := XMM()
			VEXTRACTI128(U8(1), q[0], hi)
			VPACKUSWB(hi, q[0].AsX(), hi)
			VMOVDQU(hi, Mem{Base: dst, Disp: 16 * half})
		} else {
			VMOVDQU(q[0], Mem{Base: dst, Disp: 32 * half})
		}
	}
	if fast {
		// a lane with |p − k| ≥ 0.5 − 2^-14 (or NaN): the exact step
		VPCMPGTD(cY(f32bits(0.5-1.0/16384)-1), far, far)
		VPTEST(far, far)
		JNZ(LabelRef(name + "_exact"))
	}
}

// fp8EncodeLanesY is fp8EncodeLanes with AVX2: the same contract (64
// elements per step, n a multiple of 64; it stops before the first step
// with a magnitude that rounds past maxF, ±Inf or NaN, and returns the
// elements done), two halves of 32 per step, each stored as it is done
// (a half stored before the stop is rewritten by the caller's kernel).
// Subnormal results are not branched over (unscaled input has them often):
// every lane takes both results and a blend.
func fp8EncodeLanesY(name string, m, b int, maxF float64) {
	TEXT(name, NOSPLIT, "func(dst *byte, src *float32, n int) int")
	Pragma("noescape")
	Doc(name + " encodes float32 to FP8 in 32-bit lanes with AVX2, 64 per step, up to the first step with an overflowing or non-finite value; it returns the elements done.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	drop := uint8(23 - m)
	ovT := math.Float32bits(float32(maxF + math.Ldexp(1, int(math.Floor(math.Log2(maxF)))-m-1)))
	absMask := cY(0x7FFFFFFF)
	normC := cY(uint32(1<<(drop-1) - 1 - (127-b)<<23 + 1<<32))
	normMin := cY(uint32(128-b) << 23)
	magic := cY(uint32(127+(23-(b-1+m))) << 23)
	idx := cData([8]uint32{0, 4, 1, 5, 2, 6, 3, 7})
	done := GP64()
	XORQ(done, done)
	nm, ov := YMM(), YMM()
	VMOVDQU(normMin, nm)
	VMOVDQU(cY(ovT-1), ov)

	Label(name + "_loop")
	for h := range 2 {
		var ys, codes [4]reg.VecVirtual
		mx := YMM()
		for i := range codes {
			v := YMM()
			VMOVUPS(Mem{Base: src, Disp: 128*h + 32*i}, v)
			ys[i] = v
			a, c, l := YMM(), YMM(), YMM()
			VPAND(absMask, v, a)
			if i == 0 {
				VMOVDQA(a, mx)
			} else {
				VPMAXUD(a, mx, mx)
			}
			// normal results: round to m mantissa bits, nearest even,
			// and rebias
			VPADDD(normC, a, c)
			VPSRLD(U8(drop), a, l)
			VPAND(cY(1), l, l)
			VPADDD(l, c, c)
			VPSRLD(U8(drop), c, c)
			// below the normal range: a + 2^k rounds to the subnormal step
			VADDPS(magic, a, l)
			VPAND(cY(0xF), l, l)
			VPCMPGTD(a, nm, a) // a < normMin
			VPBLENDVB(a, l, c, c)
			codes[i] = c
		}
		VPCMPGTD(ov, mx, mx) // a ≥ ovT (NaN and ±Inf too)
		VPTEST(mx, mx)
		JNZ(LabelRef(name + "_done"))
		out, ab := YMM(), YMM()
		packSignedY(codes, ys, out)
		VMOVDQU(idx, ab)
		VPERMD(out, ab, out)
		VMOVDQU(out, Mem{Base: dst, Disp: 32 * h})
	}
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

// packSignedY packs the magnitude codes of four vectors of dwords into the
// bytes of out (in the lane order of VPACKUSDW / VPACKUSWB) with the signs
// of ys (bit 7; signed saturation keeps them).
func packSignedY(codes, ys [4]reg.VecVirtual, out reg.VecVirtual) {
	ab, cd := YMM(), YMM()
	VPACKUSDW(codes[1], codes[0], ab)
	VPACKUSDW(codes[3], codes[2], cd)
	VPACKUSWB(cd, ab, out)
	VPACKSSDW(ys[1], ys[0], ab)
	VPACKSSDW(ys[3], ys[2], cd)
	VPACKSSWB(cd, ab, ab)
	VPAND(cY(0x80808080), ab, ab)
	VPOR(ab, out, out)
}
