package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/units"
	"github.com/kvcfg/kvcfg/weights"
)

// Run plans the KV cache for req. Input problems are *FieldError values
// (errors.Is(err, ErrInvalid)); a plan the engine could not start with
// returns the partial Report and an error wrapping ErrInfeasible and the
// engine-equivalent error (a *sglang.FixError naming the flag to
// change when one does).
func Run(ctx context.Context, req Request) (*Report, error) {
	return run(ctx, req, runOpts{advise: true})
}

// run is Run with the options o (a request's NoAdvice turns the advice off).
func run(ctx context.Context, req Request, o runOpts) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	req = req.Normalized()
	if req.Engine == EngineVLLM {
		return runVLLM(ctx, req)
	}
	o.advise = o.advise && !req.NoAdvice
	return runSGLang(ctx, req, o)
}

// runOpts are what one plan shares with the plans around it. advise says
// whether a plan whose weights do not fit searches for the TP size that
// fits (smallestFittingTP). Within one sweep, plans that differ only in
// their TP size share a group, and memo remembers per group and TP size
// whether the plan fits, so the search runs each such plan once; vision
// holds the vision-tower dims of the sweep's parsed models and notes the
// weight-estimate notes built so far.
type runOpts struct {
	advise bool
	memo   *fitMemo // nil outside a sweep
	group  int
	vision map[*model.Spec]visionTower
	notes  *sync.Map // weights per rank → weightsNote; nil outside a sweep
	// scratch, when set, is the configurator and result the plan resets
	// and uses instead of allocating them (one per sweep worker; the plans
	// an advice search runs inside a plan do not get it).
	scratch *scratch
}

// scratch is what one sweep worker reuses from plan to plan.
type scratch struct {
	cfgr sglang.Configurator
	res  sglang.Result
}

// weightsNote is the note of a weight estimate of w bytes per rank; a
// sweep builds each distinct one once (notes sets it).
func (o runOpts) weightsNote(w int64) string {
	if o.notes != nil {
		if v, ok := o.notes.Load(w); ok {
			return v.(string)
		}
	}
	note := "weights estimated from the config: " + units.Size(w).String() + " per rank (parameter count × weight dtype); pass --weights-memory or the measured free-memory readings for exact numbers"
	if o.notes != nil {
		o.notes.Store(w, note)
	}
	return note
}

// visionTower is what visionDims reads from a multimodal config.
type visionTower struct {
	layers, hidden int
	none           bool
}

// fitMemo remembers, per sweep group and TP size 1..64, whether the plan
// fits: bit tp−1 of known[group] says it is known, the same bit of
// fits[group] the answer (set first, so a reader that sees known sees it).
type fitMemo struct {
	known, fits []atomic.Uint64
}

func newFitMemo(groups int) *fitMemo {
	return &fitMemo{known: make([]atomic.Uint64, groups), fits: make([]atomic.Uint64, groups)}
}

// load returns whether the plan of group at tp fits, and whether that is known.
func (m *fitMemo) load(group, tp int) (fits, known bool) {
	if m == nil || tp < 1 || tp > 64 || group < 0 || group >= len(m.known) {
		return false, false
	}
	bit := uint64(1) << (tp - 1)
	if m.known[group].Load()&bit == 0 {
		return false, false
	}
	return m.fits[group].Load()&bit != 0, true
}

// store records whether the plan of group at tp fits.
func (m *fitMemo) store(group, tp int, fits bool) {
	if m == nil || tp < 1 || tp > 64 || group < 0 || group >= len(m.known) {
		return
	}
	bit := uint64(1) << (tp - 1)
	if fits {
		m.fits[group].Or(bit)
	}
	m.known[group].Or(bit)
}

// ResolveModel returns the model spec a request names: the inline config,
// else the catalog entry or config path in Model (default: catalog.Default).
//
// A request that carries a parsed Spec gets it back as is.
func ResolveModel(req Request) (*model.Spec, error) {
	if req.Spec != nil {
		return req.Spec, nil
	}
	if len(req.Config) > 0 {
		name := req.Model
		if name == "" {
			name = "inline-config"
		}
		s, err := model.Parse(req.Config, name)
		if err != nil {
			return nil, &FieldError{Field: "config", Err: err}
		}
		return s, nil
	}
	ref := req.Model
	if ref == "" {
		ref = catalog.Default
	}
	s, err := catalog.Resolve(ref)
	if err != nil {
		return nil, &FieldError{Field: "model", Err: err}
	}
	return s, nil
}

