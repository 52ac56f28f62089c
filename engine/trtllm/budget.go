package trtllm

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// Parts are the non-KV figures of one rank's modelled budget.
type Parts struct {
	// WeightsBytes is the weights on the most loaded rank.
	WeightsBytes int64 `json:"weights_bytes"`
	// ActivationBytes is the torch peak increase of the profiling forward at
	// max_num_tokens.
	ActivationBytes int64 `json:"activation_bytes"`
	// NonTorchBytes is the CUDA context, libraries and NCCL buffers.
	NonTorchBytes int64 `json:"non_torch_bytes"`
	// CUDAGraphBytes is the captured CUDA graphs (PyTorch profiles).
	CUDAGraphBytes int64 `json:"cudagraph_bytes"`
}

// Estimate returns kvcfg's estimates of the non-KV memory one rank holds
// when TensorRT-LLM measures its KV budget, for model s with tp × pp ranks
// and max_num_tokens tokens in the profiling forward (one dummy request; see
// EstimateDryRun for the request count that max_seq_len gives):
//
//   - weights: the weights package's per-rank estimate from the config's
//     parameter counts (0 when the config has none);
//   - activation: the dry run's torch peak from the model's shapes
//     (ActivationTerms): 0.88 GiB for gpt-oss-120b at 8192 tokens, where
//     its 1.1.0rc3 log measured 0.85 GiB;
//   - non-torch: the gpu package's runtime overhead (CUDA context and
//     libraries, plus NCCL buffers with more than one rank);
//   - CUDA graphs: 25 MiB per decoder layer on the rank (PyTorch backend;
//     engine builds run without them by default).
//
// They are estimates; a real run's reading (Input.KVCacheMemory or
// Input.FreeMemoryAfterLoad) reproduces it exactly.
func Estimate(s *model.Spec, tp, pp, maxNumTokens int, engine bool) Parts {
	p, _ := EstimateDryRun(s, DryRun{TP: tp, PP: pp, MaxNumTokens: maxNumTokens, Engine: engine})
	return p
}

// DryRun is what EstimateDryRun needs: the layout, the dry run's token
// budget and the sequence length that cuts it into dummy requests.
type DryRun struct {
	TP, PP int
	// EP is moe_expert_parallel_size (0 or 1: none).
	EP int
	// MaxNumTokens is max_num_tokens; MaxSeqLen is max_seq_len (0: one
	// request of MaxNumTokens tokens).
	MaxNumTokens, MaxSeqLen int
	// Engine is an engine build (no CUDA graphs by default).
	Engine bool
	// NoCUDAGraph is cuda_graph_config: null (no graphs captured).
	NoCUDAGraph bool
	// FusionAllReduce adds the all-reduce fusion workspace at TP > 1
	// (AllReduceWorkspaceBytes; the PyTorch backend from 1.1), of
	// FusionSize bytes (max_workspace_size_auto; 0 sizes it as before
	// PR #9145, FusionWorkspaceSize), once per distinct mapping
	// (AllReduceWorkspaces).
	FusionAllReduce bool
	FusionSize      int64
	// Interconnect and SM are the GPU's wiring and compute capability × 10
	// (Input.Interconnect, Input.GPUSM): they size NCCL's NVLS buffers;
	// with NVLinks (Input.GPUNVLinks) NCCL's eager buffers.
	Interconnect string
	SM, NVLinks  int
}

// srcAllReduce is the source of AllReduceWorkspaceBytes.
const srcAllReduce = "tensorrt_llm/_torch/distributed/ops.py get_allreduce_workspace (a thread-local cache keyed by the Mapping, whose equality includes moe_tp_size and moe_ep_size) → tensorrt_llm/plugin/plugin.py (from 2026 _torch/distributed/allreduce_helper.py) CustomAllReduceHelper.allocate_allreduce_fusion_workspace(max_workspace_size_auto(tp)): IPC buffers of size × tp, barriers of 256 × tp and Lamport buffers of 3 × size × tp bytes, each cudaMalloc'd by tensorrt_llm/_ipc_utils.py IpcMemory at 2 MiB alignment; size 64 MiB since PR #9145 (\"Enlarged the AllReduce workspace size to 64MB\", November 2025, after 1.2.0rc2), 16,000,000 bytes at TP ≤ 2 and 8,000,000 above before"

