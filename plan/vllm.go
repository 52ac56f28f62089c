package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	kvengine "github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// plan plans for vLLM: it maps the request's vLLM flags onto
// vllm.Input, runs vllm.Plan and reports what that vLLM generation logs.
// SGLang's --context-length stands in for --max-model-len when only it is
// given, so one request can be compared across engines.
func init() { register(EngineVLLM, vllmEngine{}) }

// capacity is vLLM's logged maximum concurrency, which is for the plan's
// max_model_len (fit plans with the target context as max_model_len).
func (vllmEngine) capacity(rep *Report, _ *model.Spec, _ int) int64 {
	if rep.MaxConcurrency > 0 {
		return int64(rep.MaxConcurrency)
	}
	return rep.MaxConcurrencyAtContextLength
}

// knobs: vLLM's memory share is --gpu-memory-utilization, safe up to 0.95
// (0 when the KV budget was given in bytes: no share to raise); fp8 KV is
// fp8; its flags are vLLM's.
func (vllmEngine) knobs(_ Request, rep *Report) knobs {
	k := knobs{requestCap: "max_num_seqs", fp8: "fp8"}
	if rep.GPUMemoryUtilization > 0 {
		k.share, k.shareMax, k.current = "gpu_memory_utilization", 0.95, rep.GPUMemoryUtilization
	}
	return k
}

// vllmEngine is the vLLM adapter: Request → vllm.Input, then vllm.Plan's
// result → Report.
type vllmEngine struct{}

func (vllmEngine) plan(_ context.Context, req Request, m *catalog.Model, g gpu.GPU, rep *Report, _ runOpts) (*Report, error) {
	spec := m.Spec
	if req.EnableDPAttention {
		rep.warn("enable_dp_attention is an SGLang flag; vLLM sizes each data-parallel engine on its own")
	}
	cfg := vllmInput(&req, spec, g, rep)
	if err := vllmWeights(&cfg, m, &req, rep); err != nil {
		return nil, err
	}

	res, perr := vllm.Plan(spec, cfg)
	if res == nil {
		return nil, vllmInputError(perr)
	}
	fillVLLM(rep, res, spec)
	rep.HostTier = vllmHostTier(req, res)
	warnHostRAM(rep, req)
	vllmBudget(rep, res)
	if perr != nil {
		var re *kvengine.Refusal
		if errors.As(perr, &re) {
			rep.FixFlag, rep.FixValue, rep.FixHint = re.Flag, re.Value, re.Hint
			return rep, refuse(rep, perr, re.Message)
		}
		return nil, vllmInputError(perr)
	}
	vllmLimits(rep, res, &req)
	return rep, nil
}

// vllmInput maps the request's vLLM flags onto vllm.Input (the weights
// aside), warning in rep about what vLLM takes differently.
func vllmInput(req *Request, spec *model.Spec, g gpu.GPU, rep *Report) vllm.Input {
	cfg := vllm.Input{
		Version:              req.VLLMVersion,
		KVCacheDType:         req.KVCacheDType,
		AttentionBackend:     req.AttentionBackend,
		BlockSize:            req.BlockSize,
		MaxModelLen:          req.MaxModelLen,
		MaxNumSeqs:           req.MaxNumSeqs,
		MaxNumBatchedTokens:  req.MaxNumBatchedTokens,
		TensorParallelSize:   rep.TPSize,
		PipelineParallelSize: rep.PPSize,
		GPUMemoryUtilization: req.GPUMemoryUtilization,
		KVCacheMemoryBytes:   int64(req.KVCacheMemoryBytes),
		NumGPUBlocksOverride: req.NumGPUBlocksOverride,
		EnforceEager:         req.EnforceEager,
		NoAsyncScheduling:    req.NoAsyncScheduling,
		GPUName:              g.Name,
		GPUSM:                g.SM,
		Interconnect:         g.Interconnect(),
		Memory: vllm.Memory{TotalBytes: g.CUDATotalBytes(), FreeBytes: int64(req.PreLoadFreeMemory),
			AvailableKVBytes: int64(req.KVCacheMemory)},
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = req.ContextLength
	}
	cfg.DisableHybridKVCacheManager = req.DisableHybridKVCacheManager
	// Request.check has parsed it already.
	cfg.KVConnector, cfg.KVConnectorChildren, _ = ParseKVTransferConfig(req.KVTransferConfig)
	if req.KVOffloadingSize > 0 && cfg.KVConnector == "" {
		// vllm/config/vllm.py: --kv-offloading-size with the native backend
		// sets kv_connector OffloadingConnector (kv_role kv_both).
		cfg.KVConnector = "OffloadingConnector"
	}
	if req.DisableRadixCache {
		// SGLang's prefix-cache switch; vLLM's --no-enable-prefix-caching
		// keeps one Mamba state per request.
		cfg.MambaCacheMode = "none"
	}
	switch strings.ToUpper(strings.TrimSpace(req.SpeculativeAlgorithm)) {
	case "EAGLE", "EAGLE3", "NEXTN":
		// The drafter's attention layers join the KV cache: the checkpoint's
		// MTP layers, else one EAGLE layer (NEXTN is SGLang's name for EAGLE).
		cfg.DraftLayers = req.SpeculativeDraftNumLayers
		if cfg.DraftLayers == 0 {
			cfg.DraftLayers = max(spec.NumNextNPredictLayers, 1)
		}
	case "", "NONE", "NGRAM":
	default:
		rep.warn(fmt.Sprintf("speculative algorithm %s: the drafter's KV cache is not modelled for vLLM", req.SpeculativeAlgorithm))
	}
	if p, _, err := vllm.ResolveProfile(req.VLLMVersion); err == nil && p == vllm.V06 && cfg.KVCacheMemoryBytes > 0 && cfg.Memory.AvailableKVBytes == 0 {
		// V0 has no --kv-cache-memory-bytes: take it as the KV budget the
		// run had (total × util − profiled peak), which reproduces its
		// "# GPU blocks".
		cfg.Memory.AvailableKVBytes, cfg.KVCacheMemoryBytes = cfg.KVCacheMemoryBytes, 0
		rep.warn("vLLM 0.6 has no --kv-cache-memory-bytes; the value is used as the measured KV budget of the run")
	}
	return cfg
}

