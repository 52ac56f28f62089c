package quant

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestParallelContext: with a live context ParallelContext writes exactly
// what the codec writes in one call (payload, scales and the decode), for
// one and two workers, a length that is not a multiple of its step; a
// canceled context stops it with context.Canceled.
func TestParallelContext(t *testing.T) {
	const n = 3*ctxStep + 4096
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 3)
	}
	for _, name := range rowFormats {
		c, err := ForKV(name)
		if err != nil {
			t.Fatal(err)
		}
		f := c.Format()
		wantP, wantS := make([]byte, f.DataBytes(n)), make([]byte, f.ScaleBytesFor(n))
		if err := c.EncodeF32(wantP, wantS, src); err != nil {
			t.Fatal(err)
		}
		wantY := make([]float32, n)
		if err := c.DecodeF32(wantY, wantP, wantS); err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{1, 2} {
			pc := ParallelContext(context.Background(), c, workers)
			p, s := make([]byte, len(wantP)), make([]byte, len(wantS))
			if err := pc.EncodeF32(p, s, src); err != nil {
				t.Fatalf("%s/%d: %v", name, workers, err)
			}
			if !bytes.Equal(p, wantP) || !bytes.Equal(s, wantS) {
				t.Errorf("%s/%d: encoding differs from the codec's", name, workers)
			}
			y := make([]float32, n)
			if err := pc.DecodeF32(y, p, s); err != nil {
				t.Fatal(err)
			}
			for i := range y {
				if y[i] != wantY[i] && !(y[i] != y[i] && wantY[i] != wantY[i]) {
					t.Fatalf("%s/%d: decoded[%d] = %v, want %v", name, workers, i, y[i], wantY[i])
				}
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := ParallelContext(ctx, c, 2).EncodeF32(make([]byte, len(wantP)), make([]byte, len(wantS)), src); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: canceled: error = %v, want context.Canceled", name, err)
		}
	}
}
