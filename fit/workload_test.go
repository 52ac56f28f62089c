package fit_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
	"github.com/kvcfg/kvcfg/units"
)

// retractTrace (testdata/retract.jsonl): four requests of 2,000 + 2,200
// tokens at t=0 (16,800 KV tokens together at their end) and twelve of
// 50 + 50, one a second: at most 5 run at once, 1,125 tokens per request
// on average, the longest 4,200.
const retractTrace = "testdata/retract.jsonl"

func traceSource(t *testing.T) func() (simulate.Source, error) {
	t.Helper()
	b, err := os.ReadFile(retractTrace)
	if err != nil {
		t.Fatal(err)
	}
	return func() (simulate.Source, error) { return simulate.NewTraceReader(strings.NewReader(string(b))), nil }
}

// workloadBase is Llama-3.1-8B on H100s cut to 19.5 GiB, with the memory
// share fixed at 0.9: one GPU holds 16,154 tokens (SGLang), less than the
// four long requests reach (16,792), so it retracts, or none (vLLM); two GPUs (TP2: half the weights and half the KV heads per
// GPU) hold about 148,000.
func workloadBase(engine string) plan.Request {
	r := plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", Engine: engine, GPUMemory: units.Size(39 * gib / 2)}
	if engine == plan.EngineVLLM {
		r.GPUMemoryUtilization = 0.9
	} else {
		r.MemFractionStatic = 0.9
	}
	return r
}

func TestFitWorkloadNeedsTwoGPUs(t *testing.T) {
	for _, engine := range []string{plan.EngineSGLang, plan.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			o := fit.Options{Base: workloadBase(engine), GPUs: []string{"H100"}, MaxGPUs: 2, Source: traceSource(t),
				Simulation: simulate.Options{StepTimeS: 0.01}}
			res, err := fit.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			w := res.Target.Workload
			if w == nil || w.Requests != 16 || w.MaxRequestTokens != 4200 || w.MeanRequestTokens != 1125 || w.PeakRunning != 5 ||
				res.Target.Concurrency != 5 || res.Target.ContextLength != map[string]int{plan.EngineSGLang: 4202, plan.EngineVLLM: 4200}[engine] {
				t.Fatalf("target %+v workload %+v", res.Target, w)
			}
			if len(res.Configurations) != 1 {
				t.Fatalf("configurations %+v", res.Configurations)
			}
			c := res.Configurations[0]
			if c.GPUCount != 2 || c.Simulation == nil || c.Simulation.Failed != "" || c.Simulation.Setbacks() != 0 ||
				c.Simulation.RequestsCompleted != 16 || c.Simulation.PeakRunning != 5 || c.Simulation.BindingLimit == simulate.LimitKVPool {
				t.Fatalf("chosen %+v simulation %+v", c, c.Simulation)
			}
			// The figures are those of `kvcfg simulate` on the row's
			// flags: re-planned and re-simulated.
			checkResimulated(t, c, o)

			// Up to one GPU: nothing serves; the closest miss is the
			// one-GPU layout, whose simulation retracts or preempts.
			o.MaxGPUs, o.Source = 1, traceSource(t)
			res, err = fit.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			m := res.ClosestMiss
			if len(res.Configurations) != 0 || m == nil || m.Simulation == nil || m.GPUCount != 1 {
				t.Fatalf("want a simulated miss on one GPU, got %+v, miss %+v", res.Configurations, m)
			}
			word := map[string]string{plan.EngineSGLang: "retraction", plan.EngineVLLM: "preemption"}[engine]
			if m.Simulation.Setbacks() < 1 || !strings.Contains(m.Simulation.Failed, word) || !strings.Contains(m.Shortfall, word) {
				t.Errorf("miss %+v simulation %+v", m, m.Simulation)
			}
			checkResimulated(t, m.Configuration, o)
		})
	}
}

