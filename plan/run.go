package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	kvengine "github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/units"
	"github.com/kvcfg/kvcfg/weights"
)

// Run plans the KV cache for req. Input problems are *FieldError values
// (errors.Is(err, ErrInvalid)); a plan the engine could not start with
// returns the partial Report and an error wrapping ErrInfeasible and the
// engine-equivalent error (an *engine.Refusal naming the flag to
// change when one does).
func Run(ctx context.Context, req Request) (*Report, error) {
	return run(ctx, req, runOpts{advise: true})
}

// run is Run with the options o (a request's NoAdvice turns the advice off).
func run(ctx context.Context, req Request, o runOpts) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	given := req.KVCacheDType
	req = req.Normalized()
	if errs := req.check(true); len(errs) > 0 {
		return nil, errors.Join(errs...) // Validate's error
	}
	o.advise = o.advise && !req.NoAdvice
	if given != req.KVCacheDType {
		return planKVDType(ctx, &req, given, o)
	}
	return planValid(ctx, &req, o)
}

// planValid plans a request that is valid and normalized: the common
// inputs (begin), then the engine's adapter. Here and below a plan reads
// the request through a pointer (it is large) and never changes it.
func planValid(ctx context.Context, req *Request, o runOpts) (*Report, error) {
	m, g, rep, err := begin(ctx, req, req.Engine)
	if err != nil {
		return nil, err
	}
	rep, err = engines[req.Engine].plan(ctx, *req, m, g, rep, o) // a copy: an interface call would move *req to the heap
	err = withDTypeHint(req, err)
	if rep == nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, ErrInfeasible) {
		return rep, err
	}
	judge(rep, req, err != nil)
	if o.advise && rep.Verdict != VerdictServes {
		advise(ctx, *req, m, rep, err)
	}
	if o.advise && rep.Verdict == VerdictMisses {
		liftLimit(ctx, *req, m, rep)
	}
	return rep, err
}

// engine is one inference engine as plan drives it. Each engine has one
// adapter file (sglang.go, vllm.go) that maps a Request onto the engine
// package's input, fills the Report from its result and registers itself;
// everything else in plan is common to all engines.
type engine interface {
	// plan sizes the KV cache of req (valid and normalized) for model m
	// on GPU g, filling rep, whose common inputs begin has set. An engine
	// refusal returns the partial report and an error wrapping
	// ErrInfeasible; bad input a *FieldError.
	plan(ctx context.Context, req Request, m *catalog.Model, g gpu.GPU, rep *Report, o runOpts) (*Report, error)
	// knobs are the settings advice may change for req, whose plan is rep.
	knobs(req Request, rep *Report) knobs
	// capacity is how many requests of contextLen tokens the pools of rep
	// (a plan of spec by this engine) hold at once, by the engine's rule
	// and without its running-request cap.
	capacity(rep *Report, spec *model.Spec, contextLen int) int64
}

// Capacity is how many requests of contextLen tokens the KV pools of rep
// hold at once, by the rule of the engine that planned it and without its
// running-request cap (0 for a report without pools or of an unknown
// engine). spec is the model planned.
func Capacity(rep *Report, spec *model.Spec, contextLen int) int64 {
	if rep == nil || spec == nil {
		return 0
	}
	e, ok := engines[rep.Engine]
	if !ok {
		return 0
	}
	return e.capacity(rep, spec, contextLen)
}

// engines holds the registered adapters by engine name.
var engines = map[string]engine{}

// register adds an engine's adapter; each adapter file calls it from init.
func register(name string, e engine) { engines[name] = e }

