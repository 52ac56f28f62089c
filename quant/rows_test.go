package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// rowFormats are the KV formats EncodeRowsF32 is checked on (every codec
// type: wide, FP8, power-of-two block, nvfp4, integer groups).
var rowFormats = []string{"bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2", "mxfp8", "fp4_mx_block16", "mxfp4", "nvfp4", "int8_g64", "int4_g32"}

// encodeRowsRef is EncodeRowsF32 as one EncodeF32 per row into a copy of
// the buffers.
func encodeRowsRef(t *testing.T, c Codec, dst, scales []byte, src []float32, n int, rows []int32) ([]byte, []byte) {
	t.Helper()
	f := c.Format()
	d, s := int(f.DataBytes(int64(n))), int(f.ScaleBytesFor(int64(n)))
	dst, scales = append([]byte(nil), dst...), append([]byte(nil), scales...)
	for i, r := range rows {
		if err := c.EncodeF32(dst[int(r)*d:(int(r)+1)*d], scales[int(r)*s:(int(r)+1)*s], src[i*n:(i+1)*n]); err != nil {
			t.Fatal(err)
		}
	}
	return dst, scales
}

// decodeRowsRef is DecodeRowsF32 as one DecodeF32 per row.
func decodeRowsRef(t *testing.T, c Codec, src, scales []byte, n int, rows []int32) []float32 {
	t.Helper()
	f := c.Format()
	d, s := int(f.DataBytes(int64(n))), int(f.ScaleBytesFor(int64(n)))
	out := make([]float32, len(rows)*n)
	for i, r := range rows {
		if err := c.DecodeF32(out[i*n:(i+1)*n], src[int(r)*d:(int(r)+1)*d], scales[int(r)*s:(int(r)+1)*s]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestEncodeRowsF32 compares EncodeRowsF32 with one EncodeF32 per row on
// scattered, consecutive and repeated rows of every format, and
// DecodeRowsF32 with one DecodeF32 per row, with the assembly on and off.
func TestEncodeRowsF32(t *testing.T) {
	for _, on := range []bool{true, false} {
		if on && bestLevel == levelPortable {
			continue
		}
		withAsm(t, on, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			for _, name := range rowFormats {
				c, err := ForKV(name)
				if err != nil {
					t.Fatal(err)
				}
				f := c.Format()
				for _, n := range []int{64, 256, 512, 1024, 4096, 16384, 16640} {
					const bufRows = 40
					rows := []int32{7, 3, 4, 5, 6, 30, 0, 39, 12, 3, 13, 14}
					if n == 256 || n == 1024 {
						// many rows, most repeated (a later source row
						// wins)
						rows = make([]int32, 150)
						for i := range rows {
							rows[i] = int32(rng.IntN(bufRows))
						}
					}
					src := fusedInputs(rng, len(rows)*n/16, 16)
					dst := make([]byte, bufRows*f.DataBytes(int64(n)))
					scales := make([]byte, bufRows*f.ScaleBytesFor(int64(n)))
					for i := range dst {
						dst[i] = byte(i)
					}
					wantD, wantS := encodeRowsRef(t, c, dst, scales, src, n, rows)
					if err := EncodeRowsF32(c, dst, scales, src, n, rows); err != nil {
						t.Fatal(err)
					}
					compareBytes(t, name+" payload", wantD, dst)
					compareBytes(t, name+" scales", wantS, scales)
					// and back, rows in another order
					back := []int32{30, 12, 13, 14, 0, 39, 3, 4, 5}
					got := make([]float32, len(back)*n)
					if err := DecodeRowsF32(c, got, dst, scales, n, back); err != nil {
						t.Fatal(err)
					}
					want := decodeRowsRef(t, c, dst, scales, n, back)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s n=%d: decoded value %d is %v, want %v", name, n, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}

// TestEncodeRowsF32Errors: every bad argument is ErrLength for encode
// and decode, and nothing is written.
func TestEncodeRowsF32Errors(t *testing.T) {
	c, err := ForKV("mxfp8")
	if err != nil {
		t.Fatal(err)
	}
	src := make([]float32, 2*64)
	for i := range src {
		src[i] = float32(i)
	}
	for _, tc := range []struct {
		name   string
		dst    int
		scales int
		src    []float32
		n      int
		rows   []int32
	}{
		{"row out of range", 4 * 64, 4 * 2, src, 64, []int32{1, 4}},
		{"negative row", 4 * 64, 4 * 2, src, 64, []int32{-1, 2}},
		{"scales too short for the row", 4 * 64, 2 * 2, src, 64, []int32{0, 2}},
		{"src not rows x n", 4 * 64, 4 * 2, src[:100], 64, []int32{0, 1}},
		{"n not whole blocks", 4 * 64, 4 * 2, src, 48, []int32{0, 1}},
		{"negative n", 4 * 64, 4 * 2, src, -64, []int32{0, 1}},
		{"zero n with rows", 4 * 64, 4 * 2, nil, 0, []int32{0}},
		{"values without rows", 4 * 64, 4 * 2, src, 64, nil},
	} {
		dst, scales := make([]byte, tc.dst), make([]byte, tc.scales)
		err := EncodeRowsF32(c, dst, scales, tc.src, tc.n, tc.rows)
		if !errors.Is(err, ErrLength) {
			t.Errorf("%s: error %v, want ErrLength", tc.name, err)
		}
		for _, b := range append(dst, scales...) {
			if b != 0 {
				t.Fatalf("%s: wrote to the buffers before failing", tc.name)
			}
		}
		out := make([]float32, len(tc.src))
		if err := DecodeRowsF32(c, out, dst, scales, tc.n, tc.rows); !errors.Is(err, ErrLength) {
			t.Errorf("%s: decode error %v, want ErrLength", tc.name, err)
		}
		for _, v := range out {
			if v != 0 {
				t.Fatalf("%s: decode wrote before failing", tc.name)
			}
		}
	}
	if err := EncodeRowsF32(c, nil, nil, nil, 64, nil); err != nil {
		t.Errorf("no rows: %v", err)
	}
}

// FuzzEncodeRows: EncodeRowsF32 never panics, fails exactly when a row is
// outside the buffers or the lengths disagree (writing nothing then), and
// otherwise equals one EncodeF32 per row; DecodeRowsF32 of the same rows
// equals one DecodeF32 per row.
func FuzzEncodeRows(f *testing.F) {
	f.Add(uint8(4), uint8(1), uint8(8), uint8(8), []byte{0, 1, 2, 5, 5, 7}, uint32(0x3f800000))
	f.Add(uint8(4), uint8(2), uint8(3), uint8(3), []byte{2, 0, 1}, uint32(0x7fc00000))
	f.Add(uint8(7), uint8(16), uint8(4), uint8(2), []byte{3, 255}, uint32(1))
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), []byte{}, uint32(0))
	f.Fuzz(func(t *testing.T, fi, blocks, dstRows, scaleRows uint8, rowBytes []byte, seed uint32) {
		name := rowFormats[int(fi)%len(rowFormats)]
		c, err := ForKV(name)
		if err != nil {
			t.Fatal(err)
		}
		fm := c.Format()
		n := 64 * int(blocks%20) // whole blocks of every format (0 too)
		if len(rowBytes) > 64 {
			rowBytes = rowBytes[:64]
		}
		rows := make([]int32, len(rowBytes))
		for i, b := range rowBytes {
			rows[i] = int32(int8(b)) // negative rows too
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		src := make([]float32, len(rows)*n)
		for i := range src {
			src[i] = math.Float32frombits(rng.Uint32())
			if rng.IntN(2) == 0 {
				src[i] = float32(rng.NormFloat64())
			}
		}
		d, s := int(fm.DataBytes(int64(n))), int(fm.ScaleBytesFor(int64(n)))
		dst, scales := make([]byte, int(dstRows%48)*d), make([]byte, int(scaleRows%48)*s)
		valid := len(rows) == 0 || n > 0
		for _, r := range rows {
			if r < 0 || int(r) >= int(dstRows%48) || s > 0 && int(r) >= int(scaleRows%48) {
				valid = false
			}
		}
		err = EncodeRowsF32(c, dst, scales, src, n, rows)
		if (err == nil) != valid {
			t.Fatalf("%s n=%d rows %v, buffers of %d/%d rows: error %v, valid %v", name, n, rows, dstRows%48, scaleRows%48, err, valid)
		}
		if err != nil {
			for _, b := range append(dst, scales...) {
				if b != 0 {
					t.Fatal("wrote to the buffers before failing")
				}
			}
			return
		}
		wantD, wantS := encodeRowsRef(t, c, make([]byte, len(dst)), make([]byte, len(scales)), src, n, rows)
		if string(wantD) != string(dst) || string(wantS) != string(scales) {
			t.Fatalf("%s n=%d rows %v: differs from one EncodeF32 per row", name, n, rows)
		}
		got := make([]float32, len(rows)*n)
		if err := DecodeRowsF32(c, got, dst, scales, n, rows); err != nil {
			t.Fatal(err)
		}
		want := decodeRowsRef(t, c, dst, scales, n, rows)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s n=%d rows %v: decoded value %d differs from one DecodeF32 per row", name, n, rows, i)
			}
		}
	})
}
