package validate_test

import (
	"errors"
	"fmt"
	"go/format"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/validate"
)

// knownMisses are the runs whose prediction is outside the 5 % band today,
// with the error they have (the test fails when it changes, so that a fix
// or a regression is seen) and why. Every other run must stay within 5 %.
var knownMisses = map[string]struct {
	err float64
	why string
}{
	// SGLang 0.4.3 on four L4s: the run reads 21.63 GiB free before weights
	// after 0.13 GiB of torch.distributed, so its CUDA context took 0.27
	// GiB of the 22.03 GiB total. PreLoadMemory charges 437 MiB (87 MiB of
	// local memory for 58 SMs and the 350 MiB of runtime images of 2026 H100
	// logs, their first kernel's 92 MiB left out) and 195 MiB of NCCL over
	// PCIe, and predicts 21.41 GiB. At mem_fraction_static 0.85 with 15.54
	// GiB of weights a 0.22 GiB shortfall before load is 6.5 % of a 2.84
	// GiB pool.
	"llms-in-clouds-qwq-32b-l4-tp4": {-0.0646, "0.4-era runtime images (190 MiB) and NCCL (133 MiB) below the modelled 350 and 195"},
	// SGLang (a late-2025 checkout, StevenWang-CY/sglang-attention-
	// reproducibility qwen3vl-log), Qwen3-VL-30B-A3B on one A100-SXM4-80GB
	// at the derived mem_fraction_static 0.773: the run reads 78.84 GiB
	// free before weights with "Init torch distributed ends. mem usage=0.00
	// GB", so of the 79.15 GiB total its CUDA context took 0.31 GiB (317
	// MiB). PreLoadMemory charges 566 MiB (216 MiB of local memory for 108
	// SMs and the 350 MiB of runtime images of the 2026 H100 logs; at one
	// rank before 0.5.8 the first kernel falls in the measured weights) and
	// predicts 78.60 GiB; with 58.15 GiB of weights the pool is 2.80 GiB,
	// and 0.24 GiB × 0.773 less is 6.5 % of it. The same checkout on a B200
	// (Jan 2026, same model) left 329 MiB of runtime images and is within
	// 0.1 %: the images follow the GPU's architecture, not the release alone.
	"stevenwang-qwen3-vl-30b-a3b-a100-tp1": {-0.0655, "A100 CUDA context of 317 MiB (101 MiB of runtime images) below the modelled 566 (350)"},
	// Held-out vLLM 0.10.1.1 run (dennislee22/vLLM-benchmarking): Qwen2-7B
	// at TP 2 over two A100 40GB in two pods on two nodes (Ray). Its
	// requested 19.80 GiB less 7.12 of weights and 11.03 of KV leaves 1.64
	// GiB of activation and non-torch memory, where the same model and
	// flags at TP 2 on one A100 80GB node leave 0.62-0.65 and kvcfg
	// charges 0.53 (the FlashInfer sampler) + 0.34 (0.13 alone, NCCL's 195
	// MiB, the custom all-reduce's 18 MiB). The extra GiB is not in vLLM's
	// source as kvcfg reads it (NCCL over the network between nodes opens
	// few channels; the custom all-reduce is off across nodes); no term
	// was changed to fit it.
	// Held-out vLLM 0.17.1 run (TheBuccaneer/vllm-offload-profiles, RTX
	// 3090): Qwen2.5-7B at utilization 0.65 leaves a 0.49 GiB pool, so the
	// 0.08 GiB kvcfg predicts below it is 16 %. The same launch, repeated
	// four minutes later (kv_vram_qwen_gmem065_offload0_failed.log),
	// printed 0.41 GiB, the figure kvcfg predicts (+0.5 %): the spread is
	// the run-to-run spread of the profile (activation and non-torch
	// memory), not a term; no term was changed to fit either launch.
	"buccaneer-qwen2.5-7b-gmem065-rtx3090":                 {-0.1589, "a 0.49 GiB pool: the same launch printed 0.41 GiB another time, the prediction"},
	"dennislee22-qwen2-7b-a100-40gb-tp2-util0.5-two-nodes": {0.0697, "TP 2 over two nodes (Ray): about 1 GiB more non-torch memory than one node, not modelled"},
}