// checkResimulated plans c's `kvcfg plan` arguments and simulates the
// workload on that plan: the figures must be c's.
func checkResimulated(t *testing.T, c fit.Configuration, o fit.Options) {
	t.Helper()
	req, err := fit.ParseFlags(plan.Request{}, c.PlanArgs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := simulate.FromPlan(context.Background(), req, o.Simulation)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := traceSource(t)()
	sum, err := simulate.Run(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Simulation
	setbacks := sum.Retractions
	if setbacks == nil {
		setbacks = sum.Preemptions
	}
	if got.RequestsCompleted != sum.RequestsCompleted || got.UnservableRequests != sum.UnservableRequests || got.PeakRunning != sum.PeakRunning ||
		got.Setbacks() != *setbacks || got.RecomputedTokens != sum.RecomputedTokens || got.PrefixHitRate != sum.PrefixHitRate ||
		got.PeakKVTokens != sum.PeakKVTokens || got.PoolTokens != sum.PoolTokens || got.BindingLimit != sum.BindingLimit {
		t.Errorf("fit's simulation %+v, re-simulated %+v", got, sum)
	}
}

func TestFitWorkloadGenerator(t *testing.T) {
	// A generated workload and its inline trace give the same answer.
	g := simulate.Generator{Requests: 40, Rate: 20, Prompt: simulate.Lengths{Mean: 800}, Output: simulate.Lengths{Mean: 100},
		SharedPrefix: 400, PrefixGroups: 2, Seed: 3}
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}, GPUs: []string{"H100"}, MaxGPUs: 1, Workload: &g}
	a, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := g.Source()
	var reqs []simulate.Request
	for {
		r, err := src.Next()
		if err != nil {
			break
		}
		reqs = append(reqs, r)
	}
	o.Workload, o.Trace = nil, reqs
	b, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Configurations) != 1 || len(b.Configurations) != 1 {
		t.Fatalf("got %d and %d configurations", len(a.Configurations), len(b.Configurations))
	}
	sa, sb := a.Configurations[0].Simulation, b.Configurations[0].Simulation
	ca, cb := *sa, *sb
	ca.Retractions, cb.Retractions = nil, nil
	if ca != cb || sa.Setbacks() != sb.Setbacks() || sa.PrefixHitRate <= 0 || a.Target.Concurrency != b.Target.Concurrency {
		t.Errorf("generator %+v, trace %+v", sa, sb)
	}
}

func TestFitWorkloadInvalid(t *testing.T) {
	g := &simulate.Generator{Requests: 10, Prompt: simulate.Lengths{Mean: 100}, Output: simulate.Lengths{Mean: 10}}
	base := plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}
	bad := func(r simulate.Request) func() (simulate.Source, error) {
		return func() (simulate.Source, error) { return &simulate.SliceSource{Reqs: []simulate.Request{r}}, nil }
	}
	tests := []struct {
		name string
		o    fit.Options
		want string
	}{
		{"concurrency and a workload", fit.Options{Base: base, Concurrency: 4, Workload: g}, "concurrency"},
		{"two workloads", fit.Options{Base: base, Workload: g, Trace: []simulate.Request{{PromptTokens: 1, OutputTokens: 1}}}, "workload"},
		{"trtllm", fit.Options{Base: plan.Request{Model: base.Model, Engine: plan.EngineTRTLLM}, Workload: g}, "engine"},
		{"bad generator", fit.Options{Base: base, Workload: &simulate.Generator{}}, "workload"},
		{"bad criteria", fit.Options{Base: base, Workload: g, Criteria: fit.Criteria{MaxRetractions: -1, MaxKVBlockedShare: 2}}, "max_kv_blocked_share"},
		{"bad trace request", fit.Options{Base: base, Source: bad(simulate.Request{PromptTokens: 0, OutputTokens: 1})}, "prompt_tokens"},
		{"context shorter than a request", fit.Options{Base: base, Workload: g, ContextLength: 50}, "longest request"},
		{"longer than the model", fit.Options{Base: base, Source: bad(simulate.Request{PromptTokens: 200_000, OutputTokens: 1})}, "model's context length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fit.Run(context.Background(), tt.o)
			if !errors.Is(err, fit.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want ErrInvalid naming %q", err, tt.want)
			}
		})
	}
}

func TestFitWorkloadLooserCriteria(t *testing.T) {
	// Retractions and KV queueing allowed: one GPU serves.
	o := fit.Options{Base: workloadBase(plan.EngineSGLang), GPUs: []string{"H100"}, MaxGPUs: 2, Source: traceSource(t),
		Simulation: simulate.Options{StepTimeS: 0.01}, Criteria: fit.Criteria{MaxRetractions: 10, MaxKVBlockedShare: 1, AllowKVPoolBinding: true}}
	res, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Configurations) != 1 || res.Configurations[0].GPUCount != 1 || res.Configurations[0].Simulation.Setbacks() < 1 {
		t.Fatalf("configurations %+v", res.Configurations)
	}
	checkResimulated(t, res.Configurations[0], o)
}

