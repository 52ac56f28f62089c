package quant

import "github.com/kvcfg/kvcfg/dtype"

// Codec quantizes and dequantizes one KV storage format. Its geometry is
// Format(): payload bytes for n elements are Format().DataBytes(n) and scale
// bytes Format().ScaleBytesFor(n). n must be a multiple of the format's block
// size (and even for 4-bit formats); a mismatch between n and the lengths of
// dst, scales or src is an error and nothing is written out of bounds.
//
// A Codec holds no mutable state: it is safe for concurrent use on disjoint
// buffers, and no method allocates per call.
type Codec interface {
	// Format returns the storage geometry, the one shared with sizing.
	Format() dtype.Format
	// EncodeF32 quantizes src into payload dst and block scales.
	EncodeF32(dst, scales []byte, src []float32) error
	// EncodeBF16 quantizes bf16 bit patterns src into dst and scales.
	EncodeBF16(dst, scales []byte, src []uint16) error
	// DecodeF32 dequantizes payload src and scales into dst.
	DecodeF32(dst []float32, src, scales []byte) error
	// DecodeBF16 dequantizes into bf16 bit patterns (round to nearest even).
	DecodeBF16(dst []uint16, src, scales []byte) error
}
