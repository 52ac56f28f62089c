package vllm_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/model"
)

// FuzzPlan feeds odd shapes and settings to Plan: it must never panic, and a
// result without error must have a non-negative pool.
func FuzzPlan(f *testing.F) {
	f.Add(uint8(32), uint8(8), uint16(128), uint8(0), uint8(1), uint8(1), uint16(16), int32(8192), int64(4<<30), uint8(2), uint8(0))
	f.Add(uint8(36), uint8(8), uint16(64), uint8(2), uint8(2), uint8(3), uint16(0), int32(-1), int64(1<<20), uint8(1), uint8(1))
	f.Add(uint8(3), uint8(1), uint16(1), uint8(3), uint8(64), uint8(8), uint16(7), int32(1), int64(0), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, layers, kvHeads uint8, headDim uint16, pattern, tp, pp uint8, block uint16, maxLen int32, avail int64, profile, dt uint8) {
		n := int(layers % 80)
		s := &model.Spec{Name: "fuzz", NumLayers: n, NumAttentionHeads: int(kvHeads) * 2, NumKVHeads: int(kvHeads),
			HeadDim: int(headDim % 1024), ContextLength: 1 << 17, ModelDType: dtype.BFloat16, SlidingWindow: int(headDim) + 1,
			Linear: &model.LinearSpec{Kind: "mamba2", NumHeads: 8, HeadDim: 64, StateSize: 128, NGroups: 1, ConvKernel: 4, IntermediateSize: 512}}
		for i := range n {
			k := model.FullAttention
			switch pattern % 4 {
			case 1:
				if i%2 == 0 {
					k = model.SlidingAttention
				}
			case 2:
				if i%3 != 2 {
					k = model.LinearAttention
				}
			case 3:
				if i%5 == 0 {
					k = model.NoCache
				}
			}
			s.LayerKinds = append(s.LayerKinds, k)
		}
		if pattern%7 == 6 {
			s.Attention, s.KVLoraRank, s.QKRopeHeadDim = model.MLA, 512, 64
		}
		versions := []string{"0.6", "0.11", "latest", "0.6.5", "0.7.1", "0.7.3", "0.8.2", "0.9.2", "0.10.1", "0.10.2", "0.13", "0.18"}
		dtypes := []string{"auto", "fp8", "nvfp4", "bfloat16", "fp8_per_token_head", "fp8_e5m2"}
		sms := []int{0, 75, 80, 89, 90, 100, 103, 120}
		c := vllm.Input{Version: versions[int(profile)%len(versions)], KVCacheDType: dtypes[int(dt)%len(dtypes)], GPUSM: sms[int(dt/8)%len(sms)],
			TensorParallelSize: int(tp % 16), PipelineParallelSize: int(pp % 8), BlockSize: int(block % 2048),
			MaxModelLen: int(maxLen % (1 << 18)), Memory: vllm.Memory{AvailableKVBytes: avail}}
		res, err := vllm.Plan(s, c)
		if err == nil && res != nil && (res.NumGPUBlocks < 0 || res.KVCacheSizeTokens < 0) {
			t.Errorf("negative pool: %+v", res)
		}
	})
}
