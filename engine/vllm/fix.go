package vllm

import (
	"errors"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// withFix turns err, a refusal of launch c whose Result is res, into an
// *engine.Refusal naming the flag (and value, when one follows) that gets
// the launch started.
func withFix(res *Result, err error, s *model.Spec, c Input) error {
	msg, _ := refusalMessage(err)
	if msg == "" {
		msg = res.Error
	}
	re := &engine.Refusal{Engine: engineName, Message: msg, Err: err}
	if r, ok := err.(*engine.Refusal); ok {
		re = r
	}
	var tpe *TPError
	var be *BackendError
	switch {
	case errors.As(err, &tpe):
		if n := tpe.Nearest(); n > 0 {
			re.Flag, re.Value = "--tensor-parallel-size", strconv.Itoa(n)
			re.Hint = "use --tensor-parallel-size " + re.Value + "; sizes that split the heads: " + joinInts(tpe.ValidSizes)
		}
	case errors.As(err, &be):
		backendFix(re, be)
	default:
		memoryFix(re, res, s, c.Memory.FreeBytes)
	}
	return re
}

// backendFix names a --kv-cache-dtype some attention backend accepts, or
// dropping --block-size.
func backendFix(re *engine.Refusal, be *BackendError) {
	if d := be.SuggestedKVCacheDType(); d != "" {
		re.Flag, re.Value = "--kv-cache-dtype", d
		re.Hint = "use --kv-cache-dtype " + d + "; an attention backend on this GPU accepts " + strings.Join(be.ValidKVCacheDTypes, ", ")
	} else if be.DropBlockSize {
		re.Flag = "--block-size"
		re.Hint = "drop --block-size: the default block size has a backend on this GPU"
	}
}

// memoryFix names the fix of the refusals about lengths and memory, by the
// message vLLM raised (free is the free memory before the launch, 0 when
// not known).
func memoryFix(re *engine.Refusal, res *Result, s *model.Spec, free int64) {
	msg := re.Message
	switch {
	case strings.HasPrefix(msg, "User-specified max_model_len"):
		re.Flag, re.Value = "--max-model-len", strconv.Itoa(s.ContextLength)
		re.Hint = "set --max-model-len " + re.Value + " or lower (the model's context length)"
	case strings.HasPrefix(msg, "Free memory on device") && res.Memory.TotalBytes > 0:
		u := float64(int64(float64(free)/float64(res.Memory.TotalBytes)*100)) / 100
		re.Flag, re.Value = "--gpu-memory-utilization", strconv.FormatFloat(u, 'f', -1, 64)
		re.Hint = "lower --gpu-memory-utilization to " + re.Value + " or less, or free the GPU"
	case strings.HasPrefix(msg, "The page size of the layer") || strings.HasPrefix(msg, "Hybrid KV cache manager"):
		re.Hint = "this vLLM version cannot unify the model's page sizes; try --vllm-version latest"
	case res.EstimatedMaxModelLen > 0:
		re.Flag, re.Value = "--max-model-len", strconv.Itoa(res.EstimatedMaxModelLen)
		re.Hint = "set --max-model-len " + re.Value + " or lower, or raise --gpu-memory-utilization"
	case res.Profile == V06 && res.KVCacheSizeTokens > 0 && res.KVCacheSizeTokens < int64(res.MaxModelLen):
		re.Flag, re.Value = "--max-model-len", strconv.FormatInt(res.KVCacheSizeTokens, 10)
		re.Hint = "set --max-model-len " + re.Value + " or lower, or raise --gpu-memory-utilization"
	default:
		re.Flag = "--gpu-memory-utilization"
		re.Hint = "raise --gpu-memory-utilization, or spread the model over more GPUs (--tensor-parallel-size)"
	}
}

// joinInts prints ns as "1, 2, 4".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