// Engines lists the engines plan knows, sorted.
func Engines() []string {
	out := make([]string, 0, len(engines))
	for n := range engines {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// runOpts are what one plan shares with the plans around it. advise says
// whether a plan that does not serve its target searches for the change
// that makes it serve (advise, advice.go): Run sets it, a sweep's plans and
// the plans of the search itself do not.
type runOpts struct {
	advise bool
	// scratch, when set, is the configurator and result the plan resets
	// and uses instead of allocating them (one per sweep worker; the plans
	// an advice search runs inside a plan do not get it).
	scratch *scratch
}

// weightsNotes holds the weight-estimate notes built so far by weights
// per rank, at most 1,024 of them: a process plans a few models
// at a few layouts, again and again (a sweep, a server, advice).
var weightsNotes = kvengine.NewMemo[int64, string](1024)

// weightsNote is the note of a weight estimate of w bytes per rank.
func weightsNote(w int64) string {
	if v, ok := weightsNotes.Load(w); ok {
		return v
	}
	const head, tail = "weights estimated from the config: ", " per rank (parameter count × weight dtype; not counted: vocabulary padding, buffers, MTP draft layers and a vision encoder); pass a model directory or Hub id for the checkpoint's exact bytes, --weights-memory, or the measured free-memory readings"
	b := make([]byte, 0, len(head)+24+len(tail)) // 24: the longest size units spells
	b = append(b, head...)
	b = units.AppendBytes(b, w)
	note := string(append(b, tail...))
	weightsNotes.Store(w, note)
	return note
}

// OpenModel returns the model a request names, read and parsed once: the
// request's Resolved model, else its inline config, else the catalog entry,
// config path, model directory or HF id in Model (the local HF cache,
// then the Hub when the request has a Resolver; default: catalog.Default).
func OpenModel(req Request) (*catalog.Model, error) {
	return openModel(context.Background(), &req)
}

// openModel is OpenModel under ctx (a Hub resolver's requests end with it).
func openModel(ctx context.Context, req *Request) (*catalog.Model, error) {
	if req.Resolved != nil {
		return req.Resolved, nil
	}
	if len(req.Config) > 0 {
		m, err := catalog.Inline(req.Model, req.Config)
		if err != nil {
			return nil, &FieldError{Field: "config", Err: err}
		}
		return m, nil
	}
	ref := req.Model
	if ref == "" {
		ref = catalog.Default
	}
	m, err := catalog.OpenContext(ctx, ref, catalog.Options{Revision: req.Revision, Resolver: req.Resolver})
	if err != nil {
		return nil, &FieldError{Field: "model", Err: err}
	}
	return m, nil
}

// ResolveModel returns the parsed spec of the model a request names
// (OpenModel's Spec).
func ResolveModel(req Request) (*model.Spec, error) {
	m, err := OpenModel(req)
	if err != nil {
		return nil, err
	}
	return m.Spec, nil
}

// ResolveGPU returns the GPU a request names (default H100-80GB), with
// gpu_memory and platform overrides applied.
func ResolveGPU(req Request) (gpu.GPU, error) {
	g, err := resolveGPU(&req)
	g.Aliases, g.SMINames = slices.Clone(g.Aliases), slices.Clone(g.SMINames)
	return g, err
}

// defaultGPU is the catalog's DefaultGPU, looked up once (TestDefaultPlan
// fails if the catalog lacks it).
var defaultGPU = sync.OnceValue(func() gpu.GPU {
	g, _ := gpu.Lookup(DefaultGPU)
	return g
})

// namedGPUs holds the catalog GPUs looked up so far by the name as a
// request gives it, at most 256 of them, shared as the default
// GPU is: a sweep or a server plans the same few GPUs again and again.
var namedGPUs = kvengine.NewMemo[string, gpu.GPU](256)

// lookupGPU is gpu.Lookup for a plan: the GPU's Aliases and SMINames are
// shared with every plan of the same name.
func lookupGPU(name string) (gpu.GPU, error) {
	if g, ok := namedGPUs.Load(name); ok {
		return g, nil
	}
	g, err := gpu.Lookup(name)
	if err == nil {
		namedGPUs.Store(name, g)
	}
	return g, err
}

// resolveGPU is ResolveGPU for a plan, which reads the GPU and never
// changes its slices: the Aliases and SMINames of the default GPU and of
// a named one (lookupGPU) are shared.
func resolveGPU(req *Request) (gpu.GPU, error) {
	var g gpu.GPU
	switch {
	case req.GPU != "":
		var err error
		g, err = lookupGPU(req.GPU)
		if err != nil {
			return g, &FieldError{Field: "gpu", Err: err}
		}
	case req.GPUMemory > 0:
		g = gpu.GPU{Name: "custom", Vendor: "nvidia", Platform: "cuda", Description: "custom GPU"}
	default:
		g = defaultGPU()
	}
	if req.GPUMemory > 0 {
		// The memory the user read is the total every budget starts from.
		g.MemoryMiB = int64(req.GPUMemory) >> 20
		g.CUDATotalMiB, g.CUDATotalSource = g.MemoryMiB, "given: --gpu-memory"
		if g.MemoryMiB == 0 {
			return g, fieldErr("gpu_memory", "%s is less than 1 MiB", req.GPUMemory)
		}
	} else if err := g.CheckDiscrete(); err != nil {
		return g, &FieldError{Field: "gpu", Err: err}
	}
	if req.Platform != "" && req.Platform != g.Platform && g.Name != "custom" {
		vendor := strings.ToUpper(g.Vendor)
		if g.Vendor == "nvidia" {
			vendor = "NVIDIA"
		}
		return g, fieldErr("platform", "%s does not run on the %s %s (platform %s): leave --platform out, or describe a custom GPU with --gpu-memory and no --gpu", req.Platform, vendor, g.Name, g.Platform)
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
func begin(ctx context.Context, req *Request, engine string) (*catalog.Model, gpu.GPU, *Report, error) {
	m, err := openModel(ctx, req)
	if err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	if m, err = withLoadDType(req, m); err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	spec := m.Spec
	g, err := resolveGPU(req)
	if err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, gpu.GPU{}, nil, err
	}
	tp, pp, dp := max(req.TPSize, 1), max(req.PPSize, 1), max(req.DPSize, 1)
	rep := &Report{
		Inputs: Inputs{Engine: engine, Model: spec.Name, ModelRevision: m.Revision, Architecture: spec.Architecture, GPU: g.Name, GPUMemory: g.MemoryBytes(),
			Platform: g.Platform, TPSize: tp, PPSize: pp, DPSize: dp, NumGPUs: tp * pp * dp, KVCacheDType: req.KVCacheDType},
		KVSettings: KVSettings{AttentionKind: spec.AttentionLabel()},
		Logs:       Logs{LogLines: []string{}},
	}
	if rep.KVCacheDType == "" {
		rep.KVCacheDType = dtype.Auto
	}
	if len(spec.Warnings) > 0 {
		rep.Warnings = append(make([]string, 0, len(spec.Warnings)+warningsCap), spec.Warnings...)
	}
	if req.GPU != "" {
		if n := gpu.Note(req.GPU); n != "" {
			rep.warn(n)
		}
	}
	return m, g, rep, nil
}

// warningsCap is the room a report's first warning makes for more: a plan
// without measured memory readings has two notes, often a third.
const warningsCap = 4

// warn appends warnings to rep's Warnings, making room for a few more
// with the first.
func (rep *Report) warn(w ...string) {
	if len(w) == 0 {
		return
	}
	if rep.Warnings == nil {
		rep.Warnings = make([]string, 0, max(len(w), warningsCap))
	}
	rep.Warnings = append(rep.Warnings, w...)
}

// refuse records an engine refusal in rep (words: the engine's own
// message) and returns the error Run gives for it: ErrInfeasible and err,
// worded "plan: infeasible: <words>".
func refuse(rep *Report, err error, words string) error {
	rep.Error = words
	return &infeasibleError{err: err, msg: "plan: infeasible: " + words}
}

// infeasibleError is fmt.Errorf("%w: %w", ErrInfeasible, err) with the
// message built from the one the Report already holds.
type infeasibleError struct {
	err error
	msg string
}

func (e *infeasibleError) Error() string   { return e.msg }
func (e *infeasibleError) Unwrap() []error { return []error{ErrInfeasible, e.err} }

// dirRead is what a model directory's safetensors headers gave.
type dirRead struct {
	hdrs []safetensors.Header
	ok   bool
	err  error
}

// dirReads caches each model directory's headers by its *catalog.Model
// (which catalog.Open keeps per reference), so a model is read once per
// process, as its config is.
var dirReads sync.Map // *catalog.Model → *dirRead

func dirHeaders(m *catalog.Model) *dirRead {
	if d, ok := dirReads.Load(m); ok {
		return d.(*dirRead)
	}
	hdrs, ok, err := weights.ReadDir(m.Dir)
	d, _ := dirReads.LoadOrStore(m, &dirRead{hdrs, ok, err})
	return d.(*dirRead)
}

// weightsPerRank sums the safetensors headers of the model's checkpoint
// (read from the Hub, or in its directory) when it has them, else
// estimates from the config. note is a warning for the report: a partial
// download in the directory is estimated instead, and says so. The
// checkpoint's MTP (NextN) layers count when the request's speculative
// algorithm drafts with them (EAGLE, NEXTN or MTP on a model that has
// them): the engine loads them before it reads the free memory.
func weightsPerRank(m *catalog.Model, req *Request, tp, pp int) (w int64, src weights.Source, note string, err error) {
	spec := m.Spec
	l, err := loadLayout(req, spec, tp, pp)
	if err != nil {
		return 0, "", "", err
	}
	if m.Headers != nil {
		w := weights.FromHeaders(m.Headers, spec, l)
		return w, weights.HubSafetensors + weights.Source(":"+m.Name+"@"+m.Revision), "", nil
	}
	if m.Dir != "" {
		d := dirHeaders(m)
		w, ok, err := int64(0), d.ok, d.err
		if ok && err == nil {
			w = weights.FromHeaders(d.hdrs, spec, l)
		}
		var pe *weights.PartialError
		switch {
		case errors.As(err, &pe):
			note = strings.TrimPrefix(pe.Error(), "weights: ") + "; weights estimated from the config instead"
			if pe.TotalSize > 0 {
				note += " (the index's total_size: " + units.Size(pe.TotalSize).String() + " for all ranks)"
			}
		case err != nil:
			return 0, "", "", &FieldError{Field: "model", Err: err}
		case ok:
			return w, weights.Safetensors, "", nil
		}
	}
	l.Draft = false // the estimate leaves MTP layers out (weightsNote says so)
	w, err = weights.PerRank(spec, l)
	if err != nil {
		return 0, "", "", &FieldError{Field: "weights_memory", Err: fmt.Errorf("%w (pass --weights-memory)", err)}
	}
	return w, weights.Estimated, note, nil
}

// draftsWithMTP reports whether the request's speculative decoding loads
// the checkpoint's own MTP layers as its draft model.
func draftsWithMTP(req *Request, spec *model.Spec) bool {
	if spec.NumNextNPredictLayers <= 0 {
		return false
	}
	switch strings.ToUpper(strings.TrimSpace(req.SpeculativeAlgorithm)) {
	case "EAGLE", "NEXTN", "MTP":
		return true
	}
	return false
}
