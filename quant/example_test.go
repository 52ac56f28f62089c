package quant_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/quant"
)

// Quantize one token of a [tokens, heads, head_dim] bf16 KV tensor into an
// nvfp4 cache row (8 payload bytes and one E4M3 scale per 16 elements, as
// flashinfer lays them out) and read it back. The block's amax 12 gives
// the scale 12/6 = 2 (E4M3 0x40); each value/2 takes the nearest E2M1
// code, ties to even (0.25 → 0, 0.75 → 1, 2.5 → 2, 3.5 → 4, 5 → 4), low
// nibble first.
func ExampleQuantizeKV() {
	c, err := quant.ForKV("nvfp4")
	if err != nil {
		fmt.Println(err)
		return
	}
	const tokens, heads, headDim = 1, 1, 16
	payloadPerToken, scalesPerToken, err := quant.Shape(c.Format(), tokens, heads, headDim)
	if err != nil {
		fmt.Println(err)
		return
	}
	src := make([]uint16, tokens*heads*headDim)
	for i, x := range []float32{0.5, -1, 1.5, 2, -3, 4, 6, -12, 0, 0.25, 1, -2, 5, 7, 8, 10} {
		src[i] = quant.BF16FromF32(x)
	}
	payload := make([]byte, tokens*payloadPerToken)
	scales := make([]byte, tokens*scalesPerToken)
	if err := quant.QuantizeKV(c, payload, scales, src, tokens, heads, headDim); err != nil {
		fmt.Println(err)
		return
	}
	back := make([]uint16, len(src))
	if err := quant.DequantizeKV(c, back, payload, scales, tokens, heads, headDim); err != nil {
		fmt.Println(err)
		return
	}
	out := make([]float32, len(back))
	for i, b := range back {
		out[i] = quant.BF16ToF32(b)
	}
	fmt.Printf("payload %x scales %x\n%v\n", payload, scales, out)
	// Output:
	// payload 90224bf500a16466 scales 40
	// [0 -1 2 2 -3 4 6 -12 0 0 1 -2 4 8 8 8]
}
