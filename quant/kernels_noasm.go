//go:build !amd64 || purego

package quant

// Without the amd64 assembly (other CPUs, or -tags purego) every codec
// takes its portable Go path; these declarations are never called.

const (
	hasAVX512 = false
	hasAVX2   = false
)

func noAsm() { panic("quant: assembly kernel called in a build without it") }

func fp8EncF32AVX512(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16) { noAsm() }
func fp8EncBF16AVX512(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16) { noAsm() }
func fp8DecBF16AVX512(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int) { noAsm() }
func fp8DecE4M3FNF32AVX512(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func fp8DecE5M2F32AVX512(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int) { noAsm() }
func fp8DecE4M3FNUZF32AVX512(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func bf16FromF32AVX512(dst *uint16, src *float32, n int)      { noAsm() }
func f32FromBF16AVX512(dst *float32, src *uint16, n int)      { noAsm() }
func fp16FromF32AVX512(dst *uint16, src *float32, n int)      { noAsm() }
func fp16FromBF16AVX512(dst *uint16, src *uint16, n int)      { noAsm() }
func f32FromFP16AVX512(dst *float32, src *uint16, n int)      { noAsm() }
func amaxF32AVX512(out *uint32, src *float32, nb int, bs int) { noAsm() }
func amaxBF16AVX512(out *uint32, src *uint16, nb int, bs int) { noAsm() }

func e2m1DecF32AVX512(dst *float32, src *byte, n int, scales *byte, tab *uint32, bs int)  { noAsm() }
func int8EncF32AVX512(dst *byte, src *float32, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int4EncF32AVX512(dst *byte, src *float32, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int8DecF32AVX512(dst *float32, src *byte, n int, mul *float32, bs int)               { noAsm() }
func int4DecF32AVX512(dst *float32, src *byte, n int, mul *float32, bs int)               { noAsm() }
func e2m1DecBF16AVX512(dst *uint16, src *byte, n int, scales *byte, tab *uint32, bs int)  { noAsm() }
func int8EncBF16AVX512(dst *byte, src *uint16, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int4EncBF16AVX512(dst *byte, src *uint16, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int8DecBF16AVX512(dst *uint16, src *byte, n int, mul *float32, bs int)               { noAsm() }
func int4DecBF16AVX512(dst *uint16, src *byte, n int, mul *float32, bs int)               { noAsm() }

func amaxBF16x16AVX512(out *uint32, src *uint16, nb int, bs int) { noAsm() }
func amaxBF16x32AVX512(out *uint32, src *uint16, nb int, bs int) { noAsm() }
func e2m1ShiftEncBF16x16AVX512(dst *byte, src *uint16, n int, sh *int32, bs int, lut *uint16) {
	noAsm()
}
func e2m1ShiftEncBF16x32AVX512(dst *byte, src *uint16, n int, sh *int32, bs int, lut *uint16) {
	noAsm()
}
func pow2ScalesAVX512(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32) { noAsm() }
func nvfp4ScalesAVX512(scales *byte, os *float32, bad *uint16, amax *uint32, m int, enc *uint8, p *float32) {
	noAsm()
}
func e2m1ShiftEncF32x16AVX512(dst *byte, src *float32, n int, blk *int32, bs int, lut *uint16) {
	noAsm()
}
func e2m1ShiftEncF32x32AVX512(dst *byte, src *float32, n int, blk *int32, bs int, lut *uint16) {
	noAsm()
}
func e2m1MulEncF32x16AVX512(dst *byte, src *float32, n int, blk *int32, bs int, lut *uint16) { noAsm() }
func e2m1MulEncBF16x16AVX512(dst *byte, src *uint16, n int, blk *int32, bs int, lut *uint16) { noAsm() }
func amaxF32x16b16AVX512(out *uint32, src *float32, nb int)                                  { noAsm() }
func amaxF32x16b32AVX512(out *uint32, src *float32, nb int)                                  { noAsm() }
func amaxF32x16b64AVX512(out *uint32, src *float32, nb int)                                  { noAsm() }
func intScalesAVX512(s16 *uint16, div *float32, amax *uint32, m int, qmax *float32, rcp *float32) {
	noAsm()
}

func fp8EncE4M3FNF32AVX2(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8EncE4M3FNBF16AVX2(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8EncE5M2F32AVX2(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8EncE5M2BF16AVX2(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8EncE4M3FNUZF32AVX2(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8EncE4M3FNUZBF16AVX2(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8ScaledEncE4M3FNF32AVX2(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func fp8ScaledEncE4M3FNBF16AVX2(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint16) {
	noAsm()
}
func bf16FromF32AVX2(dst *uint16, src *float32, n int)                                   { noAsm() }
func f32FromBF16AVX2(dst *float32, src *uint16, n int)                                   { noAsm() }
func fp16FromF32AVX2(dst *uint16, src *float32, n int)                                   { noAsm() }
func fp16FromBF16AVX2(dst *uint16, src *uint16, n int)                                   { noAsm() }
func f32FromFP16AVX2(dst *float32, src *uint16, n int)                                   { noAsm() }
func amaxF32AVX2(out *uint32, src *float32, nb int, bs int)                              { noAsm() }
func amaxBF16AVX2(out *uint32, src *uint16, nb int, bs int)                              { noAsm() }
func pow2ScalesAVX2(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32) { noAsm() }
func intScalesAVX2(s16 *uint16, div *float32, amax *uint32, m int, qmax *float32, rcp *float32) {
	noAsm()
}
func e2m1DecF32AVX2(dst *float32, src *byte, n int, scales *byte, mul *float32, bs int) { noAsm() }
func int8EncF32AVX2(dst *byte, src *float32, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int4EncF32AVX2(dst *byte, src *float32, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int8EncBF16AVX2(dst *byte, src *uint16, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int4EncBF16AVX2(dst *byte, src *uint16, n int, div *float32, bs int, rcp *float32) { noAsm() }
func int8DecF32AVX2(dst *float32, src *byte, n int, mul *float32, bs int)               { noAsm() }
func int4DecF32AVX2(dst *float32, src *byte, n int, mul *float32, bs int)               { noAsm() }
func int8DecBF16AVX2(dst *uint16, src *byte, n int, mul *float32, bs int)               { noAsm() }
func int4DecBF16AVX2(dst *uint16, src *byte, n int, mul *float32, bs int)               { noAsm() }
func nvfp4ScalesAVX2(scales *byte, os *float32, bad *uint16, amax *uint32, m int, enc *uint8, p *float32) {
	noAsm()
}
func e2m1ShiftEncBF16x16AVX2(dst *byte, src *uint16, n int, sh *int32, bs int, tab *uint8) { noAsm() }
func e2m1ShiftEncBF16x32AVX2(dst *byte, src *uint16, n int, sh *int32, bs int, tab *uint8) { noAsm() }
func e2m1ShiftEncF32x16AVX2(dst *byte, src *float32, n int, blk *int32, bs int, tab *uint8) {
	noAsm()
}
func e2m1ShiftEncF32x32AVX2(dst *byte, src *float32, n int, blk *int32, bs int, tab *uint8) {
	noAsm()
}
func e2m1MulEncF32x16AVX2(dst *byte, src *float32, n int, blk *int32, bs int, tab *uint8)    { noAsm() }
func e2m1MulEncBF16x16AVX2(dst *byte, src *uint16, n int, blk *int32, bs int, tab *uint8)    { noAsm() }
func fp8DecE4M3FNBF16AVX2(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int)   { noAsm() }
func fp8DecE4M3FNF32AVX2(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int)  { noAsm() }
func fp8DecE5M2BF16AVX2(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int)     { noAsm() }
func fp8DecE5M2F32AVX2(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int)    { noAsm() }
func fp8DecE4M3FNUZBF16AVX2(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int) { noAsm() }
func fp8DecE4M3FNUZF32AVX2(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func fp8ScaledDecE4M3FNBF16AVX2(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func fp8ScaledDecE4M3FNF32AVX2(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func e2m1ShiftUpEncBF16x16AVX2(dst *byte, src *uint16, n int, sh *int32, bs int, tab *uint8) {
	noAsm()
}
func e2m1ShiftUpEncBF16x32AVX2(dst *byte, src *uint16, n int, sh *int32, bs int, tab *uint8) {
	noAsm()
}
func e2m1DecBF16x16AVX2(dst *uint16, src *byte, n int, scales *byte, tab *uint8, bs int) { noAsm() }
func e2m1DecBF16x32AVX2(dst *uint16, src *byte, n int, scales *byte, tab *uint8, bs int) { noAsm() }
func amaxBF16x8b16AVX2(out *uint32, src *uint16, nb int)                                 { noAsm() }
func amaxBF16x8b32AVX2(out *uint32, src *uint16, nb int)                                 { noAsm() }
func amaxBF16x8b64AVX2(out *uint32, src *uint16, nb int)                                 { noAsm() }
func intRuleScalesAVX2(scales *byte, sh *int32, bad *uint16, amax *uint32, m int, p *int32) {
	noAsm()
}
func mxfp8EncF32FusedB32AVX512(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func fp4HalfUpEncF32FusedB16AVX512(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func mxfp8EncF32FusedB32AVX2(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func fp4HalfUpEncF32FusedB16AVX2(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func nvfp4EncF32FusedB16AVX2(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func nvfp4EncF32FusedB16AVX512(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func int8EncF32FusedB64AVX2(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func int4EncF32FusedB32AVX2(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func int8EncF32FusedB64AVX512(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func int4EncF32FusedB32AVX512(dst *byte, scales *byte, bad *uint16, src *float32, ng int, p *int32, lut *uint16) {
	noAsm()
}
func fp8ScaledDecE4M3FNF32AVX512(dst *float32, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func e4m3EncF32LanesAVX512(dst *byte, src *float32, n int) int { noAsm(); return 0 }
func e4m3EncF32LanesAVX2(dst *byte, src *float32, n int) int   { noAsm(); return 0 }
func e5m2EncF32LanesAVX2(dst *byte, src *float32, n int) int   { noAsm(); return 0 }
func e5m2EncF32LanesAVX512(dst *byte, src *float32, n int) int { noAsm(); return 0 }

func fp8DecBF16NTAVX512(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int) { noAsm() }
func e2m1DecBF16NTAVX512(dst *uint16, src *byte, n int, scales *byte, tab *uint32, bs int) {
	noAsm()
}
func int8DecBF16NTAVX512(dst *uint16, src *byte, n int, mul *float32, bs int) { noAsm() }
func int4DecBF16NTAVX512(dst *uint16, src *byte, n int, mul *float32, bs int) { noAsm() }
func fp8DecE4M3FNBF16NTAVX2(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func fp8DecE5M2BF16NTAVX2(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func fp8DecE4M3FNUZBF16NTAVX2(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func fp8ScaledDecE4M3FNBF16NTAVX2(dst *uint16, src *byte, n int, tab *uint16, scales *byte, bs int) {
	noAsm()
}
func int8DecBF16NTAVX2(dst *uint16, src *byte, n int, mul *float32, bs int) { noAsm() }
func int4DecBF16NTAVX2(dst *uint16, src *byte, n int, mul *float32, bs int) { noAsm() }
func e2m1DecBF16x16NTAVX2(dst *uint16, src *byte, n int, scales *byte, tab *uint8, bs int) {
	noAsm()
}
func e2m1DecBF16x32NTAVX2(dst *uint16, src *byte, n int, scales *byte, tab *uint8, bs int) {
	noAsm()
}
func storeFence() { noAsm() }
