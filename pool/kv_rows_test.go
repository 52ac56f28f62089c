package pool_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvcfg/kvcfg/pool"
	"github.com/kvcfg/kvcfg/quant"
)

// rowData returns n float32 values in blocks of 16 of many kinds: N(0, σ)
// over a wide range of σ, zeros and negative zeros, float32 subnormals,
// tiny and huge blocks, random bit patterns, and NaN / ±Inf in some blocks.
func rowData(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for b := 0; b < n; b += 16 {
		sigma := math.Ldexp(1, rng.IntN(250)-125)
		kind := rng.IntN(12)
		for i := b; i < min(b+16, n); i++ {
			v := float32(rng.NormFloat64() * sigma)
			switch kind {
			case 0:
				v = 0
			case 1:
				v = float32(math.Copysign(0, -1))
			case 2:
				v = math.Float32frombits(rng.Uint32() & 0x807FFFFF)
			case 3:
				v = math.Float32frombits(rng.Uint32())
			case 4:
				v = float32(rng.NormFloat64() * 1e38)
			case 5:
				v = float32(rng.NormFloat64() * 1e-37)
			}
			x[i] = v
		}
		if kind == 6 {
			x[b+rng.IntN(16)] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[rng.IntN(3)]
		}
	}
	return x
}

// TestKVRowsMatchBlockCodec writes scattered and consecutive rows through
// SetKV (one codec call per run of rows, which takes the codecs' whole-row
// kernels) and compares every stored row, payload and scales, with the
// same row encoded one block per codec call (the per-block path, which no
// whole-row kernel takes), for every format.
func TestKVRowsMatchBlockCodec(t *testing.T) {
	const heads, dim, rows = 8, 128, 64
	rng := rand.New(rand.NewPCG(7, 8))
	locs := make([]int32, rows)
	perm := rng.Perm(200)
	for i := range locs {
		locs[i] = int32(16 + perm[i])
	}
	copy(locs[40:], []int32{300, 301, 302, 303, 304, 305, 306, 307}) // one run of rows
	for _, f := range kvFormats {
		kv := mustKV(t, pool.KVConfig{Attention: pool.MHA, Format: f, Size: 512, PageSize: 16, Layers: 1, Heads: heads, HeadDim: dim, VHeadDim: dim})
		x := rowData(rng, rows*heads*dim)
		if err := kv.SetKV(0, locs, x, x); err != nil {
			t.Fatal(err)
		}
		c, err := quant.ForKV(f)
		if err != nil {
			t.Fatal(err)
		}
		ft := kv.Format()
		bs := max(ft.BlockSize, 32)
		db, sb := int(ft.DataBytes(int64(bs))), int(ft.ScaleBytesFor(int64(bs)))
		for i, l := range locs {
			data, scales, err := kv.KeyRaw(0, l)
			if err != nil {
				t.Fatal(err)
			}
			row := x[i*heads*dim : (i+1)*heads*dim]
			for b := 0; b < len(row)/bs; b++ {
				wd, ws := make([]byte, db), make([]byte, sb)
				if err := c.EncodeF32(wd, ws, row[b*bs:(b+1)*bs]); err != nil {
					t.Fatal(err)
				}
				if string(wd) != string(data[b*db:(b+1)*db]) || string(ws) != string(scales[b*sb:(b+1)*sb]) {
					t.Fatalf("%s row %d block %d (input %v):\n got % x / % x\nwant % x / % x", f, l, b, row[b*bs:(b+1)*bs],
						data[b*db:(b+1)*db], scales[b*sb:(b+1)*sb], wd, ws)
				}
			}
		}
	}
}
