package sglang

import (
	"math"
	"strings"
)

// Tier is one row of SGLang's GPU-memory tier table (§d.1): the defaults
// for chunked_prefill_size and cuda_graph_max_bs.
type Tier struct {
	ChunkedPrefillSize int
	CudaGraphMaxBS     int
}

// DefaultTier returns the chunked prefill size and CUDA-graph max batch
// size SGLang derives for a GPU of gpuMiB (0 = unknown) at tp.
func DefaultTier(gpuMiB int64, tp int) Tier {
	if gpuMiB <= 0 {
		return Tier{4096, 160}
	}
	pick := func(lo, hi int) int {
		if tp >= 4 {
			return hi
		}
		return lo
	}
	switch {
	case gpuMiB < 20*1024:
		return Tier{2048, 8}
	case gpuMiB < 35*1024:
		return Tier{2048, pick(24, 80)}
	case gpuMiB < 60*1024:
		return Tier{4096, pick(32, 160)}
	case gpuMiB < 90*1024:
		return Tier{8192, pick(256, 512)}
	case gpuMiB < 160*1024:
		return Tier{8192, pick(256, 512)}
	default:
		return Tier{16384, 512}
	}
}

// MemFractionInput are the inputs of the mem_fraction_static heuristic.
type MemFractionInput struct {
	GPUMemoryMiB         int64 // 0 = unknown
	TPSize, PPSize       int
	DPSize               int
	EnableDPAttention    bool
	ChunkedPrefillSize   int // ≤ 0 disables chunking
	MaxPrefillTokens     int
	CudaGraphMaxBS       int
	SpeculativeAlgorithm string
	PiecewiseGraphTokens int
}

// UnknownGPUMemFraction is the default for a GPU of unknown memory.
const UnknownGPUMemFraction = 0.88

// ReservedMiB is the activation/graph reserve (MiB) of SGLang's 0.5.x
// mem_fraction_static formula (§d.1).
func ReservedMiB(in MemFractionInput) float64 {
	reserved := 512.0
	if in.ChunkedPrefillSize > 0 {
		reserved += float64(max(in.ChunkedPrefillSize, 2048)) * 1.5
	} else {
		reserved += float64(max(in.MaxPrefillTokens, 2048)) * 1.5
	}
	reserved += float64(in.CudaGraphMaxBS * 2)
	reserved += float64(in.TPSize*in.PPSize) / 8 * 1024
	if in.EnableDPAttention {
		reserved += float64(in.CudaGraphMaxBS * in.DPSize * 3)
		if in.CudaGraphMaxBS > 300 {
			reserved += float64(in.CudaGraphMaxBS*in.DPSize) * 1.5
		}
	}
	reserved += float64(in.PiecewiseGraphTokens * 8)
	if in.GPUMemoryMiB > 60*1024 {
		reserved = math.Max(reserved, 10*1024)
	}
	switch alg := strings.ToUpper(in.SpeculativeAlgorithm); {
	case alg == "" || alg == "NONE" || alg == "NGRAM":
	case alg == "STANDALONE":
		reserved += 6 * 1024
	default:
		reserved += 2 * 1024
	}
	return reserved
}

// DefaultMemFraction is SGLang's mem_fraction_static when the user gives
// none: round((gpu_mem − reserved)/gpu_mem, 3), 0.88 for an unknown GPU.
func DefaultMemFraction(in MemFractionInput) float64 {
	if in.GPUMemoryMiB <= 0 {
		return UnknownGPUMemFraction
	}
	g := float64(in.GPUMemoryMiB)
	return round3((g - ReservedMiB(in)) / g)
}

// VLMMemFractionFactor is adjust_mem_fraction_for_vlm's multiplier for a
// vision tower of vitLayers × vitHidden (SGLang defaults 24 and 1024 when
// the config lacks them): 0.95·clamp(1 − 0.1·(ratio − 1), 0.8, 1.05).
func VLMMemFractionFactor(vitLayers, vitHidden int) float64 {
	if vitLayers <= 0 {
		vitLayers = 24
	}
	if vitHidden <= 0 {
		vitHidden = 1024
	}
	ratio := float64(vitLayers) * float64(vitHidden) * float64(vitHidden) / (24 * 1024 * 1024)
	f := 1 - 0.1*(ratio-1)
	f = math.Min(math.Max(f, 0.8), 1.05)
	return 0.95 * f
}

// round3 rounds half to even at three decimals like Python's round(x, 3)
// for the values the heuristic produces.
func round3(x float64) float64 {
	return math.RoundToEven(x*1000) / 1000
}

// StageRanges splits numLayers over pp stages as SGLang's get_pp_indices
// does: the remainder goes to the last stages. It returns [start, end)
// pairs.
func StageRanges(numLayers, pp int) [][2]int {
	if pp < 1 {
		pp = 1
	}
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = numLayers / pp
	}
	for i := range numLayers % pp {
		parts[pp-1-i]++
	}
	out := make([][2]int, pp)
	start := 0
	for i, n := range parts {
		out[i] = [2]int{start, start + n}
		start += n
	}
	return out
}
