package sizing

import (
	"fmt"
	"math"
)

// MambaState is the per-request state of a model's linear-attention
// layers on one rank (docs/sglang.md#mamba-state).
type MambaState struct {
	// Conv are the conv-state shapes of one layer; Temporal the SSM shape.
	Conv     [][]int `json:"conv"`
	Temporal []int   `json:"temporal"`
	// ConvElem and SSMElem are the element sizes (bf16 conv → 2, fp32 ssm → 4).
	ConvElem int `json:"conv_elem"`
	SSMElem  int `json:"ssm_elem"`
	// Layers is the number of mamba layers.
	Layers int `json:"layers"`
}

// ConvBytesPerLayer is Σ prod(conv shape)·elem for one layer and slot.
func (m MambaState) ConvBytesPerLayer() int64 {
	var n int64
	for _, c := range m.Conv {
		n += prod(c)
	}
	return n * int64(m.ConvElem)
}

// SSMBytesPerLayer is prod(temporal)·elem for one layer and slot.
func (m MambaState) SSMBytesPerLayer() int64 { return prod(m.Temporal) * int64(m.SSMElem) }

// PerRequest is mamba_cache_per_req: (conv + ssm) bytes × mamba layers.
func (m MambaState) PerRequest() int64 {
	return (m.ConvBytesPerLayer() + m.SSMBytesPerLayer()) * int64(m.Layers)
}

func prod(s []int) int64 {
	if len(s) == 0 {
		return 0
	}
	p := int64(1)
	for _, v := range s {
		p *= int64(v)
	}
	return p
}

// MambaBudget is the input of HandleMaxMambaCache (docs/sglang.md#mamba-budget; the newest generation).
type MambaBudget struct {
	// PerRequest is the stage-scaled state bytes per slot (stage_per_req).
	PerRequest int64
	// Ring is the ReplaySSM ring bytes per slot (0 normally).
	Ring int64
	// MaxMambaCacheSize is --max-mamba-cache-size (global), 0 if unset.
	MaxMambaCacheSize int
	// MaxRunningRequests is --max-running-requests (global), 0 if unset.
	MaxRunningRequests int
	// DisableRadixCache is --disable-radix-cache.
	DisableRadixCache bool
	// FullMemoryRatio is --mamba-full-memory-ratio (0.9 default).
	FullMemoryRatio float64
	// AttnDPSize is the attention data-parallel size (1 when off).
	AttnDPSize int
	// DraftTokens is speculative_num_draft_tokens (D), 0 without speculation.
	DraftTokens int
	// SlotRatio is the mamba slot ratio (docs/sglang.md#max-running-requests), used with speculation.
	SlotRatio int
}

// MambaResult is what HandleMaxMambaCache decided.
type MambaResult struct {
	// MaxMambaCacheSize is K, the number of state slots per DP shard.
	MaxMambaCacheSize int64
	// StateBytes is (K+1)·(per_req+ring), the slot memory charged.
	StateBytes int64
	// SpecBytes is the speculative intermediate scratch charged.
	SpecBytes int64
	// RestGiB is what is left for the KV pool, in GiB.
	RestGiB float64
	// Source says how K was chosen: "max_mamba_cache_size",
	// "max_running_requests" or "auto".
	Source string
}

const gib = float64(1 << 30)

// HandleMaxMambaCache deducts the mamba state (and speculative scratch)
// from rest (GiB) as SGLang's _handle_max_mamba_cache does.
func HandleMaxMambaCache(b MambaBudget, rest float64) (MambaResult, error) {
	p := b.PerRequest
	if p <= 0 {
		return MambaResult{}, fmt.Errorf("%w: mamba state per request %d", ErrInvalid, p)
	}
	dp := int64(max(b.AttnDPSize, 1))
	d := int64(max(b.DraftTokens, 0))
	ratio := int64(max(b.SlotRatio, 1))
	res := MambaResult{}
	var k int64
	switch {
	case b.MaxMambaCacheSize > 0:
		res.Source = "max_mamba_cache_size"
		k = int64(b.MaxMambaCacheSize) / dp
		if d > 0 {
			capped := min(int64(b.MaxRunningRequests)/dp, k/ratio)
			res.SpecBytes = p * (capped + 1) * d
		}
	case b.DisableRadixCache && b.MaxRunningRequests > 0:
		res.Source = "max_running_requests"
		k = int64(b.MaxRunningRequests) / dp
		if d > 0 {
			res.SpecBytes = p * (k + 1) * d
		}
	default:
		res.Source = "auto"
		rm := b.FullMemoryRatio
		budget := float64(rest*rm) / (1 + rm)
		bb := float64(budget * gib)
		if d > 0 {
			fp := float64(p)
			kf := math.Floor((bb - float64(fp*float64(1+d))) / float64(fp*(1+float64(d)/float64(ratio))))
			k = clampInt(kf)
			res.SpecBytes = p * (min(int64(b.MaxRunningRequests)/dp, k/ratio) + 1) * d
		} else {
			slot := float64(p + b.Ring)
			k = clampInt(math.Floor((bb - slot) / slot))
		}
	}
	rest -= float64(res.SpecBytes) / gib
	res.MaxMambaCacheSize = k
	if k <= 0 {
		return res, fmt.Errorf("%w: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=%d (total_rest_memory=%.2f GB, mamba_cache_per_req=%.2f MB). Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, or (4) use GPUs with more memory",
			ErrMamba, k, rest, float64(p)/(1<<20))
	}
	res.StateBytes = (k + 1) * (p + b.Ring)
	res.RestGiB = rest - float64(res.StateBytes)/gib
	return res, nil
}

func clampInt(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
