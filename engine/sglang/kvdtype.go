package sglang

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
)

// ErrUnsupportedKV reports a --kv-cache-dtype the engine does not accept.
var ErrUnsupportedKV = errors.New("sglang: unsupported kv cache dtype")

// ErrDeprecatedKV reports a --kv-cache-dtype that was removed.
var ErrDeprecatedKV = errors.New("sglang: deprecated kv cache dtype")

// ErrUnavailableKV reports a KV format the platform cannot provide.
var ErrUnavailableKV = errors.New("sglang: kv cache dtype unavailable")

// ErrInvalidRequest reports a resolution request that is missing inputs.
var ErrInvalidRequest = errors.New("sglang: invalid request")

// Platform is the accelerator software stack.
type Platform string

// The platforms.
const (
	CUDA Platform = "cuda"
	HIP  Platform = "hip"
	NPU  Platform = "npu"
)

// accepted lists the --kv-cache-dtype strings SGLang accepts, in its order.
var accepted = []string{
	"auto", "bf16", "bfloat16", "fp16", "float16", "fp8_e4m3", "fp8_e5m2",
	"mxfp8", "nvfp4", "fp4_mx_block16", "int8_g64", "int4_g32", "int8ring_int4",
}

// acceptedKVDTypes returns the --kv-cache-dtype strings ResolveKV accepts.
func acceptedKVDTypes() []string { return slices.Clone(accepted) }

// KVRequest is the input of Resolve: SGLang's configure_kv_cache_dtype
// arguments made explicit.
type KVRequest struct {
	// KVCacheDType is --kv-cache-dtype as given; "" means "auto".
	KVCacheDType string `json:"kv_cache_dtype"`
	// ModelDType is the resolved model dtype (float16, bfloat16 or float32).
	// It is required: a missing model dtype silently halves or doubles the
	// pool element size in engines that default it.
	ModelDType dtype.DType `json:"model_dtype"`
	// KVCacheQuantAlgo is the checkpoint's kv_cache_quant_algo ("FP8"), ""
	// when the checkpoint has no KV calibration.
	KVCacheQuantAlgo string `json:"kv_cache_quant_algo,omitempty"`
	// Platform is cuda (the default when empty), hip or npu.
	Platform Platform `json:"platform,omitempty"`
	// FNUZ marks HIP hardware whose fp8 type is float8_e4m3fnuz (MI300X,
	// MI325X); other HIP hardware uses float8_e4m3fn.
	FNUZ bool `json:"fnuz,omitempty"`
	// IsDraftWorker is true when resolving for a speculative draft model.
	IsDraftWorker bool `json:"is_draft_worker,omitempty"`
	// SpeculativeAlgorithm is EAGLE, EAGLE3, STANDALONE, DFLASH, NGRAM or "".
	SpeculativeAlgorithm string `json:"speculative_algorithm,omitempty"`
	// DraftAttentionBackend is the draft model's attention backend ("fa4", ...).
	DraftAttentionBackend string `json:"draft_attention_backend,omitempty"`
	// DraftKVCacheDType is --speculative-draft-kv-cache-dtype; used only
	// when IsDraftWorker.
	DraftKVCacheDType string `json:"draft_kv_cache_dtype,omitempty"`
	// NoFP4Support marks a runtime without float4_e2m1fn_x2 (PyTorch < 2.8).
	NoFP4Support bool `json:"no_fp4_support,omitempty"`
	// FallbackToAuto makes an unavailable format resolve exactly as "auto"
	// (checkpoint FP8 detection included) with a warning, instead of an error.
	FallbackToAuto bool `json:"fallback_to_auto,omitempty"`
}

// Validate reports every problem with the request.
func (r KVRequest) Validate() error {
	var errs []error
	switch r.ModelDType {
	case dtype.Float16, dtype.BFloat16, dtype.Float32:
	case dtype.Invalid:
		errs = append(errs, fmt.Errorf("%w: model dtype is required (resolve it from the checkpoint first: float16, bfloat16 or float32)", ErrInvalidRequest))
	default:
		errs = append(errs, fmt.Errorf("%w: model dtype %s is not a float16, bfloat16 or float32 compute dtype", ErrInvalidRequest, r.ModelDType))
	}
	switch r.Platform {
	case "", CUDA, HIP, NPU:
	default:
		errs = append(errs, fmt.Errorf("%w: platform %q (accepted: cuda, hip, npu)", ErrInvalidRequest, r.Platform))
	}
	if r.FNUZ && r.platform() != HIP {
		errs = append(errs, fmt.Errorf("%w: fnuz fp8 applies only to the hip platform", ErrInvalidRequest))
	}
	return errors.Join(errs...)
}

