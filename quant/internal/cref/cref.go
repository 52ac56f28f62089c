//go:build cgo

package cref

// #cgo CFLAGS: -O3 -march=native
// #include "cref.h"
import "C"

import "unsafe"

// Available reports whether the C reference is compiled in (it needs cgo).
const Available = true

func init() { C.cref_init() }

func u8(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

func u16(b []uint16) *C.uint16_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint16_t)(unsafe.Pointer(&b[0]))
}

// FP8EncodeBF16 narrows bf16 to E4M3FN with the spec's integer RNE routine.
func FP8EncodeBF16(dst []byte, src []uint16, sat bool) {
	s := C.int(0)
	if sat {
		s = 1
	}
	C.cref_fp8_encode_bf16(u8(dst), u16(src), C.size_t(len(src)), s)
}

// FP8DecodeBF16 widens E4M3FN codes to bf16.
func FP8DecodeBF16(dst []uint16, src []byte) {
	C.cref_fp8_decode_bf16(u16(dst), u8(src), C.size_t(len(dst)))
}

// Block16EncodeBF16 is SGLang's fp4_mx_block16 quantizer.
func Block16EncodeBF16(dst, scales []byte, src []uint16) {
	C.cref_block16_encode_bf16(u8(dst), u8(scales), u16(src), C.size_t(len(src)))
}

// Block16DecodeBF16 is SGLang's fp4_mx_block16 dequantizer to bf16.
func Block16DecodeBF16(dst []uint16, src, scales []byte) {
	C.cref_block16_decode_bf16(u16(dst), u8(src), u8(scales), C.size_t(len(dst)))
}

// MXFP4EncodeBF16 is OCP MXFP4 (floor scale, RNE, saturating).
func MXFP4EncodeBF16(dst, scales []byte, src []uint16) {
	C.cref_mxfp4_encode_bf16(u8(dst), u8(scales), u16(src), C.size_t(len(src)))
}

// MXFP4DecodeBF16 dequantizes OCP MXFP4 to bf16.
func MXFP4DecodeBF16(dst []uint16, src, scales []byte) {
	C.cref_mxfp4_decode_bf16(u16(dst), u8(src), u8(scales), C.size_t(len(dst)))
}

// NVFP4EncodeBF16 is flashinfer's KV NVFP4 with decode-direction global g.
func NVFP4EncodeBF16(dst, scales []byte, src []uint16, g float32) {
	C.cref_nvfp4_encode_bf16(u8(dst), u8(scales), u16(src), C.size_t(len(src)), C.float(g))
}

// NVFP4DecodeBF16 dequantizes KV NVFP4 to bf16.
func NVFP4DecodeBF16(dst []uint16, src, scales []byte, g float32) {
	C.cref_nvfp4_decode_bf16(u16(dst), u8(src), u8(scales), C.size_t(len(dst)), C.float(g))
}

// MXFP8EncodeBF16 is SGLang's mxfp8 quantizer (ceil scale).
func MXFP8EncodeBF16(dst, scales []byte, src []uint16) {
	C.cref_mxfp8_encode_bf16(u8(dst), u8(scales), u16(src), C.size_t(len(src)))
}

// MXFP8DecodeBF16 dequantizes mxfp8 to bf16.
func MXFP8DecodeBF16(dst []uint16, src, scales []byte) {
	C.cref_mxfp8_decode_bf16(u16(dst), u8(src), u8(scales), C.size_t(len(dst)))
}
