package trtllm_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/model"
)

// FuzzPlan feeds odd shapes and settings to Plan: it must never panic, and a
// result without error must hold a non-empty, consistent pool.
func FuzzPlan(f *testing.F) {
	f.Add(uint8(32), uint8(8), uint16(128), uint16(0), uint8(1), uint8(1), uint8(0), uint16(32), int64(20<<30), int64(0), uint8(3), uint8(0), uint16(0), int32(0), uint16(0), float32(0))
	f.Add(uint8(61), uint8(128), uint16(192), uint16(512), uint8(8), uint8(2), uint8(1), uint16(0), int64(0), int64(80<<30), uint8(1), uint8(1), uint16(128), int32(9000), uint16(7), float32(0.95))
	f.Add(uint8(3), uint8(1), uint16(4), uint16(0), uint8(16), uint8(4), uint8(2), uint16(1), int64(1), int64(1), uint8(0), uint8(2), uint16(1), int32(-1), uint16(65535), float32(1))
	f.Fuzz(func(t *testing.T, layers, kvHeads uint8, headDim, lora uint16, tp, pp, mode uint8, tpb uint16, kvMem, gpuMem int64, version, dt uint8, window uint16, prompt int32, seq uint16, frac float32) {
		s := &model.Spec{Name: "fuzz", NumLayers: int(layers), NumAttentionHeads: int(kvHeads) * 2, NumKVHeads: int(kvHeads),
			HeadDim: int(headDim), HiddenSize: int(headDim) * int(kvHeads) * 2, ContextLength: 1 << 17, ModelDType: dtype.BFloat16,
			NumNextNPredictLayers: int(mode % 3)}
		for range s.NumLayers {
			s.LayerKinds = append(s.LayerKinds, model.FullAttention)
		}
		if lora > 0 && lora%3 == 0 {
			s.Attention, s.KVLoraRank, s.QKRopeHeadDim = model.MLA, int(lora), 64
		}
		versions := []string{"0.x", "1.0", "1.1", "latest"}
		dtypes := []string{"auto", "fp8", "nvfp4", "int8"}
		modes := []string{"", trtllm.SpecMTP, trtllm.SpecEagle3}
		in := trtllm.Input{Version: versions[int(version)%4], KVCacheDType: dtypes[int(dt)%4], TPSize: int(tp % 32), PPSize: int(pp % 8),
			TokensPerBlock: int(tpb % 512), GPUMemoryBytes: gpuMem, MaxSeqLen: int(seq), PromptLen: int(prompt), FreeGPUMemoryFraction: float64(frac),
			SpeculativeMode: modes[int(mode)%3], MaxTokens: int64(window) * 3, HostCacheSize: int64(window) << 20}
		if in.Version == "0.x" {
			in.FreeMemoryAfterLoad, in.SpeculativeMode = kvMem, ""
		} else {
			in.KVCacheMemory = kvMem
		}
		if window > 0 {
			in.MaxAttentionWindow = []int{int(window), int(seq) + 1}
		}
		res, err := trtllm.Plan(s, in)
		if err == nil {
			if res == nil || res.NumBlocks <= 0 || res.MaxTokens < res.NumBlocks || res.KVCacheBytes <= 0 || res.MaxSeqLen <= 0 {
				t.Errorf("inconsistent result %+v", res)
			}
			_ = res.MaxConcurrency(int(seq))
		}
	})
}