// FusionWorkspaceEnlarged is max_workspace_size_auto from PR #9145
// (November 2025; every 1.2 release after 1.2.0rc2 and 1.3): 64 MiB at any
// TP size (TRTLLM_ALLREDUCE_FUSION_WORKSPACE_SIZE overrides it).
const FusionWorkspaceEnlarged = 64 << 20

// FusionWorkspaceSize is max_workspace_size_auto before PR #9145:
// 16,000,000 bytes at TP ≤ 2 and 8,000,000 above.
func FusionWorkspaceSize(tp int) int64 {
	if tp <= 2 {
		return 16_000_000
	}
	return 8_000_000
}

// AllReduceWorkspaceBytes is one custom all-reduce fusion workspace of a
// rank of a TP group of tp ranks, allocated outside torch when its
// AllReduce modules are built (strategy AUTO, the default; srcAllReduce):
// the IPC buffers (size × tp), the barriers (256 × tp) and the three
// Lamport buffers (3 × size × tp), each rounded up to 2 MiB; size ≤ 0
// takes FusionWorkspaceSize. With the 64 MiB size: 514 MiB at TP 2, 1026
// at TP 4, 2050 at TP 8; before PR #9145, 126 MiB at TP 2 and 4 and 248 at
// TP 8. None at TP 1.
func AllReduceWorkspaceBytes(tp int, size int64) int64 {
	if tp <= 1 {
		return 0
	}
	if size <= 0 {
		size = FusionWorkspaceSize(tp)
	}
	t := int64(tp)
	align := func(n int64) int64 { return cdiv(n, 2<<20) * (2 << 20) }
	return align(size*t) + align(256*t) + align(3*size*t)
}

// AllReduceWorkspaces is how many fusion workspaces a rank allocates: one
// per distinct Mapping its AllReduce modules are built with. The attention
// modules (Attention and MLA in _torch/modules/attention.py) build their
// projections' Mapping from the TP, PP and CP sizes only, so its MoE sizes
// are the defaults (moe_tp_size = tp, moe_ep_size 1), while the MoE and
// decoder-layer all-reduces use the model's Mapping: with expert
// parallelism (ep > 1, a MoE model) the two differ and the rank holds two
// workspaces; otherwise one. None at TP 1.
func AllReduceWorkspaces(s *model.Spec, tp, ep int) int {
	switch {
	case tp <= 1:
		return 0
	case s != nil && s.FFN.Experts > 0 && ep > 1 && tp%ep == 0:
		return 2
	}
	return 1
}

// srcNVLS is the source of NVLSBufferBytes.
const srcNVLS = "NVIDIA/nccl src/transport/nvls.cc (v2.21 to v2.29): ncclNvlsInit opens NVLS only with more than two GPUs and multicast support, NVLS_NCHANNELS_SM90 16 and, from v2.27, NVLS_NCHANNELS_SM100_NVL 24 on one Blackwell node; ncclNvlsBufferSetup allocates nChannels × 2 × (NCCL_NVLS_CHUNKSIZE 128 KiB × NCCL_STEPS 8) × nHeads bytes (nHeads = the node's ranks, graph/search.cc) with cuMemCreate, and ncclNvlsSetup a credit buffer of nChannels × 2 × 64 × nHeads bytes, each at the 2 MiB granularity; TensorRT-LLM's TP group is one NCCL communicator (cpp/tensorrt_llm/common/opUtils.cpp getComm) and sets no NCCL_NVLS_ENABLE"

