package trtllm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// KVCacheDTypes lists the kv_cache_config.dtype values the PyTorch backend
// accepts (llm_args / model_loader _VALID_KV_CACHE_DTYPES). Anything else,
// "int8" and "bf16" included, is rejected with "Overriding KV cache
// quantization with an invalid type".
func KVCacheDTypes() []string { return []string{"auto", "fp8", "nvfp4"} }

// AcceptedKVDTypes lists the kv_cache_dtype values the profile accepts: the
// PyTorch profiles take KVCacheDTypes; engine builds take auto, fp8 and int8
// (the cache type is fixed when the checkpoint is quantized).
func AcceptedKVDTypes(p Profile) []string { return slices.Clone(p.rules().dtypes) }

// CacheDType is a resolved kv_cache_dtype.
type CacheDType struct {
	// Requested is the value as given ("auto", "fp8", "nvfp4").
	Requested string `json:"requested"`
	// Name is the cache element TensorRT-LLM allocates: "bfloat16",
	// "float16", "float32", "fp8", "nvfp4" or "int8".
	Name string `json:"name"`
	// Format is the storage format in kvcfg's vocabulary.
	Format dtype.Format `json:"format"`
	// FromCheckpoint reports that "auto" followed the checkpoint's
	// kv_cache_quant_algo.
	FromCheckpoint bool `json:"from_checkpoint,omitempty"`
}

// oneByte reports the 1-byte caches the estimate counts as one byte.
func (c CacheDType) oneByte() bool { return c.Name == "fp8" || c.Name == "int8" }

// ResolveKVDType resolves a kv_cache_dtype for model s under profile p and
// returns the warning TensorRT-LLM logs when an explicit dtype overrides the
// checkpoint's ("" if none).
func ResolveKVDType(name string, s *model.Spec, p Profile) (CacheDType, string, error) {
	r := p.rules()
	req := strings.ToLower(strings.TrimSpace(name))
	if req == "" {
		req = dtype.Auto
	}
	if !slices.Contains(r.dtypes, req) {
		if r.engine {
			return CacheDType{}, "", fmt.Errorf("%w: %q is not a cache type of TensorRT engine builds (accepted: %s)", ErrUnsupportedDType, name, strings.Join(r.dtypes, ", "))
		}
		field := "llm_args.KvCacheConfig.dtype"
		if p == V10 {
			field = "PyTorchConfig.kv_cache_dtype"
		}
		return CacheDType{}, "", fmt.Errorf("%w: Overriding KV cache quantization with an invalid type \"%s=\"%s\" Accepted types are \"('fp8', 'nvfp4', 'auto')\". (set kv_cache_dtype to auto, fp8 or nvfp4)",
			ErrUnsupportedDType, field, req)
	}
	algo := ""
	if s != nil && s.Quant != nil {
		algo = strings.ToUpper(strings.TrimSpace(s.Quant.KVCacheQuantAlgo))
	}
	ckpt := ""
	switch algo {
	case "FP8":
		ckpt = "fp8"
	case "NVFP4":
		ckpt = "nvfp4"
	case "INT8":
		ckpt = "int8"
	}
	out := CacheDType{Requested: req}
	warning := ""
	switch {
	case req == dtype.Auto && ckpt != "":
		out.Name, out.FromCheckpoint = ckpt, true
	case req == dtype.Auto:
		out.Name = modelCacheName(s)
	default:
		out.Name = req
		if ckpt != "" && ckpt != req && !r.engine {
			if r.refuseKVOverride {
				return CacheDType{}, "", &engine.Refusal{Engine: engineName, Err: ErrRefused,
					Message: fmt.Sprintf("Attempting to override KV cache quantization \"%s\" with PyTorchConfig.kv_cache_dtype=\"%s\". You cannot override a checkpoint with a pre-quantized KV cache that doesn't match.", algo, req),
					Flag:    "kv_cache_dtype",
					Hint:    "use kv_cache_dtype auto with this checkpoint, or a newer TensorRT-LLM that overrides it",
				}
			}
			warning = fmt.Sprintf("Overriding checkpoint KV cache quantization \"%s\" with llm_args.KvCacheConfig.dtype=\"%s\".", algo, req)
		}
	}
	if out.Name == "int8" && !r.engine {
		return CacheDType{}, "", fmt.Errorf("%w: the checkpoint's kv_cache_quant_algo INT8 is not a PyTorch-backend cache type (accepted: fp8, nvfp4); set kv_cache_dtype fp8", ErrUnsupportedDType)
	}
	if out.Name == "nvfp4" && s != nil && isMLA(s) {
		return CacheDType{}, "", fmt.Errorf("%w: nvfp4 with an MLA latent cache is sized by a dedicated TensorRT-LLM manager that kvcfg does not model; use fp8 or auto", ErrUnsupportedDType)
	}
	if out.Name == "int8" {
		out.Format = dtype.Format{Name: "int8", Element: dtype.Int8, ElementBits: 8, Description: "int8 with a per-tensor scale (engine builds)"}
		return out, warning, nil
	}
	f, err := dtype.LookupFormat(formatOf(out.Name))
	if err != nil {
		return CacheDType{}, "", fmt.Errorf("trtllm: %w", err)
	}
	out.Format = f
	return out, warning, nil
}

// formatOf maps TensorRT-LLM cache names to kvcfg storage formats.
func formatOf(name string) string {
	switch name {
	case "fp8":
		return "fp8_e4m3"
	case "bfloat16":
		return "bf16"
	case "float16":
		return "fp16"
	case "float32":
		return "fp32"
	}
	return name
}

// modelCacheName is the cache element of an unquantized cache: the model
// dtype (bfloat16 when unknown).
func modelCacheName(s *model.Spec) string {
	if s == nil {
		return "bfloat16"
	}
	switch s.ModelDType {
	case dtype.Float16:
		return "float16"
	case dtype.Float32:
		return "float32"
	default:
		return "bfloat16"
	}
}

// isMLA reports a latent (K-only) cache: TensorRT-LLM tests hasattr(config,
// "kv_lora_rank").
func isMLA(s *model.Spec) bool { return s.KVLoraRank > 0 }