func (r KVRequest) platform() Platform {
	if r.Platform == "" {
		return CUDA
	}
	return r.Platform
}

// fp8 returns the platform's e4m3 fp8 type (SGLang's fp8_dtype).
func (r KVRequest) fp8() dtype.DType {
	if r.platform() == HIP && r.FNUZ {
		return dtype.FP8E4M3FNUZ
	}
	return dtype.FP8E4M3FN
}

// KVResolution is what a KV pool will really use.
type KVResolution struct {
	// Requested is the --kv-cache-dtype string as given (after a draft
	// override, when one applied).
	Requested string `json:"requested"`
	// String is the kv_cache_dtype string that downstream string-gated logic
	// sees: "auto" stays "auto" unless the resolver decided a string.
	String string `json:"string"`
	// Override is SGLang's resolved_kv_cache_dtype_str: the string the
	// resolver decided, "" when it left the input alone.
	Override string `json:"override,omitempty"`
	// DType is the pool element type (torch kv_cache_dtype).
	DType dtype.DType `json:"dtype"`
	// Store is the element type the pool tensors are allocated with (uint8
	// for fp8 and fp4 kinds).
	Store dtype.DType `json:"store"`
	// Format is the storage geometry, named canonically.
	Format dtype.Format `json:"format"`
	// ElementSize is the engine's kv_size: DType.Size() (fp4 pairs count 1).
	ElementSize int `json:"element_size"`
	// Logs are the info lines the engine prints while resolving.
	Logs []string `json:"logs,omitempty"`
	// Warnings are the warnings it prints.
	Warnings []string `json:"warnings,omitempty"`
}

// ResolveKV reproduces SGLang's configure_kv_cache_dtype (newest rules) as a
// pure function. Unlike the engine it never falls back silently: a fallback
// (KVRequest.FallbackToAuto) runs the real "auto" logic and says so, and every
// resolved dtype maps back to a canonical string.
func ResolveKV(req KVRequest) (KVResolution, error) {
	if err := req.Validate(); err != nil {
		return KVResolution{}, err
	}
	in := normalize(req.KVCacheDType)
	var res KVResolution
	if req.IsDraftWorker && strings.TrimSpace(req.DraftKVCacheDType) != "" {
		in = normalize(req.DraftKVCacheDType)
		if in != dtype.Auto {
			res.Override = in
		}
	}
	res.Requested = in
	if err := resolveString(req, in, &res); err != nil {
		return KVResolution{}, err
	}
	if req.IsDraftWorker && strings.EqualFold(req.SpeculativeAlgorithm, "DFLASH") {
		applyDFlash(req, &res)
	}
	if res.String == "" {
		res.String = in
		if res.Override != "" {
			res.String = res.Override
		}
	}
	res.ElementSize = res.DType.Size()
	res.Store = storeDType(res.DType)
	res.Logs = append(res.Logs, "Using KV cache dtype: "+res.DType.Torch())
	return res, nil
}

func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return dtype.Auto
	}
	return s
}

func resolveString(req KVRequest, in string, res *KVResolution) error {
	hip := req.platform() == HIP
	switch in {
	case dtype.Auto:
		resolveAuto(req, res)
	case "fp8_e5m2":
		if hip {
			res.DType = req.fp8()
			res.Warnings = append(res.Warnings, fmt.Sprintf("fp8_e5m2 is stored as %s on the hip platform (both fp8 strings map to the platform fp8 type)", req.fp8()))
		} else {
			res.DType = dtype.FP8E5M2
		}
		res.Format = withElement(format("fp8_e5m2"), res.DType)
		if hip {
			res.Format = withElement(format("fp8_e4m3"), res.DType)
		}
	case "fp8_e4m3":
		res.DType = req.fp8()
		res.Format = withElement(format("fp8_e4m3"), res.DType)
	case "mxfp8":
		res.DType = dtype.FP8E4M3FN
		res.Format = format("mxfp8")
	case "bf16", "bfloat16":
		res.DType = dtype.BFloat16
		res.Format = format("bf16")
	case "fp16", "float16":
		res.DType = dtype.Float16
		res.Format = format("fp16")
	case "fp4_e2m1":
		return fmt.Errorf("%w: --kv-cache-dtype=fp4_e2m1 is deprecated. Use --kv-cache-dtype=fp4_mx_block16", ErrDeprecatedKV)
	case "nvfp4", "fp4_mx_block16":
		if why := fp4Unavailable(req, in); why != "" {
			if !req.FallbackToAuto {
				return fmt.Errorf("%w: --kv-cache-dtype=%s %s", ErrUnavailableKV, in, why)
			}
			resolveAuto(req, res)
			if res.Override == "" {
				res.Override = dtype.Auto
			}
			res.String = res.Override
			res.Warnings = append(res.Warnings, fmt.Sprintf("--kv-cache-dtype=%s %s; falling back to 'auto', which resolved to %s (%s)", in, why, res.String, res.DType.Torch()))
			return nil
		}
		res.DType = dtype.FP4E2M1x2
		res.Format = format(in)
		res.Warnings = append(res.Warnings, strings.ToUpper(in)+" KV Cache might lead to an accuracy drop!")
	case "int8_g64":
		res.DType = dtype.Int8
		res.Format = format(in)
		res.Warnings = append(res.Warnings, "int8_g64 KV cache is experimental (quantized KV pools with dequant-on-gather)")
	case "int4_g32", "int8ring_int4":
		res.DType = dtype.UInt8
		res.Format = format(in)
		res.Warnings = append(res.Warnings, in+" KV cache is experimental (quantized KV pools with dequant-on-gather)")
	default:
		return fmt.Errorf("%w: Unsupported kv_cache_dtype: %s. (accepted: %s)", ErrUnsupportedKV, in, strings.Join(accepted, ", "))
	}
	return nil
}

