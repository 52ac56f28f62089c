package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/catalog"
	kvengine "github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/units"
	"github.com/kvcfg/kvcfg/weights"
)

func init() { register(EngineSGLang, sglangEngine{}) }

// capacity is sglang.Capacity on the report's pools.
func (sglangEngine) capacity(rep *Report, spec *model.Spec, contextLen int) int64 {
	return sglang.Capacity(sglang.PoolSizes{
		Tokens: rep.MaxTotalNumTokens, FullTokens: rep.FullMaxTotalNumTokens, SWATokens: rep.SWAMaxTotalNumTokens,
		Hybrid: rep.FullMaxTotalNumTokens > 0 || rep.SWAMaxTotalNumTokens > 0, PageSize: rep.PageSize, SWAWindow: sglang.SlidingWindow(spec),
	}, contextLen)
}

// sglangEngine is the SGLang adapter: Request → sglang.Input, then the
// configurator's result → Report.
type sglangEngine struct{}

func (sglangEngine) plan(ctx context.Context, req Request, m *catalog.Model, g gpu.GPU, rep *Report, o runOpts) (*Report, error) {
	spec := m.Spec
	tp, pp, dp := rep.TPSize, rep.PPSize, rep.DPSize
	par := sglang.Parallel{TP: tp, PP: pp, DP: dp, EnableDPAttention: req.EnableDPAttention && dp > 1}
	if par.EnableDPAttention {
		rep.NumGPUs = tp * pp
	}

	// Memory readings (bytes).
	mem, err := memoryReadings(&req, m, g, tp, pp, rep)
	if err != nil {
		return nil, err
	}
	rep.WeightsBytes, rep.WeightsEstimated, rep.WeightsSource = mem.weights, mem.source == weights.Estimated, string(mem.source)
	rep.PreLoadFreeBytes, rep.PostLoadFreeBytes, rep.Measured = mem.pre, mem.post, mem.source == weights.Measured
	b := &rep.Breakdown
	b.TotalBytes = g.CUDATotalBytes() // the total SGLang's free-memory readings start from
	b.RuntimeOverheadBytes = max(b.TotalBytes-mem.pre, 0)
	b.PreLoadFreeBytes, b.WeightsBytes, b.PostLoadFreeBytes = mem.pre, mem.weights, mem.post
	b.FirstKernelBytes = mem.firstKernel

	in := sglangInput(&req, spec, par, g, mem.post)

	// A sweep worker reuses its scratch configurator and result; a plan
	// of its own configures on its stack.
	var own scratch
	sc := o.scratch
	if sc == nil {
		sc = &own
	}
	cfgr := &sc.cfgr
	err = cfgr.Reset(in)
	if (errors.Is(err, sglang.ErrTensorParallel) || errors.Is(err, sglang.ErrContextLength)) && !errors.Is(err, sglang.ErrInvalid) {
		// The engine refuses while loading the model: heads that do not
		// split, a context longer than the model's (as vLLM refuses it).
		return rep, sglangRefusal(rep, err)
	}
	if err != nil {
		return nil, inputError(err)
	}
	d := cfgr.Derived()
	kv := cfgr.KV()
	rep.SGLangProfile = cfgr.Profile().Reason
	rep.NSAPrefillBackend, rep.NSADecodeBackend = cfgr.NSABackends()
	rep.ResolvedKVCacheDType = kv.Format.Name
	rep.KVCacheTorchDType = kv.DType.Torch()
	rep.MemFractionStatic, rep.PageSize, rep.ContextLength = d.MemFractionStatic, d.PageSize, d.ContextLength
	rep.ChunkedPrefillSize, rep.CudaGraphMaxBS = d.ChunkedPrefillSize, d.CudaGraphMaxBS
	rep.warn(kv.Warnings...)

	res := &sc.res
	cerr := cfgr.ConfigureInto(res, mem.pre)
	fillResult(rep, res, cfgr, sc == &own)
	if cerr != nil {
		return rep, sglangRefusal(rep, cerr)
	}
	sglangLimits(rep, res, par.AttnDP())
	sglangBudget(rep, mem, spec)
	return rep, nil
}

