// Package validate holds the validation table of kvcfg's before-launch
// predictions: the figures public real runs printed (testdata/*.jsonl, one
// run or pipeline stage per line, with the source URL of its log), and the
// check that predicts each run from what a user knows before launching (the
// model, the GPU, the layout, the flags and version, and the checkpoint's
// exact weight bytes) and measures the error of the predicted KV memory.
//
// The table's error per engine is the band kvcfg quotes beside a plan made
// without readings (Band).
package validate

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
)

//go:embed testdata/*.jsonl testdata/configs.json
var fixtures embed.FS

const gib = float64(1 << 30)

// Run is one public run (or one pipeline stage of it) as its log printed
// it. Figures are in GiB as the engine prints them (two decimals).
type Run struct {
	// ID names the run (the log file, "/stageN" for a pipeline stage).
	ID string `json:"id"`
	// Engine is "vllm", "sglang" or "trtllm"; Version the release.
	Engine  string `json:"engine"`
	Version string `json:"version"`
	// Model is the served model; GPU the catalog name of the device.
	Model string `json:"model"`
	GPU   string `json:"gpu"`
	// TP, PP and Stage are the layout and the pipeline stage printed; EP
	// is TensorRT-LLM's moe_expert_parallel_size (0: none).
	TP    int `json:"tp"`
	PP    int `json:"pp"`
	EP    int `json:"ep,omitempty"`
	Stage int `json:"stage"`
	// DType is the model dtype the engine ran (bfloat16, float16,
	// float32); Quantization its weight quantization ("" none).
	DType        string `json:"dtype"`
	Quantization string `json:"quantization"`
	KVCacheDType string `json:"kv_cache_dtype"`
	// The launch's flags.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	MaxModelLen          int     `json:"max_model_len"`
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
	MaxNumSeqs           int     `json:"max_num_seqs"`
	EnforceEager         bool    `json:"enforce_eager"`
	// Sampler is the top-k/top-p backend the log names ("flashinfer" for
	// "Using FlashInfer for top-p & top-k sampling", "native" for the
	// PyTorch fallback); "" is the release's default (vllm.DefaultSampler).
	Sampler string `json:"sampler,omitempty"`
	// The printed figures: the CUDA total, the requested memory, the
	// weights, the profile run's torch peak increase and non-torch
	// increase, the CUDA-graph estimate, the KV memory.
	TotalGiB             float64 `json:"total_gib"`
	RequestedGiB         float64 `json:"requested_gib"`
	WeightsGiB           float64 `json:"weights_gib"`
	ActivationGiB        float64 `json:"activation_gib"`
	NonTorchGiB          float64 `json:"non_torch_gib"`
	CUDAGraphEstimateGiB float64 `json:"cudagraph_estimate_gib"`
	AvailableKVGiB       float64 `json:"available_kv_gib"`
	// AvailableKVPrinted is false when the stage's KV memory is requested
	// minus its printed "Total non KV cache memory" (only rank 0 prints
	// "Available KV cache memory").
	AvailableKVPrinted bool `json:"available_kv_printed"`
	// KVCacheTokens and MaxConcurrency are the engine's pool ("GPU KV
	// cache size", the minimum over stages) and "Maximum concurrency".
	KVCacheTokens  int64   `json:"kv_cache_tokens"`
	MaxConcurrency float64 `json:"max_concurrency"`
	// SGLang's launch flags (server_args): mem_fraction_static (0 = the
	// engine's default for the GPU), context_length (0 = the model's),
	// page_size, chunked_prefill_size, cuda_graph_max_bs (0 = defaults),
	// attention_backend ("" = the default); EnforceEager stands for
	// --disable-cuda-graph.
	MemFractionStatic  float64 `json:"mem_fraction_static,omitempty"`
	ContextLength      int     `json:"context_length,omitempty"`
	PageSize           int     `json:"page_size,omitempty"`
	ChunkedPrefillSize int     `json:"chunked_prefill_size,omitempty"`
	CudaGraphMaxBS     int     `json:"cuda_graph_max_bs,omitempty"`
	AttentionBackend   string  `json:"attention_backend,omitempty"`
	// SGLang's printed readings, GiB (SGLang's "GB" is 2^30 bytes):
	// "Init torch distributed ends. mem usage", "Load weight begin. avail
	// mem" (the free memory before weights, the MIN over ranks) and "Load
	// weight end. avail mem". WeightsGiB is "Load weight end ... mem
	// usage", AvailableKVGiB "K size" + "V size" and KVCacheTokens the
	// "#tokens" of "KV Cache is allocated".
	DistributedInitGiB float64 `json:"distributed_init_gib,omitempty"`
	PreLoadGiB         float64 `json:"pre_load_gib,omitempty"`
	PostLoadGiB        float64 `json:"post_load_gib,omitempty"`
	// TensorRT-LLM's launch: kv_cache_config.free_gpu_memory_fraction,
	// --max_num_tokens, --max_batch_size, --max_seq_len (the value the
	// engine ran with before its pool clamp), tokens_per_block (0: 32),
	// disable_overlap_scheduler; EnforceEager stands for
	// cuda_graph_config: null.
	FreeGPUMemoryFraction   float64 `json:"free_gpu_memory_fraction,omitempty"`
	MaxNumTokens            int     `json:"max_num_tokens,omitempty"`
	MaxBatchSize            int     `json:"max_batch_size,omitempty"`
	MaxSeqLen               int     `json:"max_seq_len,omitempty"`
	TokensPerBlock          int     `json:"tokens_per_block,omitempty"`
	DisableOverlapScheduler bool    `json:"disable_overlap_scheduler,omitempty"`
	// TensorRT-LLM's printed readings, GiB: "Peak memory during memory
	// usage profiling", its "tmp kv_mem", "Memory used after loading model
	// weights (outside torch)", and the estimate's "max_tokens" of "Both
	// free_gpu_memory_fraction and max_tokens are set" (0 when the log does
	// not show them). WeightsGiB is "Memory used after loading model weights
	// (inside torch)" (or what the row's assumed field names),
	// AvailableKVGiB and KVCacheTokens the final pool's "[MemUsageChange]
	// Allocated X GiB for max tokens in paged KV cache (N)".
	PeakGiB            float64 `json:"peak_gib,omitempty"`
	TmpKVGiB           float64 `json:"tmp_kv_gib,omitempty"`
	OutsideTorchGiB    float64 `json:"outside_torch_gib,omitempty"`
	EstimatedMaxTokens int64   `json:"estimated_max_tokens,omitempty"`
	// GPUSource says where the GPU type comes from (nvidia-smi lines, the
	// issue text) when the log itself does not print it.
	GPUSource string `json:"gpu_source,omitempty"`
	// Assumed names the launch settings the log does not print and the
	// row takes from the engine's defaults for that release and GPU
	// (max_num_seqs, say), so that a reader can check them.
	Assumed string `json:"assumed,omitempty"`
	// Source is the URL of the run's log.
	Source string `json:"source"`
}

