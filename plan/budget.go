package plan

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/units"
	"github.com/kvcfg/kvcfg/validate"
	"github.com/kvcfg/kvcfg/weights"
)

// Budget is a plan's KV budget per GPU by term: each term with where its
// figure came from, and, when kvcfg predicted any term, the error band the
// validation table supports (docs/predict.md).
type Budget struct {
	// Terms add up to the KV budget: the first is what the engine may use
	// (requested), the others are subtracted from it.
	Terms []BudgetTerm `json:"terms"`
	// Band is the prediction's uncertainty; nil when every term was given
	// or measured, or the table has no runs of the engine.
	Band *Band `json:"band,omitempty"`
}

// BudgetTerm is one term of a Budget.
type BudgetTerm struct {
	// Name is the term ("requested", "weights", "activation", "non_torch",
	// "cudagraph").
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	// Origin is "measured" (a run's reading was given), "exact" (the
	// checkpoint's safetensors headers), "given" (a flag set it),
	// "computed" (from the GPU's total and the flags) or "predicted"
	// (kvcfg's model of the engine's profile run; "estimated" for the
	// config's weight estimate).
	Origin string `json:"origin"`
	// Parts are a predicted term's parts with the engine source of each.
	Parts []vllm.Term `json:"parts,omitempty"`
}

// Band is the error band of a prediction: the KV budget, its tokens and
// the requests it holds at the context length, low and high.
type Band struct {
	// RelError is the relative error of the predicted KV memory the
	// validation table supports (its 90th percentile of |error|).
	RelError float64 `json:"rel_error"`
	// Runs and Basis say what the table holds for the engine.
	Runs  int    `json:"runs"`
	Basis string `json:"basis"`
	// KVBytesLow/High, TokensLow/High and ConcurrencyLow/High are the KV
	// budget, the pool's tokens and the requests of the context length at
	// once at the band's two ends.
	KVBytesLow      int64 `json:"kv_bytes_low"`
	KVBytesHigh     int64 `json:"kv_bytes_high"`
	TokensLow       int64 `json:"tokens_low"`
	TokensHigh      int64 `json:"tokens_high"`
	ConcurrencyLow  int64 `json:"concurrency_low"`
	ConcurrencyHigh int64 `json:"concurrency_high"`
	// WeightsEstimated says the weights were the config's estimate, whose
	// error the band does not cover.
	WeightsEstimated bool `json:"weights_estimated,omitempty"`
}

// termOrigins returns the origin of a term an engine estimated or not
// (estimated names the terms kvcfg predicted; otherwise is the origin of
// the others) and the weights' origin from their source.
func termOrigins(estimated []string, otherwise, weightsSource string) (origin func(string) string, weightsOrigin string) {
	origin = func(name string) string {
		if slices.Contains(estimated, name) {
			return "predicted"
		}
		return otherwise
	}
	weightsOrigin = weightsOriginOf(weights.Source(weightsSource))
	if slices.Contains(estimated, "weights") {
		weightsOrigin = "estimated"
	}
	return origin, weightsOrigin
}

// vllmBudget fills rep.Budget from a vLLM result whose budget kvcfg
// computed from its terms (not a measured or given KV budget).
func vllmBudget(rep *Report, res *vllm.Result) {
	m := res.Memory
	if m.Source != "profile" || m.RequestedBytes == 0 {
		return
	}
	origin, weightsOrigin := termOrigins(m.Estimated, "measured", rep.WeightsSource)
	b := &Budget{Terms: []BudgetTerm{
		{Name: "requested", Bytes: m.RequestedBytes, Origin: "computed"},
		{Name: "weights", Bytes: m.WeightsBytes, Origin: weightsOrigin},
		{Name: "activation", Bytes: m.ActivationBytes, Origin: origin("activation"), Parts: m.ActivationTerms},
		{Name: "non_torch", Bytes: m.NonTorchBytes, Origin: origin("non_torch")},
	}}
	if m.CUDAGraphBytes > 0 {
		b.Terms = append(b.Terms, BudgetTerm{Name: "cudagraph", Bytes: m.CUDAGraphBytes, Origin: origin("cudagraph")})
	}
	rep.Budget = b
	predicted := slices.ContainsFunc(m.Estimated, func(s string) bool { return s != "weights" })
	// The table's runs of 0.15 to 0.19 are within their band; its 0.10.1.1
	// runs miss by up to 23 %: no band for older profiles.
	validated := res.Profile == vllm.V013 || res.Profile == vllm.V018 || res.Profile == vllm.Latest
	if !predicted || !validated || m.AvailableKVBytes <= 0 {
		return
	}
	band := &Band{WeightsEstimated: weightsOrigin == "estimated"}
	if note := tableBand(band, "vllm", rep.Platform); note != "" {
		rep.warn(note)
		return
	}
	per := 0.0
	if res.BlocksPerRequest > 0 {
		per = float64(res.NumGPUBlocks) / float64(res.BlocksPerRequest)
	}
	band.scale(m.AvailableKVBytes, res.KVCacheSizeTokens, per, int64(res.MaxNumSeqs))
	b.Band = band
}

