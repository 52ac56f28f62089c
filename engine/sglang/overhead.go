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
//	pre = CUDA-visible total − CUDA context − torch.distributed init
//
// where torch.distributed's init is NCCL's and the all-reduces' above one
// rank and, at one rank from 0.5.8 on, the first CUDA kernel's
// (TP1FirstKernelMiB).
//
// with the total CUDA reports (gpu.GPU.CUDATotalMiB: 81090 MiB on an H100
// 80GB HBM3, not nvidia-smi's 81559).
const (
	// CUDAContextMiB is the CUDA context of a GPU whose SM count the
	// catalog does not know (AMD, a GPU given by its memory): what
	// docs/sglang.md#ex1's H100 (81090 MiB CUDA total) loses before
	// "Load weight begin. avail mem=78.50 GB" at TP 1, 81090 − 80384 =
	// 706 MiB, less the first kernel's TP1FirstKernelMiB that reading
	// holds: 614 MiB. A catalog NVIDIA GPU's context is CUDAContextBytes.
	CUDAContextMiB int64 = 706 - TP1FirstKernelMiB
	// TP1FirstKernelMiB is what a TP-1 worker's first CUDA kernel takes
	// inside init_torch_distributed from 0.5.8 on: GroupCoordinator
	// (distributed/parallel_state.py) allocates its active_ranks mask with
	// torch.ones on the device for every group it builds (PR #11657,
	// merged 2026-01-20), the worker's first kernel at one rank
	// (torch.distributed builds no NCCL communicator there, and
	// PyNcclCommunicator and the custom all-reduce exist only above one
	// rank). The masks share one 2 MiB block of the caching allocator; the
	// rest is what the driver and the lazily loaded kernel images take at
	// a process's first launch, which no SGLang line sizes, so the figure
	// is the logs': "Init torch distributed ends. mem usage=0.09 GB" on
	// H100s at TP 1 (SGLang's docs CI, 2026-02; an H100 node, 2026-08),
	// 0.00 on 0.5.6. Before 0.5.8 the same first kernel ran inside
	// load_model, so a measured weight reading holds it there. Above one
	// rank PyNcclCommunicator's warm-up all-reduce (device_communicators/
	// pynccl.py, every release) ran the first kernels inside
	// init_torch_distributed already, so the NCCL figures below, read from
	// "mem usage", hold it: it is charged at TP × PP = 1 only.
	TP1FirstKernelMiB int64 = 92
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
	// so the figure is a log's, and terms are read from release builds (a
	// development branch's log only where no release log exists): 8 ×
	// H100 80GB HBM3 on an HGX node at TP 8, SGLang's v0.5.2rc2-cu126
	// image with nccl 2.27.3 (Shivank Chaudhary, "Grok2 OnPrem Deployment
	// via sglang", published 2025-09-14, log of 2025-09-11) print "[TP0]
	// Init torch distributed ends. mem usage=1.25 GB": 1.25 GiB = 1280
	// MiB, less the custom all-reduce's 26 MiB = 1254 MiB (the reading
	// holds the first kernel's cost, as every multi-rank "mem usage" does,
	// so TP1FirstKernelMiB is charged at one rank only). Only TP0 prints
	// that line while free memory before weights is the MIN over ranks;
	// the one all-rank log (below) has TP0 within about 50 MiB of the
	// largest rank, so the figure may understate the largest rank by that
	// much. The other reading, 8 × H200 at TP 8 on PR #11716's branch
	// ("try to support sgl-kernel in piecewise-cuda-graph", closed
	// unmerged, 2025-10-16), prints 1.77–2.01 GB per rank (TP0 1.96): the
	// largest, 2.01 GiB less 26 MiB, would be 2032 MiB. That branch is
	// unmerged and may build more than the release: its TP0 reads 0.71 GB
	// above the release's on the same NVLink 4 generation, about one more
	// communicator's buffers (a hypothesis, not traced). No validation
	// row sets the figure, but the switch from the branch's reading to the
	// release's was made after the table had shown the branch's figure high
	// on every NVSwitch row, so those rows are not blind to the choice.
	DistributedInitNVSwitchMiB int64 = 1254
	// RCCLHIPMiB is RCCL's part of the distributed init on a ROCm rank
	// whose TP group has fewer than 8 ranks. SGLang's ROCm images set
	// NCCL_MIN_NCHANNELS=112 (docker/rocm.Dockerfile), so each RCCL
	// communicator (the TP group's PyNcclCommunicator with its warm-up
	// all-reduce) opens at least 112 channels, whose buffers RCCL sizes
	// itself: the figure is a log's. 4 × MI300X at TP 4 (issue #25118,
	// rocm720 image of 2026-05) print "mem usage" 8.24–8.31 GB; the largest
	// rank's 8.31 GiB (8509 MiB) less aiter's custom all-reduce (3082) and
	// the quick all-reduce (4098) leaves 1329 MiB.
	RCCLHIPMiB int64 = 1329
	// RCCLHIP8MiB is the same at 8 ranks, where RCCL's footprint steps up
	// (about 2.2 GiB more; its own choice of algorithms and connections for
	// a full node, not traced). 8 × MI355X at TP 8 on SGLang 0.5.8.post1
	// (ajith-sirra-amd/Issues, 2026-02) print 3.41–3.83 GB with the older
	// aiter custom all-reduce (394 MiB) and no quick all-reduce (its init
	// failed without amdsmi): 3.83 GiB (3922 MiB) − 394 = 3528 MiB.
	RCCLHIP8MiB int64 = 3528
)