// Row is one run predicted.
type Row struct {
	Run Run `json:"run"`
	// TotalGiB, ActivationGiB, NonTorchGiB, CUDAGraphGiB and KVGiB are
	// kvcfg's predictions (weights are the run's, exact).
	TotalGiB      float64 `json:"predicted_total_gib"`
	ActivationGiB float64 `json:"predicted_activation_gib"`
	NonTorchGiB   float64 `json:"predicted_non_torch_gib"`
	CUDAGraphGiB  float64 `json:"predicted_cudagraph_gib"`
	KVGiB         float64 `json:"predicted_kv_gib"`
	// Error is (predicted − printed) / printed KV memory.
	Error float64 `json:"error"`
	// Terms are the activation estimate's parts.
	Terms []vllm.Term `json:"activation_terms,omitempty"`
	// SGLang: the predicted free memory before weights (PreLoad's terms),
	// the mem_fraction_static the engine resolves, the predicted pool
	// (max_total_num_tokens) and the KV bytes one token of the pool
	// allocates.
	PreLoad           *sglang.PreLoad `json:"predicted_pre_load,omitempty"`
	MemFractionStatic float64         `json:"mem_fraction_static,omitempty"`
	KVTokens          int64           `json:"predicted_kv_tokens,omitempty"`
	CellBytes         float64         `json:"cell_bytes,omitempty"`
	// TensorRT-LLM: the predicted budget with its terms.
	TRTLLM *trtllm.Budget `json:"predicted_trtllm_budget,omitempty"`
}

