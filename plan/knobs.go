package plan

import (
	"strconv"
	"strings"
)

// Knobs are the settings that size an engine's KV cache for a plan, as
// request keys: what fit searches and advice changes.
type Knobs struct {
	// Share is the memory-share key (mem_fraction_static,
	// gpu_memory_utilization, free_gpu_memory_fraction); "" when the plan
	// has no share to raise (its budget was given in bytes).
	Share string
	// Current is the share the plan used; SafeMax the largest the engine
	// runs with safely (activations and CUDA graphs need the rest).
	Current, SafeMax float64
	// RequestCap is the running-request cap key (max_running_requests,
	// max_num_seqs, max_batch_size).
	RequestCap string
	// FP8 is the engine's fp8 KV cache dtype ("fp8_e4m3", "fp8").
	FP8 string
}

// KnobsOf returns the knobs of the engine that planned rep (zero for an
// unknown engine).
func KnobsOf(rep *Report) Knobs {
	if rep == nil {
		return Knobs{}
	}
	e, ok := engines[rep.Engine]
	if !ok {
		return Knobs{}
	}
	k := e.knobs(Request{Engine: rep.Engine}, rep)
	return Knobs{Share: k.share, Current: k.current, SafeMax: k.shareMax, RequestCap: k.requestCap, FP8: k.fp8}
}

// FormatFloat writes a flag value without float noise: the shortest
// decimal of at most 12 significant digits (0.7343999999999999 → 0.7344),
// so that the value printed is the value planned.
func FormatFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', 12, 64)
	if strings.ContainsAny(s, "e") {
		r, _ := strconv.ParseFloat(s, 64)
		s = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return s
}
