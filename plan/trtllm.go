package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	kvengine "github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// EngineTRTLLM is TensorRT-LLM (the PyTorch backend of trtllm-serve and the
// LLM API, or an engine build with --trtllm-version 0.x).
const EngineTRTLLM = "trtllm"

func init() { register(EngineTRTLLM, trtllmEngine{}) }

// trtllmEngine is the TensorRT-LLM adapter: Request → trtllm.Input, then
// trtllm.Plan's result → Report.
type trtllmEngine struct{}

// capacity is primary blocks ÷ the blocks one request of contextLen tokens
// needs (per attention-window pool, the smallest), as trtllm.Result does.
func (trtllmEngine) capacity(rep *Report, _ *model.Spec, contextLen int) int64 {
	r := trtllm.Result{TokensPerBlock: rep.TokensPerBlock, NumBlocks: rep.NumBlocks, MaxBeamWidth: rep.MaxBeamWidth, Windows: rep.Windows}
	return int64(trtllm.MaxConcurrency(&r, contextLen))
}

// knobs: TensorRT-LLM's memory share is free_gpu_memory_fraction (of the
// memory free after loading), safe up to 0.95; fp8 KV is fp8; the running
// request cap is max_batch_size.
func (trtllmEngine) knobs(_ Request, rep *Report) knobs {
	k := knobs{requestCap: "max_batch_size", fp8: "fp8"}
	if rep.FreeGPUMemoryFraction > 0 && rep.FreeGPUMemoryFraction < 1 {
		k.share, k.shareMax, k.current = "free_gpu_memory_fraction", 0.95, rep.FreeGPUMemoryFraction
	}
	return k
}

func (trtllmEngine) plan(_ context.Context, req Request, m *catalog.Model, g gpu.GPU, rep *Report, _ runOpts) (*Report, error) {
	spec := m.Spec
	if rep.DPSize > 1 && !req.EnableDPAttention {
		rep.warn("TensorRT-LLM sizes each data-parallel replica on its own; the numbers are per replica")
	}
	in := trtllmInput(&req, spec, g, rep)
	if err := trtllmWeights(&in, m, &req, rep); err != nil {
		return nil, err
	}

	res, perr := trtllm.Plan(spec, in)
	if res == nil {
		return nil, trtllmInputError(perr)
	}
	fillTRTLLM(rep, res, spec)
	trtllmBudget(rep, res)
	rep.HostTier = trtllmHostTier(req, res)
	warnHostRAM(rep, req)
	if perr != nil {
		var re *kvengine.Refusal
		if errors.As(perr, &re) {
			if re.Flag != "" { // an option key: kvcfg's flag is its kebab case
				rep.FixFlag = "--" + strings.ReplaceAll(re.Flag, "_", "-")
			}
			rep.FixValue, rep.FixHint = re.Value, re.Hint
			return rep, refuse(rep, perr, re.Message)
		}
		return nil, trtllmInputError(perr)
	}
	trtllmLimits(rep, res)
	return rep, nil
}

