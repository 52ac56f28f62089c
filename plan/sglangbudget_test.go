package plan_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
	"github.com/kvcfg/kvcfg/validate"
)

// An SGLang plan without readings lists the terms of its predicted budget;
// they add up to the KV budget the pool is sized from, for plain, MLA,
// hybrid-Mamba and multimodal models, at one rank and at several.
func TestSGLangBudgetTermsAddUp(t *testing.T) {
	for _, tc := range []struct {
		req   plan.Request
		terms string
	}{
		// One rank from 0.5.8: the first kernel runs in init_torch_distributed.
		{plan.Request{Model: "Qwen/Qwen3-8B", GPU: "H100", ContextLength: 8192}, "total cuda_context distributed_init weights reserved"},
		// One rank before 0.5.8: it runs in load_model, after the reading.
		{plan.Request{Model: "Qwen/Qwen3-8B", GPU: "H100", ContextLength: 8192, SGLangVersion: "0.5.6"}, "total cuda_context first_kernel weights reserved"},
		{plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", TPSize: 4}, "total cuda_context distributed_init weights reserved"},
		{plan.Request{Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8}, "total cuda_context distributed_init weights reserved"},
		{plan.Request{Model: "Qwen/Qwen3-Next-80B-A3B-Instruct", GPU: "H200", TPSize: 4}, "total cuda_context distributed_init weights reserved state"},
		{plan.Request{Model: "meta-llama/Llama-4-Scout-17B-16E", GPU: "H100", TPSize: 4}, ""},
		{plan.Request{Model: "google/gemma-3-1b-pt", GPU: "L40S"}, ""},
	} {
		t.Run(tc.req.Model, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			b := rep.Budget
			if b == nil {
				t.Fatal("no budget")
			}
			names, _, sum := budgetTerms(b)
			if tc.terms != "" && strings.Join(names, " ") != tc.terms {
				t.Errorf("terms %q, want %q", strings.Join(names, " "), tc.terms)
			}
			// The reserved share is SGLang's float GiB, so the sum may miss
			// by rounding, never by a term.
			if d := sum - rep.AvailableKVBytes; d < -(1<<20) || d > 1<<20 {
				t.Errorf("terms add up to %s, the KV budget is %s", units.FormatBytes(sum), units.FormatBytes(rep.AvailableKVBytes))
			}
			// A band once the table holds five SGLang runs; before that
			// the plan says why it has none.
			_, tbl, _ := validate.PlatformBand("sglang", rep.Platform)
			switch {
			case tbl.Runs < 5:
				if b.Band != nil || !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, "no error band") }) {
					t.Errorf("%d runs: band %+v, warnings %q", tbl.Runs, b.Band, rep.Warnings)
				}
			case b.Band == nil || b.Band.TokensLow > rep.MaxTotalNumTokens || b.Band.TokensHigh < rep.MaxTotalNumTokens ||
				b.Band.ConcurrencyLow > rep.MaxConcurrencyAtContextLength || b.Band.ConcurrencyHigh < rep.MaxConcurrencyAtContextLength:
				t.Errorf("band %+v around %d tokens, %d requests", b.Band, rep.MaxTotalNumTokens, rep.MaxConcurrencyAtContextLength)
			}
		})
	}
}

// Given readings, nothing is predicted: no budget terms, no band.
func TestSGLangBudgetMeasured(t *testing.T) {
	rep, err := plan.Run(context.Background(), plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100",
		PreLoadFreeMemory: units.Size(78.5 * (1 << 30)), PostLoadFreeMemory: units.Size(63.5 * (1 << 30))})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Budget != nil || strings.Contains(rep.Answer, "–") {
		t.Errorf("budget %+v, answer %q", rep.Budget, rep.Answer)
	}
}

// A release whose pool outgrows its budget says so in every output: SGLang
// 0.5.6 counts an fp8 DeepSeek-V3.2 token at 43,188 B and allocates 48,068
// (PR #31992, fixed in 0.5.17). The breakdown carries the pool it
// allocates and the bytes over the budget (kv_budget + over_budget =
// kv_pool + unused), the answer warns after the verdict, and the fixed
// release plans inside its budget.
func TestSGLangPoolOverBudget(t *testing.T) {
	req := plan.Request{Model: "deepseek-ai/DeepSeek-V3.2", GPU: "B200", TPSize: 8, KVCacheDType: "fp8_e4m3",
		ContextLength: 32768, Concurrency: 32, SGLangVersion: "0.5.6"}
	rep, err := plan.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Breakdown
	if rep.CellSizeBytes != 43188 {
		t.Errorf("cell %v B, want the counted 43,188", rep.CellSizeBytes)
	}
	if want := rep.MaxTotalNumTokens * 48068; b.KVPoolBytes != want {
		t.Errorf("pool %d B, want %d tokens × 48,068 = %d", b.KVPoolBytes, rep.MaxTotalNumTokens, want)
	}
	if b.OverBudgetBytes <= 0 || b.KVBudgetBytes+b.OverBudgetBytes != b.KVPoolBytes+b.UnusedBytes {
		t.Errorf("budget %d + over %d != pool %d + unused %d", b.KVBudgetBytes, b.OverBudgetBytes, b.KVPoolBytes, b.UnusedBytes)
	}
	if ratio := float64(b.OverBudgetBytes) / float64(b.KVBudgetBytes); ratio < 0.10 || ratio > 0.12 {
		t.Errorf("over budget by %.3f of the budget, want 48,068/43,188 − 1 ≈ 0.113 (less the page rounding)", ratio)
	}
	if !strings.HasPrefix(rep.Answer, "Serves: ") || !strings.Contains(rep.Answer, "But the KV pool takes") {
		t.Errorf("answer %q", rep.Answer)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "over budget") {
		t.Errorf("text lacks the over-budget row:\n%s", text.String())
	}

	// 0.5.17 counts the row it allocates: the FlashMLA row given by flag,
	// and Blackwell's default trtllm backends, whose row is 576 bytes on
	// both sides.
	req.SGLangVersion = "0.5.17"
	for _, tc := range []struct {
		decode string
		cell   float64
	}{{"flashmla_kv", 48068}, {"", 43188}} {
		req.NSADecodeBackend, req.NSAPrefillBackend = tc.decode, tc.decode
		if rep, err = plan.Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if b := rep.Breakdown; rep.CellSizeBytes != tc.cell || b.OverBudgetBytes != 0 || b.KVPoolBytes > b.KVBudgetBytes || strings.Contains(rep.Answer, "But the KV pool") {
			t.Errorf("0.5.17, decode %q: cell %v (want %v), pool %d, budget %d, over %d, answer %q", tc.decode, rep.CellSizeBytes, tc.cell, b.KVPoolBytes, b.KVBudgetBytes, b.OverBudgetBytes, rep.Answer)
		}
	}
}

