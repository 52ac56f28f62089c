package pool_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/pool"
	"github.com/kvcfg/kvcfg/quant"
)

var kvFormats = []string{"bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16", "int8_g64", "int4_g32"}

func mustKV(t testing.TB, cfg pool.KVConfig) *pool.KV {
	t.Helper()
	kv, err := pool.NewKV(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func randRows(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64() * 2)
	}
	return out
}

// TestKVGeometry pins the buffer shapes of docs/sglang.md#cell-size-mha, #cell-size-mla and #pools-kv-buffers: MHA K/V
// [size+page, H, D], FP4 data [m, H, D/2] + scales [m, H*D/16], MXFP8 one
// E8M0 per 32 of head_dim, MLA [m, 1, lora+rope] and its FP4 variant
// [m, 1, dim/2] + [m, dim/16]. Numbers written out from the spec's shapes.
func TestKVGeometry(t *testing.T) {
	const size, page, layers = 60, 4, 3
	m := int64(size + page)
	mha := pool.KVConfig{Attention: pool.MHA, Size: size, PageSize: page, Layers: layers, Heads: 2, HeadDim: 64, VHeadDim: 64}
	mla := pool.KVConfig{Attention: pool.MLA, Size: size, PageSize: page, Layers: layers, KVLoraRank: 512, QKRopeHeadDim: 64}
	with := func(c pool.KVConfig, f string) pool.KVConfig { c.Format = f; return c }
	tests := []struct {
		name string
		cfg  pool.KVConfig
		want pool.Bytes
	}{
		{"mha bf16", with(mha, "bf16"), pool.Bytes{K: m * 3 * 128 * 2, V: m * 3 * 128 * 2}},
		{"mha fp8", with(mha, "fp8_e4m3"), pool.Bytes{K: m * 3 * 128, V: m * 3 * 128}},
		{"mha mxfp8", with(mha, "mxfp8"), pool.Bytes{K: m * 3 * 128, V: m * 3 * 128, KScales: m * 3 * 4, VScales: m * 3 * 4}},
		{"mha fp4", with(mha, "fp4_mx_block16"), pool.Bytes{K: m * 3 * 64, V: m * 3 * 64, KScales: m * 3 * 8, VScales: m * 3 * 8, Workspace: m * 128 * 2}},
		{"mha nvfp4", with(mha, "nvfp4"), pool.Bytes{K: m * 3 * 64, V: m * 3 * 64, KScales: m * 3 * 8, VScales: m * 3 * 8, Workspace: m * 128 * 2}},
		{"mha int8_g64", with(mha, "int8_g64"), pool.Bytes{K: m * 3 * 128, V: m * 3 * 128, KScales: m * 3 * 2 * 2, VScales: m * 3 * 2 * 2}},
		{"mha int4_g32", with(mha, "int4_g32"), pool.Bytes{K: m * 3 * 64, V: m * 3 * 64, KScales: m * 3 * 4 * 2, VScales: m * 3 * 4 * 2}},
		{"mla bf16", with(mla, "bf16"), pool.Bytes{K: m * 3 * 576 * 2}},
		{"mla fp8", with(mla, "fp8_e4m3"), pool.Bytes{K: m * 3 * 576}},
		{"mla fp4", with(mla, "fp4_mx_block16"), pool.Bytes{K: m * 3 * 288, KScales: m * 3 * 36}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := mustKV(t, tt.cfg)
			if diff := cmp.Diff(tt.want, kv.Bytes()); diff != "" {
				t.Errorf("Bytes (-want +got):\n%s", diff)
			}
			if kv.Rows() != size+page {
				t.Errorf("rows = %d, want %d", kv.Rows(), size+page)
			}
			if err := kv.Resize(size / 2); err != nil {
				t.Fatal(err)
			}
			if got, want := kv.Bytes().K, tt.want.K*int64(size/2+page)/m; got != want {
				t.Errorf("K bytes after resize = %d, want %d", got, want)
			}
		})
	}
}

