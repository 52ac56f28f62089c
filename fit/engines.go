package fit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/plan"
)

// RunEngines is Run on each of engines (o.Base's engine replaced) with the
// results merged: every engine's configurations in one list, cheapest
// first as Run orders them (GPU count, then most headroom; ties keep the
// engine order), the skips and plan counts added up, and, when no engine
// serves the target, the closest miss of the engine that comes nearest
// (as Run picks its own: a layout that starts, then the larger share of
// the target held, then fewer GPUs). Inputs an
// engine does not take are dropped for that engine (plan.Request.ForEngine);
// one that none takes is an error, as every engine's invalid input is.
func RunEngines(ctx context.Context, o Options, engines []string) (*Result, error) {
	if len(engines) == 0 {
		return Run(ctx, o)
	}
	if err := checkEngines(&o, engines); err != nil {
		return nil, err
	}
	var out *Result
	var misses []*Miss
	var skipped []Skip
	for _, e := range engines {
		eo := o
		eo.Base = o.Base.ForEngine(e)
		eo.KVCacheDTypes, skipped = engineKVCacheDTypes(e, o.KVCacheDTypes, skipped)
		if len(o.KVCacheDTypes) > 0 && len(eo.KVCacheDTypes) == 0 {
			continue
		}
		res, err := Run(ctx, eo)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = res
			out.Target.Engine = strings.Join(engines, ",")
		} else {
			out.Configurations = append(out.Configurations, res.Configurations...)
			out.Skipped = append(out.Skipped, res.Skipped...)
			out.Plans += res.Plans
		}
		if res.ClosestMiss != nil {
			misses = append(misses, res.ClosestMiss)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%w: no engine of %s takes the KV dtypes %s", ErrInvalid, strings.Join(engines, ", "), strings.Join(o.KVCacheDTypes, ", "))
	}
	out.Target.KVCacheDTypes = o.KVCacheDTypes
	if len(o.KVCacheDTypes) == 0 {
		out.Target.KVCacheDTypes = []string{"auto"}
	}
	out.Skipped = append(out.Skipped, skipped...)
	slices.SortStableFunc(out.Configurations, cheaper)
	out.ClosestMiss = nil
	if len(out.Configurations) == 0 && len(misses) > 0 {
		best := misses[0]
		for _, m := range misses[1:] {
			if m.score.better(best.score) {
				best = m
			}
		}
		out.ClosestMiss = best
	}
	return out, nil
}

// checkEngines lowers and trims engines in place and checks them, the flags
// set in o.Base and o's KV dtypes: each must be taken by some engine of
// engines.
func checkEngines(o *Options, engines []string) error {
	for i, e := range engines {
		engines[i] = strings.ToLower(strings.TrimSpace(e))
		if !slices.Contains(plan.Engines(), engines[i]) {
			return fmt.Errorf("%w: engines: unknown engine %q (accepted: %s)", ErrInvalid, e, strings.Join(plan.Engines(), ", "))
		}
	}
	for _, f := range plan.Flags() {
		if v, _ := o.Base.FieldString(f.Key); v == "" || f.Key == "engine" || f.Key == "context_length" {
			continue
		}
		if !slices.ContainsFunc(engines, f.Accepts) {
			return fmt.Errorf("%w: %s: %s is not a flag of the engines searched (%s)", ErrInvalid, f.Key, f.Name, strings.Join(engines, ", "))
		}
	}
	// Each KV dtype must be one some engine takes; each engine searches
	// the dtypes it takes.
	takes := func(e, d string) bool { return (plan.Request{Engine: e}).CheckKVCacheDType(d) == nil }
	for _, d := range o.KVCacheDTypes {
		if !slices.ContainsFunc(engines, func(e string) bool { return takes(e, d) }) {
			return fmt.Errorf("%w: %w", ErrInvalid, (plan.Request{Engine: engines[0]}).CheckKVCacheDType(d))
		}
	}
	return nil
}

// engineKVCacheDTypes returns the KV dtypes of dtypes that engine e takes,
// in its spelling and each storage once, and appends a Skip to skipped for
// each it does not.
func engineKVCacheDTypes(e string, dtypes []string, skipped []Skip) ([]string, []Skip) {
	var kept []string
	for _, d := range dtypes {
		if err := (plan.Request{Engine: e}).CheckKVCacheDType(d); err == nil {
			// In the engine's spelling, each storage once (fp8 and
			// fp8_e4m3 are one); a bf16 or fp16 that the engine plans
			// as auto stays as given, so that the plan checks the model.
			if ed := (plan.Request{Engine: e}).EngineKVCacheDType(d); ed != "auto" {
				d = ed
			}
			if !slices.ContainsFunc(kept, func(x string) bool { return plan.CanonicalKVCacheDType(x) == plan.CanonicalKVCacheDType(d) }) {
				kept = append(kept, d)
			}
		} else {
			// The engine has no name for the storage (fp8_e4m3 and fp8
			// are one): no rows of it, and the output says so.
			why := err.Error()
			if fe, ok := errors.AsType[*plan.FieldError](err); ok {
				why = fe.Err.Error()
			}
			skipped = append(skipped, Skip{KVCacheDType: d, Reason: fmt.Sprintf("no %s rows for KV dtype %s: %s", plan.EngineLabel(e), d, why)})
		}
	}
	return kept, skipped
}
