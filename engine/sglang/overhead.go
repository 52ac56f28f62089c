package sglang

import "github.com/kvcfg/kvcfg/gpu"

// The free memory before weights. SGLang reads it in
// ModelRunner.init_torch_distributed (python/sglang/srt/model_executor/
// model_runner.py): the CUDA context exists once the worker has set its
// device, then torch.distributed and the model-parallel groups are created
// (NCCL communicators with their warm-up all-reduce, custom all-reduce
// buffers, "Init torch distributed ends. mem usage=X GB"), and
// pre_model_load_memory is torch.cuda.mem_get_info's free memory, the MIN
// over ranks ("Load weight begin. avail mem=Y GB"). So
//
//	pre = CUDA-visible total − CUDA context − torch.distributed init (TP × PP > 1)
//
// with the total CUDA reports (gpu.GPU.CUDATotalMiB: 81090 MiB on an H100
// 80GB HBM3, not nvidia-smi's 81559).
const (
	// CUDAContextMiB is the CUDA context of a GPU whose SM count the
	// catalog does not know (AMD, a GPU given by its memory): what
	// docs/sglang.md#ex1's H100 (81090 MiB CUDA total) loses before
	// "Load weight begin. avail mem=78.50 GB" at TP 1, 81090 − 80384 =
	// 706 MiB. A catalog NVIDIA GPU's context is CUDAContextBytes.
	CUDAContextMiB int64 = 706
	// DistributedInitMiB is what NCCL takes on a CUDA rank over PCIe when
	// TP × PP > 1: the communicators SGLang builds eagerly (the world
	// group's and the TP or PP group's PyNcclCommunicator, each with a
	// warm-up all-reduce) and their channel buffers. NCCL sizes those
	// itself, outside SGLang's source, so the term is the logs' "Init
	// torch distributed ends. mem usage", 0.19 GB on RTX 4090s at TP 2
	// (0.00 at one rank). Other PCIe logs spread around it with NCCL's
	// release, not with the rank count: 0.13 GB on four L4s (0.4.3),
	// 0.16 GB at PP 4, 0.26 GB on two RTX 4090s (issue #16920, 2026-01),
	// 0.39 GB on four RTX PRO 6000s (issue #40558, 2026-09).
	DistributedInitMiB int64 = 195
	// DistributedInitNVSwitchMiB is the same on an NVSwitch node of
	// Hopper or Blackwell GPUs (H100/H800/H200/H20 SXM, B200, B300,
	// GB200). SGLang turns NVLink SHARP off (NCCL_NVLS_ENABLE =
	// --enable-nccl-nvls, default false) and sets NCCL_CUMEM_ENABLE=0, so
	// this is NCCL's ring/tree channel buffers, cudaMalloc'd per
	// communicator: NCCL opens many more channels over NVSwitch (up to 32)
	// than over PCIe (2–4), each with its SIMPLE, LL and LL128 buffers
	// (NCCL_BUFFSIZE 4 MiB for SIMPLE) per peer. NCCL sizes them itself,
	// so the figure is the log's: 8 × H200 at TP 8 (PR #11716, 2025-10)
	// print "mem usage" 1.77–2.01 GB per rank, and free memory before
	// weights is the MIN over ranks, so the largest counts: 2.01 GiB =
	// 2058 MiB, less the custom all-reduce's 26 MiB = 2032 MiB.
	DistributedInitNVSwitchMiB int64 = 2032
	// DistributedInitHIPMiB is the same on ROCm (RCCL, the custom and
	// quick all-reduce's IPC buffers): 3.41–3.83 GB per rank in a public
	// MI-series TP 8 log.
	DistributedInitHIPMiB int64 = 3789
)

// RuntimeImagesMiB is the part of a CUDA context beyond the local-memory
// reservation: the driver's per-context state and the kernel images torch,
// NCCL and SGLang's kernels have loaded when init_torch_distributed takes
// its first reading (torch sets CUDA_MODULE_LOADING=LAZY, so a module
// loads when it is first used). Neither SGLang's source nor the GPU fixes
// it: the driver, CUDA and the libraries' releases do, so it is read from
// a log, the H100 at TP 1 of 2026 (706 MiB, less 264 MiB of local memory).
// The other public runs put it at 190 MiB (4 × L4, 0.4.3), 258 MiB (8 ×
// H200, PR #11716, 2025-10) and 303 MiB (4 × RTX PRO 6000, issue #40558,
// 2026-09): older releases load less, but four runs on four GPUs do not
// separate the release from the driver and the architecture, so the figure
// is one for every era (docs/predict.md).
const RuntimeImagesMiB int64 = 442

// CUDAContextBytes returns the CUDA context a worker holds when
// init_torch_distributed reads its free memory (set_device has created it
// before the first reading, so the "mem usage" line excludes it): the CUDA
// runtime's local-memory reservation for g (gpu.GPU.LocalMemoryBytes, SMs
// × resident threads per SM × the 1 KiB default stack: 264 MiB on an
// H100, 87 MiB on an L4) plus RuntimeImagesMiB. SGLang's own
// reading (utils get_available_gpu_memory) calls torch.cuda.empty_cache
// before mem_get_info, so the caching allocator holds no free segment at
// that point; the only live tensors are the distributed MIN's scalar
// buffers (one 2 MiB segment, returned before the next reading). A GPU
// without an SM count (AMD, a GPU given by its memory) keeps
// CUDAContextMiB.
func CUDAContextBytes(g gpu.GPU) int64 {
	local := g.LocalMemoryBytes()
	if local == 0 {
		return CUDAContextMiB << 20
	}
	return local + RuntimeImagesMiB<<20
}

