package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	sglangengine "github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/plan"
)

// Options are the simulation's own knobs; the plan's flags size the
// server.
type Options struct {
	// MaxPrefillTokens and ScheduleConservativeness are SGLang's
	// --max-prefill-tokens and --schedule-conservativeness.
	MaxPrefillTokens         int     `json:"max_prefill_tokens,omitempty"`
	ScheduleConservativeness float64 `json:"schedule_conservativeness,omitempty"`
	// StepTimeS > 0 replaces the roofline with a constant step time.
	StepTimeS float64 `json:"step_time_s,omitempty"`
	// MBU, MFU and StepOverheadS tune the roofline (0: 0.7, 0.5, 3 ms).
	MBU           float64 `json:"mbu,omitempty"`
	MFU           float64 `json:"mfu,omitempty"`
	StepOverheadS float64 `json:"step_overhead_s,omitempty"`
	// TimeseriesEvery records a point every this many steps (0: none).
	TimeseriesEvery int `json:"timeseries_every,omitempty"`
	// DisableOverlapSchedule is SGLang's --disable-overlap-schedule: the
	// non-overlap loop instead of the overlap scheduler, SGLang's default.
	DisableOverlapSchedule bool `json:"disable_overlap_schedule,omitempty"`
	// IgnoreEOS sends every request with ignore_eos (SGLang: admitted by
	// add_one_req_ignore_eos when the radix cache is disabled).
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// Validate reports every problem with the options.
func (o Options) Validate() error {
	var errs []error
	if o.MaxPrefillTokens < 0 || o.TimeseriesEvery < 0 {
		errs = append(errs, fmt.Errorf("max_prefill_tokens %d and timeseries_every %d must not be negative", o.MaxPrefillTokens, o.TimeseriesEvery))
	}
	for _, f := range []struct {
		n string
		v float64
	}{{"schedule_conservativeness", o.ScheduleConservativeness}, {"step_time_s", o.StepTimeS}, {"mbu", o.MBU}, {"mfu", o.MFU}, {"step_overhead_s", o.StepOverheadS}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v must be a finite number >= 0", f.n, f.v))
		}
	}
	if o.MBU > 1 || o.MFU > 1 {
		errs = append(errs, fmt.Errorf("mbu %v and mfu %v must be at most 1", o.MBU, o.MFU))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// defaultStepOverheadS is the roofline's fixed cost per step (scheduler
// and kernel launches; docs/simulate.md#time-model).
const defaultStepOverheadS = 0.003

// ConfigFromReport returns the server a plan describes: the pool sizes and
// scheduler settings of rep (as planned for req) and a time model from the
// GPU's datasheet figures and the model spec.
func ConfigFromReport(req plan.Request, rep *plan.Report, spec *model.Spec, o Options) (Config, error) {
	if err := o.Validate(); err != nil {
		return Config{}, err
	}
	if rep == nil {
		return Config{}, fmt.Errorf("%w: no plan", ErrConfig)
	}
	var c Config
	switch rep.Engine {
	case plan.EngineSGLang:
		c = sglangConfig(req, rep, o)
	case plan.EngineVLLM:
		c = Config{Engine: EngineVLLM, NumGPUBlocks: int(rep.NumGPUBlocks), BlockSize: rep.BlockSize, MaxModelLen: rep.MaxModelLen,
			MaxNumSeqs: req.MaxNumSeqs, MaxNumBatchedTokens: req.MaxNumBatchedTokens, DisablePrefixCaching: req.DisableRadixCache}
		// vLLM's OpenAI-server defaults (EngineArgs.get_batch_defaults).
		big := rep.GPUMemory >= 70<<30 && !strings.HasPrefix(strings.ToUpper(rep.GPU), "A100")
		if c.MaxNumSeqs == 0 {
			c.MaxNumSeqs = 256
			if big {
				c.MaxNumSeqs = 1024
			}
		}
		if c.MaxNumBatchedTokens == 0 {
			c.MaxNumBatchedTokens = 2048
			if big {
				c.MaxNumBatchedTokens = 8192
			}
		}
	default:
		return Config{}, fmt.Errorf("%w: engine %q is not simulated (use --engine sglang or vllm)", ErrConfig, rep.Engine)
	}
	if rep.DPSize > 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("dp_size %d: this is one data-parallel worker's pool; give it about 1/%d of the traffic (divide --rate)", rep.DPSize, rep.DPSize))
	}
	c.TimeseriesEvery = o.TimeseriesEvery
	if o.StepTimeS > 0 {
		c.Time = TimeModel{ConstantStepS: o.StepTimeS}
	} else {
		p, ok := gpu.PerfOf(rep.GPU)
		if !ok {
			return Config{}, fmt.Errorf("%w: kvcfg has no bandwidth or FLOPS figures for GPU %q; give --step-time (seconds per scheduler step)", ErrConfig, rep.GPU)
		}
		// A step passes every pipeline stage in turn: per tensor-parallel
		// rank it reads all the stages' weights and KV and computes all
		// the layers. Pipeline parallelism does not shorten it.
		tp, pp := float64(max(rep.TPSize, 1)), max(rep.PPSize, 1)
		peak, dt := p.BF16FLOPS, "BF16"
		if spec != nil && spec.Quant != nil && spec.Quant.WeightBits == 8 && p.FP8FLOPS > 0 {
			peak, dt = p.FP8FLOPS, "FP8"
		}
		c.Time = TimeModel{HBMBytesPerS: p.HBMBytesPerS, PeakFLOPS: peak, MBU: o.MBU, MFU: o.MFU, StepOverheadS: o.StepOverheadS,
			WeightBytes: float64(rep.WeightsBytes) * float64(pp), KVBytesPerToken: rep.CellSizeBytes * float64(pp),
			Source: fmt.Sprintf("%s %s peak; %s", rep.GPU, dt, p.Source)}
		if pp > 1 {
			c.Time.PipelineStages = pp
			c.Notes = append(c.Notes, fmt.Sprintf("pp_size %d: a step passes the %d pipeline stages in turn, so it takes as long as on one stage group with all the layers (pipeline parallelism does not shorten it as tensor parallelism does); the engine keeps up to %d micro-batches in flight, the simulation one: its times are a pessimistic estimate, while compute_load_est counts every stage busy", pp, pp, pp))
		}
		if c.Time.StepOverheadS == 0 {
			c.Time.StepOverheadS = defaultStepOverheadS
		}
		if spec != nil {
			c.Time.FLOPsPerToken = 2 * float64(spec.Params.Active) / tp
			c.Time.AttnFLOPsPerToken2 = 4 * float64(spec.NumLayers) * float64(spec.NumAttentionHeads*spec.HeadDim) / tp
		}
	}
	if t := rep.HostTier; t != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("host KV tier (%s, %d tokens per rank) is not simulated: prefixes evicted from the GPU pool are not reloaded from host memory", t.Option, t.Tokens))
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// sglangConfig is the SGLang server a plan describes: its pools, scheduler
// settings and loop (the overlap scheduler unless disabled or a Mamba model
// rules it out; the radix eviction of the plan's version).
func sglangConfig(req plan.Request, rep *plan.Report, o Options) Config {
	c := Config{Engine: EngineSGLang, MaxTotalNumTokens: int(rep.MaxTotalNumTokens), PageSize: rep.PageSize,
		MaxRunningRequests: rep.MaxRunningRequests, ChunkedPrefillSize: rep.ChunkedPrefillSize,
		DisableRadixCache: req.DisableRadixCache, ContextLength: rep.ContextLength,
		MaxPrefillTokens: o.MaxPrefillTokens, ScheduleConservativeness: o.ScheduleConservativeness,
		OverlapSchedule: !o.DisableOverlapSchedule, EvictShortfall: sglangMain(req.SGLangVersion), IgnoreEOS: o.IgnoreEOS}
	if rep.FullMaxTotalNumTokens > 0 {
		c.MaxTotalNumTokens = int(rep.FullMaxTotalNumTokens)
		c.Notes = append(c.Notes, fmt.Sprintf("hybrid SWA: the full pool (%d tokens) is simulated; the sliding-window pool (%d tokens) and its admission test are not", rep.FullMaxTotalNumTokens, rep.SWAMaxTotalNumTokens))
	}
	if rep.MaxMambaCacheSize > 0 && c.OverlapSchedule && !c.DisableRadixCache && req.SpeculativeAlgorithm == "" {
		// A Mamba model with the radix cache and no speculative
		// decoding runs without the overlap scheduler (the no_buffer
		// strategy; docs/sglang.md#defaults-radix-cache-and-overlap).
		c.OverlapSchedule = false
	}
	if rep.MaxMambaCacheSize > 0 {
		// The plan's max_running_requests already counts the state
		// slots a request needs.
		c.Notes = append(c.Notes, fmt.Sprintf("Mamba state slots (%d): running requests are capped as the plan says (%d); prefix hits that SGLang limits to cached Mamba states are not", rep.MaxMambaCacheSize, rep.MaxRunningRequests))
	}
	if u := rep.UnifiedMemoryPool; u != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("unified memory pool: the token pool is simulated at its sized %d tokens; SGLang lets it grow to %d while %s slots are idle (one %s slot = %.1f tokens)",
			u.Full.Sized, u.Full.MaxSlots, u.Other.Name, u.Other.Name, u.TokensPerSlot()))
	}
	if req.ChunkedPrefillSize < 0 {
		c.ChunkedPrefillSize = 0
	}
	return c
}