// notYetAccepted are the engines whose table does not meet the done-when
// of issue 29 yet (median |error| <= 1 %, >= 90 % within 3 %), and why.
var notYetAccepted = map[string]string{}

// minEngineRuns is the fewest runs an engine's table needs before its
// statistics can meet the done-when: below it the engine stays in
// notYetAccepted whatever its error.
const minEngineRuns = 5

// The table's acceptance: per engine, the median |error| of the predicted
// KV memory at most 1 % and at least 90 % of the runs within 3 %, and no
// run outside its band (5 %: a run beyond it means a term is wrong) except
// the known misses, which must keep their error.
func TestTableWithinBand(t *testing.T) {
	runs, err := validate.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 30 {
		t.Fatalf("%d runs, want at least 30", len(runs))
	}
	rows, err := validate.Check(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if m, ok := knownMisses[r.Run.ID]; ok {
			if math.Abs(r.Error-m.err) > 0.0005 {
				t.Errorf("%s: error %+.2f %%, the known miss (%s) is %+.2f %%: update knownMisses (and the docs) if a term changed for the right reason",
					r.Run.ID, 100*r.Error, m.why, 100*m.err)
			}
		} else if math.Abs(r.Error) > 0.05 {
			t.Errorf("%s: predicted %.2f GiB, the run printed %.2f GiB (%+.1f %%): activation %.2f/%.2f, non-torch %.2f/%.2f",
				r.Run.ID, r.KVGiB, r.Run.AvailableKVGiB, 100*r.Error, r.ActivationGiB, r.Run.ActivationGiB, r.NonTorchGiB, r.Run.NonTorchGiB)
		}
		// The catalog's CUDA total is the one the run printed (vLLM prints
		// it; SGLang does not).
		if r.Run.TotalGiB > 0 && math.Abs(r.TotalGiB-r.Run.TotalGiB) > 0.006 {
			t.Errorf("%s: total %.3f GiB, the run printed %.2f", r.Run.ID, r.TotalGiB, r.Run.TotalGiB)
		}
	}
	for _, s := range validate.Summarize(rows) {
		met := s.MedianAbs <= 0.01 && s.Within3 >= 0.9 && s.Runs >= minEngineRuns
		why, excused := notYetAccepted[s.Engine]
		switch {
		case !met && !excused:
			t.Errorf("%s: median |error| %.2f %%, %.0f %% within 3 %%", s.Engine, 100*s.MedianAbs, 100*s.Within3)
		case met && excused:
			t.Errorf("%s now meets the done-when (median %.2f %%, %.0f %% within 3 %%): drop it from notYetAccepted", s.Engine, 100*s.MedianAbs, 100*s.Within3)
		case excused:
			t.Logf("%s: not accepted yet (%s): %d runs, median |error| %.2f %%, %.0f %% within 3 %%", s.Engine, why, s.Runs, 100*s.MedianAbs, 100*s.Within3)
		}
	}
}

// SGLang rows: the bytes per token kvcfg derives reproduce the K and V
// sizes the run printed (the pool buffers hold one page more than
// its tokens, memory_pool.py's size + page_size rows, which shows at page
// 128: 82,816 tokens print 4.43 GB, not 4.42), and the predicted pool follows SGLang's rules from
// the modelled free memory (L4: 22559 MiB CUDA total − a 437 MiB context,
// 87 MiB of local memory for 58 SMs and 350 MiB of runtime images, − 195
// MiB of NCCL, which holds the first kernel at four ranks).
func TestSGLangRow(t *testing.T) {
	runs, err := validate.Runs()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		if r.Engine != "sglang" {
			continue
		}
		n++
		row, err := validate.Predict(r)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		page := int64(max(r.PageSize, 1))
		if got := float64(r.KVCacheTokens+page) * row.CellBytes / (1 << 30); math.Abs(got-r.AvailableKVGiB) > 0.011 {
			t.Errorf("%s: %d + %d tokens × %.0f B = %.3f GiB, the run printed K+V %.2f GiB", r.ID, r.KVCacheTokens, page, row.CellBytes, got, r.AvailableKVGiB)
		}
		if row.PreLoad == nil || row.PreLoad.FreeBytes != row.PreLoad.TotalBytes-row.PreLoad.ContextBytes-row.PreLoad.DistributedBytes {
			t.Errorf("%s: pre-load terms %+v", r.ID, row.PreLoad)
		}
	}
	if n == 0 {
		t.Fatal("the table has no SGLang run")
	}
	r := runs[slices.IndexFunc(runs, func(r validate.Run) bool { return r.ID == "llms-in-clouds-qwq-32b-l4-tp4" })]
	row, err := validate.Predict(r)
	if err != nil {
		t.Fatal(err)
	}
	// pre = (22559 − 87 − 350 − 195) MiB; rest = (pre − 15.54 GiB) − pre × 0.15;
	// cell = 2 KV heads per rank × 128 × 64 layers × 2 × 2 B = 65536 B.
	if row.PreLoad.FreeBytes != (22559-87-350-195)<<20 || row.CellBytes != 65536 || row.KVTokens != 43599 || row.MemFractionStatic != 0.85 {
		t.Errorf("L4 run: pre %d, cell %v, tokens %d, mfs %v", row.PreLoad.FreeBytes, row.CellBytes, row.KVTokens, row.MemFractionStatic)
	}
	bad := r
	bad.KVCacheTokens = 0
	if _, err := validate.Predict(bad); err == nil || !strings.Contains(err.Error(), "kv_cache_tokens") {
		t.Errorf("a run without #tokens: %v", err)
	}
}

