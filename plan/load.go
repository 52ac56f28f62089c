package plan

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	kvengine "github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// How the engines load the weights: --dtype and --quantization. vLLM's
// and SGLang's ModelConfig resolve --dtype (_get_and_verify_dtype): auto
// keeps the config's dtype (a float32 checkpoint runs in float16, Gemma in
// bfloat16: model.Spec.ModelDType), any other value replaces it, and both
// the weights and the auto KV cache dtype follow. Runtime --quantization
// fp8 (Fp8LinearMethod, Fp8MoEMethod) quantizes an unquantized
// checkpoint's linear layers to one byte a weight after loading; both
// engines refuse a --quantization that differs from the checkpoint's own.

// loadDTypes are the --dtype values the engines accept.
var loadDTypes = map[string]dtype.DType{
	"auto": dtype.Invalid, "half": dtype.Float16, "float16": dtype.Float16, "bfloat16": dtype.BFloat16,
	"float": dtype.Float32, "float32": dtype.Float32,
}

// loadDType resolves a --dtype value: dtype.Invalid for "" and auto (the
// config's), an error naming the accepted values for anything else.
func loadDType(s string) (dtype.DType, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	if k == "" {
		return dtype.Invalid, nil
	}
	d, ok := loadDTypes[k]
	if !ok {
		return dtype.Invalid, fmt.Errorf("%q (accepted: auto, half, float16, bfloat16, float, float32)", s)
	}
	return d, nil
}

// dtypeVariants caches the model with another load dtype, one per model
// and dtype, so that a sweep plans it without copying it (and reading its
// directory's headers, cached per *catalog.Model) each time; at most
// 256 are kept, so a server planning many models does not
// hold every one.
var dtypeVariants = kvengine.NewMemo[variantKey, *catalog.Model](256)

type variantKey struct {
	m *catalog.Model
	d dtype.DType
}

// withLoadDType returns m with its Spec's model dtype set to the request's
// --dtype (m itself for auto or the same dtype). The copy shares
// everything but the Spec's top level.
func withLoadDType(req *Request, m *catalog.Model) (*catalog.Model, error) {
	d, err := loadDType(req.DType)
	if err != nil {
		return nil, &FieldError{Field: "dtype", Err: fmt.Errorf("plan: --dtype %w", err)}
	}
	if d == dtype.Invalid || m.Spec == nil || m.Spec.ModelDType == d {
		return m, nil
	}
	k := variantKey{m, d}
	if v, ok := dtypeVariants.Load(k); ok {
		return v, nil
	}
	s := *m.Spec
	s.ModelDType = d
	c := *m
	c.Spec = &s
	return dtypeVariants.Store(k, &c), nil
}

// runtimeFP8 reports whether --quantization quantizes the weights after
// loading (fp8 on a checkpoint without a weight quantization); an error
// for a method the checkpoint does not have, as the engines refuse it.
func runtimeFP8(req *Request, s *model.Spec) (bool, error) {
	q := strings.ToLower(strings.TrimSpace(req.Quantization))
	if q == "" {
		return false, nil
	}
	var own string
	if s.Quant != nil && s.Quant.WeightBits > 0 && s.Quant.WeightBits < 16 {
		own = strings.ToLower(s.Quant.Method)
	}
	switch {
	case own == "" && q == "fp8":
		return true, nil
	case own != "" && (q == own || q == "fp8" && s.Quant.WeightBits == 8 && strings.Contains(own, "fp8")):
		return false, nil // the checkpoint's own method: loaded as it is
	case own != "":
		return false, &FieldError{Field: "quantization", Err: fmt.Errorf("plan: --quantization %s on a checkpoint quantized with %s: the engines refuse a method that differs from the checkpoint's; pass --quantization %s or leave it out", req.Quantization, s.Quant.Method, s.Quant.Method)}
	}
	return false, &FieldError{Field: "quantization", Err: fmt.Errorf("plan: --quantization %s needs a checkpoint quantized with it; kvcfg plans runtime quantization for fp8 only (an unquantized checkpoint's linear layers at one byte a weight)", req.Quantization)}
}

// loadLayout is the weights layout of a plan: TP × PP, the MTP draft, the
// load dtype (the spec's, after --dtype) and runtime fp8.
func loadLayout(req *Request, s *model.Spec, tp, pp int) (weights.Layout, error) {
	fp8, err := runtimeFP8(req, s)
	return weights.Layout{TP: tp, PP: pp, Draft: draftsWithMTP(req, s), DType: s.ModelDType, RuntimeFP8: fp8}, err
}
