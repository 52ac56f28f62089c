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
	// CUDAContextMiB is the CUDA context, its kernel images and the
	// torch state a worker holds when init_torch_distributed reads its
	// free memory: docs/sglang.md#ex1's H100 (81090 MiB CUDA total) reads
	// 78.50 GiB before weight load at TP 1, 81090 − 80384 = 706 MiB;
	// public H100 logs of 2026 read 78.43–78.50 GiB.
	CUDAContextMiB int64 = 706
	// DistributedInitMiB is what torch.distributed and NCCL take on a
	// CUDA rank when TP × PP > 1 (the "Init torch distributed ends. mem
	// usage" line: 0.19 GB on RTX 4090s at TP 2, 0.16 GB at PP 4; 0.00 at
	// one rank, where no communicator is built).
	DistributedInitMiB int64 = 195
	// DistributedInitHIPMiB is the same on ROCm, where the custom
	// all-reduce registers larger IPC buffers: 3.41–3.83 GB per rank in a
	// public MI-series TP 8 log.
	DistributedInitHIPMiB int64 = 3789
)

// PreLoad is SGLang's free memory before weight load and its terms, in
// bytes.
type PreLoad struct {
	// TotalBytes is the total CUDA (HIP) reports.
	TotalBytes int64 `json:"total_bytes"`
	// ContextBytes is the CUDA context (CUDAContextMiB).
	ContextBytes int64 `json:"context_bytes"`
	// DistributedBytes is torch.distributed/NCCL initialisation; 0 at one
	// rank.
	DistributedBytes int64 `json:"distributed_bytes"`
	// FreeBytes is pre_model_load_memory: the total less the two terms,
	// never negative.
	FreeBytes int64 `json:"free_bytes"`
}

// PreLoadMemory models pre_model_load_memory on g for TP × PP ranks: the
// CUDA-visible total (g.CUDATotalBytes) less the CUDA context and, with
// more than one rank, torch.distributed's initialisation.
func PreLoadMemory(g gpu.GPU, tp, pp int) PreLoad {
	p := PreLoad{TotalBytes: g.CUDATotalBytes(), ContextBytes: CUDAContextMiB << 20}
	if max(tp, 1)*max(pp, 1) > 1 {
		p.DistributedBytes = DistributedInitMiB << 20
		if g.Platform == "hip" {
			p.DistributedBytes = DistributedInitHIPMiB << 20
		}
	}
	p.FreeBytes = max(p.TotalBytes-p.ContextBytes-p.DistributedBytes, 0)
	return p
}

// PreLoadFreeBytes returns SGLang's modelled free memory (bytes) before
// weight load on a CUDA GPU whose CUDA-visible total is cudaTotalMiB, for a
// world of worldSize ranks (PreLoadMemory's FreeBytes).
func PreLoadFreeBytes(cudaTotalMiB int64, worldSize int) int64 {
	return PreLoadMemory(gpu.GPU{MemoryMiB: cudaTotalMiB, Platform: "cuda"}, worldSize, 1).FreeBytes
}
