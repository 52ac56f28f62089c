package plan_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/internal/cputime"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// Known answers from the SGLang docs/sglang.md#ex1 (Llama-3.1-8B, H100, TP1,
// pre 78.50 GiB, weights 14.96 GiB, mem_fraction_static 0.835):
// rest = 63.54 − 78.50·0.165 = 50.5875 GiB = 54,317,914,521 B.
//
//	bf16: cell 8·256·32·2 = 131,072 B → ⌊54,317,914,521 / 131,072⌋ = 414,412
//	fp8:  cell 65,536 B               → ⌊54,317,914,521 / 65,536⌋  = 828,825
//
// With mem_fraction_static 0.9 the slack is 78.5·0.1 = 7.85 GiB, rest
// 55.69 GiB = 59,796,682,178 B → bf16 456,212 tokens, fp8 912,424.
// (63.54 GiB is 68,225,555,496.96 B, given rounded to 68,225,555,497.)
func TestSweepKnownAnswers(t *testing.T) {
	base := plan.Request{
		Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100-80GB",
		PreLoadFreeMemory:  units.Size(84_288_733_184), // 78.50 GiB
		PostLoadFreeMemory: units.Size(68_225_555_497), // 63.54 GiB
	}
	axes := []plan.Axis{
		{Field: "mem_fraction_static", Values: []string{"0.835", "0.9"}},
		{Field: "kv_cache_dtype", Values: []string{"bf16", "fp8_e4m3"}},
	}
	rows, err := plan.Sweep(context.Background(), base, axes)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		MFS, DType string
		Tokens     int64
		Err        string
	}
	var out []got
	for _, r := range rows {
		g := got{MFS: r.Values["mem_fraction_static"], DType: r.Values["kv_cache_dtype"], Err: r.Error}
		if r.Report != nil {
			g.Tokens = r.Report.MaxTotalNumTokens
		}
		out = append(out, g)
	}
	want := []got{
		{"0.835", "bf16", 414412, ""},
		{"0.835", "fp8_e4m3", 828825, ""},
		{"0.9", "bf16", 456212, ""},
		{"0.9", "fp8_e4m3", 912424, ""},
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("sweep rows (-want +got):\n%s", d)
	}
	// Every row is exactly plan.Run of its request (these plans serve:
	// no advice either way).
	for _, r := range rows {
		rep, err := plan.Run(context.Background(), r.Request())
		if err != nil {
			t.Fatalf("%v: %v", r.Values, err)
		}
		if d := cmp.Diff(rep, r.Report, cmpopts.IgnoreUnexported(plan.Outcome{})); d != "" {
			t.Errorf("%v: sweep row differs from plan.Run (-run +sweep):\n%s", r.Values, d)
		}
	}
}