// BenchmarkFitWorkload is a workload fit (the README's: 1,000 generated
// requests, two KV dtypes on H100s) against its baseline, the concurrency
// fit of the same search (the demand's 28 requests of 2,800 tokens):
// compare the two ns/op.
func BenchmarkFitWorkload(b *testing.B) {
	g := &simulate.Generator{Requests: 1000, Rate: 10, Prompt: simulate.Lengths{Mean: 1500}, Output: simulate.Lengths{Mean: 300},
		SharedPrefix: 1000, PrefixGroups: 4, Seed: 1}
	base := plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}
	for _, bc := range []struct {
		name string
		o    fit.Options
	}{
		{"concurrency", fit.Options{Base: base, GPUs: []string{"H100"}, KVCacheDTypes: []string{"auto", "fp8_e4m3"}, Concurrency: 28, ContextLength: 2800}},
		{"workload", fit.Options{Base: base, GPUs: []string{"H100"}, KVCacheDTypes: []string{"auto", "fp8_e4m3"}, Workload: g}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := fit.Run(context.Background(), bc.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A DP row's figures are those of its replicas, each simulated with its
// round-robin share of the trace (request i to replica i mod dp).
func TestFitWorkloadDPReplicas(t *testing.T) {
	o := fit.Options{Base: workloadBase(plan.EngineSGLang), GPUs: []string{"H100"}, MaxGPUs: 2, All: true, Source: traceSource(t),
		Simulation: simulate.Options{StepTimeS: 0.01}}
	res, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var dp *fit.Configuration
	for i, c := range res.Configurations {
		if c.DPSize == 2 {
			dp = &res.Configurations[i]
		}
	}
	if dp == nil {
		t.Fatalf("no DP2 row in %+v", res.Configurations)
	}
	req, err := fit.ParseFlags(plan.Request{}, dp.PlanArgs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := simulate.FromPlan(context.Background(), req, o.Simulation)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := traceSource(t)()
	var shares [2][]simulate.Request
	for i := 0; ; i++ {
		r, err := src.Next()
		if err != nil {
			break
		}
		shares[i%2] = append(shares[i%2], r)
	}
	var completed, peakKV int64
	var peak int
	for _, sh := range shares {
		sum, err := simulate.Run(context.Background(), cfg, &simulate.SliceSource{Reqs: sh})
		if err != nil {
			t.Fatal(err)
		}
		completed += sum.RequestsCompleted
		peak += sum.PeakRunning
		peakKV += sum.PeakKVTokens
	}
	m := dp.Simulation
	if m.RequestsCompleted != completed || m.PeakRunning != peak || m.PeakKVTokens != peakKV || completed != 16 {
		t.Errorf("DP row %+v, replicas: %d completed, peak %d running, %d KV tokens", m, completed, peak, peakKV)
	}
}

// When no layout's plan holds the workload's demand, the closest miss is
// the plan's, counted in requests of the workload's mean length.
func TestFitWorkloadPlanMiss(t *testing.T) {
	g := &simulate.Generator{Requests: 200, Rate: 0, Prompt: simulate.Lengths{Mean: 3000}, Output: simulate.Lengths{Mean: 500}, Seed: 1}
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}, GPUs: []string{"L4"}, MaxGPUs: 1, Workload: g,
		Simulation: simulate.Options{StepTimeS: 0.05}}
	res, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := res.ClosestMiss
	// All 200 arrive at once: the demand is all of them.
	if res.Target.Concurrency != 200 || len(res.Configurations) != 0 || m == nil || m.Simulation != nil {
		t.Fatalf("target %+v, configurations %d, miss %+v", res.Target, len(res.Configurations), m)
	}
	if m.MaxContextLength != 0 || !strings.Contains(m.Error, "of 3500 tokens, not 200") || m.MaxConcurrency < 1 {
		t.Errorf("miss %+v", m)
	}
}

// Issue 32 item 3 in fit's workload mode: 8B on L40S at 20 requests/s
// of 3000 + 500 tokens needs about 6.7 GPUs' time. Up to 4 GPUs nothing
// serves and the miss says compute, not the pool, and names replicas; up
// to 8, seven replicas of one GPU serve, each keeping up with its share.
func TestFitWorkloadComputeBound(t *testing.T) {
	g := &simulate.Generator{Requests: 200, Rate: 20, Prompt: simulate.Lengths{Mean: 3000}, Output: simulate.Lengths{Mean: 500}, Seed: 1}
	o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"}, GPUs: []string{"L40S"}, MaxGPUs: 4, Workload: g}
	res, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := res.ClosestMiss
	if len(res.Configurations) != 0 || m == nil || m.Simulation == nil || m.Simulation.BindingLimit != simulate.LimitCompute ||
		!strings.Contains(m.Shortfall, "compute is the binding limit") || !strings.Contains(m.Hint, "replicas") ||
		!strings.Contains(m.Hint, "a larger KV pool would not help") || strings.Contains(m.Hint, "more memory") || m.PPSize != 1 {
		t.Fatalf("up to 4 GPUs: configurations %d, miss %+v", len(res.Configurations), m)
	}
	o.MaxGPUs = 8
	if res, err = fit.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if len(res.Configurations) != 1 {
		t.Fatalf("up to 8 GPUs: %+v", res.Configurations)
	}
	c := res.Configurations[0]
	if c.GPUCount != 7 || c.DPSize != 7 || c.TPSize != 1 || c.Simulation.BindingLimit == simulate.LimitCompute || c.Simulation.ComputeLoadEst >= 1 {
		t.Errorf("up to 8 GPUs: %d GPUs tp %d dp %d, simulation %+v", c.GPUCount, c.TPSize, c.DPSize, c.Simulation)
	}
}

// Issue 32 item 4: a workload fit does not bake the workload's longest
// request into the context length: the engine's default (the model's)
// stays unless --context-length is given, or the engine refuses the
// model's full context at the layout (vLLM on one RTX 4090: the longest
// its pool holds, with a note).
func TestFitWorkloadKeepsContext(t *testing.T) {
	g := &simulate.Generator{Requests: 40, Rate: 0.2, Prompt: simulate.Lengths{Mean: 1000}, Output: simulate.Lengths{Mean: 200}, Seed: 1}
	for _, tt := range []struct {
		engine, gpu string
		ctx         int
		want        string // the context flag printed, "" none
	}{
		{plan.EngineSGLang, "H100", 0, ""},
		{plan.EngineVLLM, "H100", 0, ""},
		{plan.EngineSGLang, "H100", 8192, "--context-length 8192"},
		{plan.EngineVLLM, "RTX-4090", 0, "--max-model-len 43008"},
	} {
		o := fit.Options{Base: plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", Engine: tt.engine}, GPUs: []string{tt.gpu}, MaxGPUs: 1,
			Workload: g, ContextLength: tt.ctx}
		res, err := fit.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Configurations) != 1 {
			t.Fatalf("%s on %s: %+v", tt.engine, tt.gpu, res.ClosestMiss)
		}
		c := res.Configurations[0]
		flags := strings.Join(c.Flags, " ") + " "
		has := strings.Contains(flags, "--context-length") || strings.Contains(flags, "--max-model-len")
		if (tt.want == "" && has) || (tt.want != "" && !strings.Contains(flags, tt.want+" ")) {
			t.Errorf("%s on %s, context %d: flags %s, want %q", tt.engine, tt.gpu, tt.ctx, flags, tt.want)
		}
		if tt.gpu == "RTX-4090" && (len(c.Notes) == 0 || !strings.Contains(strings.Join(c.Notes, " "), "refuses the model's full context")) {
			t.Errorf("no note on the context: %v", c.Notes)
		}
		// The flags plan to the row's pool.
		req, err := fit.ParseFlags(plan.Request{}, c.PlanArgs)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := plan.Run(context.Background(), req); err != nil || rep.MaxTotalNumTokens != c.MaxTotalNumTokens {
			t.Errorf("%s on %s: re-planned %v, %v; want pool %d", tt.engine, tt.gpu, rep, err, c.MaxTotalNumTokens)
		}
	}
}