// ResolveGPU returns the GPU a request names (default H100-80GB), with
// gpu_memory and platform overrides applied.
func ResolveGPU(req Request) (gpu.GPU, error) {
	var g gpu.GPU
	switch {
	case req.GPU != "":
		var err error
		g, err = gpu.Lookup(req.GPU)
		if err != nil {
			return g, &FieldError{Field: "gpu", Err: err}
		}
	case req.GPUMemory > 0:
		g = gpu.GPU{Name: "custom", Vendor: "nvidia", Platform: "cuda", Description: "custom GPU"}
	default:
		g, _ = gpu.Lookup(DefaultGPU)
	}
	if req.GPUMemory > 0 {
		g.MemoryMiB = int64(req.GPUMemory) >> 20
		if g.MemoryMiB == 0 {
			return g, fieldErr("gpu_memory", "%s is less than 1 MiB", req.GPUMemory)
		}
	}
	if req.Platform != "" && req.Platform != g.Platform {
		g.Platform = req.Platform
		if g.Platform != "hip" {
			g.FNUZ = false
		}
	}
	return g, nil
}

// begin resolves what every engine plans from: the model, the GPU, the
// parallel sizes and the Report's input fields (one GPU per TP × PP × DP
// rank; engines adjust NumGPUs where they count differently).
func begin(ctx context.Context, req Request, engine string) (*model.Spec, gpu.GPU, *Report, error) {
	spec, err := ResolveModel(req)
	if err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	g, err := ResolveGPU(req)
	if err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	tp, pp, dp := max(req.TPSize, 1), max(req.PPSize, 1), max(req.DPSize, 1)
	rep := &Report{
		Engine: engine, Model: spec.Name, Architecture: spec.Architecture, GPU: g.Name, GPUMemory: g.MemoryBytes(),
		Platform: g.Platform, TPSize: tp, PPSize: pp, DPSize: dp, NumGPUs: tp * pp * dp,
		KVCacheDType: req.KVCacheDType, AttentionKind: string(spec.Attention), LogLines: []string{},
	}
	if rep.KVCacheDType == "" {
		rep.KVCacheDType = dtype.Auto
	}
	rep.Warnings = append(rep.Warnings, spec.Warnings...)
	return spec, g, rep, nil
}