// vllmWeights sets the weights of cfg: given, measured (free before −
// after loading), or estimated (none when the KV budget is given).
func vllmWeights(cfg *vllm.Input, m *catalog.Model, req *Request, rep *Report) error {
	switch {
	case req.WeightsMemory > 0:
		cfg.Memory.WeightsBytes = int64(req.WeightsMemory)
		rep.WeightsSource = string(weights.Given)
	case req.PreLoadFreeMemory > 0 && req.PostLoadFreeMemory > 0:
		cfg.Memory.WeightsBytes = int64(req.PreLoadFreeMemory - req.PostLoadFreeMemory)
		rep.WeightsSource = string(weights.Measured)
		rep.Measured = true
	case req.KVCacheMemoryBytes == 0 && req.KVCacheMemory == 0:
		w, src, note, err := weightsPerRank(m, req, rep.TPSize, rep.PPSize)
		if err != nil {
			return err
		}
		if note != "" {
			rep.warn(note)
		}
		cfg.Memory.WeightsBytes = w
		rep.WeightsSource = string(src)
		rep.WeightsEstimated = src == weights.Estimated
	}
	return nil
}

// vllmInputError maps the vllm package's input errors to FieldErrors.
func vllmInputError(err error) error {
	switch {
	case errors.Is(err, vllm.ErrUnsupportedDType):
		return &FieldError{Field: "kv_cache_dtype", Err: err}
	case errors.Is(err, vllm.ErrUnknownVersion):
		return &FieldError{Field: "vllm_version", Err: err}
	case errors.Is(err, vllm.ErrUnsupportedModel):
		return &FieldError{Field: "model", Err: err}
	default:
		return &FieldError{Err: err}
	}
}