// NVLSBufferBytes is the device memory NCCL's NVLink SHARP (NVLS)
// transport takes on one rank of a TP group of ranks GPUs in one
// NVSwitch node (srcNVLS): nChannels × 2 directions × 1 MiB per head, one
// head per rank, plus the 2 MiB credit buffer. nChannels is 16 on Hopper
// (SM 90) and 24 on one Blackwell node (SM 100 and newer): 194 MiB at
// TP 4 and 386 at TP 8 on B200, 130 and 258 on H100. None with two ranks
// or fewer (NCCL leaves NVLS off), more than eight (several nodes: NCCL
// opens another channel count there), without NVSwitch or below SM 90.
// The buffers are allocated when the first collective that picks NVLS
// runs, in the warm-up, before TensorRT-LLM's memory profile.
func NVLSBufferBytes(ranks, sm int, interconnect string) int64 {
	if interconnect != "nvswitch" || ranks <= 2 || ranks > 8 || sm < 90 {
		return 0
	}
	channels := int64(16)
	if sm >= 100 {
		channels = 24
	}
	const step, steps, credit = 128 << 10, 8, 2 << 20
	return channels*2*step*steps*int64(ranks) + credit
}

// srcNCCLEager is the source of NCCLEagerBytes.
const srcNCCLEager = "TensorRT-LLM cpp/tensorrt_llm/common/opUtils.cpp getComm sets NCCL_RUNTIME_CONNECT=0 when unset (\"static connection initialization for accurate KV cache size estimation\"), so NCCL (v2.27/v2.28 src/init.cc, the non-runtimeConn branch) connects ring and tree on every collective channel at init and calls the local NET proxy's SharedInit; sizes from NVIDIA/nccl: collective channels 32 on SM 100 NVSwitch (graph/search.cc speed table 90 × 8 channels, ncclTopoDupChannels and ncclTopoPostset doubling; the DGX B200 log of NVIDIA/nccl#1646 prints 32) and 24 on SM 90 (a p5.48xlarge log prints 24), p2pnChannels 32; transport/p2p.cc: a receiving connection holds ncclRecvMem + LL 512 KiB + LL128 4,915,200 B + SIMPLE 4 MiB, rounded to 10 MiB, a sending one ncclSendMem rounded to 2 MiB (CUDA_IPC_MIN; P2P read only between two SM 80 GPUs); ring 1 send + 1 recv and, on one node, the tree chain 1 more of each per channel; transport/net.cc sharedNetBuffersInit p2pnChannels × NCCL_SHARED_STEPS 16 × the 512 KiB P2P chunk; channel.cc initChannel 3 device allocations per p2p channel and devCommSetup 2, and initNvlsChannel 1 per NVLS channel, each at cuMem's 2 MiB granularity"

// NCCLEagerBytes is the device memory the NCCL communicator of a TP group
// of ranks GPUs holds on one rank of a single NVSwitch node after
// TensorRT-LLM's static-connect init (srcNCCLEager), NVLS buffers aside
// (NVLSBufferBytes): with C collective channels (32 on SM 100 and newer,
// 24 on SM 90) and 32 p2p channels, ring and tree 2 × C × 12 MiB (a middle
// rank of the tree chain), the NET shared buffer 32 × 16 × 512 KiB =
// 256 MiB, the channel structures (3 × 32 + 2) × 2 MiB and the NVLS
// channel structures 24 (SM 100) or 16 (SM 90) × 2 MiB: 1268 MiB on B200,
// 1060 on H100. The channel counts are those of GPUs with 18 NVLink links
// (nvlinks) behind NVSwitch; it is 0 (the project's generic figure
// applies) for other link counts (H800's 8), outside 3 to 8 ranks,
// without NVSwitch or below SM 90, where the channel search was not read.
func NCCLEagerBytes(ranks, sm, nvlinks int, interconnect string) int64 {
	if interconnect != "nvswitch" || nvlinks != 18 || ranks <= 2 || ranks > 8 || sm < 90 {
		return 0
	}
	const mib = 1 << 20
	coll, nvls := int64(24), int64(16)
	if sm >= 100 {
		coll, nvls = 32, 24
	}
	const p2p = 32
	ringTree := 2 * coll * (10 + 2) * mib
	shared := int64(p2p * 16 * (512 << 10))
	structs := (3*p2p + 2 + nvls) * 2 * mib
	return ringTree + shared + structs
}