// The ROCm communicators SGLang builds for the TP group besides RCCL
// (GroupCoordinator in distributed/parallel_state.py, use_custom_allreduce
// on, TP size 2, 4, 6 or 8 in one node). Their buffers are hipMalloc'd at
// the 2 MiB granularity; peers' buffers are IPC mappings and take no memory
// here.
const (
	// AiterCustomAllReduceMiB is aiter's CustomAllreduce, which
	// dispatch_custom_allreduce (device_communicators/custom_all_reduce.py)
	// returns on ROCm unless SGLANG_USE_AITER_AR=0, built without a
	// max_size. aiter from v0.1.12 (PR ROCm/aiter#2453, 2026-04; in SGLang's
	// ROCm images from 0.5.10) defaults max_size to 1 GiB and allocates an
	// uncached meta buffer of meta_size() (5504 B) + 2 × max_size → 2050
	// MiB, a 1 GiB input buffer and 8 MiB of rank_data
	// (aiter/dist/device_communicators/custom_all_reduce.py).
	AiterCustomAllReduceMiB int64 = 2050 + 1024 + 8
	// AiterCustomAllReduce0509MiB is the same before 0.5.10 (aiter up to
	// v0.1.11): max_size 8192·1024·8·2 = 128 MiB, meta_size() + max_size →
	// 130 MiB, input and output buffers of 128 MiB each, rank_data 8 MiB.
	AiterCustomAllReduce0509MiB int64 = 130 + 128 + 128 + 8
	// QuickAllReduceMiB is SGLang's QuickAllReduce
	// (device_communicators/quick_all_reduce.py), built next to the custom
	// all-reduce on gfx94x/gfx95x at TP 2, 4 or 8 when
	// ROCM_QUICK_REDUCE_QUANTIZATION is not NONE, which SGLang's ROCm images
	// set to INT8. init_custom_qr without a max size allocates one uncached
	// buffer of flags + 2 × kMaxProblemSize (2 GiB): 4098 MiB.
	QuickAllReduceMiB int64 = 4096 + 2
)

// RuntimeImagesMiB is the part of a CUDA context beyond the local-memory
// reservation: the driver's per-context state and the kernel images torch,
// NCCL and SGLang's kernels have loaded when init_torch_distributed takes
// its first reading (torch sets CUDA_MODULE_LOADING=LAZY, so a module
// loads when it is first used). Neither SGLang's source nor the GPU fixes
// it: the driver, CUDA and the libraries' releases do, so it is read from
// a log, the H100 at TP 1 of 2026: 706 MiB lost before weights, less 264
// MiB of local memory and the first kernel's TP1FirstKernelMiB, which that
// release reads inside init_torch_distributed: 350 MiB. The other public
// runs put it at 190 MiB (4 × L4, 0.4.3), 258 MiB (8 × H100 on the
// v0.5.2rc2 image, 2025-09, and 8 × H200 on PR #11716's branch, 2025-10)
// and 303 MiB (4 × RTX PRO 6000, issue #40558, 2026-09): older releases
// load less, but five runs on four GPUs do not separate the
// release from the driver and the architecture, so the figure is one for
// every era (docs/predict.md).
const RuntimeImagesMiB int64 = 706 - 264 - TP1FirstKernelMiB

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
// On ROCm the class is aiter's (AiterCustomAllReduceMiB from 0.5.10,
// AiterCustomAllReduce0509MiB before), built at the same TP sizes: the
// GPUs of an MI300-series node are fully XGMI-connected.
func CustomAllReduceMiB(g gpu.GPU, tp int, era Era) int64 {
	switch tp {
	case 2, 4, 6, 8:
	default:
		return 0
	}
	if g.Platform == "hip" {
		return hipCustomAllReduceMiB(era)
	}
	if g.Platform != "cuda" || interconnect(g) == "pcie" {
		return 0
	}
	if era == Era04 {
		return 8 + 8 + 2 + 2 + 8
	}
	return 10 + 8 + 8
}

