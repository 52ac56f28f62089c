package weights_test

import (
	"math"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/weights"
)

// DeepSeek-V4 ships its routed experts as FP4 (two values per int8 byte and
// a UE8M0 scale per 32 values: 0.53125 B/param), the rest of the linears as
// FP8. The published checkpoints weigh 805.33 GiB (V4-Pro) and 148.66 GiB
// (V4-Flash), MTP layer included; the estimate (MTP excluded) lands within
// 5%. Counting the experts at 1 B/param, as an FP8 checkpoint, doubles it.
func TestDeepSeekV4FP4Experts(t *testing.T) {
	for name, gib := range map[string]float64{"deepseek-ai/DeepSeek-V4-Pro": 805.33, "deepseek-ai/DeepSeek-V4-Flash": 148.66} {
		s, err := catalog.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Params
		// V4-Pro: 61 layers · 384 experts · 3 · 7168 · 3072 = 1,547,396,186,112.
		if name == "deepseek-ai/DeepSeek-V4-Pro" && p.FP4Experts != 61*384*3*7168*3072 {
			t.Errorf("FP4 experts %d", p.FP4Experts)
		}
		b, err := weights.Total(s)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(p.Quantizable-p.FP4Experts)*1 + float64(p.FP4Experts)*(0.5+1.0/32) + float64(p.Total-p.Quantizable)*2
		if math.Abs(float64(b)-want) > 1 {
			t.Errorf("%s: %d B, want %.0f", name, b, want)
		}
		if r := float64(b) / (gib * (1 << 30)); r < 0.95 || r > 1.05 {
			t.Errorf("%s: estimate %.2f GiB is %.2f× the checkpoint's %.2f GiB", name, float64(b)/(1<<30), r, gib)
		}
	}
}