// srcRuntime is the source of the runtime term of NonTorchTerms.
const srcRuntime = "gpu.RuntimeOverheadMiB: the CUDA context, libraries and allocator state of one rank (1175 MiB, read on an H100 80GB), plus 512 MiB of NCCL buffers with more than one rank; kvcfg's runtime figure, not read from a TensorRT-LLM log"

// NonTorchTerms are the parts of the memory one rank of launch d holds
// outside torch besides the CUDA graphs and the temporary pool: the
// runtime (gpu.RuntimeOverheadMiB); on the PyTorch backend, for a single
// pipeline stage whose TP group NCCLEagerBytes sizes (3 to 8 ranks of
// 18-link GPUs behind NVSwitch, SM 90 or newer), the runtime of one rank
// plus NCCL's eagerly connected buffers in place of the generic multi-rank
// figure; the all-reduce fusion workspaces
// (AllReduceWorkspaces × AllReduceWorkspaceBytes, when d.FusionAllReduce)
// and NCCL's NVLS buffers (NVLSBufferBytes). A part of zero bytes is left
// out.
func NonTorchTerms(s *model.Spec, d DryRun) []Term {
	tp, pp := max(d.TP, 1), max(d.PP, 1)
	if d.Engine {
		return []Term{{Name: "runtime", Bytes: gpu.RuntimeOverheadMiB(tp*pp) << 20, Source: srcRuntime}}
	}
	var terms []Term
	if eager := NCCLEagerBytes(tp, d.SM, d.NVLinks, d.Interconnect); eager > 0 && pp == 1 {
		terms = []Term{{Name: "runtime", Bytes: gpu.RuntimeOverheadMiB(1) << 20, Source: srcRuntime},
			{Name: "nccl", Bytes: eager, Source: srcNCCLEager}}
	} else {
		terms = []Term{{Name: "runtime", Bytes: gpu.RuntimeOverheadMiB(tp*pp) << 20, Source: srcRuntime}}
	}
	if d.FusionAllReduce {
		if b := int64(AllReduceWorkspaces(s, tp, d.EP)) * AllReduceWorkspaceBytes(tp, d.FusionSize); b > 0 {
			terms = append(terms, Term{Name: "allreduce_workspace", Bytes: b, Source: srcAllReduce})
		}
	}
	if b := NVLSBufferBytes(tp, d.SM, d.Interconnect); b > 0 {
		terms = append(terms, Term{Name: "nvls_buffers", Bytes: b, Source: srcNVLS})
	}
	return terms
}

// EstimateDryRun is Estimate for a dry run cut into max_seq_len − 1 token
// requests, with the activation's parts and the source of each.
func EstimateDryRun(s *model.Spec, d DryRun) (Parts, []Term) {
	m, terms, _ := estimateDryRun(s, d)
	return m, terms
}

// estimateDryRun is EstimateDryRun that also returns the non-torch
// memory's parts (NonTorchTerms), computed once.
func estimateDryRun(s *model.Spec, d DryRun) (Parts, []Term, []Term) {
	tp, pp := max(d.TP, 1), max(d.PP, 1)
	var m Parts
	if s == nil {
		return m, nil, nil
	}
	if w, err := weights.PerRank(s, weights.Layout{TP: tp, PP: pp}); err == nil {
		m.WeightsBytes = w
	}
	terms := ActivationTerms(s, tp, d.EP, pp, d.MaxNumTokens, DryRunRequests(d.MaxNumTokens, d.MaxSeqLen))
	m.ActivationBytes = peakOf(terms)
	nonTorch := NonTorchTerms(s, d)
	for _, t := range nonTorch {
		m.NonTorchBytes += t.Bytes
	}
	if !d.Engine && !d.NoCUDAGraph {
		m.CUDAGraphBytes = int64((s.NumLayers+pp-1)/pp) * 25 << 20
	}
	return m, terms, nonTorch
}

