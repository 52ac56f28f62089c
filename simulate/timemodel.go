package simulate

import (
	"errors"
	"fmt"
	"math"
)

// TimeModel gives each step a duration. With ConstantStepS > 0 every step
// takes that long; otherwise the roofline: a decode step reads the weights
// and the KV of every request in the batch from HBM, a prefill computes
// 2 x active parameters FLOPs per new token plus causal attention, and a
// step takes the larger of the two plus StepOverheadS
// (docs/simulate.md#time-model). Figures are per tensor-parallel rank
// over the whole pipeline: a step passes every pipeline stage in turn, so
// pipeline parallelism does not shorten it as tensor parallelism does.
// Every time the model gives is an estimate.
type TimeModel struct {
	ConstantStepS float64 `json:"constant_step_s,omitempty"`

	// WeightBytes are read once per step.
	WeightBytes float64 `json:"weight_bytes,omitempty"`
	// KVBytesPerToken are read per context token per step.
	KVBytesPerToken float64 `json:"kv_bytes_per_token,omitempty"`
	// FLOPsPerToken is 2 x active parameters (per tensor-parallel rank).
	FLOPsPerToken float64 `json:"flops_per_token,omitempty"`
	// AttnFLOPsPerToken2 is 4 x layers x attention width (per
	// tensor-parallel rank):
	// attention FLOPs are this times new x (prefix + new/2).
	AttnFLOPsPerToken2 float64 `json:"attn_flops_coef,omitempty"`
	// HBMBytesPerS and PeakFLOPS are the GPU's datasheet figures; MBU and
	// MFU the fractions reached (0: 0.7 and 0.5).
	HBMBytesPerS  float64 `json:"hbm_bytes_per_s,omitempty"`
	PeakFLOPS     float64 `json:"peak_flops,omitempty"`
	MBU           float64 `json:"mbu,omitempty"`
	MFU           float64 `json:"mfu,omitempty"`
	StepOverheadS float64 `json:"step_overhead_s,omitempty"`
	// PipelineStages is the pipeline-parallel size (0: 1). The engines keep
	// up to this many micro-batches in flight, one per stage; the
	// simulation runs one batch at a time, but the GPU time the workload
	// needs (Summary.ComputeLoadEst) counts the stages working in parallel.
	PipelineStages int `json:"pipeline_stages,omitempty"`
	// Source names the GPU figures and where they come from.
	Source string `json:"source,omitempty"`
}

// Validate reports every problem with the model.
func (m TimeModel) Validate() error {
	var errs []error
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	for _, f := range []struct {
		n string
		v float64
	}{{"constant_step_s", m.ConstantStepS}, {"weight_bytes", m.WeightBytes}, {"kv_bytes_per_token", m.KVBytesPerToken},
		{"flops_per_token", m.FLOPsPerToken}, {"attn_flops_coef", m.AttnFLOPsPerToken2}, {"hbm_bytes_per_s", m.HBMBytesPerS},
		{"peak_flops", m.PeakFLOPS}, {"mbu", m.MBU}, {"mfu", m.MFU}, {"step_overhead_s", m.StepOverheadS}, {"pipeline_stages", float64(m.PipelineStages)}} {
		if bad(f.v) {
			errs = append(errs, fmt.Errorf("time model %s %v must be a finite number >= 0", f.n, f.v))
		}
	}
	if m.MBU > 1 || m.MFU > 1 {
		errs = append(errs, fmt.Errorf("time model mbu %v and mfu %v must be at most 1", m.MBU, m.MFU))
	}
	if m.ConstantStepS == 0 && (m.HBMBytesPerS == 0 || m.PeakFLOPS == 0) {
		errs = append(errs, errors.New("time model: give constant_step_s > 0, or the roofline's hbm_bytes_per_s and peak_flops"))
	}
	return errors.Join(errs...)
}

// Label says which model is used.
func (m TimeModel) Label() string {
	if m.ConstantStepS > 0 {
		return fmt.Sprintf("constant %gs per step (estimate)", m.ConstantStepS)
	}
	s := "roofline (estimate)"
	if m.Source != "" {
		s += ": " + m.Source
	}
	return s
}

func (m TimeModel) step(st stepInfo) float64 {
	dt, _, _ := m.stepWork(st)
	return dt
}

// stepWork is the step's duration and its unamortized compute and KV-read
// time (work).
func (m TimeModel) stepWork(st stepInfo) (dt, comp, kv float64) {
	if m.ConstantStepS > 0 {
		return m.ConstantStepS, 0, 0
	}
	comp, kv = m.work(st)
	mem := m.WeightBytes/(m.HBMBytesPerS*m.mbu()) + kv
	return m.StepOverheadS + max(mem, comp), comp, kv
}

func (m TimeModel) mbu() float64 {
	if m.MBU == 0 {
		return 0.7
	}
	return m.MBU
}

func (m TimeModel) mfu() float64 {
	if m.MFU == 0 {
		return 0.5
	}
	return m.MFU
}

// work is the part of a step's time that no batching amortizes: its
// compute (the new tokens and their attention) and its reads of the
// batch's KV. Any pool and any batch size spend at least this much GPU
// time on the step's tokens.
func (m TimeModel) work(st stepInfo) (comp, kv float64) {
	if m.ConstantStepS > 0 || m.PeakFLOPS == 0 || m.HBMBytesPerS == 0 {
		return 0, 0
	}
	comp = (m.FLOPsPerToken*float64(st.newTokens) + m.AttnFLOPsPerToken2*st.attnWork) / (m.PeakFLOPS * m.mfu())
	kv = m.KVBytesPerToken * float64(st.kvRead) / (m.HBMBytesPerS * m.mbu())
	return comp, kv
}

// tokenCompute is the compute time of n tokens' dense FLOPs.
func (m TimeModel) tokenCompute(n int64) float64 {
	if m.ConstantStepS > 0 || m.PeakFLOPS == 0 {
		return 0
	}
	return m.FLOPsPerToken * float64(n) / (m.PeakFLOPS * m.mfu())
}
