package sglang

import (
	"math"
	"strings"
)

// Tier is one row of SGLang's GPU-memory tier table (docs/sglang.md#defaults-tier-table): the defaults
// for chunked_prefill_size and cuda_graph_max_bs.
type Tier struct {
	ChunkedPrefillSize int
	CudaGraphMaxBS     int
}

// DefaultTier returns the chunked prefill size and CUDA-graph max batch
// size SGLang 0.5.3–0.5.18 derives for a GPU of gpuMiB (0 = unknown) at
// tp. A plan uses its profile's tier (Profile.Tier; the newest by default).
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
	// PiecewiseGraphTokens is the number of prefill (piecewise) CUDA-graph
	// capture sizes; 0 = the profile's default (none before 0.5.10).
	PiecewiseGraphTokens int
	// MLA marks an MLA model (its prefill-graph reserve is fixed in the
	// newest SGLang).
	MLA bool
	// DisablePrefillGraph is --disable-piecewise-cuda-graph: no prefill
	// CUDA-graph reserve in the profiles that capture them by default.
	DisablePrefillGraph bool
	// MaxTotalTokens is --max-total-tokens (0 = not given): the newest
	// SGLang captures prefill graphs only up to it.
	MaxTotalTokens int64
}

// UnknownGPUMemFraction is the default for a GPU of unknown memory.
const UnknownGPUMemFraction = 0.88

// ReservedMiB is the activation/graph reserve (MiB) of SGLang's 0.5.x
// mem_fraction_static formula (docs/sglang.md#defaults-tier-table).
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

// DefaultMemFraction is SGLang 0.5.3–0.5.9's mem_fraction_static when the
// user gives none: round((gpu_mem − reserved)/gpu_mem, 3), 0.88 for an
// unknown GPU. A plan uses its profile's rule (Profile.MemFraction; the
// newest by default).
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
	pp = max(pp, 1)
	out := make([][2]int, pp)
	for i := range out {
		out[i] = stageRange(numLayers, pp, i)
	}
	return out
}

// stageRange is StageRanges(numLayers, pp)[i] (pp ≥ 1): every stage gets
// numLayers / pp layers, and the last numLayers % pp stages one more.
func stageRange(numLayers, pp, i int) [2]int {
	base, firstLonger := numLayers/pp, pp-numLayers%pp
	start := i*base + max(i-firstLonger, 0)
	end := start + base
	if i >= firstLonger {
		end++
	}
	return [2]int{start, end}
}

// fractionByTP is the mem_fraction_static of SGLang 0.4.0–0.4.7: by
// tensor-parallel size alone, whatever the GPU.
func fractionByTP(in MemFractionInput) float64 {
	switch tp := in.TPSize; {
	case tp >= 16:
		return 0.79
	case tp >= 8:
		return 0.81
	case tp >= 4:
		return 0.85
	case tp >= 2:
		return 0.87
	}
	return 0.88
}

// ReservedGiB is the activation/graph reserve (GiB) of SGLang
// 0.4.7.post1–0.5.2: a tier by GPU memory and tp·pp, plus speculative
// decoding (6 GiB STANDALONE, none NGRAM, else 2) and DP attention (4).
func ReservedGiB(in MemFractionInput) float64 {
	par := float64(max(in.TPSize, 1) * max(in.PPSize, 1))
	var r float64
	switch g := in.GPUMemoryMiB; {
	case g < 35*1024:
		r = 2.8 + par/10
	case g < 90*1024:
		r = 9.5 + par/2
	case g < 160*1024:
		r = 12 + par/2
	default:
		r = 32
	}
	switch alg := strings.ToUpper(in.SpeculativeAlgorithm); {
	case alg == "" || alg == "NONE" || alg == "NGRAM" || alg == "LOOKAHEAD":
	case alg == "STANDALONE":
		r += 6
	default:
		r += 2
	}
	if in.EnableDPAttention {
		r += 4
	}
	return r
}

// fractionGiBTiers is the mem_fraction_static of SGLang 0.4.7.post1–0.5.2:
// round((gpu − reserve)/gpu, 3), 0.88 for an unknown GPU.
func fractionGiBTiers(in MemFractionInput) float64 {
	if in.GPUMemoryMiB <= 0 {
		return UnknownGPUMemFraction
	}
	g := float64(in.GPUMemoryMiB)
	return round3((g - ReservedGiB(in)*1024) / g)
}

// PrefillGraphSizes is the number of prefill (piecewise) CUDA-graph
// capture sizes up to maxTokens: 4…32 by 4, 48…256 by 16, 288…512 by 32,
// 576…1024 by 64, 1280…4096 by 256, then by 512.
func PrefillGraphSizes(maxTokens int) int {
	n := 0
	steps := [...][3]int{{4, 32, 4}, {48, 256, 16}, {288, 512, 32}, {576, 1024, 64}, {1280, 4096, 256}, {4608, maxTokens, 512}}
	for _, s := range steps {
		if hi := min(s[1], maxTokens); hi >= s[0] {
			n += (hi-s[0])/s[2] + 1 // s[0], s[0]+s[2], … up to hi
		}
	}
	return n
}

