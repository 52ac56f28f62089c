package sglang

import "github.com/kvcfg/kvcfg/gpu"

// PreLoadFreeBytes returns SGLang's modelled free memory (bytes) before
// weight load (pre_model_load_memory) on a GPU of totalMiB for a world of
// worldSize ranks: the total less gpu.RuntimeOverheadMiB, never negative.
func PreLoadFreeBytes(totalMiB int64, worldSize int) int64 {
	free := totalMiB - gpu.RuntimeOverheadMiB(worldSize)
	if free < 0 {
		return 0
	}
	return free << 20
}