// sglangInput maps req onto the configurator's input: SGLang's server
// arguments, the GPU, the free memory after loading and the vision tower
// (NoVisionConfig when a multimodal model has none).
func sglangInput(req *Request, spec *model.Spec, par sglang.Parallel, g gpu.GPU, postLoadFree int64) sglang.Input {
	var vl, vh int
	noVision := false
	if spec.Multimodal {
		if v := spec.Vision; v != nil {
			vl, vh = v.Layers, v.Hidden
		} else {
			noVision = true
		}
	}
	return sglang.Input{
		Spec: spec, Parallel: par, Version: req.SGLangVersion,
		Args: sglang.ServerArgs{
			KVCacheDType: req.KVCacheDType, MemFractionStatic: req.MemFractionStatic, PageSize: req.PageSize,
			ContextLength: req.ContextLength, MaxTotalTokens: req.MaxTotalTokens, MaxRunningRequests: req.MaxRunningRequests,
			SWAFullTokensRatio: req.SWAFullTokensRatio, DisableHybridSWAMemory: req.DisableHybridSWAMemory,
			ChunkedPrefillSize: req.ChunkedPrefillSize, CudaGraphMaxBS: req.CudaGraphMaxBS,
			DisableCudaGraph: req.EnforceEager, DisableRadixCache: req.DisableRadixCache,
			SpeculativeAlgorithm: req.SpeculativeAlgorithm, SpeculativeNumDraftTokens: req.SpeculativeNumDraftTokens,
			SpeculativeDraftNumLayers: req.SpeculativeDraftNumLayers, MambaFullMemoryRatio: req.MambaFullMemoryRatio,
			MaxMambaCacheSize: req.MaxMambaCacheSize, MambaSSMDType: req.MambaSSMDType, AttentionBackend: req.AttentionBackend,
			MambaRadixCacheStrategy: strings.ToLower(strings.TrimSpace(req.MambaRadixCacheStrategy)), MambaSkipDecodeLock: req.MambaSkipDecodeLock,
			DSV4CompressStateDType: req.DSV4CompressStateDType,
			NSAPrefillBackend:      req.NSAPrefillBackend, NSADecodeBackend: req.NSADecodeBackend,
			EnableUnifiedMemory: req.EnableUnifiedMemory, DisaggregationMode: req.DisaggregationMode,
			EnableHierarchicalCache: req.EnableHierarchicalCache, HiCacheRatio: req.HiCacheRatio, HiCacheSize: req.HiCacheSize,
			HiCacheMemLayout: req.HiCacheMemLayout, HostMemoryBytes: int64(req.HostMemory), NNodes: req.NNodes,
		},
		Hardware:          sglang.Hardware{MemoryMiB: g.MemoryMiB, SM: g.SM, Platform: g.Platform, FNUZ: g.FNUZ},
		PostLoadFreeBytes: postLoadFree,
		VisionLayers:      vl,
		VisionHidden:      vh,
		NoVisionConfig:    noVision,
	}
}

// sglangRefusal records a configurator error in rep: an input problem is a
// *FieldError, anything else the engine's refusal with the flag it names.
func sglangRefusal(rep *Report, err error) error {
	var re *kvengine.Refusal
	if errors.As(err, &re) {
		rep.FixFlag, rep.FixValue, rep.FixHint = re.Flag, re.Value, re.Hint
	}
	if errors.Is(err, sglang.ErrInvalid) || errors.Is(err, sizing.ErrInvalid) {
		fe := &FieldError{Err: err}
		rep.Error = fe.Error()
		return fe
	}
	if re != nil {
		return refuse(rep, err, re.Message) // the engine's words; the hint is the fix
	}
	return refuse(rep, err, err.Error())
}

// knobs: SGLang's memory share is --mem-fraction-static, safe up to 0.93
// (activations and CUDA graphs need the rest); fp8 KV is fp8_e4m3.
func (sglangEngine) knobs(_ Request, rep *Report) knobs {
	return knobs{share: "mem_fraction_static", shareMax: 0.93, current: rep.MemFractionStatic,
		requestCap: "max_running_requests", fp8: "fp8_e4m3"}
}

// scratch is what one sweep worker reuses from plan to plan.
type scratch struct {
	cfgr sglang.Configurator
	res  sglang.Result
}

// inputError maps a configurator construction error to a FieldError.
func inputError(err error) error {
	var re *kvengine.Refusal
	if errors.As(err, &re) {
		field := KeyOfFlag(re.Flag)
		if field == "" {
			field = strings.ReplaceAll(strings.TrimPrefix(re.Flag, "--"), "-", "_")
		}
		return &FieldError{Field: field, Err: err}
	}
	return &FieldError{Err: err}
}