// minBandRuns is the fewest validation runs of an engine from which a plan
// quotes their error as its band.
const minBandRuns = 5

// trtllmBudget fills rep.Budget from a TensorRT-LLM result whose budget
// kvcfg modelled (no kv_cache_memory or free_memory_after_load reading):
// the device total, less the weights, the dry run's activation, the
// non-torch memory and the CUDA graphs, less the share that
// free_gpu_memory_fraction keeps back (the temporary pool is in the peak
// and added back, so it cancels). The band is validate.Band("trtllm") once
// the table holds minBandRuns runs of the engine; until then the plan says
// why it has none.
func trtllmBudget(rep *Report, res *trtllm.Result) {
	m := res.Memory
	if m.Source != "modelled" || m.TotalBytes == 0 || res.Profile == trtllm.Engine {
		return
	}
	origin, weightsOrigin := termOrigins(m.Estimated, "given", rep.WeightsSource)
	nonKV := m.WeightsBytes + m.ActivationBytes + m.NonTorchBytes + m.CUDAGraphBytes
	b := &Budget{Terms: []BudgetTerm{
		{Name: "total", Bytes: m.TotalBytes, Origin: "computed"},
		{Name: "weights", Bytes: m.WeightsBytes, Origin: weightsOrigin},
		{Name: "activation", Bytes: m.ActivationBytes, Origin: origin("activation"), Parts: m.ActivationTerms},
		{Name: "non_torch", Bytes: m.NonTorchBytes, Origin: origin("non_torch"), Parts: nonTorchParts(m.NonTorchTerms)},
	}}
	if m.CUDAGraphBytes > 0 {
		b.Terms = append(b.Terms, BudgetTerm{Name: "cudagraph", Bytes: m.CUDAGraphBytes, Origin: origin("cudagraph")})
	}
	b.Terms = append(b.Terms, BudgetTerm{Name: "fraction_reserve", Bytes: max(m.TotalBytes-nonKV-m.AvailableKVBytes, 0), Origin: "computed"})
	rep.Budget = b
	predicted := slices.ContainsFunc(m.Estimated, func(s string) bool { return s != "weights" })
	if !predicted || m.AvailableKVBytes <= 0 || res.Error != "" {
		return
	}
	band := &Band{WeightsEstimated: weightsOrigin == "estimated"}
	if note := tableBand(band, "trtllm", rep.Platform); note != "" {
		rep.warn(note)
		return
	}
	band.scale(m.AvailableKVBytes, res.MaxTokens, max(res.MaxConcurrency(res.MaxSeqLen), 0), int64(res.MaxBatchSize))
	b.Band = band
}

// scale sets band's ends at its relative error around a predicted KV
// budget of kv bytes holding tokens tokens and conc requests at once (the
// exact count, before flooring; 0 leaves the requests unset), none above
// limit.
func (band *Band) scale(kv, tokens int64, conc float64, limit int64) {
	e := band.RelError
	at := func(v int64, f float64) int64 { return int64(math.Floor(float64(v) * f)) }
	band.KVBytesLow, band.KVBytesHigh = at(kv, 1-e), at(kv, 1+e)
	band.TokensLow, band.TokensHigh = at(tokens, 1-e), at(tokens, 1+e)
	if conc > 0 {
		band.ConcurrencyLow = min(int64(math.Floor(conc*(1-e))), limit)
		band.ConcurrencyHigh = min(int64(math.Floor(conc*(1+e))), limit)
	}
}

// bandText is " (low–high)" for a count the band moves, "" otherwise.
func (r *Report) bandText() string { return string(r.appendBandText(nil)) }

// appendBandText appends bandText to a without formatting (the common
// answer, on every plan the server answers, is appended).
func (r *Report) appendBandText(a []byte) []byte {
	bd := r.bandOf()
	if bd == nil || bd.ConcurrencyLow == bd.ConcurrencyHigh {
		return a
	}
	a = units.AppendGroup(append(a, " ("...), bd.ConcurrencyLow)
	a = units.AppendGroup(append(a, "–"...), bd.ConcurrencyHigh)
	return append(a, ')')
}