// TestKVRoundTrip writes random rows and checks that the pool stores
// exactly what the codec produces for each row, and that reads give the
// codec's dequantization, for every format and both layouts.
func TestKVRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	locs := []int32{5, 6, 7, 12, 4, 30} // runs and a lone row
	for _, f := range kvFormats {
		for _, att := range []pool.Attention{pool.MHA, pool.MLA} {
			cfg := pool.KVConfig{Attention: att, Format: f, Size: 32, PageSize: 4, Layers: 2, StartLayer: 10,
				Heads: 2, HeadDim: 64, VHeadDim: 64, KVLoraRank: 512, QKRopeHeadDim: 64}
			t.Run(f+"/"+string(att), func(t *testing.T) {
				kv := mustKV(t, cfg)
				codec, err := quant.ForKV(f)
				if err != nil {
					t.Fatal(err)
				}
				kr, vr := 128, 128
				if att == pool.MLA {
					kr, vr = 576, 0
				}
				k := randRows(rng, len(locs)*kr)
				v := randRows(rng, len(locs)*vr)
				if err := kv.SetKV(11, locs, k, v); err != nil {
					t.Fatal(err)
				}
				f := codec.Format()
				for i, l := range locs {
					data, scales, err := kv.KeyRaw(11, l)
					if err != nil {
						t.Fatal(err)
					}
					wd := make([]byte, f.DataBytes(int64(kr)))
					ws := make([]byte, f.ScaleBytesFor(int64(kr)))
					if err := codec.EncodeF32(wd, ws, k[i*kr:(i+1)*kr]); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(wd, data); diff != "" {
						t.Fatalf("row %d payload differs from the codec's (-want +got):\n%s", l, diff)
					}
					if diff := cmp.Diff(ws, scales); diff != "" {
						t.Fatalf("row %d scales differ from the codec's (-want +got):\n%s", l, diff)
					}
				}
				gotK := make([]float32, len(k))
				if err := kv.GetKey(gotK, 11, locs); err != nil {
					t.Fatal(err)
				}
				wantK := make([]float32, len(k))
				for i := range locs {
					enc := make([]byte, f.DataBytes(int64(kr)))
					sc := make([]byte, f.ScaleBytesFor(int64(kr)))
					_ = codec.EncodeF32(enc, sc, k[i*kr:(i+1)*kr])
					_ = codec.DecodeF32(wantK[i*kr:(i+1)*kr], enc, sc)
				}
				if diff := cmp.Diff(wantK, gotK); diff != "" {
					t.Fatalf("GetKey (-want +got):\n%s", diff)
				}
				// Error bound: the formats are within 50% relative RMS even at 4 bits.
				if e := relRMS(k, gotK); e > 0.5 {
					t.Errorf("relative RMS error %.3f", e)
				}
				vr2 := vr
				if att == pool.MLA {
					vr2 = 512
				}
				gotV := make([]float32, len(locs)*vr2)
				if err := kv.GetValue(gotV, 11, locs); err != nil {
					t.Fatal(err)
				}
				for i := range locs {
					var want []float32
					if att == pool.MLA {
						want = wantK[i*kr : i*kr+512]
					} else {
						enc := make([]byte, f.DataBytes(int64(vr)))
						sc := make([]byte, f.ScaleBytesFor(int64(vr)))
						_ = codec.EncodeF32(enc, sc, v[i*vr:(i+1)*vr])
						want = make([]float32, vr)
						_ = codec.DecodeF32(want, enc, sc)
					}
					if diff := cmp.Diff(want, gotV[i*vr2:(i+1)*vr2]); diff != "" {
						t.Fatalf("GetValue row %d (-want +got):\n%s", i, diff)
					}
				}
				// bf16 reads match the f32 reads rounded.
				gb := make([]uint16, len(k))
				if err := kv.GetKeyBF16(gb, 11, locs); err != nil {
					t.Fatal(err)
				}
				for i := range gb {
					if d := math.Abs(float64(bf16ToF32(gb[i]) - gotK[i])); d > math.Abs(float64(gotK[i]))/128+1e-30 {
						t.Fatalf("bf16 read %d: %v vs %v", i, bf16ToF32(gb[i]), gotK[i])
					}
				}
			})
		}
	}
}

func bf16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

