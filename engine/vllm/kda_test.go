package vllm

import (
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
)

// Rule 3: mamba_utils.kda_state_dtype keeps Kimi-Linear's recurrent state
// in float32 whatever the model dtype; the three short-conv states follow
// the cache dtype. At TP 8: conv 3 × 512 × 3 × 2 B + recurrent 4 × 128 ×
// 128 × 4 B = 271,360 B per layer and request.
func TestKDARecurrentStateFloat32(t *testing.T) {
	s, err := catalog.Load("moonshotai/Kimi-Linear-48B-A3B-Instruct")
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	for _, tt := range []struct {
		tp   int
		md   dtype.DType
		want int64
	}{
		{8, dtype.BFloat16, 1536*3*2 + 4*128*128*4},
		{8, dtype.Float16, 1536*3*2 + 4*128*128*4},
		{1, dtype.BFloat16, 12288*3*2 + 32*128*128*4},
		{8, dtype.Float32, 1536*3*4 + 4*128*128*4},
	} {
		spec := *s
		spec.ModelDType = tt.md
		got, err := mambaStateBytes(&spec, layerInputs{rules: Latest.rules(), tp: tt.tp})
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("TP %d %v: %d bytes, want %d", tt.tp, tt.md, got, tt.want)
		}
	}
}
