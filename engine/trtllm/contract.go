package trtllm

// The engine contract (package engine): Plan, ResolveProfile,
// AcceptedKVDTypes, MaxConcurrency and Patterns.

// MaxConcurrency is res.MaxConcurrency(contextLen): how many requests of
// contextLen tokens the pools of res hold at once.
func MaxConcurrency(res *Result, contextLen int) float64 { return res.MaxConcurrency(contextLen) }