func relRMS(want, got []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(want[i] - got[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}

func TestKVBF16Exact(t *testing.T) {
	kv := mustKV(t, pool.KVConfig{Attention: pool.MHA, Format: "bf16", Size: 8, Layers: 1, Heads: 1, HeadDim: 4, VHeadDim: 4})
	k := []uint16{0x3f80, 0xc000, 0x0001, 0x7f7f}
	v := []uint16{0x4049, 0x0000, 0x8000, 0x3c00}
	if err := kv.SetKVBF16(0, []int32{3}, k, v); err != nil {
		t.Fatal(err)
	}
	gk, gv := make([]uint16, 4), make([]uint16, 4)
	if err := errors.Join(kv.GetKeyBF16(gk, 0, []int32{3}), kv.GetValueBF16(gv, 0, []int32{3})); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(k, gk); diff != "" {
		t.Errorf("key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(v, gv); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
}

func TestKVScaledFP8(t *testing.T) {
	kv := mustKV(t, pool.KVConfig{Attention: pool.MHA, Format: "fp8_e4m3", Size: 8, Layers: 2, Heads: 1, HeadDim: 2, VHeadDim: 2})
	kc, _ := quant.New("fp8_e4m3", quant.Options{Scale: 2})
	vc, _ := quant.New("fp8_e4m3", quant.Options{Scale: 0.5})
	if err := kv.SetCodecs(1, kc, vc); err != nil {
		t.Fatal(err)
	}
	// k_scale 2: 896 is stored as 448 (the e4m3 maximum) and read back exactly.
	if err := kv.SetKV(1, []int32{2}, []float32{896, 1}, []float32{104, 0.25}); err != nil {
		t.Fatal(err)
	}
	data, _, _ := kv.KeyRaw(1, 2)
	if data[0] != 0x7e { // e4m3 code of 448
		t.Errorf("stored code %#x, want 0x7e (448 = 896 / k_scale)", data[0])
	}
	gk, gv := make([]float32, 2), make([]float32, 2)
	_ = kv.GetKey(gk, 1, []int32{2})
	_ = kv.GetValue(gv, 1, []int32{2})
	if diff := cmp.Diff([]float32{896, 1}, gk); diff != "" {
		t.Errorf("key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float32{104, 0.25}, gv); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
	// Layer 0 keeps the unscaled codec: 896 overflows e4m3.
	_ = kv.SetKV(0, []int32{2}, []float32{896, 1}, []float32{1, 1})
	_ = kv.GetKey(gk, 0, []int32{2})
	if gk[0] == 896 {
		t.Errorf("unscaled layer stored 896 exactly; per-layer codecs leaked")
	}
	bad, _ := quant.ForKV("bf16")
	if err := kv.SetCodecs(0, bad, bad); !errors.Is(err, pool.ErrConfig) {
		t.Errorf("mismatched codec: err = %v, want ErrConfig", err)
	}
}

func TestKVErrors(t *testing.T) {
	kv := mustKV(t, pool.KVConfig{Attention: pool.MHA, Format: "bf16", Size: 8, PageSize: 4, Layers: 2, StartLayer: 4, Heads: 1, HeadDim: 2, VHeadDim: 2})
	two := []float32{1, 2}
	tests := []struct {
		name string
		err  error
		fn   func() error
	}{
		{"layer below", pool.ErrInvalid, func() error { return kv.SetKV(3, []int32{4}, two, two) }},
		{"layer above", pool.ErrInvalid, func() error { return kv.GetKey(two, 6, []int32{4}) }},
		{"row beyond", pool.ErrBadLocation, func() error { return kv.SetKV(4, []int32{12}, two, two) }},
		{"negative row", pool.ErrBadLocation, func() error { return kv.GetValue(two, 5, []int32{-1}) }},
		{"short k", pool.ErrInvalid, func() error { return kv.SetKV(4, []int32{4}, two[:1], two) }},
		{"short dst", pool.ErrInvalid, func() error { return kv.GetKey(two, 4, []int32{4, 5}) }},
		{"resize up", pool.ErrConfig, func() error { return kv.Resize(9) }},
	}
	for _, tt := range tests {
		if err := tt.fn(); !errors.Is(err, tt.err) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
		}
	}
	configs := []pool.KVConfig{
		{Attention: "gqa", Format: "bf16", Size: 8, Layers: 1, Heads: 1, HeadDim: 2, VHeadDim: 2},
		{Attention: pool.MHA, Format: "fp9", Size: 8, Layers: 1, Heads: 1, HeadDim: 2, VHeadDim: 2},
		{Attention: pool.MHA, Format: "mxfp8", Size: 8, Layers: 1, Heads: 1, HeadDim: 48, VHeadDim: 48},
		{Attention: pool.MHA, Format: "bf16", Size: -1, Layers: 1, Heads: 1, HeadDim: 2, VHeadDim: 2},
		{Attention: pool.MLA, Format: "bf16", Size: 8, Layers: 1},
		{Attention: pool.MHA, Format: "bf16", Size: 1 << 30, Layers: 1 << 10, Heads: 64, HeadDim: 128, VHeadDim: 128},
	}
	for i, c := range configs {
		if _, err := pool.NewKV(c); !errors.Is(err, pool.ErrConfig) {
			t.Errorf("config %d: err = %v, want ErrConfig", i, err)
		}
	}
}
