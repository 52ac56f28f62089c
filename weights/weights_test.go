package weights_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

func TestTotal(t *testing.T) {
	s := &model.Spec{Name: "x", ModelDType: dtype.BFloat16, Params: model.Params{Total: 8_030_261_248, Quantizable: 6_979_321_856, Embedding: 1_050_939_392}}
	got, err := weights.Total(s)
	if err != nil || got != 16_060_522_496 {
		t.Errorf("bf16: %d %v", got, err)
	}
	s.Quant = &model.QuantSpec{Method: "fp8", WeightBits: 8}
	got, _ = weights.Total(s)
	if want := int64(6_979_321_856 + 2*1_050_939_392); got != want {
		t.Errorf("fp8: %d want %d", got, want)
	}
	s.Quant = &model.QuantSpec{Method: "mxfp4", WeightBits: 4}
	got, _ = weights.Total(s)
	if want := int64(float64(6_979_321_856)*(0.5+1.0/32)) + 2*1_050_939_392; got != want {
		t.Errorf("mxfp4: %d want %d", got, want)
	}
	if _, err := weights.Total(&model.Spec{}); !errors.Is(err, weights.ErrInvalid) {
		t.Errorf("empty: %v", err)
	}
	if _, err := weights.Total(nil); !errors.Is(err, weights.ErrInvalid) {
		t.Errorf("nil: %v", err)
	}
}

func TestPerRank(t *testing.T) {
	s := &model.Spec{Name: "x", NumLayers: 4, ModelDType: dtype.BFloat16, Params: model.Params{Total: 1000, Embedding: 200}}
	if got, _ := weights.PerRank(s, weights.Layout{TP: 4, PP: 1}); got != 500 {
		t.Errorf("tp4: %d", got)
	}
	// PP 2: layers 1600 B over 4 layers → 800 per stage, + half the 400 B embedding.
	if got, _ := weights.PerRank(s, weights.Layout{TP: 1, PP: 2}); got != 1000 {
		t.Errorf("pp2: %d", got)
	}
}

// The Llama-3.1-8B estimate is the 14.96 GiB of docs/sglang.md#ex1.
func TestLlama8BEstimate(t *testing.T) {
	s, err := catalog.Load(catalog.Default)
	if err != nil {
		t.Fatal(err)
	}
	got, err := weights.PerRank(s, weights.Layout{TP: 1, PP: 1})
	if err != nil {
		t.Fatal(err)
	}
	if gib := float64(got) / (1 << 30); gib < 14.9 || gib > 15.0 {
		t.Errorf("Llama-3.1-8B weights %.3f GiB, want ≈14.96", gib)
	}
}
