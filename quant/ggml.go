package quant

import (
	"math"
)

// ggml's CPU reference quantizers, kept as unexported anchors: they are not
// KV formats of SGLang or vLLM, but the test vectors pin their rounding
// (ties toward the smaller magnitude for MXFP4, round-half-away with an
// unrounded scale for Q8_0) as a contrast to the KV recipes.

var ggmlKValuesMXFP4 = [16]float32{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// ggmlMXFP4Block quantizes 32 values like quantize_row_mxfp4_ref: scale
// e = floor(log2(amax)) − 2 + 127 (0 for amax = 0), each element the first
// code minimising |kvalue·d − x| with d = 2^(e−128), byte j = element j
// (low) | element j+16 (high). floor(log2) is computed exactly (ggml's
// log2f can round up for float32 inputs just below a power of two).
func ggmlMXFP4Block(qs *[16]byte, x []float32) uint8 {
	var amax float32
	for _, v := range x[:32] {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	var e uint8
	if amax > 0 {
		fe := math.Floor(math.Log2(float64(amax))) - 2 + 127
		e = uint8(min(max(fe, 0), 254))
	}
	d := ggmlE8M0Half(e)
	best := func(v float32) uint8 {
		bi := 0
		be := float32(math.Abs(float64(ggmlKValuesMXFP4[0]*d - v)))
		for i := 1; i < 16; i++ {
			if err := float32(math.Abs(float64(ggmlKValuesMXFP4[i]*d - v))); err < be {
				bi, be = i, err
			}
		}
		return uint8(bi)
	}
	for j := range 16 {
		qs[j] = best(x[j]) | best(x[j+16])<<4
	}
	return e
}

// ggmlE8M0Half is GGML_E8M0_TO_FP32_HALF: 2^(e−128).
func ggmlE8M0Half(e uint8) float32 { return pow2(int(e) - 128) }

// ggmlMXFP4Decode is dequantize_row_mxfp4 for one block.
func ggmlMXFP4Decode(out []float32, qs *[16]byte, e uint8) {
	d := ggmlE8M0Half(e)
	for j := range 16 {
		out[j] = ggmlKValuesMXFP4[qs[j]&0xF] * d
		out[j+16] = ggmlKValuesMXFP4[qs[j]>>4] * d
	}
}

// ggmlQ80Block quantizes 32 values like quantize_row_q8_0_ref: d =
// amax/127 in float32, stored as fp16, codes roundf(x·(1/d)) with the
// unrounded d (ties away from zero).
func ggmlQ80Block(qs *[32]int8, x []float32) uint16 {
	var amax float32
	for _, v := range x[:32] {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j := range 32 {
		qs[j] = int8(math.Round(float64(x[j] * id)))
	}
	return FP16.Encode(d, NonSat)
}