// bandOf returns the report's band, nil when it has none.
func (r *Report) bandOf() *Band {
	if r.Budget == nil {
		return nil
	}
	return r.Budget.Band
}

// budgetRows are the Budget's lines for text and Markdown: each term with
// its size, origin and parts, then the band.
func (r *Report) budgetRows() [][2]string {
	if r.Budget == nil {
		return nil
	}
	rows := make([][2]string, 0, len(r.Budget.Terms)+2)
	for i, t := range r.Budget.Terms {
		sign := "− "
		if i == 0 {
			sign = ""
		}
		v := sign + units.FormatBytes(t.Bytes) + " (" + t.Origin
		for j, p := range t.Parts {
			sep := ": "
			if j > 0 {
				sep = ", "
			}
			v += sep + p.Name + " " + units.FormatBytes(p.Bytes)
		}
		rows = append(rows, [2]string{t.Name, v + ")"})
	}
	rows = append(rows, [2]string{"= KV budget", units.FormatBytes(r.AvailableKVBytes)})
	if bd := r.bandOf(); bd != nil {
		v := fmt.Sprintf("±%.2f %% of the KV memory: %s–%s tokens, %s–%s requests of %s tokens (%d validation %s",
			100*bd.RelError, group3(bd.TokensLow), group3(bd.TokensHigh), group3(bd.ConcurrencyLow), group3(bd.ConcurrencyHigh), group3(int64(r.ContextLength)), bd.Runs, plural(bd.Runs, "run", "runs"))
		if bd.WeightsEstimated {
			v += "; the weights are the config's estimate, outside the band: give the checkpoint (Hub id or directory) for exact bytes"
		}
		rows = append(rows, [2]string{"band", v + ")"})
	}
	return rows
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// engineNames are the engines' names in prose.
var engineNames = map[string]string{"sglang": "SGLang", "vllm": "vLLM", "trtllm": "TensorRT-LLM"}

// tableBand sets band's RelError, Runs and Basis from the validation
// table's runs of engine on a GPU of platform ("cuda", "hip"): the 90th
// percentile of their |error|. It returns "" then, or, when the table holds
// fewer than minBandRuns such runs, the note that says why the plan quotes
// no band.
func tableBand(band *Band, engine, platform string) (note string) {
	t, ok := bandTexts()[[2]string{engine, platform}]
	if !ok {
		t = newBandText(engine, platform)
	}
	if t.note != "" {
		return t.note
	}
	band.RelError, band.Runs, band.Basis = t.e, t.runs, t.basis
	return ""
}

// bandText is what tableBand needs of one engine and platform.
type bandText struct {
	e           float64
	runs        int
	basis, note string
}

// bandTexts are tableBand's texts for the engines and platforms plan
// knows, made once (the table is fixed at build time, and a plan's hot path
// does not format them).
var bandTexts = sync.OnceValue(func() map[[2]string]bandText {
	m := map[[2]string]bandText{}
	for e := range engineNames {
		for _, p := range []string{"cuda", "hip"} {
			m[[2]string{e, p}] = newBandText(e, p)
		}
	}
	return m
})

// newBandText formats the band's basis, or the note of too few runs.
func newBandText(engine, platform string) bandText {
	e, sum, ok := validate.PlatformBand(engine, platform)
	if !ok || sum.Runs < minBandRuns {
		return bandText{note: fmt.Sprintf("no error band: kvcfg's validation table holds %d %s %s on %s GPUs (a band takes %d; kvcfg validate --engine %s); the predicted terms are listed under the KV budget",
			sum.Runs, engineNames[engine], plural(sum.Runs, "run", "runs"), platformName(platform), minBandRuns, engine)}
	}
	// The table measures vLLM's printed KV memory, and SGLang's and
	// TensorRT-LLM's pool (the token count they print).
	measured := "pool"
	if engine == "vllm" {
		measured = "KV memory"
	}
	return bandText{e: e, runs: sum.Runs, basis: fmt.Sprintf("90th percentile of |error| of the predicted %s over %d %s runs on %s GPUs with exact weights (median %.2f %%); kvcfg validate --engine %s",
		measured, sum.Runs, engineNames[engine], platformName(platform), 100*sum.MedianAbs, engine)}
}

// platformName is a platform in prose.
func platformName(platform string) string {
	switch platform {
	case "hip":
		return "ROCm"
	case "cuda", "":
		return "CUDA"
	}
	return platform
}

// nonTorchParts are a TensorRT-LLM non-torch term's parts, listed only when
// there is more than one (a lone runtime part repeats the term).
func nonTorchParts(terms []trtllm.Term) []trtllm.Term {
	if len(terms) < 2 {
		return nil
	}
	return terms
}