// defaultPiecewiseMaxTokens is piecewise_cuda_graph_max_tokens' default in
// SGLang 0.5.10–0.5.18.
const defaultPiecewiseMaxTokens = 8192

// fraction0510 is the 0.5.3 formula with the prefill (piecewise) CUDA
// graphs SGLang 0.5.10 captures by default: 8 MiB per capture size.
func fraction0510(in MemFractionInput) float64 {
	if in.PiecewiseGraphTokens == 0 && !in.DisablePrefillGraph {
		in.PiecewiseGraphTokens = PrefillGraphSizes(defaultPiecewiseMaxTokens)
	}
	return DefaultMemFraction(in)
}

// UnknownGPUMemFractionLatest is the newest SGLang's default for a GPU of
// unknown memory.
const UnknownGPUMemFractionLatest = 0.95

// ReservedMiBLatest is the newest SGLang's reserve (handle_gpu_memory_settings):
// 512 + 1.5·max(chunk or max_prefill, 2048) + tp·pp/8 GiB + the graph
// reserve (decode batch·2, DP-attention padding, prefill graphs: 8 MiB a
// capture size up to the chunk, 1.5 GiB for MLA), at least 10 GiB on GPUs
// above 60 GiB.
func ReservedMiBLatest(in MemFractionInput) float64 {
	act := in.MaxPrefillTokens
	if in.ChunkedPrefillSize > 0 {
		act = in.ChunkedPrefillSize
	}
	reserved := 512 + 1.5*float64(max(act, 2048))
	reserved += float64(max(in.TPSize, 1)*max(in.PPSize, 1)) / 8 * 1024
	reserved += float64(in.CudaGraphMaxBS * 2)
	if in.EnableDPAttention {
		reserved += float64(in.CudaGraphMaxBS * in.DPSize * 3)
		if in.CudaGraphMaxBS > 300 {
			reserved += float64(in.CudaGraphMaxBS*in.DPSize) * 1.5
		}
	}
	switch {
	case in.DisablePrefillGraph:
	case in.PiecewiseGraphTokens > 0:
		reserved += float64(in.PiecewiseGraphTokens * 8)
	case in.MLA:
		reserved += 1.5 * 1024
	default:
		reserved += float64(PrefillGraphSizes(prefillGraphMaxTokens(in)) * 8)
	}
	if in.GPUMemoryMiB > 60*1024 {
		reserved = math.Max(reserved, 10*1024)
	}
	return reserved
}

// prefillGraphMaxTokens is the newest SGLang's largest prefill capture
// size (memory_hook.py): the chunked prefill size, no more than
// --max-total-tokens.
func prefillGraphMaxTokens(in MemFractionInput) int {
	n := in.ChunkedPrefillSize
	if in.MaxTotalTokens > 0 && int64(n) > in.MaxTotalTokens {
		n = int(in.MaxTotalTokens)
	}
	return n
}

// fractionLatest is the newest SGLang's default mem_fraction_static.
func fractionLatest(in MemFractionInput) float64 {
	if in.GPUMemoryMiB <= 0 {
		return UnknownGPUMemFractionLatest
	}
	g := float64(in.GPUMemoryMiB)
	return round3((g - ReservedMiBLatest(in)) / g)
}

// tier04 is SGLang 0.4.0–0.4.7's chunked prefill and CUDA-graph defaults:
// below 25,000 MiB 2048 and 8 (80 at TP ≥ 4), else 8192 and 160.
func tier04(gpuMiB int64, tp int) Tier {
	if gpuMiB > 0 && gpuMiB < 25000 {
		if tp >= 4 {
			return Tier{2048, 80}
		}
		return Tier{2048, 8}
	}
	return Tier{8192, 160}
}

// tier048 is SGLang 0.4.7.post1–0.5.2's: chunk 2048 below 35 GiB, 8192
// below 160 GiB, else 16384 (4096 unknown); the CUDA-graph batch 8|80
// below 35 GiB, else the capture list's top: 160, 256 above 96 GiB, 512
// above 180,000 MiB.
func tier048(gpuMiB int64, tp int) Tier {
	switch {
	case gpuMiB <= 0:
		return Tier{4096, 160}
	case gpuMiB < 35*1024:
		if tp >= 4 {
			return Tier{2048, 80}
		}
		return Tier{2048, 8}
	}
	chunk := 8192
	if gpuMiB >= 160*1024 {
		chunk = 16384
	}
	bs := 160
	if gpuMiB > 96*1024 {
		bs = 256
	}
	if gpuMiB > 180*1000 {
		bs = 512
	}
	return Tier{chunk, bs}
}

// tierLatest is DefaultTier with the newest <35 GiB rung (chunk 4096,
// batch 48|160, PR #37898).
func tierLatest(gpuMiB int64, tp int) Tier {
	if gpuMiB >= 20*1024 && gpuMiB < 35*1024 {
		if tp >= 4 {
			return Tier{4096, 160}
		}
		return Tier{4096, 48}
	}
	return DefaultTier(gpuMiB, tp)
}