func runSGLang(ctx context.Context, req Request, o runOpts) (*Report, error) {
	spec, g, rep, err := begin(ctx, req, EngineSGLang)
	if err != nil {
		return nil, err
	}
	tp, pp, dp := rep.TPSize, rep.PPSize, rep.DPSize
	par := sglang.Parallel{TP: tp, PP: pp, DP: dp, EnableDPAttention: req.EnableDPAttention && dp > 1}
	if par.EnableDPAttention {
		rep.NumGPUs = tp * pp
	}

	// Memory readings (bytes).
	mem, err := memoryReadings(req, spec, g, tp, pp, o)
	if err != nil {
		return nil, err
	}
	rep.WeightsBytes, rep.WeightsEstimated, rep.WeightsSource = mem.weights, mem.source == weights.Estimated, string(mem.source)
	rep.PreLoadFreeBytes, rep.PostLoadFreeBytes, rep.Measured = mem.pre, mem.post, mem.source == weights.Measured
	rep.Warnings = append(rep.Warnings, mem.notes...)
	b := &rep.Breakdown
	b.TotalBytes = g.MemoryBytes()
	b.RuntimeOverheadBytes = max(b.TotalBytes-mem.pre, 0)
	b.PreLoadFreeBytes, b.WeightsBytes, b.PostLoadFreeBytes = mem.pre, mem.weights, mem.post

	var vl, vh int
	noVision := false
	if spec.Multimodal {
		if v, ok := o.vision[spec]; ok {
			vl, vh, noVision = v.layers, v.hidden, v.none
		} else {
			vl, vh, noVision = visionDims(req)
		}
	}
	in := sglang.Input{
		Spec: spec, Parallel: par,
		Args: sglang.ServerArgs{
			KVCacheDType: req.KVCacheDType, MemFractionStatic: req.MemFractionStatic, PageSize: req.PageSize,
			ContextLength: req.ContextLength, MaxTotalTokens: req.MaxTotalTokens, MaxRunningRequests: req.MaxRunningRequests,
			SWAFullTokensRatio: req.SWAFullTokensRatio, DisableHybridSWAMemory: req.DisableHybridSWAMemory,
			ChunkedPrefillSize: req.ChunkedPrefillSize, CudaGraphMaxBS: req.CudaGraphMaxBS, DisableRadixCache: req.DisableRadixCache,
			SpeculativeAlgorithm: req.SpeculativeAlgorithm, SpeculativeNumDraftTokens: req.SpeculativeNumDraftTokens,
			SpeculativeDraftNumLayers: req.SpeculativeDraftNumLayers, MambaFullMemoryRatio: req.MambaFullMemoryRatio,
			MaxMambaCacheSize: req.MaxMambaCacheSize, MambaSSMDType: req.MambaSSMDType,
		},
		Hardware:          sglang.Hardware{MemoryMiB: g.MemoryMiB, SM: g.SM, Platform: g.Platform, FNUZ: g.FNUZ},
		PostLoadFreeBytes: mem.post,
		VisionLayers:      vl,
		VisionHidden:      vh,
		NoVisionConfig:    noVision,
	}
	var cfgr *sglang.Configurator
	if o.scratch != nil {
		cfgr = &o.scratch.cfgr
		err = cfgr.Reset(in)
	} else {
		cfgr, err = sglang.New(in)
	}
	if err != nil {
		return nil, inputError(err)
	}
	d := cfgr.Derived()
	kv := cfgr.KV()
	rep.ResolvedKVCacheDType = kv.Format.Name
	rep.KVCacheTorchDType = kv.DType.Torch()
	rep.MemFractionStatic, rep.PageSize, rep.ContextLength = d.MemFractionStatic, d.PageSize, d.ContextLength
	rep.ChunkedPrefillSize, rep.CudaGraphMaxBS = d.ChunkedPrefillSize, d.CudaGraphMaxBS
	rep.Warnings = append(rep.Warnings, kv.Warnings...)

	var res *sglang.Result
	var cerr error
	if o.scratch != nil {
		res = &o.scratch.res
		cerr = cfgr.ConfigureInto(res, mem.pre)
	} else {
		res, cerr = cfgr.Configure(mem.pre)
	}
	if res != nil {
		fillResult(rep, res, cfgr)
	}
	if cerr != nil {
		var fe *sglang.FixError
		if o.advise && !rep.Measured && errors.As(cerr, &fe) && fe.Flag == "--tp-size" && fe.Value == "" {
			r := req
			r.Spec = spec // parse the model once, not once per TP size tried
			if t := smallestFittingTP(ctx, r, tp, o); t > 0 {
				fe.Value = fmt.Sprint(t)
				fe.Hint = fmt.Sprintf("the weights do not fit with tp %d: use --tp-size %d (or more GPUs with --pp-size), a larger GPU, or a quantized checkpoint", tp, t)
			}
		}
		return rep, infeasible(rep, cerr)
	}
	return rep, nil
}

// smallestFittingTP returns the smallest power-of-two TP size above tp
// (up to 64) with which the plan succeeds, or 0.
func smallestFittingTP(ctx context.Context, req Request, tp int, o runOpts) int {
	for t := tp * 2; t <= 64; t *= 2 {
		r := req
		r.TPSize, r.TensorParallelSize = t, 0
		if r.EnableDPAttention && r.DPSize > 1 && t%r.DPSize != 0 {
			continue
		}
		if fitsAt(ctx, r, o) {
			return t
		}
	}
	return 0
}

// fitsAt reports whether the plan r succeeds, remembered in o.memo.
func fitsAt(ctx context.Context, r Request, o runOpts) bool {
	if fits, known := o.memo.load(o.group, r.TPSize); known {
		return fits
	}
	ok := weightsMayFit(r) && planFits(ctx, r, o)
	if ctx.Err() == nil {
		o.memo.store(o.group, r.TPSize, ok)
	}
	return ok
}

// planFits reports whether the plan r succeeds with a KV pool.
func planFits(ctx context.Context, r Request, o runOpts) bool {
	rep, err := runSGLang(ctx, r, runOpts{vision: o.vision, notes: o.notes})
	return err == nil && rep.MaxTotalNumTokens > 0
}

// weightsMayFit is false when r's weights leave no free memory at all, so
// the plan must fail (nothing is left for the KV cache whatever the memory
// fraction): the cheap first check of fitsAt, before the whole plan.
func weightsMayFit(r Request) bool {
	spec, err := ResolveModel(r)
	if err != nil {
		return false
	}
	g, err := ResolveGPU(r)
	if err != nil {
		return false
	}
	tp, pp := max(r.TPSize, 1), max(r.PPSize, 1)
	mem, err := memoryReadings(r, spec, g, tp, pp, runOpts{})
	return err == nil && mem.post > 0
}