// resolveAuto is the "auto" branch: FP8 when the checkpoint carries an FP8
// KV calibration, else the model dtype.
func resolveAuto(req KVRequest, res *KVResolution) {
	if strings.EqualFold(strings.TrimSpace(req.KVCacheQuantAlgo), "FP8") {
		res.DType = req.fp8()
		res.Override = res.DType.KVString()
		res.String = res.Override
		res.Format = withElement(format("fp8_e4m3"), res.DType)
		res.Logs = append(res.Logs, "Checkpoint has kv_cache_quant_algo=FP8: using an FP8 KV cache ("+res.DType.Torch()+")")
		return
	}
	res.DType = req.ModelDType
	res.Format = format(req.ModelDType.KVString())
}

func fp4Unavailable(req KVRequest, name string) string {
	if req.NoFP4Support {
		return "requires torch.float4_e2m1fn_x2 support. Please use PyTorch 2.8.0+ with CUDA 12.8+."
	}
	if name == "nvfp4" && req.platform() != CUDA {
		return fmt.Sprintf("needs NVIDIA hardware (platform %s has no NVFP4 KV path)", req.platform())
	}
	return ""
}

// DFlashDraftDType is the KV dtype a DFLASH draft pool uses for a target pool
// of dtype target: the model dtype with the fa4 backend (fa4 needs K.dtype ==
// Q.dtype), FP8 when the target is FP4 (the draft pool has no FP4 path), else
// the target's dtype. The target uses it too when budgeting the draft pool.
func DFlashDraftDType(target, modelDType dtype.DType, backend string) dtype.DType {
	switch {
	case strings.EqualFold(backend, "fa4"):
		return modelDType
	case target == dtype.FP4E2M1x2:
		return dtype.FP8E4M3FN
	default:
		return target
	}
}

func applyDFlash(req KVRequest, res *KVResolution) {
	d := DFlashDraftDType(res.DType, req.ModelDType, req.DraftAttentionBackend)
	if d == res.DType {
		return
	}
	if strings.EqualFold(req.DraftAttentionBackend, "fa4") {
		res.Logs = append(res.Logs, fmt.Sprintf("DFLASH fa4 draft: overriding KV cache dtype %s -> %s (fa4 needs K.dtype == Q.dtype; cannot read the target's quantized KV).", res.DType.Torch(), d.Torch()))
		res.Override = dtype.Auto
		res.String = dtype.Auto
		res.Format = format(d.KVString())
	} else {
		res.Logs = append(res.Logs, fmt.Sprintf("DFLASH draft: overriding KV cache dtype %s -> %s.", res.DType.Torch(), d.Torch()))
		res.Override = d.KVString()
		res.String = res.Override
		res.Format = withElement(format("fp8_e4m3"), d)
	}
	res.Warnings = slices.DeleteFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "accuracy drop") })
	res.DType = d
}

func withElement(f dtype.Format, d dtype.DType) dtype.Format {
	f.Element = d
	return f
}

func storeDType(d dtype.DType) dtype.DType {
	switch d {
	case dtype.FP8E4M3FN, dtype.FP8E4M3FNUZ, dtype.FP8E5M2, dtype.FP4E2M1x2:
		return dtype.UInt8
	}
	return d
}

// format returns the storage geometry of a KV format name this file knows
// to exist (every name used above is in dtype's table).
func format(name string) dtype.Format {
	f, _ := dtype.LookupFormat(name) // never fails: the callers pass names from dtype's table
	return f
}