// Summary is one engine's table.
type Summary struct {
	Engine string `json:"engine"`
	Runs   int    `json:"runs"`
	// MedianAbs, MeanAbs, P90Abs and MaxAbs are |error| statistics;
	// Within1 and Within3 the shares of runs within 1 % and 3 %.
	MedianAbs float64 `json:"median_abs_error"`
	MeanAbs   float64 `json:"mean_abs_error"`
	P90Abs    float64 `json:"p90_abs_error"`
	MaxAbs    float64 `json:"max_abs_error"`
	Within1   float64 `json:"within_1pct"`
	Within3   float64 `json:"within_3pct"`
}

// Runs returns the embedded table, every fixture file in name order.
func Runs() ([]Run, error) {
	names, err := fs.Glob(fixtures, "testdata/*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	sort.Strings(names)
	var runs []Run
	for _, n := range names {
		data, err := fixtures.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		rs, err := ParseRuns(data)
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %w", path.Base(n), err)
		}
		runs = append(runs, rs...)
	}
	return runs, nil
}

// ParseRuns reads JSON lines of Run; unknown keys are an error.
func ParseRuns(data []byte) ([]Run, error) {
	var runs []Run
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var r Run
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("validate: line %d: %w", n, err)
		}
		if r.Engine == "" || r.Model == "" || r.AvailableKVGiB <= 0 || r.Source == "" {
			return nil, fmt.Errorf("validate: line %d (%s): engine, model, available_kv_gib and source are required", n, r.ID)
		}
		if r.Engine == "trtllm" && (r.KVCacheTokens <= 0 || r.WeightsGiB <= 0 || r.FreeGPUMemoryFraction <= 0 ||
			r.MaxNumTokens <= 0 || r.MaxBatchSize <= 0 || r.MaxSeqLen <= 0) {
			return nil, fmt.Errorf("validate: line %d (%s): a TensorRT-LLM run needs kv_cache_tokens, weights_gib, free_gpu_memory_fraction, max_num_tokens, max_batch_size and max_seq_len", n, r.ID)
		}
		runs = append(runs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return runs, nil
}

// configs is testdata/configs.json: inline configs (numbers from the
// models' public config.json) and models with a catalog model's shapes.
type configs struct {
	Configs     map[string]json.RawMessage `json:"configs"`
	SameShapeAs map[string]string          `json:"same_shape_as"`
}

var (
	cfgOnce sync.Once
	cfgs    configs
	cfgErr  error
)

// Spec returns the model of a run: an inline config of the table, else
// the catalog model it names or shares its shapes with.
func Spec(name string) (*model.Spec, error) {
	cfgOnce.Do(func() {
		data, err := fixtures.ReadFile("testdata/configs.json")
		if err == nil {
			err = json.Unmarshal(data, &cfgs)
		}
		if err != nil {
			cfgErr = fmt.Errorf("validate: configs.json: %w", err)
		}
	})
	if cfgErr != nil {
		return nil, cfgErr
	}
	ref := name
	if alias, ok := cfgs.SameShapeAs[name]; ok {
		ref = alias
	}
	if raw, ok := cfgs.Configs[ref]; ok {
		s, err := model.Parse(raw, name)
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %w", name, err)
		}
		return s, nil
	}
	m, err := catalog.Open(ref)
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", name, err)
	}
	return m.Spec, nil
}

// Predict predicts one run from what is known before launch: its model,
// GPU (the catalog's CUDA total), layout, flags, version and exact weights.
func Predict(r Run) (Row, error) {
	switch r.Engine {
	case "vllm":
		return predictVLLM(r)
	case "sglang":
		return predictSGLang(r)
	case "trtllm":
		return predictTRTLLM(r)
	}
	return Row{Run: r}, fmt.Errorf("validate: %s: engine %q has no before-launch predictor in the table yet", r.ID, r.Engine)
}