// inputError maps a configurator construction error to a FieldError.
func inputError(err error) error {
	var fe *sglang.FixError
	if errors.As(err, &fe) {
		field := strings.ReplaceAll(strings.TrimPrefix(fe.Flag, "--"), "-", "_")
		return &FieldError{Field: field, Err: err}
	}
	return &FieldError{Err: err}
}

func infeasible(rep *Report, err error) error {
	var fe *sglang.FixError
	if errors.As(err, &fe) {
		rep.FixFlag, rep.FixValue, rep.FixHint = fe.Flag, fe.Value, fe.Hint
	}
	if errors.Is(err, sglang.ErrInvalid) || errors.Is(err, sizing.ErrInvalid) {
		fe := &FieldError{Err: err}
		rep.Error = fe.Error()
		return fe
	}
	const prefix = "plan: infeasible: " // ErrInfeasible's text and ": "
	var msg string
	if fe, ok := err.(*sglang.FixError); ok && fe.Hint != "" {
		msg = prefix + fe.Err.Error() + " (" + fe.Hint + ")" // fe.Error() in one allocation
	} else {
		msg = prefix + err.Error()
	}
	rep.Error = msg[len(prefix):] // shares msg's bytes
	return &infeasibleError{err: err, msg: msg}
}

// infeasibleError is fmt.Errorf("%w: %w", ErrInfeasible, err) with the
// message built from the one the Report already holds.
type infeasibleError struct {
	err error
	msg string
}

func (e *infeasibleError) Error() string   { return e.msg }
func (e *infeasibleError) Unwrap() []error { return []error{ErrInfeasible, e.err} }