func TestSweepRowErrors(t *testing.T) {
	base := plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "L4"}
	rows, err := plan.Sweep(context.Background(), base, []plan.Axis{
		{Field: "tp_size", Values: []string{"1", "8"}},
		{Field: "kv_cache_dtype", Values: []string{"auto", "fp4_e2m1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4", len(rows))
	}
	// 70B bf16 weights (~141 GB) do not fit one 24 GB L4: infeasible.
	if !rows[0].Infeasible || rows[0].Error == "" {
		t.Errorf("TP1 on one L4: want an infeasible row, got %+v", rows[0].Error)
	}
	// fp4_e2m1 is a deprecated dtype: an invalid (not infeasible) row.
	for _, i := range []int{1, 3} {
		if rows[i].Error == "" || rows[i].Infeasible {
			t.Errorf("row %d (%v): want an invalid-dtype error, got %q infeasible=%v", i, rows[i].Values, rows[i].Error, rows[i].Infeasible)
		}
	}
}

func TestSweepInvalidAxes(t *testing.T) {
	tests := []struct {
		name string
		axes []plan.Axis
		want []string // fields reported
	}{
		{"unknown field", []plan.Axis{{Field: "tp", Values: []string{"1"}}}, []string{"tp"}},
		{"bad int and bad float", []plan.Axis{
			{Field: "tp_size", Values: []string{"1", "two"}},
			{Field: "mem_fraction_static", Values: []string{"x"}},
		}, []string{"tp_size", "mem_fraction_static"}},
		{"duplicate", []plan.Axis{{Field: "gpu", Values: []string{"H100"}}, {Field: "gpu", Values: []string{"H200"}}}, []string{"gpu"}},
		{"empty", []plan.Axis{{Field: "gpu"}}, []string{"gpu"}},
		{"config is not sweepable", []plan.Axis{{Field: "config", Values: []string{"{}"}}}, []string{"config"}},
		{"bad size", []plan.Axis{{Field: "gpu_memory", Values: []string{"80 parsecs"}}}, []string{"gpu_memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan.Sweep(context.Background(), plan.Request{}, tt.axes)
			if !errors.Is(err, plan.ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			var got []string
			for _, e := range unjoin(err) {
				var fe *plan.FieldError
				if errors.As(e, &fe) {
					got = append(got, fe.Field)
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
		})
	}
}

func TestSweepTooLarge(t *testing.T) {
	vals := make([]string, 1024)
	for i := range vals {
		vals[i] = strconv.Itoa(i + 1)
	}
	axes := []plan.Axis{{Field: "tp_size", Values: vals}, {Field: "pp_size", Values: vals}, {Field: "dp_size", Values: vals}}
	if _, err := plan.SweepSize(axes); err == nil {
		t.Fatal("want an error for 2^30 combinations")
	}
	if _, err := plan.Sweep(context.Background(), plan.Request{}, axes); !errors.Is(err, plan.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
}

func TestSweepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := plan.Sweep(ctx, plan.Request{}, []plan.Axis{{Field: "tp_size", Values: []string{"1", "2"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestSetFieldRoundTrip(t *testing.T) {
	tests := []struct{ key, in, out string }{
		{"tp_size", "4", "4"},
		{"max_total_tokens", "123456", "123456"},
		{"mem_fraction_static", "0.875", "0.875"},
		{"disable_radix_cache", "true", "true"},
		{"kv_cache_dtype", "fp8_e4m3", "fp8_e4m3"},
		{"gpu_memory", "80GiB", "85899345920"},
		{"weights_memory", "1024", "1024"},
		{"engine", " vllm ", "vllm"},
	}
	for _, tt := range tests {
		var r plan.Request
		if err := r.SetField(tt.key, tt.in); err != nil {
			t.Errorf("SetField(%s, %q): %v", tt.key, tt.in, err)
			continue
		}
		got, err := r.FieldString(tt.key)
		if err != nil || got != tt.out {
			t.Errorf("FieldString(%s) = %q, %v; want %q", tt.key, got, err, tt.out)
		}
	}
	// Every sweepable field reads back as "" when zero and round-trips.
	for _, k := range plan.SweepFields() {
		var r plan.Request
		if s, err := r.FieldString(k); err != nil || s != "" {
			t.Errorf("zero %s = %q, %v", k, s, err)
		}
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// BenchmarkSweepCatalog plans every catalog model on every catalog GPU at
// TP 1..8 with every accepted KV cache dtype: one op is the whole sweep.
func BenchmarkSweepCatalog(b *testing.B) {
	tps := []string{"1", "2", "3", "4", "5", "6", "7", "8"}
	axes := []plan.Axis{
		{Field: "model", Values: catalog.Names()},
		{Field: "gpu", Values: gpu.Names()},
		{Field: "tp_size", Values: tps},
		{Field: "kv_cache_dtype", Values: sglang.AcceptedKVDTypes(sglang.Profile{})},
	}
	n, err := plan.SweepSize(axes)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cpu0 := cputime.Process()
	for b.Loop() {
		if _, err := plan.Sweep(ctx, plan.Request{}, axes); err != nil {
			b.Fatal(err)
		}
	}
	plans := float64(b.N) * float64(n)
	b.ReportMetric(float64(n), "plans/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/plans, "ns/plan")
	b.ReportMetric(plans/b.Elapsed().Seconds(), "plans/s")
	// CPU time (all threads, GC included) tells the cost apart from the
	// other processes on a shared machine; it includes the first run's
	// catalog parsing.
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/plans, "cpu-ns/plan")
	}
}

// Rows come in nested-loop order, the first axis slowest, and each row's
// request carries its values.
func TestSweepOrder(t *testing.T) {
	axes := []plan.Axis{
		{Field: "gpu", Values: []string{"H100", "H200"}},
		{Field: "tp_size", Values: []string{"1", "2", "4"}},
		{Field: "kv_cache_dtype", Values: []string{"auto", "fp8_e4m3"}},
	}
	rows, err := plan.Sweep(context.Background(), plan.Request{Model: "Qwen/Qwen3-8B"}, axes)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 {
		t.Fatalf("%d rows, want 12", len(rows))
	}
	i := 0
	for _, g := range axes[0].Values {
		for _, tp := range axes[1].Values {
			for _, d := range axes[2].Values {
				r := rows[i]
				want := map[string]string{"gpu": g, "tp_size": tp, "kv_cache_dtype": d}
				if diff := cmp.Diff(want, r.Values); diff != "" {
					t.Errorf("row %d values (-want +got):\n%s", i, diff)
				}
				if r.Request().GPU != g || strconv.Itoa(r.Request().TPSize) != tp || r.Request().KVCacheDType != d || r.Request().Model != "Qwen/Qwen3-8B" {
					t.Errorf("row %d request %s tp %d %s %s", i, r.Request().GPU, r.Request().TPSize, r.Request().KVCacheDType, r.Request().Model)
				}
				if r.Report == nil || r.Report.TPSize != r.Request().TPSize {
					t.Errorf("row %d report %+v", i, r.Report)
				}
				i++
			}
		}
	}
}

// Every row of a sweep is plan.Run of its request with the model given by
// name and without the advice search (NoAdvice), infeasible rows included:
// report and error alike. (mamba2-130m's config has a NaN, which
// model.Parse reads but encoding/json does not.)
func TestSweepRowsAreRun(t *testing.T) {
	axes := []plan.Axis{
		{Field: "model", Values: []string{"meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen3-8B", "moonshotai/Kimi-K2-Instruct", "AntonV/mamba2-130m-hf"}},
		{Field: "gpu", Values: []string{"L4", "H100"}},
		{Field: "tp_size", Values: []string{"1", "2", "3", "4", "5", "8"}},
		{Field: "kv_cache_dtype", Values: []string{"auto", "fp8_e4m3"}},
	}
	rows, err := plan.Sweep(context.Background(), plan.Request{}, axes)
	if err != nil {
		t.Fatal(err)
	}
	advised := 0
	for _, r := range rows {
		// The request as the command line gives it: the model by name.
		req := r.Request()
		req.Resolved, req.Config = nil, nil
		req.NoAdvice = true
		rep, err := plan.Run(context.Background(), req)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != r.Error || errors.Is(err, plan.ErrInfeasible) != r.Infeasible {
			t.Errorf("%v: sweep error %q (infeasible %v), plan.Run %q", r.Values, r.Error, r.Infeasible, msg)
		}
		if d := cmp.Diff(rep, r.Report, cmpopts.IgnoreUnexported(plan.Outcome{})); d != "" {
			t.Errorf("%v: sweep row differs from plan.Run (-run +sweep):\n%s", r.Values, d)
		}
		if r.Report != nil && len(r.Report.FixArgs) > 0 {
			t.Errorf("%v: a sweep row has re-planned fix args %q: the advice search ran", r.Values, r.Report.FixArgs)
		}
		// The same request with advice (kvcfg plan of the row) says which
		// TP size fits.
		req.NoAdvice = false
		if rep, _ := plan.Run(context.Background(), req); rep != nil && rep.FixFlag == "--tp-size" && rep.FixValue != "" && len(rep.FixArgs) > 0 {
			advised++
		}
	}
	// The 70B and Kimi-K2 rows on small TP sizes carry a TP size that fits.
	if advised < 8 {
		t.Errorf("only %d rows advise a TP size", advised)
	}
}

// The advice search (re-planning to find the change that serves) runs for
// the plan a caller gets back, not for each infeasible plan of a sweep.
func TestSweepRunsNoAdvice(t *testing.T) {
	ctx := context.Background()
	axes := []plan.Axis{
		{Field: "gpu", Values: []string{"L4", "H100"}},
		{Field: "tp_size", Values: []string{"1"}},
	}
	base := plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct"}
	before := plan.AdviceSearches()
	rows, err := plan.Sweep(ctx, base, axes)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.AdviceSearches() - before; n != 0 {
		t.Errorf("a sweep ran %d advice searches, want none", n)
	}
	for _, r := range rows {
		if !r.Infeasible || r.Report == nil {
			t.Fatalf("%v: Llama-3.1-70B plans (%q): the test needs infeasible rows", r.Values, r.Error)
		}
		if len(r.Report.FixArgs) > 0 || strings.Contains(r.Report.FixHint, "re-planned") || strings.Contains(r.Report.FixHint, "kvcfg tried") {
			t.Errorf("%v: sweep row carries advice: %q %q", r.Values, r.Report.FixArgs, r.Report.FixHint)
		}
	}
	// A single Run of a row's request (H100, TP 1) searches once and
	// fills the fix.
	one := rows[1].Request()
	if one.GPU != "H100" {
		t.Fatalf("row 1 is %v", rows[1].Values)
	}
	before = plan.AdviceSearches()
	rep, err := plan.Run(ctx, one)
	if !errors.Is(err, plan.ErrInfeasible) || rep == nil {
		t.Fatalf("plan.Run: %v", err)
	}
	if n := plan.AdviceSearches() - before; n != 1 {
		t.Errorf("plan.Run ran %d advice searches, want 1", n)
	}
	if len(rep.FixArgs) == 0 || !strings.Contains(rep.FixHint, "re-planned") {
		t.Errorf("plan.Run's fix %q %q: want the re-planned advice", rep.FixArgs, rep.FixHint)
	}
	// NoAdvice turns it off for a single plan too.
	before = plan.AdviceSearches()
	req := one
	req.NoAdvice = true
	if _, err := plan.Run(ctx, req); !errors.Is(err, plan.ErrInfeasible) {
		t.Fatal(err)
	}
	if n := plan.AdviceSearches() - before; n != 0 {
		t.Errorf("plan.Run with NoAdvice ran %d advice searches", n)
	}
}
