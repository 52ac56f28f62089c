// Package simulate replays a workload through an inference engine's KV
// cache policy: SGLang's waiting queue, prefill adder budgets,
// new_token_ratio, decode retraction and radix cache, or vLLM V1's token
// budget, paged block allocation, preemption by recompute and block-hash
// prefix cache (docs/simulate.md).
//
// The memory side runs on the real allocators of package pool (SGLang's
// token / paged allocator, vLLM's block pool) sized by a plan; the
// simulation keeps no notion of free memory of its own, so its counts
// (admissions, retractions, preemptions, prefix hits, peak usage) are exact
// for the policy as documented. Time comes from a stated model (a roofline
// per GPU, or a constant per step); every time-based figure is an estimate
// and its JSON key contains "_est" (duration_est_s, mean_ttft_est_s, ...).
//
// A workload is a Source of Requests: a JSONL trace (TraceReader, streamed)
// or a Generator (Poisson or fixed-rate arrivals, fixed / uniform /
// log-normal lengths, shared system prompts, multi-turn sessions).
package simulate

import "errors"

// Errors of the package; every returned error wraps one of them.
var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("simulate: invalid config")
	// ErrWorkload reports an invalid trace line or generator.
	ErrWorkload = errors.New("simulate: invalid workload")
)