// An H100 at TP 1 under 0.5.6 and 0.5.8 (PR #11657): 0.5.8 reads the
// first kernel's 92 MiB before weights (78.50 GiB), 0.5.6 in load_model
// (78.59 GiB before weights). With weights that are not a reading the
// 0.5.6 plan charges the 92 MiB after its reading, so at one
// mem_fraction_static the two KV budgets differ only by the reserved
// share of 92 MiB, 92 MiB × (1 − mem_fraction_static). Measured readings
// hold the kernel already: nothing is charged.
func TestSGLangFirstKernelByRelease(t *testing.T) {
	run := func(req plan.Request) *plan.Report {
		t.Helper()
		req.Model, req.GPU, req.ContextLength, req.MemFractionStatic = "Qwen/Qwen3-8B", "H100", 8192, 0.85
		rep, err := plan.Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	old, cur := run(plan.Request{SGLangVersion: "0.5.6"}), run(plan.Request{SGLangVersion: "0.5.8"})
	if got := units.FormatBytes(old.PreLoadFreeBytes); got != "78.59 GiB" || old.PreLoadFreeBytes != (81090-614)<<20 {
		t.Errorf("0.5.6 pre-load %s, want 78.59 GiB", got)
	}
	if got := units.FormatBytes(cur.PreLoadFreeBytes); got != "78.50 GiB" || cur.PreLoadFreeBytes != (81090-614-92)<<20 {
		t.Errorf("0.5.8 pre-load %s, want 78.50 GiB", got)
	}
	if old.Breakdown.FirstKernelBytes != 92<<20 || cur.Breakdown.FirstKernelBytes != 0 || old.WeightsBytes != cur.WeightsBytes {
		t.Errorf("first kernel after the reading: 0.5.6 %d, 0.5.8 %d (weights %d, %d)", old.Breakdown.FirstKernelBytes, cur.Breakdown.FirstKernelBytes, old.WeightsBytes, cur.WeightsBytes)
	}
	want := cur.AvailableKVBytes - 92<<20*15/100
	if d := old.AvailableKVBytes - want; d < -(1<<20) || d > 1<<20 {
		t.Errorf("KV budget 0.5.6 %s, 0.5.8 %s: want 0.5.6 = 0.5.8 − 92 MiB × 0.15", units.FormatBytes(old.AvailableKVBytes), units.FormatBytes(cur.AvailableKVBytes))
	}
	// Given weights are the weights alone: charged; a reading holds it: not.
	if r := run(plan.Request{SGLangVersion: "0.5.6", WeightsMemory: units.Size(15 << 30)}); r.Breakdown.FirstKernelBytes != 92<<20 {
		t.Errorf("--weights-memory under 0.5.6: first kernel %d", r.Breakdown.FirstKernelBytes)
	}
	pre := run(plan.Request{SGLangVersion: "0.5.6", PreLoadFreeMemory: units.Size((81090 - 614) << 20)})
	if pre.Breakdown.FirstKernelBytes != 92<<20 || !slices.ContainsFunc(pre.Warnings, func(w string) bool { return strings.HasPrefix(w, "92 MiB of the first CUDA kernel") }) {
		t.Errorf("a pre-load reading with estimated weights under 0.5.6: first kernel %d, warnings %q", pre.Breakdown.FirstKernelBytes, pre.Warnings)
	}
	measured := run(plan.Request{SGLangVersion: "0.5.6", PreLoadFreeMemory: units.Size((81090 - 614) << 20), PostLoadFreeMemory: units.Size(63.5 * (1 << 30))})
	if measured.Breakdown.FirstKernelBytes != 0 || measured.PostLoadFreeBytes != int64(63.5*(1<<30)) {
		t.Errorf("measured readings under 0.5.6: first kernel %d, post %d", measured.Breakdown.FirstKernelBytes, measured.PostLoadFreeBytes)
	}
	if r := run(plan.Request{SGLangVersion: "0.5.6", TPSize: 2}); r.Breakdown.FirstKernelBytes != 0 {
		t.Errorf("TP 2 under 0.5.6: first kernel %d (NCCL's warm-up holds it)", r.Breakdown.FirstKernelBytes)
	}
}