// fillVLLM copies a vllm.Result into the report.
func fillVLLM(rep *Report, res *vllm.Result, spec *model.Spec) {
	rep.VLLMVersion = string(res.Profile)
	rep.ResolvedKVCacheDType = res.KVCacheDType.Format.Name
	rep.KVCacheTorchDType = res.KVCacheDType.Format.Element.Torch()
	if res.KVCacheDType.DSMLA {
		rep.ResolvedKVCacheDType, rep.KVCacheTorchDType = "fp8_ds_mla", "torch.uint8"
	}
	rep.PageSize, rep.BlockSize = res.BlockSize, res.BlockSize
	rep.ContextLength, rep.MaxModelLen = res.MaxModelLen, res.MaxModelLen
	rep.CellSizeBytes = float64(res.BytesPerToken)
	rep.KVLayers = spec.CountLayers(model.FullAttention) + spec.CountLayers(model.SlidingAttention)
	rep.AvailableKVBytes = res.Memory.AvailableKVBytes
	rep.NumGPUBlocks = res.NumGPUBlocks
	rep.KVCacheSizeTokens = res.KVCacheSizeTokens
	rep.MaxConcurrency = res.MaxConcurrency
	rep.GPUMemoryUtilization = res.GPUMemoryUtilization
	rep.MaxTotalNumTokens = res.TokenCapacity
	rep.MaxRunningRequests = res.MaxNumSeqs
	rep.ChunkedPrefillSize = res.MaxNumBatchedTokens
	if res.BlocksPerRequest > 0 && res.Error == "" {
		rep.MaxConcurrencyAtContextLength = min(res.NumGPUBlocks/res.BlocksPerRequest, int64(res.MaxNumSeqs))
	}
	rep.LogLines = append(rep.LogLines, res.LogLines...)
	rep.warn(res.Notes...)

	m := res.Memory
	rep.WeightsBytes = m.WeightsBytes
	b := &rep.Breakdown
	b.TotalBytes = rep.GPUMemory
	if m.TotalBytes > 0 {
		b.TotalBytes = m.TotalBytes // CUDA's total, what the utilization multiplies
	}
	b.WeightsBytes = m.WeightsBytes
	if m.RequestedBytes > 0 {
		b.RuntimeOverheadBytes = max(m.TotalBytes-m.RequestedBytes, 0)
	}
	if m.RequestedBytes > 0 {
		// vLLM's budget is total × utilization; lay it out as the SGLang
		// breakdown does: requested = weights + (reserved + KV budget).
		b.PreLoadFreeBytes = m.RequestedBytes
		b.PostLoadFreeBytes = m.RequestedBytes - m.WeightsBytes
	}
	b.ReservedBytes = m.ActivationBytes + m.NonTorchBytes + m.CUDAGraphBytes
	b.KVBudgetBytes = m.AvailableKVBytes
	pool := res.NumGPUBlocks * res.PageBytes * int64(max(res.GroupSize, 1))
	if len(res.Groups) == 1 && res.Groups[0].UniformType {
		pool = res.NumGPUBlocks * res.PageBytes
	}
	if res.Error == "" {
		b.KVPoolBytes = min(pool, max(m.AvailableKVBytes, 0))
		b.UnusedBytes = max(m.AvailableKVBytes-b.KVPoolBytes, 0)
		if spec.Attention == model.MHA {
			rep.KSizeBytes, rep.VSizeBytes = b.KVPoolBytes/2, b.KVPoolBytes/2
		} else {
			rep.KSizeBytes = b.KVPoolBytes // one latent row, no separate V
		}
	}
	kinds := make([]string, 0, len(res.Groups))
	for _, g := range res.Groups {
		k := string(g.Kind)
		if g.Variant != "" {
			k += "/" + g.Variant
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	rep.Configurator = fmt.Sprintf("vllm %s", res.Profile)
	if len(res.Groups) > 0 {
		rep.Configurator += fmt.Sprintf(": %d KV cache group(s) [%s], %d tensor(s)", len(res.Groups), strings.Join(kinds, ", "), max(res.GroupSize, 1))
	}
}

// joinInts prints ns as "1, 2, 4".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// ParseKVTransferConfig reads vLLM's --kv-transfer-config: the JSON object
// (its kv_connector, and a MultiConnector's
// kv_connector_extra_config.connectors[].kv_connector) or a bare connector
// name. The empty string is no connector.
func ParseKVTransferConfig(s string) (connector string, children []string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil, nil
	}
	if !strings.HasPrefix(s, "{") {
		if strings.ContainsAny(s, " \t\"'}[]") {
			return "", nil, fmt.Errorf("plan: %q is neither --kv-transfer-config's JSON nor a connector name such as NixlConnector", s)
		}
		return s, nil, nil
	}
	type conn struct {
		KVConnector string `json:"kv_connector"`
	}
	var cfg struct {
		KVConnector string `json:"kv_connector"`
		Extra       struct {
			Connectors []conn `json:"connectors"`
		} `json:"kv_connector_extra_config"`
	}
	if err := json.Unmarshal([]byte(s), &cfg); err != nil {
		return "", nil, fmt.Errorf("plan: --kv-transfer-config is not JSON (%w); pass it as vLLM takes it, e.g. {\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}", err)
	}
	if cfg.KVConnector == "" {
		return "", nil, fmt.Errorf("plan: --kv-transfer-config names no kv_connector; add one, e.g. \"kv_connector\":\"NixlConnector\"")
	}
	for _, c := range cfg.Extra.Connectors {
		children = append(children, c.KVConnector)
	}
	return cfg.KVConnector, children, nil
}