// TensorRT-LLM rows: the pool the run printed is its token count × the
// allocation's bytes per token (the same on both sides of the error), and
// the predicted estimate is near the printed one.
func TestTRTLLMRows(t *testing.T) {
	runs, err := validate.Runs()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		if r.Engine != "trtllm" {
			continue
		}
		n++
		row, err := validate.Predict(r)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		b := row.TRTLLM
		if b == nil || b.KVCacheTokens <= 0 {
			t.Fatalf("%s: no budget: %+v", r.ID, row)
		}
		if got := float64(r.KVCacheTokens) * row.CellBytes / (1 << 30); math.Abs(got-r.AvailableKVGiB) > 0.006 {
			t.Errorf("%s: %d tokens × %.0f B = %.3f GiB, the run printed %.2f GiB", r.ID, r.KVCacheTokens, row.CellBytes, got, r.AvailableKVGiB)
		}
		// available = (total − peak + tmp) × fraction, peak = the terms + tmp.
		if want := b.WeightsBytes + b.ActivationBytes + b.NonTorchBytes + b.CUDAGraphBytes + b.TemporaryKVBytes; b.PeakBytes != want {
			t.Errorf("%s: peak %d, terms add up to %d", r.ID, b.PeakBytes, want)
		}
		if r.EstimatedMaxTokens > 0 {
			est := float64(b.AvailableKVBytes) / row.CellBytes
			if e := est/float64(r.EstimatedMaxTokens) - 1; math.Abs(e-row.Error) > 0.001 {
				t.Errorf("%s: estimate %.0f tokens (%+.2f %%) vs the pool's error %+.2f %%", r.ID, est, 100*e, 100*row.Error)
			}
		}
	}
	if n == 0 {
		t.Fatal("the table has no TensorRT-LLM run")
	}
	if _, err := validate.ParseRuns([]byte(`{"id":"x","engine":"trtllm","model":"m","available_kv_gib":1,"source":"u"}`)); err == nil || !strings.Contains(err.Error(), "kv_cache_tokens") {
		t.Errorf("a TensorRT-LLM run without its figures: %v", err)
	}
}

