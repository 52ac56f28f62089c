//go:build !amd64 || purego

package quant

// Without the amd64 assembly (other CPUs, or -tags purego) every codec
// takes its portable Go path; these declarations are never called.

const hasAVX512 = false

func noAsm() { panic("quant: assembly kernel called in a build without it") }

func fp8EncF32AVX512(dst *byte, src *float32, n int, shifts *int32, bs int, p *uint32) { noAsm() }
func fp8EncBF16AVX512(dst *byte, src *uint16, n int, shifts *int32, bs int, p *uint32) { noAsm() }
func fp8DecBF16AVX512(dst *uint16, src *byte, n int, tab *uint16, adds *int32, bs int) { noAsm() }
func fp8DecF32AVX512(dst *float32, src *byte, n int, tab *uint16, adds *int32, bs int) { noAsm() }
func bf16FromF32AVX512(dst *uint16, src *float32, n int)                               { noAsm() }
func f32FromBF16AVX512(dst *float32, src *uint16, n int)                               { noAsm() }
func fp16FromF32AVX512(dst *uint16, src *float32, n int)                               { noAsm() }
func fp16FromBF16AVX512(dst *uint16, src *uint16, n int)                               { noAsm() }
func f32FromFP16AVX512(dst *float32, src *uint16, n int)                               { noAsm() }
func amaxF32AVX512(out *uint32, src *float32, nb int, bs int)                          { noAsm() }
func amaxBF16AVX512(out *uint32, src *uint16, nb int, bs int)                          { noAsm() }
