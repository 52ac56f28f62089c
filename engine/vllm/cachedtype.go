package vllm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/model"
)

// CacheDType is a resolved vLLM --kv-cache-dtype.
type CacheDType struct {
	// Requested is the value as given ("auto", "fp8", ...).
	Requested string `json:"requested"`
	// Name is vLLM's spelling of the dtype the cache really uses after "auto"
	// and model rules ("bfloat16", "fp8_e4m3", "fp8_ds_mla", ...).
	Name string `json:"name"`
	// Format is the storage format in kvcfg's vocabulary; for fp8_ds_mla it
	// is fp8_e4m3 (the NoPE part) and the 656-byte row is special-cased.
	Format dtype.Format `json:"format"`
	// PerTokenHead adds fp32 K and V scales per token and head (8 bytes).
	PerTokenHead bool `json:"per_token_head,omitempty"`
	// DSMLA is DeepSeek's 656-byte fp8 MLA row.
	DSMLA bool `json:"ds_mla,omitempty"`
}

// DSMLATokenBytes is one fp8_ds_mla token of one layer: 512 fp8 NoPE values,
// 4 fp32 tile scales and 64 bf16 RoPE values.
const DSMLATokenBytes = 512 + 4*4 + 64*2

// vllmToFormat maps vLLM dtype names to kvcfg storage formats.
var vllmToFormat = map[string]string{
	"bfloat16":            "bf16",
	"float16":             "fp16",
	"float32":             "fp32", // auto under --dtype float32 only (not a --kv-cache-dtype choice)
	"fp8":                 "fp8_e4m3",
	"fp8_e4m3":            "fp8_e4m3",
	"fp8_e5m2":            "fp8_e5m2",
	"fp8_ds_mla":          "fp8_e4m3",
	"nvfp4":               "nvfp4",
	"int8_per_token_head": "int8_g64", // element width only; scales are per token-head
	"fp8_per_token_head":  "fp8_e4m3",
}

// knownUnmodelled are vLLM dtype names that kvcfg does not size.
var knownUnmodelled = []string{"fp8_inc", "nvfp4_ds_mla", "nvfp4_4over6", "int4_per_token_head",
	"turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"}

// AcceptedKVDTypes lists the --kv-cache-dtype values the profile accepts.
func AcceptedKVDTypes(p Profile) []string { return slices.Clone(p.rules().dtypes) }

// ResolveCacheDType resolves a --kv-cache-dtype for model s under profile p:
// "auto" follows the checkpoint (kv_cache_quant_algo, V1 profiles) and
// otherwise the model dtype; DeepSeek-V3.2 (DSA) turns fp8 and auto into
// fp8_ds_mla and bfloat16 into the bf16 latent.
func ResolveCacheDType(name string, s *model.Spec, p Profile) (CacheDType, error) {
	return resolveCacheDType(name, s, p, p.rules())
}

// resolveCacheDType is ResolveCacheDType under the rules of one release.
func resolveCacheDType(name string, s *model.Spec, p Profile, r rules) (CacheDType, error) {
	req := strings.ToLower(strings.TrimSpace(name))
	if req == "" {
		req = "auto"
	}
	if !slices.Contains(r.dtypes, req) {
		switch {
		case slices.Contains(knownUnmodelled, req):
			return CacheDType{}, fmt.Errorf("%w: %q is a vLLM dtype that kvcfg does not model (accepted: %s)",
				ErrUnsupportedDType, name, strings.Join(r.dtypes, ", "))
		case slices.Contains(Latest.rules().dtypes, req):
			return CacheDType{}, fmt.Errorf("%w: %q is not accepted by vLLM %s (accepted: %s)",
				ErrUnsupportedDType, name, p, strings.Join(r.dtypes, ", "))
		default:
			return CacheDType{}, fmt.Errorf("%w: %q is not supported by vLLM; accepted: %s",
				ErrUnsupportedDType, name, strings.Join(r.dtypes, ", "))
		}
	}
	resolved := req
	isDSA := s != nil && s.Attention == model.DSA
	isMLA := s != nil && (s.Attention == model.MLA || s.Attention == model.DSA)
	if resolved == "auto" && !r.v0 && s != nil && s.Quant != nil {
		switch strings.ToUpper(s.Quant.KVCacheQuantAlgo) {
		case "FP8":
			resolved = "fp8_e4m3"
		case "NVFP4":
			if slices.Contains(r.dtypes, "nvfp4") {
				resolved = "nvfp4"
			}
		}
	}
	if isDSA && !r.v0 {
		switch {
		case resolved == "auto" || strings.HasPrefix(resolved, "fp8"):
			resolved = "fp8_ds_mla"
		}
	}
	if resolved == "auto" {
		resolved = modelCacheName(s)
	}
	if resolved == "fp8" {
		resolved = "fp8_e4m3"
	}
	if resolved == "fp8_ds_mla" && !isDSA {
		return CacheDType{}, fmt.Errorf("%w: fp8_ds_mla is DeepSeek sparse attention's cache (DeepSeek-V3.2); this model has none", ErrUnsupportedDType)
	}
	if isMLA && (resolved == "nvfp4" || strings.HasSuffix(resolved, "_per_token_head")) {
		return CacheDType{}, fmt.Errorf("%w: %s with MLA is not modelled (vLLM uses nvfp4_ds_mla / per-tensor fp8 for latent caches)", ErrUnsupportedDType, resolved)
	}
	fname, ok := vllmToFormat[resolved]
	if !ok {
		return CacheDType{}, fmt.Errorf("%w: %q", ErrUnsupportedDType, resolved)
	}
	f, err := dtype.LookupFormat(fname)
	if err != nil {
		return CacheDType{}, fmt.Errorf("vllm: %w", err)
	}
	return CacheDType{
		Requested:    req,
		Name:         resolved,
		Format:       f,
		PerTokenHead: strings.HasSuffix(resolved, "_per_token_head"),
		DSMLA:        resolved == "fp8_ds_mla",
	}, nil
}

// modelCacheName is vLLM's name of the model dtype ("auto").
func modelCacheName(s *model.Spec) string {
	d := dtype.BFloat16
	if s != nil && s.ModelDType != dtype.Invalid {
		d = s.ModelDType
	}
	switch d {
	case dtype.Float16:
		return "float16"
	case dtype.Float32:
		// --dtype float32 (the spec's model dtype already maps an fp32
		// checkpoint under auto to half precision): the auto cache dtype
		// is the model's, float32.
		return "float32"
	default:
		return "bfloat16"
	}
}

// tokenBytes returns the bytes one token of one attention layer occupies on
// one rank: Hkv·(Dk+Dv) elements, NVFP4 as D/2 + D/16 per head, plus 8 bytes
// of fp32 K and V scales per head for per-token-head quantization.
func (c CacheDType) tokenBytes(hkv, dk, dv int) int64 {
	f := c.Format
	per := func(d int) int64 {
		n := int64(d) * int64(f.ElementBits) / 8
		if f.BlockSize > 0 && !c.PerTokenHead {
			n += int64(d) / int64(f.BlockSize) * int64(f.ScaleBytes)
		}
		return n
	}
	b := int64(hkv) * (per(dk) + per(dv))
	if c.PerTokenHead {
		b += int64(hkv) * 2 * 4
	}
	return b
}
