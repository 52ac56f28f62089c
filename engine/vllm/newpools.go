package vllm

import (
	"fmt"

	"github.com/kvcfg/kvcfg/model"
)

// checkNewPoolKinds refuses the models whose vLLM KV cache kvcfg does not
// plan in profile p (docs/vllm.md#deepseek-v4).
//
// DeepSeek-V4 (DeepseekV4ForCausalLM) is planned by the latest profile
// (planDSV4); the profiles before it cover releases without the
// architecture, which fail with vLLM's unsupported-architecture error.
//
// MiniMax-M3 (MiniMaxM3SparseForCausalLM): the sparse layers keep a
// lightning-indexer K cache next to the K/V cache, which kvcfg does not
// model.
func checkNewPoolKinds(s *model.Spec, p Profile, rel release) error {
	switch {
	case s.Compressed != nil && p != Latest:
		return fmt.Errorf("%w: vLLM %s does not register DeepseekV4ForCausalLM (\"Model architectures ['DeepseekV4ForCausalLM'] are not supported for now.\"); kvcfg plans DeepSeek-V4 with --vllm-version latest (%s)", ErrUnsupportedModel, rel, profileRange(Latest))
	case s.SparseIndex != nil:
		return fmt.Errorf("%w: %s uses MiniMax-M3 sparse attention; vLLM keeps its lightning-indexer K cache as a separate KV cache spec, which kvcfg does not model: plan it with --engine sglang", ErrUnsupportedModel, s.Name)
	}
	return nil
}
