package vllm

import (
	"errors"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// fix sets the flag, value and hint of re, a refusal whose fix follows
// from where vLLM raises it, and returns it.
func fix(re *engine.Refusal, flag, value, hint string) *engine.Refusal {
	re.Flag, re.Value, re.Hint = flag, value, hint
	return re
}

// withFix returns err, a refusal of a launch whose Result is res, as an
// *engine.Refusal naming the flag (and value, when one follows) that gets
// the launch started: the sizes that split the heads (*TPError), a KV
// dtype an attention backend takes (*BackendError), the fix set where vLLM
// raised it, else the one res's numbers give.
func withFix(res *Result, err error) error {
	var tpe *TPError
	var be *BackendError
	switch {
	case errors.As(err, &tpe):
		re := &engine.Refusal{Engine: engineName, Message: tpe.Message, Err: err}
		if n := tpe.Nearest(); n > 0 {
			v := strconv.Itoa(n)
			fix(re, "--tensor-parallel-size", v, "use --tensor-parallel-size "+v+"; sizes that split the heads: "+joinInts(tpe.ValidSizes))
		}
		return re
	case errors.As(err, &be):
		re := &engine.Refusal{Engine: engineName, Message: be.Message, Err: err}
		if d := be.SuggestedKVCacheDType(); d != "" {
			fix(re, "--kv-cache-dtype", d, "use --kv-cache-dtype "+d+"; an attention backend on this GPU accepts "+strings.Join(be.ValidKVCacheDTypes, ", "))
		} else if be.DropBlockSize {
			fix(re, "--block-size", "", "drop --block-size: the default block size has a backend on this GPU")
		}
		return re
	}
	re, ok := err.(*engine.Refusal)
	if ok && re.Flag == "" && re.Hint == "" {
		memoryFix(re, res)
	}
	return err
}

// memoryFix names the fix of a refusal for memory by the numbers of res:
// the estimated maximum model length of the admission check, V0's KV
// tokens, else a larger memory share.
func memoryFix(re *engine.Refusal, res *Result) {
	switch {
	case res.EstimatedMaxModelLen > 0:
		v := strconv.Itoa(res.EstimatedMaxModelLen)
		fix(re, "--max-model-len", v, "set --max-model-len "+v+" or lower, or raise --gpu-memory-utilization")
	case res.Profile == V06 && res.KVCacheSizeTokens > 0 && res.KVCacheSizeTokens < int64(res.MaxModelLen):
		v := strconv.FormatInt(res.KVCacheSizeTokens, 10)
		fix(re, "--max-model-len", v, "set --max-model-len "+v+" or lower, or raise --gpu-memory-utilization")
	default:
		fix(re, "--gpu-memory-utilization", "", "raise --gpu-memory-utilization, or spread the model over more GPUs (--tensor-parallel-size)")
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
