package sglang

import (
	"fmt"

	"github.com/kvcfg/kvcfg/model"
)

// The engine contract (package engine): Plan, ResolveProfile,
// AcceptedKVDTypes, MaxConcurrency and Patterns. Plan is New, then
// Configure; a loop of plans reuses one Configurator (Reset) and one
// Result (ConfigureInto) instead.

// Plan sizes SGLang's KV cache for model spec launched with in (in.Spec is
// set to spec): New(in), then Configure(in.PreLoadFreeBytes). A refusal
// returns the Result filled up to it and an *engine.Refusal naming the
// flag to change; bad input returns no Result.
func Plan(spec *model.Spec, in Input) (*Result, error) {
	if spec == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalid)
	}
	in.Spec = spec
	c, err := New(in)
	if err != nil {
		return nil, err
	}
	return c.Configure(in.PreLoadFreeBytes)
}

// ResolveProfile maps a version string to a profile, with its Reason as
// the note: "" gives DefaultEra; "latest", "main" and "nightly" give
// EraLatest; an era's own name gives that era; any other version maps to
// the era whose releases include it. Versions before 0.4.0 use Era04, the
// oldest profile, and say so.
func ResolveProfile(version string) (Profile, string, error) {
	p, err := cachedProfile(version)
	return p, p.Reason, err
}

// AcceptedKVDTypes returns the --kv-cache-dtype strings SGLang accepts, in
// its order. Every profile accepts the same names (ResolveKV refuses those
// a platform lacks), so p is not read.
func AcceptedKVDTypes(_ Profile) []string { return acceptedKVDTypes() }

// MaxConcurrency is res.MaxConcurrency(contextLen) as a float64: how many
// requests of contextLen tokens can be resident at once on one rank.
func MaxConcurrency(res *Result, contextLen int) float64 {
	return float64(res.MaxConcurrency(contextLen))
}
