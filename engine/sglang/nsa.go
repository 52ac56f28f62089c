package sglang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// DeepSeek sparse-attention (DSA, SGLang's "NSA") backends whose choice
// changes the KV row (docs/sglang.md#cell-size-mla).
const (
	NSAFlashMLASparse = "flashmla_sparse"
	NSAFlashMLAKV     = "flashmla_kv"
	NSAFlashMLAAuto   = "flashmla_auto"
	NSAFA3            = "fa3"
	NSATileLang       = "tilelang"
	NSAAiter          = "aiter"
	NSATRTLLM         = "trtllm"
)

// nsaChoices is SGLang's NSA_CHOICES (server_args.py; DSA_CHOICES with
// NSA_CHOICES its deprecated alias in the newest source), the values
// --nsa-prefill-backend and --nsa-decode-backend accept.
var nsaChoices = []string{"flashmla_sparse", "flashmla_sparse_q8", "flashmla_kv", "flashmla_auto",
	"flashinfer_sparse_mla", "fa3", "tilelang", "aiter", "trtllm"}

// NSABackends lists the values --nsa-prefill-backend and
// --nsa-decode-backend accept.
func NSABackends() []string { return slices.Clone(nsaChoices) }

// nsaFP8TRTLLMFrom is the first release whose Blackwell default for an
// fp8_e4m3 DSA pool is trtllm for prefill and decode (576-byte row):
// issue #20163 (2026-03-09) still has flashmla_auto / flashmla_kv, main's
// _set_default_nsa_backends quoted in InferenceX PR #1011 (April 2026)
// has trtllm, and v0.5.15.post1 launches with it by default (InferenceX
// PR #2320); 0.5.10rc0 is the first release after that change.
var nsaFP8TRTLLMFrom = Version{0, 5, 10, 0, 0}

// NSAInput is what SGLang's default DSA backend choice reads
// (_set_default_nsa_backends; arg_groups/dsa_compat.py in the newest).
type NSAInput struct {
	// Platform is "cuda" or "hip"; SM the compute capability ×10.
	Platform string
	SM       int
	// FP8 says the KV cache dtype is fp8_e4m3 (else bfloat16).
	FP8 bool
	// Prefill and Decode are the user's choices ("" = not given).
	Prefill, Decode string
}

// DefaultNSABackends resolves the DSA prefill and decode backends: a given
// one is kept, a missing one takes SGLang's default (both tilelang on ROCm
// when neither is given; else by compute capability, SM ≥ 100 the
// Blackwell bucket, any other GPU the Hopper one):
//   - Hopper: bf16 flashmla_sparse / fa3, fp8 flashmla_auto / flashmla_kv;
//   - Blackwell: bf16 flashmla_sparse / trtllm (flashmla_sparse before
//     0.5.10), fp8 trtllm / trtllm (flashmla_auto / flashmla_kv before).
func (p Profile) DefaultNSABackends(in NSAInput) (prefill, decode string) {
	prefill, decode = in.Prefill, in.Decode
	hip := strings.EqualFold(in.Platform, "hip")
	var dp, dd string
	switch {
	case hip && prefill == "" && decode == "":
		dp, dd = NSATileLang, NSATileLang
	case in.SM >= 100 && !hip && in.FP8 && p.nsaFP8TRTLLM:
		dp, dd = NSATRTLLM, NSATRTLLM
	case in.SM >= 100 && !hip && !in.FP8 && p.nsaFP8TRTLLM:
		dp, dd = NSAFlashMLASparse, NSATRTLLM
	case in.SM >= 100 && !hip && !in.FP8:
		dp, dd = NSAFlashMLASparse, NSAFlashMLASparse
	case in.FP8: // Hopper, older Blackwell releases, a half-set ROCm pair
		dp, dd = NSAFlashMLAAuto, NSAFlashMLAKV
	default:
		dp, dd = NSAFlashMLASparse, NSAFA3
	}
	if prefill == "" {
		prefill = dp
	}
	if decode == "" {
		decode = dd
	}
	return prefill, decode
}

// DSAFP8Row reports whether a DSA pool of kv on platform with these
// backends allocates the 656-byte fp8 row (calculate_mla_kv_cache_dim):
// not with trtllm on either side, not on ROCm with tilelang or aiter on
// either side, else for every float8_e4m3fn pool on CUDA or ROCm (other
// platforms have their own pools).
func DSAFP8Row(kv dtype.DType, platform, prefill, decode string) bool {
	if prefill == NSATRTLLM || decode == NSATRTLLM {
		return false
	}
	raw := func(b string) bool { return b == NSATileLang || b == NSAAiter }
	switch strings.ToLower(platform) {
	case "cuda":
	case "hip":
		if raw(prefill) || raw(decode) {
			return false
		}
	default:
		return false
	}
	return kv == dtype.FP8E4M3FN
}

// checkNSABackends validates --nsa-prefill-backend and --nsa-decode-backend
// against SGLang's choices (argparse refuses any other value, whatever the
// model).
func (a *ServerArgs) checkNSABackends() error {
	for _, f := range []struct{ flag, val string }{
		{"--nsa-prefill-backend", a.NSAPrefillBackend}, {"--nsa-decode-backend", a.NSADecodeBackend}} {
		v := strings.ToLower(strings.TrimSpace(f.val))
		if v != "" && !slices.Contains(nsaChoices, v) {
			return refusal(engine.Refusal{
				Err:  fmt.Errorf("%w: %s %q (accepted: %s)", ErrInvalid, f.flag, f.val, strings.Join(nsaChoices, ", ")),
				Flag: f.flag, Hint: "leave it out to get SGLang's default for the GPU and KV dtype"})
		}
	}
	return nil
}

// resolveNSA sets the DSA backends and the row they select on platform
// (lower case); it does nothing for a model without DeepSeek sparse
// attention.
func (c *Configurator) resolveNSA(platform string) {
	c.nsaPrefill, c.nsaDecode, c.dsaFP8 = "", "", false
	if c.in.Spec.Attention != model.DSA {
		return
	}
	a := &c.in.Args
	c.nsaPrefill, c.nsaDecode = c.prof.DefaultNSABackends(NSAInput{
		Platform: platform, SM: c.in.Hardware.SM, FP8: c.kv.DType == dtype.FP8E4M3FN,
		Prefill: strings.ToLower(strings.TrimSpace(a.NSAPrefillBackend)),
		Decode:  strings.ToLower(strings.TrimSpace(a.NSADecodeBackend)),
	})
	c.dsaFP8 = DSAFP8Row(c.kv.DType, platform, c.nsaPrefill, c.nsaDecode)
}

// NSABackends returns the DSA prefill and decode backends the plan assumes
// (given or SGLang's default); both empty for a model without DeepSeek
// sparse attention.
func (c *Configurator) NSABackends() (prefill, decode string) { return c.nsaPrefill, c.nsaDecode }
