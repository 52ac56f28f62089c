package simulate

import (
	"context"
	"math"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// Issue 32 item 3: Llama-3.1-8B on one L40S at 20 requests/s of 3000 +
// 500 tokens needs several times the GPU (prefill alone about 5x): the
// binding limit is compute, not the KV pool, and stays compute with a
// pool 16 times larger; at 1 request/s it is not.
func TestComputeLimit(t *testing.T) {
	ctx := context.Background()
	c, _, err := FromPlan(ctx, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L40S"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(c Config, rate float64) *Summary {
		t.Helper()
		g := Generator{Requests: 200, Rate: rate, Prompt: Lengths{Mean: 3000}, Output: Lengths{Mean: 500}, Seed: 1}
		src, _ := g.Source()
		sum, err := Run(ctx, c, src)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	big := c
	big.MaxTotalNumTokens *= 16
	for _, cc := range []Config{c, big} {
		sum := run(cc, 20)
		if sum.BindingLimit != LimitCompute || sum.ComputeLoadEst < 5 || sum.ComputeLoadEst > 9 {
			t.Errorf("pool %d at 20/s: binding %s, compute load %.2f; want compute, 5-9", sum.PoolTokens, sum.BindingLimit, sum.ComputeLoadEst)
		}
	}
	// Prefill alone: 3000 tokens x 2 x 8B FLOPs x 20/s over the L40S's
	// dense BF16 peak at MFU 0.5.
	pre := 20 * 3000 * c.Time.FLOPsPerToken / (c.Time.PeakFLOPS * 0.5)
	if pre < 4 || pre > 6.5 {
		t.Errorf("prefill alone needs %.2fx the GPU, want about 5", pre)
	}
	if sum := run(c, 1); sum.BindingLimit == LimitCompute || sum.ComputeLoadEst <= 0 || sum.ComputeLoadEst >= 1 {
		t.Errorf("at 1/s: binding %s, compute load %.2f; want below 1", sum.BindingLimit, sum.ComputeLoadEst)
	}
	// A constant step time has no compute to saturate.
	cs := c
	cs.Time = TimeModel{ConstantStepS: 0.01}
	if sum := run(cs, 20); sum.ComputeLoadEst != 0 || sum.BindingLimit == LimitCompute {
		t.Errorf("constant step time: binding %s, load %v", sum.BindingLimit, sum.ComputeLoadEst)
	}
}

// Pipeline parallelism does not shorten a step as tensor parallelism
// does: a prefill of 8192 tokens takes about as long with pp 2 as on one
// GPU and about half as long with tp 2; the GPU time the work needs over
// the arrivals counts both stages of the pipeline.
func TestPipelineStepTime(t *testing.T) {
	ctx := context.Background()
	step := map[string]float64{}
	load := map[string]float64{}
	for _, l := range []struct {
		name   string
		tp, pp int
	}{{"tp1", 1, 1}, {"tp2", 2, 1}, {"pp2", 1, 2}} {
		c, _, err := FromPlan(ctx, plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", TPSize: l.tp, PPSize: l.pp}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := stepInfo{prefill: true, reqs: 1, newTokens: 8192, attnWork: 8192 * 4096, kvRead: 8192}
		step[l.name] = c.Time.step(st) - c.Time.StepOverheadS
		comp, kv := c.Time.work(st)
		load[l.name] = max(comp, kv) / float64(max(c.Time.PipelineStages, 1))
	}
	if r := step["pp2"] / step["tp1"]; math.Abs(r-1) > 0.05 {
		t.Errorf("pp 2 prefill step %.4fs vs tp 1 %.4fs (ratio %.3f): a pipeline does not shorten a step", step["pp2"], step["tp1"], r)
	}
	if r := step["tp2"] / step["tp1"]; math.Abs(r-0.5) > 0.05 {
		t.Errorf("tp 2 prefill step %.4fs vs tp 1 %.4fs (ratio %.3f), want about 0.5", step["tp2"], step["tp1"], r)
	}
	if r := load["pp2"] / load["tp2"]; math.Abs(r-1) > 0.05 {
		t.Errorf("GPU time per stage: pp 2 %.4f vs tp 2 %.4f", load["pp2"], load["tp2"])
	}
}
