//go:build cgo

package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/kvcfg/kvcfg/quant/internal/cref"
)

func init() {
	enc := func(f func(dst, scales []byte, src []uint16), bs, bits int) cImpl {
		return func(dst, scales []byte, _ []uint16, src []uint16, _, _ []byte, lo, hi int) {
			f(dst[lo*bits/8:hi*bits/8], scales[lo/bs:hi/bs], src[lo:hi])
		}
	}
	dec := func(f func(dst []uint16, src, scales []byte), bs, bits int) cImpl {
		return func(_, _ []byte, dst []uint16, _ []uint16, payload, pscales []byte, lo, hi int) {
			f(dst[lo:hi], payload[lo*bits/8:hi*bits/8], pscales[lo/bs:hi/bs])
		}
	}
	cImpls["fp8_e4m3/encode_bf16"] = func(dst, _ []byte, _ []uint16, src []uint16, _, _ []byte, lo, hi int) {
		cref.FP8EncodeBF16(dst[lo:hi], src[lo:hi], false)
	}
	cImpls["fp8_e4m3/decode_bf16"] = func(_, _ []byte, dst []uint16, _ []uint16, payload, _ []byte, lo, hi int) {
		cref.FP8DecodeBF16(dst[lo:hi], payload[lo:hi])
	}
	cImpls["fp4_mx_block16/encode_bf16"] = enc(cref.Block16EncodeBF16, 16, 4)
	cImpls["fp4_mx_block16/decode_bf16"] = dec(cref.Block16DecodeBF16, 16, 4)
	cImpls["mxfp4/encode_bf16"] = enc(cref.MXFP4EncodeBF16, 32, 4)
	cImpls["mxfp4/decode_bf16"] = dec(cref.MXFP4DecodeBF16, 32, 4)
	cImpls["mxfp8/encode_bf16"] = enc(cref.MXFP8EncodeBF16, 32, 8)
	cImpls["mxfp8/decode_bf16"] = dec(cref.MXFP8DecodeBF16, 32, 8)
	cImpls["nvfp4/encode_bf16"] = enc(func(d, s []byte, x []uint16) { cref.NVFP4EncodeBF16(d, s, x, 1) }, 16, 4)
	cImpls["nvfp4/decode_bf16"] = dec(func(d []uint16, p, s []byte) { cref.NVFP4DecodeBF16(d, p, s, 1) }, 16, 4)
}

// TestCRef cross-checks the Go codecs against the C reference on KV-like
// data with every bf16 exponent, zero blocks and subnormals, including
// every scale byte on decode.
func TestCRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n := 64 * 4096
	src := kvData(rng, n)
	for _, bc := range benchCases {
		cfn := cImpls[bc.name]
		if cfn == nil {
			continue
		}
		c, err := ForKV(bc.codec)
		if err != nil {
			t.Fatal(err)
		}
		f := c.Format()
		p, s := make([]byte, f.DataBytes(int64(n))), make([]byte, f.ScaleBytesFor(int64(n)))
		cp, cs := make([]byte, len(p)), make([]byte, len(s))
		if err := c.EncodeBF16(p, s, src); err != nil {
			t.Fatal(err)
		}
		if bc.encode {
			cfn(cp, cs, nil, src, nil, nil, 0, n)
			compareBytes(t, bc.name+" payload", cp, p)
			compareBytes(t, bc.name+" scales", cs, s)
			continue
		}
		// random payloads and every scale byte
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		for i := range s {
			s[i] = byte(i)
		}
		if f.Scale == 0 {
			s = s[:0]
		}
		goD, cD := make([]uint16, n), make([]uint16, n)
		if err := c.DecodeBF16(goD, p, s); err != nil {
			t.Fatal(err)
		}
		cfn(nil, nil, cD, nil, p, s, 0, n)
		for i := range goD {
			if goD[i] != cD[i] {
				t.Fatalf("%s: element %d: Go %#04x, C %#04x", bc.name, i, goD[i], cD[i])
			}
		}
	}
}