// fillResult copies res, the result of c, into rep; ownLogs says that
// res.Logs is the plan's own (not a sweep worker's scratch), which rep
// then takes rather than copies.
func fillResult(rep *Report, res *sglang.Result, c *sglang.Configurator, ownLogs bool) {
	d := c.Derived()
	rep.Configurator = string(res.Configurator)
	rep.CellSizeBytes = res.CellSize
	rep.KVLayers = res.KVLayers
	rep.AvailableKVBytes = res.AvailableBytes
	rep.MaxTotalNumTokens = res.MaxTotalNumTokens
	rep.FullMaxTotalNumTokens = res.FullMaxTotalNumTokens
	rep.SWAMaxTotalNumTokens = res.SWAMaxTotalNumTokens
	rep.MaxRunningRequests = res.MaxRunningRequests
	rep.MaxMambaCacheSize = res.MaxMambaCacheSize
	rep.MambaStateBytesPerRequest = res.MambaPerRequest
	rep.KSizeBytes, rep.VSizeBytes = res.KSizeBytes, res.VSizeBytes
	rep.IndexerBytes, rep.DSV4 = res.IndexerBytes, res.DSV4
	rep.UnifiedMemoryPool, rep.HostTier = res.Unified, sglangHostTier(res.HostPool)
	if ownLogs && len(rep.LogLines) == 0 && res.Logs != nil {
		rep.LogLines = res.Logs
	} else {
		rep.LogLines = append(rep.LogLines, res.Logs...)
	}
	rep.warn(res.Warnings...)
	rep.MaxConcurrencyAtContextLength = res.MaxConcurrency(d.ContextLength)
	if res.MaxRunningRequests > 0 {
		rep.ReqToTokenBytes = int64(res.MaxRunningRequests+1) * int64(d.ContextLength+d.Decode.ReqToTokenExtra) * 4
	}

	b := &rep.Breakdown
	b.ReservedBytes = int64(res.SlackGiB * (1 << 30))
	b.MultimodalCacheBytes = int64(res.MultimodalGiB * (1 << 30))
	b.StateBytes = res.MambaStateBytes + res.MambaSpecBytes
	b.KVBudgetBytes = res.AvailableBytes
	b.KVPoolBytes = min(res.KVPoolBytes, max(res.AvailableBytes, 0))
	if res.MaxTotalNumTokens > 0 {
		b.UnusedBytes = max(res.AvailableBytes-b.KVPoolBytes, 0)
	}
	if o := res.Overcommit; o != nil {
		// The release sized the pool with fewer bytes a token than its
		// buffers take: the pool is what it allocates.
		b.KVPoolBytes, b.OverBudgetBytes, b.UnusedBytes = o.AllocatedBytes, o.ExcessBytes, 0
	}
}

// memory is the resolved memory readings of one rank.
type memory struct {
	pre, post, weights int64
	source             weights.Source
	// firstKernel is the first CUDA kernel's memory charged after the
	// pre-load reading (sglang.FirstKernelAfterPreLoadBytes): a TP-1
	// worker before 0.5.8 whose weights are not a reading.
	firstKernel int64
	// preLoad is the modelled free memory before weights (its terms),
	// when modelled is true (no reading was given).
	preLoad  sglang.PreLoad
	modelled bool
}

