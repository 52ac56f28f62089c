package quant

import "testing"

// TestFP4ShiftTables checks the E2M1 shift-table encoders (EncodeBF16 of
// fp4_mx_block16 and mxfp4, and the generic per-16 kernels) against the
// float path for every bf16 input and every block exponent of the fast
// path: each block starts with ±amax, the largest magnitude with that
// exponent, followed by inputs no larger.
func TestFP4ShiftTables(t *testing.T) {
	for _, name := range []string{"fp4_mx_block16", "mxfp4"} {
		c := codecFor(t, name).(*pow2Codec)
		bs := c.bs
		for e := -100; e <= 16; e++ {
			var amax uint16
			if c.rule == ruleSGLangFP4 {
				if e < -33 {
					continue
				}
				amax = uint16((e+129)<<7) | 0x40 // 6·2^e
			} else {
				amax = uint16((e+130)<<7) - 1 // just below 8·2^e
			}
			var src []uint16
			for v := range 1 << 16 {
				if len(src)%bs == 0 {
					src = append(src, amax|uint16(len(src)/bs%2)<<15)
				}
				if uint16(v)&0x7FFF <= amax {
					src = append(src, uint16(v))
				}
			}
			for len(src)%bs != 0 {
				src = append(src, 0x8000)
			}
			nb := len(src) / bs
			got, scales := make([]byte, nb*bs/2), make([]byte, nb)
			if err := c.EncodeBF16(got, scales, src); err != nil {
				t.Fatal(err)
			}
			gen, genS := make([]byte, len(got)), make([]byte, nb)
			c.encodeFP4BF16Generic(gen, genS, src)
			if string(gen) != string(got) || string(genS) != string(scales) {
				t.Fatalf("%s e=%d: generic encoder differs", name, e)
			}
			var o [8]byte
			want := make([]byte, bs/2)
			for b := range nb {
				if s := int(scales[b]) - 127; s != e {
					t.Fatalf("%s block %d: exponent %d, want %d", name, b, s, e)
				}
				blk := src[b*bs : b*bs+bs]
				c.encodeBlockFP4Slow(want, blk, e)
				if g := got[b*bs/2 : b*bs/2+bs/2]; string(g) != string(want) {
					t.Fatalf("%s e=%d block %04x: got %x, want %x", name, e, blk, g, want)
				}
				off := uint16(e<<7 + e2m1SmallBase)
				for h := 0; h < bs; h += 16 {
					x := (*[16]uint16)(blk[h:])
					if c.halfUp {
						encodeFP4x16Up(&e2m1Big().shiftUp, &o, x, off)
					} else {
						encodeFP4x16RNE(&e2m1Big().shiftRNE, &o, x, off)
					}
					if string(o[:]) != string(want[h/2:h/2+8]) {
						t.Fatalf("%s e=%d kernel %04x: got %x, want %x", name, e, x, o, want[h/2:h/2+8])
					}
				}
			}
		}
	}
}

// TestE4M3EncodeSIMD checks the vector bf16 → E4M3FN (non-saturating)
// encoder, where the build has one, against the table for every input.
func TestE4M3EncodeSIMD(t *testing.T) {
	tab := fp8TablesFor(E4M3FN, NonSat)
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]byte, len(src))
	n := encodeE4M3BF16SIMD(dst, src)
	if n == 0 {
		t.Skip("no SIMD encoder in this build or on this CPU")
	}
	for i := range n {
		if want := tab.enc[src[i]]; dst[i] != want {
			t.Fatalf("bf16 %#04x: got %#02x, want %#02x", src[i], dst[i], want)
		}
	}
}

// TestFP4DecodeOddBlocks decodes fp4_mx_block16 buffers of 1 to 5 blocks
// (the vector decoders work on pairs of blocks) against float decoding.
func TestFP4DecodeOddBlocks(t *testing.T) {
	c := codecFor(t, "fp4_mx_block16")
	for nb := 1; nb <= 5; nb++ {
		p, s := make([]byte, 8*nb), make([]byte, nb)
		for i := range p {
			p[i] = byte(37*i + 11)
		}
		for i := range s {
			s[i] = byte(120 + 3*i)
		}
		got, f := make([]uint16, 16*nb), make([]float32, 16*nb)
		if err := c.DecodeBF16(got, p, s); err != nil {
			t.Fatal(err)
		}
		if err := c.DecodeF32(f, p, s); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if want := BF16FromF32(f[i]); got[i] != want {
				t.Fatalf("%d blocks: element %d = %#04x, want %#04x", nb, i, got[i], want)
			}
		}
	}
}

// TestIntDecodeAllScales decodes int8_g64 and int4_g32 groups under every
// fp16 scale code (NaN and Inf included) with random codes: DecodeBF16
// (vector path where the build has one) against DecodeF32.
func TestIntDecodeAllScales(t *testing.T) {
	for _, name := range []string{"int8_g64", "int4_g32"} {
		c := codecFor(t, name)
		f := c.Format()
		n := f.BlockSize << 16
		p, s := make([]byte, f.DataBytes(int64(n))), make([]byte, f.ScaleBytesFor(int64(n)))
		for i := range p {
			p[i] = byte(i*131 + i>>7)
		}
		for g := range 1 << 16 {
			s[2*g], s[2*g+1] = byte(g), byte(g>>8)
		}
		got, want := make([]uint16, n), make([]float32, n)
		if err := c.DecodeBF16(got, p, s); err != nil {
			t.Fatal(err)
		}
		if err := c.DecodeF32(want, p, s); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if w := BF16FromF32(want[i]); got[i] != w {
				t.Fatalf("%s element %d (scale %#04x): got %#04x, want %#04x", name, i, i/f.BlockSize, got[i], w)
			}
		}
	}
}

// TestNVFP4DecodeOddBlocks decodes nvfp4 buffers of 1 to 5 blocks (the
// vector decoder works on pairs of blocks), NaN scales included, against
// float decoding.
func TestNVFP4DecodeOddBlocks(t *testing.T) {
	c := codecFor(t, "nvfp4")
	for nb := 1; nb <= 5; nb++ {
		p, s := make([]byte, 8*nb), make([]byte, nb)
		for i := range p {
			p[i] = byte(37*i + 11)
		}
		copy(s, []byte{0x38, 0x7F, 0x40, 0xFF, 0x00}) // NaN scales 0x7F, 0xFF
		got, f := make([]uint16, 16*nb), make([]float32, 16*nb)
		if err := c.DecodeBF16(got, p, s); err != nil {
			t.Fatal(err)
		}
		if err := c.DecodeF32(f, p, s); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if want := BF16FromF32(f[i]); got[i] != want {
				t.Fatalf("%d blocks: element %d = %#04x, want %#04x", nb, i, got[i], want)
			}
		}
	}
}
