package vllm

// The engine contract (package engine): Plan, ResolveProfile,
// AcceptedKVDTypes, MaxConcurrency and Patterns.

// MaxConcurrency is how many requests of contextLen tokens (at most the
// result's MaxModelLen) the KV cache of res holds at once: vLLM's logged
// "Maximum concurrency" for MaxModelLen (or contextLen ≤ 0), else the
// blocks ÷ the blocks one request needs over the groups, where a
// sliding-window or chunked group needs no more than at MaxModelLen and a
// Mamba group its fixed state pages. V0 (no groups): blocks × block size ÷
// contextLen.
func MaxConcurrency(res *Result, contextLen int) float64 {
	if res == nil {
		return 0
	}
	if contextLen <= 0 || contextLen == res.MaxModelLen {
		return res.MaxConcurrency
	}
	if len(res.Groups) == 0 {
		return float64(res.NumGPUBlocks*int64(max(res.BlockSize, 0))) / float64(contextLen)
	}
	var per int64
	for _, g := range res.Groups {
		b := cdiv(int64(contextLen), int64(max(g.BlockSize, 1)))
		switch {
		case g.Kind == Mamba:
			b = g.BlocksPerRequest
		case !g.Kind.fullType():
			b = min(b, g.BlocksPerRequest)
		}
		per += b
	}
	if per <= 0 {
		return 0
	}
	return float64(res.NumGPUBlocks) / float64(per)
}