// memoryReadings resolves one rank's memory readings; its notes go to
// rep's warnings.
func memoryReadings(req *Request, m *catalog.Model, g gpu.GPU, tp, pp int, rep *Report) (memory, error) {
	spec := m.Spec
	var mm memory
	prof, _, err := sglang.ResolveProfile(req.SGLangVersion)
	if err != nil {
		prof, _, _ = sglang.ResolveProfile("") // Request.Validate refused an unknown version
	}
	// The first kernel's memory that falls after the pre-load reading
	// (one rank before 0.5.8): charged unless the weights are a reading.
	after := sglang.FirstKernelAfterPreLoadBytes(tp, pp, prof)
	mm.pre = int64(req.PreLoadFreeMemory)
	if mm.pre == 0 {
		p := sglang.PreLoadMemoryFor(g, tp, pp, prof)
		mm.pre, mm.preLoad, mm.modelled = p.FreeBytes, p, true
		if req.PostLoadFreeMemory == 0 {
			rep.warn(overheadNote(p, after))
		}
	} else if after > 0 && req.PostLoadFreeMemory == 0 {
		rep.warn(fmt.Sprintf("%d MiB of the first CUDA kernel are charged after the pre-load reading: before 0.5.8 a one-rank worker launches it inside load_model; pass --post-load-free-memory from the engine log for exact numbers", after>>20))
	}
	if mm.pre <= 0 {
		return mm, fieldErr("gpu_memory", "the GPU has no memory left after the runtime overhead")
	}
	if total := g.CUDATotalBytes(); int64(req.PreLoadFreeMemory) > total && total > 0 {
		return mm, fieldErr("pre_load_free_memory", "%s exceeds the GPU's total memory %s", req.PreLoadFreeMemory, units.Size(total))
	}
	switch {
	case req.PostLoadFreeMemory > 0:
		mm.post = int64(req.PostLoadFreeMemory)
		if mm.post > mm.pre {
			return mm, fieldErr("post_load_free_memory", "%s exceeds the free memory before weight load %s", req.PostLoadFreeMemory, units.Size(mm.pre))
		}
		mm.weights, mm.source = mm.pre-mm.post, weights.Measured
		if req.WeightsMemory > 0 {
			rep.warn("weights_memory ignored: the measured free-memory readings already include the weights")
		}
		return mm, nil
	case req.WeightsMemory > 0:
		mm.weights, mm.source = int64(req.WeightsMemory), weights.Given
	default:
		w, src, note, err := weightsPerRank(m, req, tp, pp)
		if err != nil {
			return mm, err
		}
		mm.weights, mm.source = w, src
		if note != "" {
			rep.warn(note)
		}
		if src == weights.Estimated && spec.Multimodal {
			rep.warn("the weight estimate counts the language model only; add the vision encoder with --weights-memory for exact numbers")
		}
		if src == weights.Estimated {
			rep.warn(weightsNote(w))
		}
	}
	// Weights that are not a reading are the weights alone: before 0.5.8
	// a TP-1 worker's first kernel takes its memory inside load_model,
	// after the pre-load reading, so it is charged here.
	mm.firstKernel = after
	mm.post = mm.pre - mm.weights - mm.firstKernel
	if mm.post < 0 {
		mm.post = 0
	}
	return mm, nil
}

// overheadNotes caches the modelled pre-load notes by their terms (a few
// combinations: interconnect, custom all-reduce, era).
var overheadNotes sync.Map // overheadKey → string

type overheadKey struct {
	ctx, local, nccl, car, qr, first, after int64
	interconnect                            string
}

// overheadNote says how the free memory before weights p was modelled;
// after is the first kernel charged after that reading
// (sglang.FirstKernelAfterPreLoadBytes).
func overheadNote(p sglang.PreLoad, after int64) string {
	k := overheadKey{p.ContextBytes >> 20, p.LocalMemoryBytes >> 20, p.NCCLBytes >> 20, p.CustomAllReduceBytes >> 20, p.QuickAllReduceBytes >> 20, p.FirstKernelBytes >> 20, after >> 20, p.Interconnect}
	if s, ok := overheadNotes.Load(k); ok {
		return s.(string)
	}
	dist, nccl := "", "NCCL"
	if k.interconnect == "xgmi" {
		nccl = "RCCL"
	}
	if k.nccl > 0 {
		dist = fmt.Sprintf(" − %d MiB %s initialisation (%s, TP × PP > 1)", k.nccl, nccl, k.interconnect)
	}
	if k.car > 0 {
		dist += fmt.Sprintf(" − %d MiB custom all-reduce buffers", k.car)
	}
	if k.qr > 0 {
		dist += fmt.Sprintf(" − %d MiB quick all-reduce buffer (ROCM_QUICK_REDUCE_QUANTIZATION as SGLang's ROCm images set it)", k.qr)
	}
	if k.first > 0 {
		dist += fmt.Sprintf(" − %d MiB of the first CUDA kernel (one rank, SGLang 0.5.8 on: the process groups' device tensors)", k.first)
	}
	ctx := fmt.Sprintf("%d MiB CUDA context", k.ctx)
	if k.local > 0 {
		ctx += fmt.Sprintf(" (%d MiB local memory for the GPU's SMs + %d MiB runtime and kernel images)", k.local, k.ctx-k.local)
	}
	later := ""
	if k.after > 0 {
		later = fmt.Sprintf(", and %d MiB of the first CUDA kernel are charged after it (before 0.5.8 a one-rank worker launches it inside load_model)", k.after)
	}
	s := fmt.Sprintf("free memory before weight load is modelled as the total CUDA reports − %s%s%s; pass --pre-load-free-memory and --post-load-free-memory from the engine log for exact numbers", ctx, dist, later)
	overheadNotes.Store(k, s)
	return s
}