// Golden figures of single terms, so that a change to one is seen even
// when the KV error stays small.
func TestActivationGolden(t *testing.T) {
	for _, tt := range []struct {
		model      string
		tp, pp, st int
		want       int64 // bytes
		peak       string
	}{
		// 1024 × 128256 × 14 + 2 × 8192 × 4096 × 2.
		{"meta-llama/Llama-3.1-8B-Instruct", 1, 1, 0, 1024*128256*14 + 2*8192*4096*2, "sampler_logits"},
		// 8192 × (3 × 11008 + 4 × 4096) × 2: the forward is larger than the
		// 32016-entry vocabulary's logits.
		{"codellama/CodeLlama-7b-hf", 1, 1, 0, 8192 * (3*11008 + 4*4096) * 2, "forward_activations"},
		// Mixtral at TP 2: logits plus the fused-MoE workspace
		// 8192 × 2 × (max(7168, 4096) + max(14336, 4096)) × 2.
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", 2, 1, 0, 1024*32000*14 + 2*8192*4096*2 + 8192*2*(7168+14336)*2, "sampler_logits"},
		// A first pipeline stage: no logits, the intermediate tensors.
		{"meta-llama/Llama-3.1-8B-Instruct", 1, 2, 0, 8192*(3*14336+4*4096)*2 + 2*8192*4096*2, "forward_activations"},
	} {
		s, err := validate.Spec(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		m, terms := vllm.EstimateStage(s, vllm.EstimateInput{TP: tt.tp, PP: tt.pp, Stage: tt.st, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, DTypeBytes: 2})
		if m.ActivationBytes != tt.want || len(terms) == 0 || terms[0].Name != tt.peak {
			t.Errorf("%s tp%d pp%d stage %d: activation %d (%v), want %d peaking in %s", tt.model, tt.tp, tt.pp, tt.st, m.ActivationBytes, terms, tt.want, tt.peak)
		}
	}
}

func TestParseRunsRejects(t *testing.T) {
	for _, in := range []string{
		`{"id":"x","engine":"vllm","model":"m","available_kv_gib":1,"source":"u","bogus":1}`,
		`{"id":"x","engine":"vllm","model":"m","available_kv_gib":0,"source":"u"}`,
		`{"id":"x","engine":"vllm","model":"m","available_kv_gib":1}`,
		`not json`,
	} {
		if _, err := validate.ParseRuns([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), "validate: ") {
			t.Errorf("%s: err %v", in, err)
		}
	}
}

func TestBand(t *testing.T) {
	b, s, ok := validate.Band("vllm")
	if !ok || b <= 0 || b > 0.03 || s.Runs < 30 {
		t.Errorf("band %v %+v %v", b, s, ok)
	}
	if _, _, ok := validate.Band("nosuch"); ok {
		t.Error("a band for an engine without runs")
	}
}

// bands.go holds the table's summaries so that a plan does not re-run the
// table; it must match the table (KVCFG_UPDATE_BANDS=1 rewrites it).
func TestBandsCurrent(t *testing.T) {
	runs, err := validate.Runs()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := validate.Check(runs)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("// Code generated by KVCFG_UPDATE_BANDS=1 go test ./validate -run TestBandsCurrent; DO NOT EDIT.\n\npackage validate\n\n// bands are Summarize(Check(Runs())) per engine, and SummarizePlatforms per engine and platform.\nvar bands = map[string]Summary{\n")
	for _, s := range append(validate.Summarize(rows), validate.SummarizePlatforms(rows)...) {
		fmt.Fprintf(&b, "\t%q: {Engine: %q, Runs: %d, MedianAbs: %v, MeanAbs: %v, P90Abs: %v, MaxAbs: %v, Within1: %v, Within3: %v},\n",
			s.Engine, s.Engine, s.Runs, s.MedianAbs, s.MeanAbs, s.P90Abs, s.MaxAbs, s.Within1, s.Within3)
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("bands.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(have) == string(src) {
		return
	}
	if os.Getenv("KVCFG_UPDATE_BANDS") != "" {
		if err := os.WriteFile("bands.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("bands.go is stale: run KVCFG_UPDATE_BANDS=1 go test ./validate -run TestBandsCurrent\nwant:\n%s", src)
}

// A run on a unified-memory device (GB10) is refused, as a plan refuses
// it: the catalog's total is not what the engine can take.
func TestUnifiedMemoryRunRefused(t *testing.T) {
	for _, engine := range []string{"vllm", "sglang", "trtllm"} {
		r := validate.Run{ID: "gb10", Engine: engine, Version: "1.1.0", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "GB10",
			TP: 1, PP: 1, WeightsGiB: 15, AvailableKVGiB: 5, KVCacheTokens: 1000, Source: "https://example.invalid"}
		if engine == "vllm" {
			r.Version = "0.19.0"
		}
		if engine == "sglang" {
			r.Version = "0.5.3"
		}
		if _, err := validate.Predict(r); !errors.Is(err, gpu.ErrUnified) {
			t.Errorf("%s: %v, want gpu.ErrUnified", engine, err)
		}
	}
}