// trtllmInput maps the request onto trtllm.Input (the weights aside),
// warning in rep about a drafter TensorRT-LLM's sizing does not model.
func trtllmInput(req *Request, spec *model.Spec, g gpu.GPU, rep *Report) trtllm.Input {
	tp, pp := rep.TPSize, rep.PPSize
	in := trtllm.Input{
		Version:                 req.TRTLLMVersion,
		FreeGPUMemoryFraction:   req.FreeGPUMemoryFraction,
		TokensPerBlock:          req.TokensPerBlock,
		MaxTokens:               req.MaxTokens,
		MaxGPUTotalBytes:        int64(req.MaxGPUTotalBytes),
		MaxSeqLen:               req.MaxSeqLen,
		MaxBatchSize:            req.MaxBatchSize,
		MaxNumTokens:            req.MaxNumTokens,
		MaxBeamWidth:            req.MaxBeamWidth,
		MaxInputLen:             req.MaxInputLen,
		KVCacheDType:            req.KVCacheDType,
		MaxAttentionWindow:      req.MaxAttentionWindow,
		HostCacheSize:           int64(req.HostCacheSize),
		TPSize:                  tp,
		PPSize:                  pp,
		EnableAttentionDP:       req.EnableDPAttention,
		EPSize:                  req.EPSize,
		MaxDraftLen:             req.MaxDraftLen,
		EnableChunkedPrefill:    req.EnableChunkedPrefill,
		DisableOverlapScheduler: req.DisableOverlapScheduler,
		GPUMemoryBytes:          g.CUDATotalBytes(), // torch.cuda.mem_get_info()[1], "device total memory"
		Interconnect:            g.Interconnect(),
		GPUSM:                   g.SM,
		GPUNVLinks:              g.NVLinks,
		KVCacheMemory:           int64(req.KVCacheMemory),
		FreeMemoryAfterLoad:     int64(req.FreeMemoryAfterLoad),
		WeightsBytes:            int64(req.WeightsMemory),
	}
	if in.MaxSeqLen == 0 {
		in.MaxSeqLen = req.ContextLength // one request compares across engines
	}
	switch strings.ToUpper(strings.TrimSpace(req.SpeculativeAlgorithm)) {
	case "", "NONE":
	case "MTP", "EAGLE", "NEXTN":
		// One-model MTP when the checkpoint has next-token layers (SGLang
		// runs them as EAGLE), else EAGLE3's single draft layer.
		in.SpeculativeMode, in.DraftLayers = trtllm.SpecMTP, req.SpeculativeDraftNumLayers
		if spec.NumNextNPredictLayers == 0 && in.DraftLayers == 0 {
			in.SpeculativeMode = trtllm.SpecEagle3
		}
	case "EAGLE3":
		in.SpeculativeMode, in.DraftLayers = trtllm.SpecEagle3, req.SpeculativeDraftNumLayers
	default:
		rep.warn(fmt.Sprintf("speculative algorithm %s: the drafter's KV cache is not modelled for TensorRT-LLM (one-model MTP and EAGLE3 are)", req.SpeculativeAlgorithm))
	}
	return in
}

// trtllmWeights sets the weights of in: given, measured (a run's KV or
// free-memory reading), read from the checkpoint's headers, or left to the
// engine's estimate.
func trtllmWeights(in *trtllm.Input, m *catalog.Model, req *Request, rep *Report) error {
	rep.WeightsSource = string(weights.Estimated)
	switch {
	case req.WeightsMemory > 0:
		rep.WeightsSource = string(weights.Given)
	case req.KVCacheMemory > 0 || req.FreeMemoryAfterLoad > 0:
		rep.WeightsSource, rep.Measured = string(weights.Measured), true
	case m.Dir != "" || m.Headers != nil:
		w, src, note, err := weightsPerRank(m, req, rep.TPSize, rep.PPSize)
		if err != nil {
			return err
		}
		if note != "" {
			rep.warn(note)
		}
		if src != weights.Estimated { // else the engine estimates, and says so
			in.WeightsBytes, rep.WeightsSource = w, string(src)
		}
	}

	return nil
}

// trtllmInputError maps the trtllm package's input errors to FieldErrors.
func trtllmInputError(err error) error {
	switch {
	case errors.Is(err, trtllm.ErrUnsupportedDType):
		return &FieldError{Field: "kv_cache_dtype", Err: err}
	case errors.Is(err, trtllm.ErrUnknownVersion):
		return &FieldError{Field: "trtllm_version", Err: err}
	case errors.Is(err, trtllm.ErrUnsupportedModel):
		return &FieldError{Field: "model", Err: err}
	default:
		return &FieldError{Err: err}
	}
}