// hipCustomAllReduceMiB is aiter's custom all-reduce by era: the 1 GiB
// max_size from 0.5.10's images on, 128 MiB before.
func hipCustomAllReduceMiB(era Era) int64 {
	if eraBefore0510(era) {
		return AiterCustomAllReduce0509MiB
	}
	return AiterCustomAllReduceMiB
}

// eraBefore0510 reports whether era predates 0.5.10.
func eraBefore0510(era Era) bool {
	switch era {
	case Era04, Era048, Era053:
		return true
	}
	return false
}

// QuickAllReduceMiBFor returns the quick all-reduce's buffer on a rank of
// g at tp (QuickAllReduceMiB), in MiB: ROCm only, TP 2, 4 or 8, from
// 0.5.10 on. The one public log before 0.5.10 (0.5.8.post1) shows its init
// failing ("Failed to initialize QuickAllReduce": amdsmi missing from the
// image), so the older eras charge none.
func QuickAllReduceMiBFor(g gpu.GPU, tp int, era Era) int64 {
	if g.Platform != "hip" || eraBefore0510(era) {
		return 0
	}
	switch tp {
	case 2, 4, 8:
		return QuickAllReduceMiB
	}
	return 0
}

// RCCLMiB returns RCCL's part of a ROCm rank's distributed init, in MiB:
// RCCLHIP8MiB when the TP group spans 8 or more ranks, RCCLHIPMiB below.
func RCCLMiB(tp int) int64 {
	if tp >= 8 {
		return RCCLHIP8MiB
	}
	return RCCLHIPMiB
}

// interconnect classifies how a node of g's GPUs is wired
// (gpu.GPU.Interconnect; a ROCm card reads as "pcie" here, its figures
// are the HIP ones).
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
	// and the custom all-reduce's together; at one rank the first
	// kernel's TP1FirstKernelMiB from 0.5.8 on, else 0.
	DistributedBytes int64 `json:"distributed_bytes"`
	// NCCLBytes is NCCL's (RCCL's) part of DistributedBytes.
	NCCLBytes int64 `json:"nccl_bytes"`
	// CustomAllReduceBytes is the custom all-reduce's buffers
	// (CustomAllReduceMiB), part of DistributedBytes.
	CustomAllReduceBytes int64 `json:"custom_all_reduce_bytes"`
	// QuickAllReduceBytes is ROCm's quick all-reduce buffer
	// (QuickAllReduceMiBFor), part of DistributedBytes.
	QuickAllReduceBytes int64 `json:"quick_all_reduce_bytes"`
	// FirstKernelBytes is the first CUDA kernel's TP1FirstKernelMiB, part
	// of DistributedBytes at one rank from 0.5.8 on (above one rank the
	// NCCL figure holds it).
	FirstKernelBytes int64 `json:"first_kernel_bytes,omitempty"`
	// Interconnect is the wiring the NCCL term assumes: "nvswitch",
	// "nvlink", "pcie" or "xgmi" (ROCm).
	Interconnect string `json:"interconnect"`
	// FreeBytes is pre_model_load_memory: the total less the terms,
	// never negative.
	FreeBytes int64 `json:"free_bytes"`
}

// PreLoadMemory models pre_model_load_memory on g for TP × PP ranks with
// the default (newest) SGLang profile; see PreLoadMemoryFor.
func PreLoadMemory(g gpu.GPU, tp, pp int) PreLoad {
	return PreLoadMemoryFor(g, tp, pp, defaultProfile)
}

