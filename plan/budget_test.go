package plan_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
	"github.com/kvcfg/kvcfg/validate"
)

// Issue 29 item 7: a vLLM plan without readings lists its budget terms,
// where each came from, and the band the validation table supports; the
// answer quotes the band.
func TestVLLMBudgetTermsAndBand(t *testing.T) {
	// Concurrency is the planned one, so that the target sits inside the
	// band (447 requests of 1,024 tokens, 446 at the band's low end).
	req := plan.Request{Engine: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", MaxModelLen: 1024, MaxNumSeqs: 448}
	probe, err := plan.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Concurrency = int(probe.MaxConcurrencyAtContextLength)
	rep, err := plan.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Budget
	if b == nil || b.Band == nil {
		t.Fatalf("no budget or band: %+v", b)
	}
	names, origins, sum := budgetTerms(b)
	if got, want := strings.Join(names, " "), "requested weights activation non_torch cudagraph"; got != want {
		t.Errorf("terms %q, want %q", got, want)
	}
	if got, want := strings.Join(origins, " "), "computed estimated predicted predicted predicted"; got != want {
		t.Errorf("origins %q, want %q", got, want)
	}
	if sum != rep.AvailableKVBytes {
		t.Errorf("terms sum to %d, KV budget %d", sum, rep.AvailableKVBytes)
	}
	// 79.19 GiB (CUDA's total, not nvidia-smi's 79.65) × 0.92, rounded up.
	if req := b.Terms[0].Bytes; req != 78226705613 {
		t.Errorf("requested %d, want 78226705613", req)
	}
	bd := b.Band
	c := rep.MaxConcurrencyAtContextLength
	per := float64(rep.NumGPUBlocks) / float64((1024+rep.BlockSize-1)/rep.BlockSize)
	if want := int64(math.Floor(per * (1 - bd.RelError))); bd.ConcurrencyLow != want || bd.ConcurrencyLow >= c || bd.ConcurrencyHigh < c || !bd.WeightsEstimated || bd.RelError <= 0 {
		t.Fatalf("band %+v, concurrency %d (low end %d)", bd, c, want)
	}
	if want := fmt.Sprintf("%d (%d–%d) requests", c, bd.ConcurrencyLow, bd.ConcurrencyHigh); !strings.Contains(rep.Answer, want) {
		t.Errorf("answer %q lacks %q", rep.Answer, want)
	}
	if want := fmt.Sprintf("sits inside the prediction's band (%d–%d requests", bd.ConcurrencyLow, bd.ConcurrencyHigh); !strings.Contains(strings.Join(rep.Warnings, "\n"), want) {
		t.Errorf("no band warning: %q", rep.Warnings)
	}
	var text, md bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KV BUDGET PER GPU", "activation   − 928.00 MiB (predicted: forward_activations 928.00 MiB)", fmt.Sprintf("band         ±%.2f %%", 100*bd.RelError)} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "### KV budget per GPU") {
		t.Errorf("markdown lacks the budget:\n%s", md.String())
	}
	js, err := rep.MarshalJSON()
	if err != nil || !bytes.Contains(js, []byte(`"budget":{"terms":[{"name":"requested"`)) || !bytes.Contains(js, []byte(fmt.Sprintf(`"concurrency_low":%d`, bd.ConcurrencyLow))) {
		t.Errorf("JSON %s, %v", js, err)
	}
}

// A given KV budget has no terms to show, and measured figures no band.
func TestVLLMBudgetGivenAndMeasured(t *testing.T) {
	rep, err := plan.Run(context.Background(), plan.Request{Engine: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", MaxModelLen: 8192,
		KVCacheMemory: units.Size(50 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Budget != nil || strings.Contains(rep.Answer, "–") {
		t.Errorf("budget %+v, answer %q", rep.Budget, rep.Answer)
	}
}

// The table holds no V0 runs: a 0.6 plan lists its terms without a band.
func TestVLLMBudgetNoBandForV0(t *testing.T) {
	rep, err := plan.Run(context.Background(), plan.Request{Engine: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", MaxModelLen: 8192, VLLMVersion: "0.6"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Budget == nil || rep.Budget.Band != nil || len(rep.Budget.Terms) < 4 {
		t.Errorf("budget %+v", rep.Budget)
	}
}

// Issue 29: a TensorRT-LLM plan without readings lists the same terms as
// trtllm.PredictBudget (the device total CUDA reports, less the weights,
// the dry run's activation with its parts, the non-torch memory and the
// CUDA graphs, less what free_gpu_memory_fraction keeps back); with ten
// TensorRT-LLM runs on CUDA GPUs in the validation table (minBandRuns is
// five) it quotes their 90th percentile as its band around the budget.
func TestTRTLLMBudgetTerms(t *testing.T) {
	rep, err := plan.Run(context.Background(), plan.Request{Engine: "trtllm", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100"})
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Budget
	if b == nil {
		t.Fatal("no budget")
	}
	names, _, sum := budgetTerms(b)
	if got, want := strings.Join(names, " "), "total weights activation non_torch cudagraph fraction_reserve"; got != want {
		t.Errorf("terms %q, want %q", got, want)
	}
	if sum != rep.AvailableKVBytes || b.Terms[0].Bytes != 81090<<20 {
		t.Errorf("terms sum to %d, KV budget %d; total %d", sum, rep.AvailableKVBytes, b.Terms[0].Bytes)
	}
	if len(b.Terms[2].Parts) != 3 || b.Terms[2].Parts[2].Name != "logits" {
		t.Errorf("activation parts %+v", b.Terms[2].Parts)
	}
	e, want, _ := validate.PlatformBand("trtllm", "cuda")
	if b.Band == nil || b.Band.Runs != want.Runs || b.Band.RelError != e || want.Runs < 5 {
		t.Fatalf("band %+v, want ±%.2f %% over the table's %d TensorRT-LLM runs on CUDA GPUs", b.Band, 100*e, want.Runs)
	}
	if b.Band.KVBytesLow > rep.AvailableKVBytes || b.Band.KVBytesHigh < rep.AvailableKVBytes || b.Band.TokensLow >= b.Band.TokensHigh {
		t.Errorf("band %+v around a %d-byte budget", b.Band, rep.AvailableKVBytes)
	}
	if strings.Contains(strings.Join(rep.Warnings, "\n"), "no error band") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}

// budgetTerms returns b's term names and origins in order and what they
// add up to: the first term less the others.
func budgetTerms(b *plan.Budget) (names, origins []string, sum int64) {
	for i, term := range b.Terms {
		names, origins = append(names, term.Name), append(origins, term.Origin)
		if i == 0 {
			sum += term.Bytes
		} else {
			sum -= term.Bytes
		}
	}
	return names, origins, sum
}