// sglangMain reports whether an SGLang version string names the newest
// main rather than a release: no version, or a name such as latest, main
// or nightly. Its radix eviction frees only the shortfall
// (docs/simulate.md#radix-cache).
func sglangMain(version string) bool {
	if version == "" {
		return true
	}
	if _, err := sglangengine.ParseVersion(version); err == nil {
		return false
	}
	p, _, err := sglangengine.ResolveProfile(version)
	return err == nil && p.Era == sglangengine.EraLatest
}

// FromPlan plans req (plan.Run, the plan `kvcfg plan` prints) and returns
// the server it describes, with the plan.
func FromPlan(ctx context.Context, req plan.Request, o Options) (Config, *plan.Report, error) {
	rep, err := plan.Run(ctx, req)
	if err != nil {
		return Config{}, rep, err
	}
	spec, err := plan.ResolveModel(req)
	if err != nil {
		return Config{}, rep, err
	}
	c, err := ConfigFromReport(req, rep, spec, o)
	return c, rep, err
}

// CompareRow is one plan of a comparison and its simulation.
type CompareRow struct {
	// Values are the axis values of this plan.
	Values map[string]string `json:"values"`
	// Config is the simulated server; Summary the outcome.
	Config  *Config  `json:"config,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
	// Error says why the plan or the simulation failed.
	Error string `json:"error,omitempty"`
}

// Compare plans every combination of axes on top of base (plan.Sweep) and
// replays the same workload (a fresh Source from newSource per plan)
// through each.
func Compare(ctx context.Context, base plan.Request, axes []plan.Axis, o Options, newSource func() (Source, error)) ([]CompareRow, error) {
	rows, err := plan.Sweep(ctx, base, axes)
	if err != nil {
		return nil, err
	}
	out := make([]CompareRow, len(rows))
	for i, r := range rows {
		out[i].Values = r.Values
		if r.Error != "" {
			out[i].Error = r.Error
			continue
		}
		spec, err := plan.ResolveModel(r.Request())
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		c, err := ConfigFromReport(r.Request(), r.Report, spec, o)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		src, err := newSource()
		if err != nil {
			return nil, err
		}
		sum, err := Run(ctx, c, src)
		if err != nil {
			if errors.Is(err, ErrWorkload) || ctx.Err() != nil {
				return nil, err
			}
			out[i].Error = err.Error()
			continue
		}
		out[i].Config, out[i].Summary = &c, sum
	}
	return out, nil
}