// CustomAllReduceMiB returns the device memory SGLang's custom all-reduce
// allocates on each rank at init (device_communicators/
// custom_all_reduce.py), in MiB; 0 where it stays disabled. It is built
// for the TP group only, at world sizes 2, 4, 6 and 8, on CUDA when the
// GPUs are fully NVLink-connected (at TP 2 peer-to-peer access is enough,
// which GeForce and PCIe data-centre cards do not grant SGLang's check).
// Its buffers, with max_size = _MAX_CAR_SIZE = 8192 × 1024 bytes and
// cudaMalloc's 2 MiB granularity:
//
//	0.4.8 onward (vLLM's layout): meta_ptrs = meta_size + max_size → 10 MiB,
//	  buffer_ptrs = max_size → 8 MiB, rank_data = max_size → 8 MiB: 26 MiB;
//	0.4 era (TensorRT-LLM's reduce in sgl_kernel): buffer and tmp_result
//	  8 MiB each, two barriers of 8·(24+2)·8 B → 2 MiB each, rank_data
//	  8 MiB: 28 MiB.
//
// Peers' buffers are mapped through IPC handles and take no memory here.
func CustomAllReduceMiB(g gpu.GPU, tp int, era Era) int64 {
	switch tp {
	case 2, 4, 6, 8:
	default:
		return 0
	}
	if g.Platform != "cuda" || interconnect(g) == "pcie" {
		return 0
	}
	if era == Era04 {
		return 8 + 8 + 2 + 2 + 8
	}
	return 10 + 8 + 8
}

// interconnect classifies how a node of g's GPUs is wired
// (gpu.GPU.Interconnect; a ROCm card reads as "pcie" here, its figure is
// the HIP one).
func interconnect(g gpu.GPU) string {
	if ic := g.Interconnect(); ic != "xgmi" {
		return ic
	}
	return "pcie"
}

// PreLoad is SGLang's free memory before weight load and its terms, in
// bytes.
type PreLoad struct {
	// TotalBytes is the total CUDA (HIP) reports.
	TotalBytes int64 `json:"total_bytes"`
	// ContextBytes is the CUDA context (CUDAContextBytes):
	// LocalMemoryBytes plus the runtime and kernel images.
	ContextBytes int64 `json:"context_bytes"`
	// LocalMemoryBytes is the CUDA runtime's local-memory reservation,
	// part of ContextBytes; 0 where the SM count is unknown.
	LocalMemoryBytes int64 `json:"local_memory_bytes"`
	// DistributedBytes is torch.distributed/NCCL initialisation, NCCL's
	// and the custom all-reduce's together; 0 at one rank.
	DistributedBytes int64 `json:"distributed_bytes"`
	// NCCLBytes is NCCL's (RCCL's) part of DistributedBytes.
	NCCLBytes int64 `json:"nccl_bytes"`
	// CustomAllReduceBytes is the custom all-reduce's buffers
	// (CustomAllReduceMiB), part of DistributedBytes.
	CustomAllReduceBytes int64 `json:"custom_all_reduce_bytes"`
	// Interconnect is the wiring the NCCL term assumes: "nvswitch",
	// "nvlink", "pcie" or "xgmi" (ROCm).
	Interconnect string `json:"interconnect"`
	// FreeBytes is pre_model_load_memory: the total less the terms,
	// never negative.
	FreeBytes int64 `json:"free_bytes"`
}

// PreLoadMemory models pre_model_load_memory on g for TP × PP ranks with
// the default (newest) SGLang profile; see PreLoadMemoryEra.
func PreLoadMemory(g gpu.GPU, tp, pp int) PreLoad {
	return PreLoadMemoryEra(g, tp, pp, DefaultEra)
}

// PreLoadMemoryEra models pre_model_load_memory on g for TP × PP ranks
// under the era's custom all-reduce: the CUDA-visible total
// (g.CUDATotalBytes) less the CUDA context and, with more than one rank,
// NCCL's initialisation for the interconnect plus the custom all-reduce's
// buffers.
func PreLoadMemoryEra(g gpu.GPU, tp, pp int, era Era) PreLoad {
	tp, pp = max(tp, 1), max(pp, 1)
	p := PreLoad{TotalBytes: g.CUDATotalBytes(), ContextBytes: CUDAContextBytes(g), LocalMemoryBytes: g.LocalMemoryBytes(), Interconnect: interconnect(g)}
	if g.Platform == "hip" {
		p.Interconnect = "xgmi"
	}
	if tp*pp > 1 {
		switch {
		case g.Platform == "hip":
			p.NCCLBytes = DistributedInitHIPMiB << 20
		case p.Interconnect == "nvswitch":
			p.NCCLBytes = DistributedInitNVSwitchMiB << 20
		default:
			p.NCCLBytes = DistributedInitMiB << 20
		}
		p.CustomAllReduceBytes = CustomAllReduceMiB(g, tp, era) << 20
		p.DistributedBytes = p.NCCLBytes + p.CustomAllReduceBytes
	}
	p.FreeBytes = max(p.TotalBytes-p.ContextBytes-p.DistributedBytes, 0)
	return p
}

// PreLoadFreeBytes returns SGLang's modelled free memory (bytes) before
// weight load on a PCIe CUDA GPU whose CUDA-visible total is cudaTotalMiB,
// for a world of worldSize ranks (PreLoadMemory's FreeBytes).
func PreLoadFreeBytes(cudaTotalMiB int64, worldSize int) int64 {
	return PreLoadMemory(gpu.GPU{MemoryMiB: cudaTotalMiB, Platform: "cuda"}, worldSize, 1).FreeBytes
}