// fillTRTLLM copies a trtllm.Result into the report.
func fillTRTLLM(rep *Report, res *trtllm.Result, spec *model.Spec) {
	t := &rep.TRTLLM
	t.TRTLLMVersion = string(res.Profile)
	t.TokensPerBlock, t.NumBlocks, t.MaxTokens = res.TokensPerBlock, res.NumBlocks, res.MaxTokens
	t.KVCacheBytes, t.MaxSeqLen = res.KVCacheBytes, res.MaxSeqLen
	t.FreeGPUMemoryFraction = res.FreeGPUMemoryFraction
	t.EstimateBytesPerToken = res.EstimateBytesPerToken
	t.MaxBeamWidth, t.Windows = res.MaxBeamWidth, res.Windows
	if res.ProfileNote != "" {
		t.TRTLLMProfile = res.ProfileNote
	}

	rep.ResolvedKVCacheDType = res.KVCacheDType.Format.Name
	rep.KVCacheTorchDType = res.KVCacheDType.Format.Element.Torch()
	rep.PageSize = res.TokensPerBlock
	rep.ContextLength = res.MaxSeqLen
	rep.ChunkedPrefillSize = res.MaxNumTokens
	rep.CellSizeBytes = float64(res.CellSizeBytes)
	if len(res.Stages) > 0 {
		rep.KVLayers = res.Stages[0].Layers + res.Stages[0].DraftLayers
		for _, s := range res.Stages {
			rep.KVLayers = max(rep.KVLayers, s.Layers+s.DraftLayers)
		}
	}
	rep.AvailableKVBytes = res.Memory.AvailableKVBytes
	rep.MaxTotalNumTokens = res.MaxTokens
	rep.MaxRunningRequests = res.MaxBatchSize
	rep.Configurator = fmt.Sprintf("trtllm %s", res.Profile)
	if len(res.Windows) > 1 {
		rep.Configurator += fmt.Sprintf(": %d attention-window pools", len(res.Windows))
	}
	if res.Error == "" && res.MaxSeqLen > 0 {
		rep.MaxConcurrencyAtContextLength = min(int64(res.MaxConcurrency(res.MaxSeqLen)), int64(res.MaxBatchSize))
	}
	rep.LogLines = append(rep.LogLines, res.LogLines...)
	rep.warn(res.Notes...)

	mem := res.Memory
	rep.WeightsBytes = mem.WeightsBytes
	rep.WeightsEstimated = false
	for _, e := range mem.Estimated {
		if e == "weights" {
			rep.WeightsEstimated = true
		}
	}
	if !rep.WeightsEstimated && rep.WeightsSource == string(weights.Estimated) && mem.Source == "modelled" {
		rep.WeightsSource = string(weights.Given)
	}
	b := &rep.Breakdown
	b.TotalBytes = rep.GPUMemory
	b.WeightsBytes = mem.WeightsBytes
	b.RuntimeOverheadBytes = mem.NonTorchBytes
	if mem.Source == "modelled" && b.TotalBytes > 0 {
		b.PreLoadFreeBytes = max(b.TotalBytes-mem.NonTorchBytes, 0)
		b.PostLoadFreeBytes = max(b.PreLoadFreeBytes-mem.WeightsBytes, 0)
	}
	b.ReservedBytes = mem.ActivationBytes + mem.CUDAGraphBytes
	b.KVBudgetBytes = mem.AvailableKVBytes
	if res.Error == "" {
		b.KVPoolBytes = res.KVCacheBytes
		b.UnusedBytes = max(mem.AvailableKVBytes-res.KVCacheBytes, 0)
		if spec.Attention == model.MHA {
			rep.KSizeBytes, rep.VSizeBytes = res.KVCacheBytes/2, res.KVCacheBytes/2
		} else {
			rep.KSizeBytes = res.KVCacheBytes // MLA caches one latent row
		}
	}
	if mem.Source != "modelled" {
		rep.Measured = true
	}
}
