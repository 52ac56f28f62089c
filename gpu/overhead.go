package gpu

// Runtime overhead model. Before an engine loads weights, part of the
// device memory is already gone: the CUDA (or HIP) context and its kernel
// images, cuBLAS/cuDNN workspaces, the caching allocator's first segments
// and, with more than one rank, NCCL communicators and their buffers, plus
// custom all-reduce IPC buffers. Every engine loses it; SGLang measures
// what is left (pre_model_load_memory) after these exist.
//
// The figures are calibrated on the SGLang KV spec's worked example 1: an
// H100 80GB SXM (81559 MiB) reads 78.50 GiB free before weight load, so a
// single rank loses 81559 − 80384 = 1175 MiB. Multi-rank runs add NCCL
// buffers and the custom all-reduce workspace; 512 MiB is a typical reading
// for TP 2–8 on one node.
const (
	// SingleRankOverheadMiB is the context + library overhead of one rank.
	SingleRankOverheadMiB int64 = 1175
	// MultiRankExtraMiB is added when the world size is above one.
	MultiRankExtraMiB int64 = 512
)

// RuntimeOverheadMiB returns the memory (MiB) a rank loses before weight
// loading for a world of worldSize ranks.
func RuntimeOverheadMiB(worldSize int) int64 {
	if worldSize > 1 {
		return SingleRankOverheadMiB + MultiRankExtraMiB
	}
	return SingleRankOverheadMiB
}
