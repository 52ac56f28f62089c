// Package weights estimates the weight memory one rank holds: from the
// checkpoint's safetensors headers when a model directory is at hand, or
// from the config's parameter counts (quantization aware) otherwise.
package weights

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
)

// ErrInvalid reports inputs that cannot produce an estimate.
var ErrInvalid = errors.New("weights: invalid input")

// Source says where a weight figure came from.
type Source string

// The sources.
const (
	// Estimated is parameter count × weight dtype from the config.
	Estimated Source = "config_estimate"
	// Safetensors is the sum of tensor sizes from checkpoint headers.
	Safetensors Source = "safetensors"
	// HubSafetensors is the same sum from headers read off the Hugging
	// Face Hub with range requests; a report writes it with the repo and
	// commit ("hub_safetensors:org/name@commit").
	HubSafetensors Source = "hub_safetensors"
	// Measured is pre-load minus post-load free memory as the engine logged.
	Measured Source = "measured"
	// Given is a --weights-memory value.
	Given Source = "given"
)

// Layout is how the weights are split over ranks.
type Layout struct {
	TP, PP int
	// Draft counts the checkpoint's MTP (NextN) layers, on the last
	// stage: speculative decoding drafts with them (safetensors sums only;
	// the config estimate leaves them out).
	Draft bool
	// DType is the dtype the engine holds floating-point weights in: the
	// resolved --dtype (auto: the config's dtype, float32 checkpoints run
	// in float16 or bfloat16). Header sums convert every F16/BF16/F32
	// tensor to it; the estimate counts unquantized parameters at it.
	// dtype.Invalid keeps the stored dtype (headers) or Spec.ModelDType.
	DType dtype.DType
	// RuntimeFP8 is --quantization fp8 on a checkpoint without a weight
	// quantization (vLLM's and SGLang's Fp8LinearMethod and Fp8MoEMethod
	// quantize after loading): the weights of linear layers (attention,
	// MLP, experts, Mamba projections) are held at one byte each;
	// embeddings, the LM head, norms, MoE routers and vision towers keep
	// DType.
	RuntimeFP8 bool
}

// scaleBytesPerWeight is the block-scale overhead per quantized weight of
// common quantization methods (bytes per element).
func scaleBytesPerWeight(q *model.QuantSpec) float64 {
	m := strings.ToLower(q.Method)
	switch {
	case q.WeightBits >= 16 || q.WeightBits <= 0:
		return 0
	case m == "mxfp4":
		return 1.0 / 32 // one E8M0 scale per 32 values
	case strings.Contains(m, "fp4") || (m == "modelopt" && q.WeightBits == 4) || m == "modelopt_fp4":
		return 1.0 / 16 // one FP8 scale per 16 values (NVFP4)
	case q.WeightBits == 8:
		return 0 // per-tensor / per-channel / 128×128 block scales: negligible
	default:
		return 2.5 / 128 // AWQ/GPTQ group 128: fp16 scale + packed 4-bit zero
	}
}

// Total returns the whole checkpoint's weight bytes estimated from s.Params:
// quantizable parameters at the quantization's weight bits plus block
// scales, the rest at the model dtype.
func Total(s *model.Spec) (int64, error) { return total(s, Layout{}) }

// total is Total with l's load dtype and runtime quantization.
func total(s *model.Spec, l Layout) (int64, error) {
	if s == nil {
		return 0, fmt.Errorf("%w: no model spec", ErrInvalid)
	}
	p := s.Params
	if p.Total <= 0 {
		return 0, fmt.Errorf("%w: model %s has no parameter count", ErrInvalid, s.Name)
	}
	el := elemBytes(s, l)
	q := s.Quant
	quantized := q != nil && q.WeightBits > 0 && q.WeightBits < 16 && p.Quantizable > 0
	if !quantized && l.RuntimeFP8 && p.Quantizable > 0 {
		q, quantized = &model.QuantSpec{Method: "fp8", WeightBits: 8}, true
	}
	if !quantized {
		return int64(float64(p.Total) * el), nil
	}
	quant := min(p.Quantizable, p.Total)
	rest := p.Total - quant
	fp4 := min(max(p.FP4Experts, 0), quant) // packed FP4, a UE8M0 scale per 32
	b := float64(quant-fp4)*(float64(q.WeightBits)/8+scaleBytesPerWeight(q)) + float64(fp4)*(0.5+1.0/32) + float64(rest)*el
	return int64(b), nil
}

// elemBytes is the bytes of an unquantized parameter: l.DType, else the
// model dtype, else bfloat16's.
func elemBytes(s *model.Spec, l Layout) float64 {
	for _, d := range []dtype.DType{l.DType, s.ModelDType, dtype.BFloat16} {
		if d.Size() > 0 {
			return float64(d.Size())
		}
	}
	return 2
}

// PerRank returns the estimated weight bytes of the most loaded rank:
// everything is sharded over TP (vocab-parallel embeddings and LM head,
// column/row-parallel linears, experts; replicated norms are negligible),
// and PP stages hold their layers (the remainder going to the last stages)
// plus, on the first and last stage, the embedding and LM head — counted
// as half of Params.Embedding each, exact for untied embeddings.
func PerRank(s *model.Spec, l Layout) (int64, error) {
	total, err := total(s, l)
	if err != nil {
		return 0, err
	}
	tp, pp := max(l.TP, 1), max(l.PP, 1)
	if pp == 1 || s.NumLayers <= 0 {
		return total / int64(tp), nil
	}
	el := elemBytes(s, l)
	emb := float64(s.Params.Embedding) * el
	layers := float64(total) - emb
	if layers < 0 {
		layers, emb = 0, float64(total)
	}
	maxLayers := (s.NumLayers + pp - 1) / pp
	stage := layers*float64(maxLayers)/float64(s.NumLayers) + emb/2
	return int64(stage) / int64(tp), nil
}
