package plan_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// FuzzRun plans random (catalog model, GPU, flags) combinations: Run never
// panics, every error is a FieldError or wraps ErrInfeasible, and
// successful plans keep the invariants.
func FuzzRun(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(1), uint8(1), "", 0.0, uint16(0), uint16(0), 0.0, uint16(0), false, "")
	f.Add(uint8(30), uint8(4), uint8(8), uint8(2), "fp8_e4m3", 0.9, uint16(64), uint16(1000), 0.5, uint16(128), true, "EAGLE")
	f.Add(uint8(10), uint8(2), uint8(4), uint8(1), "nvfp4", 0.0, uint16(16), uint16(0), 0.1, uint16(0), false, "")
	f.Add(uint8(33), uint8(7), uint8(2), uint8(3), "mxfp8", 0.7, uint16(1), uint16(5000), 1.0, uint16(4096), true, "DFLASH")
	names := catalog.Names()
	gpus := gpu.All()
	f.Fuzz(func(t *testing.T, model, g, tp, pp uint8, kv string, mfs float64, page, maxTotal uint16, ratio float64, maxRun uint16, radixOff bool, spec string) {
		req := plan.Request{
			Model: names[int(model)%len(names)], GPU: gpus[int(g)%len(gpus)].Name,
			TPSize: 1 << (tp % 5), PPSize: int(pp)%4 + 1, KVCacheDType: kv, MemFractionStatic: mfs,
			PageSize: int(page), MaxTotalTokens: int64(maxTotal) * 10, SWAFullTokensRatio: ratio,
			MaxRunningRequests: int(maxRun), DisableRadixCache: radixOff, SpeculativeAlgorithm: spec,
			WeightsMemory: units.Size(int64(maxRun) << 22),
		}
		r, err := plan.Run(context.Background(), req)
		if err != nil {
			if !errors.Is(err, plan.ErrInvalid) && !errors.Is(err, plan.ErrInfeasible) {
				t.Fatalf("unclassified error: %v", err)
			}
			if errors.Is(err, plan.ErrInfeasible) && (r == nil || r.Error == "") {
				t.Fatalf("infeasible without a report: %v", err)
			}
			return
		}
		if r.MaxTotalNumTokens <= 0 || r.MaxTotalNumTokens%int64(r.PageSize) != 0 {
			t.Fatalf("tokens %d page %d", r.MaxTotalNumTokens, r.PageSize)
		}
		if r.FullMaxTotalNumTokens > 0 && r.Configurator == "HybridSWAPoolConfigurator" {
			rr := ratio
			if rr == 0 {
				rr = 0.8
			}
			if r.SWAMaxTotalNumTokens > int64(float64(r.FullMaxTotalNumTokens)*rr) {
				t.Fatalf("swa %d > full %d × %v", r.SWAMaxTotalNumTokens, r.FullMaxTotalNumTokens, rr)
			}
		}
		b := r.Breakdown
		for _, v := range []int64{r.AvailableKVBytes, r.KSizeBytes, r.VSizeBytes, r.MaxConcurrencyAtContextLength, b.WeightsBytes, b.ReservedBytes, b.StateBytes, b.KVPoolBytes, b.UnusedBytes, b.PostLoadFreeBytes} {
			if v < 0 {
				t.Fatalf("negative value: %+v", r)
			}
		}
		if r.MaxRunningRequests <= 0 || int64(r.MaxRunningRequests) > r.MaxTotalNumTokens/2 {
			t.Fatalf("running %d tokens %d", r.MaxRunningRequests, r.MaxTotalNumTokens)
		}
	})
}