// PreLoadMemoryEra is PreLoadMemoryFor with the newest release of era.
func PreLoadMemoryEra(g gpu.GPU, tp, pp int, era Era) PreLoad {
	return preLoadMemory(g, tp, pp, era, eraRules(era, nil))
}

// PreLoadMemoryFor models pre_model_load_memory on g for TP × PP ranks
// under prof's release: the CUDA-visible total (g.CUDATotalBytes) less the
// CUDA context and, with more than one rank, NCCL's initialisation for the
// interconnect plus the custom all-reduce's buffers; on ROCm RCCL by the
// TP group's size (RCCLMiB), aiter's custom all-reduce and the quick
// all-reduce (SGLang's ROCm images' environment). At one rank from 0.5.8
// on it is the first kernel's TP1FirstKernelMiB.
func PreLoadMemoryFor(g gpu.GPU, tp, pp int, prof Profile) PreLoad {
	return preLoadMemory(g, tp, pp, prof.Era, prof.rules)
}

// preLoadMemory is PreLoadMemoryFor under era's and the release's rules.
func preLoadMemory(g gpu.GPU, tp, pp int, era Era, r rules) PreLoad {
	tp, pp = max(tp, 1), max(pp, 1)
	p := PreLoad{TotalBytes: g.CUDATotalBytes(), ContextBytes: CUDAContextBytes(g), LocalMemoryBytes: g.LocalMemoryBytes(), Interconnect: interconnect(g)}
	if g.Platform == "hip" {
		p.Interconnect = "xgmi"
	}
	switch {
	case tp*pp > 1:
		switch {
		case g.Platform == "hip":
			p.NCCLBytes = RCCLMiB(tp) << 20
			p.QuickAllReduceBytes = QuickAllReduceMiBFor(g, tp, era) << 20
		case p.Interconnect == "nvswitch":
			p.NCCLBytes = DistributedInitNVSwitchMiB << 20
		default:
			p.NCCLBytes = DistributedInitMiB << 20
		}
		p.CustomAllReduceBytes = CustomAllReduceMiB(g, tp, era) << 20
		p.DistributedBytes = p.NCCLBytes + p.CustomAllReduceBytes + p.QuickAllReduceBytes
	case r.groupDeviceTensor:
		p.FirstKernelBytes = TP1FirstKernelMiB << 20
		p.DistributedBytes = p.FirstKernelBytes
	}
	p.FreeBytes = max(p.TotalBytes-p.ContextBytes-p.DistributedBytes, 0)
	return p
}

// FirstKernelAfterPreLoadBytes returns the first kernel's memory that
// falls between the pre-load and the post-load readings under prof's
// release at TP × PP ranks: TP1FirstKernelMiB at one rank before 0.5.8,
// else 0. Before PR #11657 (0.5.8) a TP-1 worker launches no kernel in
// init_torch_distributed (its logs print "mem usage=0.00 GB"); its first
// launch comes in ModelRunner.load_model, where the model is built and
// its weights are filled under the device context
// (model_executor/model_runner.py, model_loader/loader.py), so the
// driver's and the lazily loaded kernel images' share lands in the
// weights' "mem usage" and a measured weight reading (pre − post) holds
// it. A weight figure that is not a reading (an estimate, the
// safetensors bytes, a given size) is the weights alone, so a plan
// charges this after the pre-load reading. From 0.5.8 on, and above one
// rank in every release (PyNcclCommunicator's warm-up), the pre-load
// reading holds it.
func FirstKernelAfterPreLoadBytes(tp, pp int, prof Profile) int64 {
	if max(tp, 1)*max(pp, 1) > 1 || prof.groupDeviceTensor {
		return 0
	}
	return TP1FirstKernelMiB << 20
}

// PreLoadFreeBytes returns SGLang's modelled free memory (bytes) before
// weight load on a PCIe CUDA GPU whose CUDA-visible total is cudaTotalMiB,
// for a world of worldSize ranks (PreLoadMemory's FreeBytes).
func PreLoadFreeBytes(cudaTotalMiB int64, worldSize int) int64 {
	return PreLoadMemory(gpu.GPU{MemoryMiB: cudaTotalMiB, Platform: "cuda"}, worldSize, 1).FreeBytes
}
