//go:build !(goexperiment.simd && amd64)

package quant

// encodeFP4BF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the
// default build has none.
func (c *pow2Codec) encodeFP4BF16SIMD(dst, scales []byte, src []uint16) bool { return false }

// encodeBF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the default
// build has none.
func (c *nvfp4Codec) encodeBF16SIMD(dst, scales []byte, src []uint16) bool { return false }

// decodeFP4BF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the
// default build has none.
func (c *pow2Codec) decodeFP4BF16SIMD(dst []uint16, src, scales []byte) bool { return false }

// decodeE4M3BF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the
// default build has none.
func decodeE4M3BF16SIMD(dst []uint16, src []byte, k int) int { return 0 }

// encodeE4M3BF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the
// default build has none.
func encodeE4M3BF16SIMD(dst []byte, src []uint16) int { return 0 }

// decodeMXFP8BF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the
// default build has none.
func (c *pow2Codec) decodeMXFP8BF16SIMD(dst []uint16, src, scales []byte) bool { return false }

// decodeBF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the default
// build has none.
func (c *nvfp4Codec) decodeBF16SIMD(dst []uint16, src, scales []byte) bool { return false }

// decodeBF16SIMD is the SIMD path of GOEXPERIMENT=simd builds; the default
// build has none.
func (c *intCodec) decodeBF16SIMD(dst []uint16, src, scales []byte) bool { return false }