// budget is the memory side of a plan, per GPU.
type budget struct {
	total int64 // device memory (0 when unknown)
	parts Parts
	// avail is the KV budget in bytes: a PyTorch log's "available KV cache
	// memory …" (after the fraction) or an engine build's free memory after
	// load (before it).
	avail float64
	// freeStart is the free memory before the estimation dry run (0 when
	// unknown).
	freeStart float64
	// freeAlloc is the free memory when the final pool is created.
	freeAlloc float64
	measured  bool
	estimated []string
	// terms are the modelled activation's parts (PyTorch profiles, when
	// the activation was not given); ntTerms the modelled non-torch
	// memory's (when it was not given).
	terms, ntTerms []Term
}

// makeBudget resolves the budget: a reading, or the modelled figures.
func makeBudget(in Input, s *model.Spec, r rules, frac float64, d DryRun) (budget, error) {
	b := budget{total: in.GPUMemoryBytes}
	switch {
	case r.engine && in.FreeMemoryAfterLoad > 0:
		b.avail, b.measured = float64(in.FreeMemoryAfterLoad), true
	case !r.engine && in.KVCacheMemory > 0:
		b.avail, b.measured = float64(in.KVCacheMemory), true
		b.freeAlloc = b.avail / frac
	default:
		if in.GPUMemoryBytes <= 0 {
			return b, fmt.Errorf("%w: gpu_memory_bytes is needed to model the budget", ErrInvalidInput)
		}
		d.Engine, d.NoCUDAGraph, d.FusionAllReduce, d.FusionSize = r.engine, in.DisableCUDAGraph, r.fusionAllReduce, r.fusionSize
		d.Interconnect, d.SM, d.NVLinks = in.Interconnect, in.GPUSM, in.GPUNVLinks
		est, terms, nonTorch := estimateDryRun(s, d)
		pick := func(given, estimate int64, name string) int64 {
			if given > 0 {
				return given
			}
			b.estimated = append(b.estimated, name)
			return estimate
		}
		b.parts.WeightsBytes = pick(in.WeightsBytes, est.WeightsBytes, "weights")
		if b.parts.WeightsBytes == 0 {
			return b, fmt.Errorf("%w: the weights of %s cannot be estimated from its config; pass weights_bytes", ErrInvalidInput, s.Name)
		}
		b.parts.ActivationBytes = pick(in.ActivationBytes, est.ActivationBytes, "activation")
		if in.ActivationBytes <= 0 && !r.engine {
			b.terms = terms
		}
		b.parts.NonTorchBytes = pick(in.NonTorchBytes, est.NonTorchBytes, "non_torch")
		if in.NonTorchBytes <= 0 {
			b.ntTerms = nonTorch
		}
		if !r.engine && !in.DisableCUDAGraph {
			b.parts.CUDAGraphBytes = pick(in.CUDAGraphBytes, est.CUDAGraphBytes, "cudagraph")
		}
		p := b.parts
		free := float64(b.total - p.WeightsBytes - p.ActivationBytes - p.NonTorchBytes - p.CUDAGraphBytes)
		if r.engine {
			b.avail = free
		} else {
			b.avail = free * frac
			// Activations are released before the final pool is created;
			// before the dry run the CUDA graphs do not exist yet.
			b.freeAlloc = float64(b.total - p.WeightsBytes - p.NonTorchBytes - p.CUDAGraphBytes)
			b.freeStart = float64(b.total - p.WeightsBytes - p.NonTorchBytes)
		}
	}
	if in.FreeMemoryAtAllocation > 0 {
		b.freeAlloc = float64(in.FreeMemoryAtAllocation)
	}
	return b, nil
}

// estimatedNote says which budget parts kvcfg estimated.
func (b budget) estimatedNote() string {
	if len(b.estimated) == 0 {
		return ""
	}
	return fmt.Sprintf("estimated without a GPU: %s; pass a real run's reading (kv_cache_memory, or free_memory_after_load for engine builds) to reproduce it exactly",
		strings.Join(b.estimated, ", "))
}