func fillResult(rep *Report, res *sglang.Result, c *sglang.Configurator) {
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
	rep.LogLines = append(rep.LogLines, res.Logs...)
	rep.Warnings = append(rep.Warnings, res.Warnings...)
	rep.MaxConcurrencyAtContextLength = concurrency(res, d)
	if res.MaxRunningRequests > 0 {
		rep.ReqToTokenBytes = int64(res.MaxRunningRequests+1) * int64(d.ContextLength+4+d.DraftTokens) * 4
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
}

// concurrency is max_concurrency_at_context_length: how many requests of
// the full context length fit at once on one rank (per DP worker):
//
//   - the full pool bounds it: ⌊tokens / ctx⌋ with ctx rounded up to a page;
//   - a hybrid SWA pool keeps only window + page tokens of a request, so it
//     adds ⌊swa / (window + page)⌋ (rounded to pages) as a second bound, and
//     an all-SWA pool is bounded by that alone;
//   - a mamba hybrid needs state slots: ⌊max_mamba_cache_size / ratio⌋;
//   - and never more than max_running_requests.
func concurrency(res *sglang.Result, d sglang.Derived) int64 {
	if res.MaxTotalNumTokens <= 0 || res.MaxRunningRequests <= 0 {
		return 0
	}
	page := d.PageSize
	perReq := sizing.CeilPage(int64(d.ContextLength), page)
	n := int64(res.MaxRunningRequests)
	if res.Hybrid {
		if res.FullMaxTotalNumTokens > 0 {
			n = min(n, res.FullMaxTotalNumTokens/perReq)
		}
		if d.SWAWindow > 0 {
			w := int64(d.SWAWindow + d.PageSize)
			n = min(n, res.SWAMaxTotalNumTokens/sizing.CeilPage(min(w, int64(d.ContextLength)), page))
		}
	} else {
		n = min(n, res.MaxTotalNumTokens/perReq)
	}
	if d.Mambaish && res.MambaSlotRatio > 0 {
		n = min(n, res.MaxMambaCacheSize/int64(res.MambaSlotRatio))
	}
	return max(n, 0)
}

// memory is the resolved memory readings of one rank.
type memory struct {
	pre, post, weights int64
	source             weights.Source
	notes              []string
}

func memoryReadings(req Request, spec *model.Spec, g gpu.GPU, tp, pp int, o runOpts) (memory, error) {
	var m memory
	world := tp * pp
	m.pre = int64(req.PreLoadFreeMemory)
	if m.pre == 0 {
		m.pre = gpu.PreLoadFreeBytes(g.MemoryMiB, world)
		if req.PostLoadFreeMemory == 0 {
			m.notes = append(m.notes, overheadNote(world))
		}
	}
	if m.pre <= 0 {
		return m, fieldErr("gpu_memory", "the GPU has no memory left after the runtime overhead")
	}
	if int64(req.PreLoadFreeMemory) > g.MemoryBytes() && g.MemoryBytes() > 0 {
		return m, fieldErr("pre_load_free_memory", "%s exceeds the GPU's total memory %s", req.PreLoadFreeMemory, units.Size(g.MemoryBytes()))
	}
	switch {
	case req.PostLoadFreeMemory > 0:
		m.post = int64(req.PostLoadFreeMemory)
		if m.post > m.pre {
			return m, fieldErr("post_load_free_memory", "%s exceeds the free memory before weight load %s", req.PostLoadFreeMemory, units.Size(m.pre))
		}
		m.weights, m.source = m.pre-m.post, weights.Measured
		if req.WeightsMemory > 0 {
			m.notes = append(m.notes, "weights_memory ignored: the measured free-memory readings already include the weights")
		}
		return m, nil
	case req.WeightsMemory > 0:
		m.weights, m.source = int64(req.WeightsMemory), weights.Given
	default:
		w, src, err := weightsPerRank(req, spec, tp, pp)
		if err != nil {
			return m, err
		}
		m.weights, m.source = w, src
		if src == weights.Estimated && spec.Multimodal {
			m.notes = append(m.notes, "the weight estimate counts the language model only; add the vision encoder with --weights-memory for exact numbers")
		}
		if src == weights.Estimated {
			m.notes = append(m.notes, o.weightsNote(w))
		}
	}
	m.post = m.pre - m.weights
	if m.post < 0 {
		m.post = 0
	}
	return m, nil
}

// overheadNotes are the modelled-overhead notes of one rank and of more
// than one (gpu.RuntimeOverheadMiB has two values), built once.
var overheadNotes = sync.OnceValue(func() [2]string {
	var out [2]string
	for i, world := range []int{1, 2} {
		out[i] = fmt.Sprintf("free memory before weight load is modelled as total − %d MiB runtime overhead (CUDA context, NCCL); pass --pre-load-free-memory and --post-load-free-memory from the engine log for exact numbers", gpu.RuntimeOverheadMiB(world))
	}
	return out
})

func overheadNote(world int) string {
	if world > 1 {
		return overheadNotes()[1]
	}
	return overheadNotes()[0]
}

// weightsPerRank reads safetensors headers when Model is a directory with a
// checkpoint, else estimates from the config.
func weightsPerRank(req Request, spec *model.Spec, tp, pp int) (int64, weights.Source, error) {
	if req.Model != "" && len(req.Config) == 0 {
		if st, err := os.Stat(req.Model); err == nil && st.IsDir() {
			if w, ok, err := weights.FromDir(req.Model, spec, weights.Layout{TP: tp, PP: pp}); err != nil {
				return 0, "", &FieldError{Field: "model", Err: err}
			} else if ok {
				return w, weights.Safetensors, nil
			}
		}
	}
	w, err := weights.PerRank(spec, weights.Layout{TP: tp, PP: pp})
	if err != nil {
		return 0, "", &FieldError{Field: "weights_memory", Err: fmt.Errorf("%w (pass --weights-memory)", err)}
	}
	return w, weights.Estimated, nil
}

// visionDims reads vision_config.num_hidden_layers and hidden_size from the
// request's raw config (0 when absent), as SGLang's
// adjust_mem_fraction_for_vlm does; none is true when the config has no
// vision_config at all.
func visionDims(req Request) (layers, hidden int, none bool) {
	raw := []byte(req.Config)
	if len(raw) == 0 {
		ref := req.Model
		if ref == "" {
			ref = catalog.Default
		}
		if st, err := os.Stat(ref); err == nil {
			p := ref
			if st.IsDir() {
				p = filepath.Join(ref, model.ConfigFile)
			}
			if fi, err := os.Stat(p); err == nil && fi.Size() < 16<<20 {
				raw, _ = os.ReadFile(p)
			}
		} else {
			raw, _ = catalog.Config(ref)
		}
	}
	var cfg struct {
		Vision *struct {
			Layers *float64 `json:"num_hidden_layers"`
			Hidden *float64 `json:"hidden_size"`
		} `json:"vision_config"`
	}
	if json.Unmarshal(raw, &cfg) != nil {
		return 0, 0, false
	}
	if cfg.Vision == nil {
		return 0, 0, true
	}
	if v := cfg.Vision.Layers; v != nil && *v > 0 && *v < 1e6 {
		layers = int(*v)
	}
	if v := cfg.Vision.Hidden; v != nil && *v > 0 && *v < 1e7 {
		hidden = int(*v)
	}
	return layers, hidden, false
}