// modelAndGPU returns a run's model and its GPU from the catalog; a
// unified-memory device (GB10) is refused, as a plan refuses it: its
// memory is the host's, so no catalog total predicts the run.
func modelAndGPU(r Run) (*model.Spec, gpu.GPU, error) {
	s, err := Spec(r.Model)
	if err != nil {
		return nil, gpu.GPU{}, err
	}
	g, err := gpu.Lookup(r.GPU)
	if err == nil {
		err = g.CheckDiscrete()
	}
	if err != nil {
		return nil, gpu.GPU{}, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	return s, g, nil
}

// predictVLLM predicts a vLLM run: vllm.PredictBudget from the catalog's
// CUDA total and the run's weights.
func predictVLLM(r Run) (Row, error) {
	row := Row{Run: r}
	s, g, err := modelAndGPU(r)
	if err != nil {
		return row, err
	}
	b := 2
	if strings.EqualFold(r.DType, "float32") {
		b = 4
	}
	m, err := vllm.PredictBudget(s, vllm.BudgetInput{
		EstimateInput: vllm.EstimateInput{TP: r.TP, PP: r.PP, Stage: r.Stage,
			MaxNumBatchedTokens: r.MaxNumBatchedTokens, MaxNumSeqs: r.MaxNumSeqs, DTypeBytes: b,
			Sampler: r.Sampler, Interconnect: g.Interconnect()},
		Version: r.Version, GPUMemoryUtilization: r.GPUMemoryUtilization, TotalBytes: g.CUDATotalBytes(),
		WeightsBytes: int64(math.Round(r.WeightsGiB * gib)), EnforceEager: r.EnforceEager,
	})
	if err != nil {
		return row, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	row.TotalGiB = float64(m.TotalBytes) / gib
	row.ActivationGiB = float64(m.ActivationBytes) / gib
	row.NonTorchGiB = float64(m.NonTorchBytes) / gib
	row.CUDAGraphGiB = float64(m.CUDAGraphBytes) / gib
	row.KVGiB = float64(m.AvailableKVBytes) / gib
	row.Error = (row.KVGiB - r.AvailableKVGiB) / r.AvailableKVGiB
	row.Terms = m.ActivationTerms
	return row, nil
}

// Check predicts every run.
func Check(runs []Run) ([]Row, error) {
	rows := make([]Row, 0, len(runs))
	for _, r := range runs {
		row, err := Predict(r)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Summarize returns one Summary per engine, in engine order.
func Summarize(rows []Row) []Summary {
	return summarize(rows, func(r Row) string { return r.Run.Engine })
}

// SummarizePlatforms returns one Summary per engine and GPU platform
// ("cuda", "hip": the catalog's for the run's GPU), in key order; each
// Summary's Engine is "engine/platform".
func SummarizePlatforms(rows []Row) []Summary {
	return summarize(rows, func(r Row) string { return r.Run.Engine + "/" + r.Run.Platform() })
}

// Platform is the catalog's platform of the run's GPU ("cuda", "hip"),
// "unknown" when the catalog does not know the GPU.
func (r Run) Platform() string {
	g, err := gpu.Lookup(r.GPU)
	if err != nil || g.Platform == "" {
		return "unknown"
	}
	return g.Platform
}

// summarize returns one Summary per key of the rows, in key order.
func summarize(rows []Row, key func(Row) string) []Summary {
	by := map[string][]float64{}
	for _, r := range rows {
		k := key(r)
		by[k] = append(by[k], math.Abs(r.Error))
	}
	var out []Summary
	for _, e := range slices.Sorted(maps.Keys(by)) {
		errs := by[e]
		slices.Sort(errs)
		s := Summary{Engine: e, Runs: len(errs), MaxAbs: errs[len(errs)-1]}
		var sum float64
		for _, x := range errs {
			sum += x
			if x <= 0.01 {
				s.Within1++
			}
			if x <= 0.03 {
				s.Within3++
			}
		}
		s.MeanAbs = sum / float64(len(errs))
		s.MedianAbs = quantile(errs, 0.5)
		s.P90Abs = quantile(errs, 0.9)
		s.Within1 /= float64(len(errs))
		s.Within3 /= float64(len(errs))
		out = append(out, s)
	}
	return out
}

// quantile is the q-quantile of sorted xs (linear between ranks).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// Band returns the relative error band the table supports for a
// before-launch prediction of engine's KV memory with exact weights: the
// 90th percentile of |error| over the engine's runs, and the table's
// summary. ok is false when the table has no runs of the engine. The
// figures are the table's as TestBandsCurrent computes them (bands.go, so
// that a plan does not re-run the table in every process).
func Band(engine string) (band float64, s Summary, ok bool) {
	s, ok = bands[engine]
	return s.P90Abs, s, ok
}

// PlatformBand is Band over the engine's runs on GPUs of one platform
// ("cuda", "hip"): a plan for an NVIDIA GPU is judged by the table's
// NVIDIA runs, not by its ROCm ones. ok is false when the table has no
// runs of the engine on that platform.
func PlatformBand(engine, platform string) (band float64, s Summary, ok bool) {
	return Band(engine + "/" + platform)
}
