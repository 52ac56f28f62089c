package trtllm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// DeepSeek-V4 (KV cache manager V2) and MiniMax-M3 (indexer pool) are not
// modelled: the error says so, naming the profile, and is kvcfg's error,
// not a refusal (TensorRT-LLM would start).
func TestNewPoolKindsUnsupported(t *testing.T) {
	for model, want := range map[string]string{
		"deepseek-ai/DeepSeek-V4-Flash": "TensorRT-LLM (profile latest) sizes it with KV cache manager V2",
		"MiniMaxAI/MiniMax-M3":          "lightning-indexer K cache",
	} {
		s, err := catalog.Load(model)
		if err != nil {
			t.Fatal(err)
		}
		_, err = trtllm.Plan(s, trtllm.Input{TPSize: 8, KVCacheMemory: 1 << 30})
		if !errors.Is(err, trtllm.ErrUnsupportedModel) || errors.Is(err, trtllm.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", model, err)
		}
	}
}
