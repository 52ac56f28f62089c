package sglang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
)

// Attention backends whose choice changes the numbers.
const (
	BackendAiter      = "aiter"
	BackendTriton     = "triton"
	BackendFA3        = "fa3"
	BackendFlashInfer = "flashinfer"
	BackendFlashMLA   = "flashmla"
	BackendCutlassMLA = "cutlass_mla"
	BackendTRTLLMMLA  = "trtllm_mla"
	BackendTRTLLMMHA  = "trtllm_mha"
	BackendNSA        = "nsa"
)

// hipBackends and cudaBackends are the --attention-backend values each
// platform runs (dcu_mla is a ROCm fork's backend: never scaled).
var (
	hipBackends  = []string{"aiter", "dcu_mla", "flex_attention", "nsa", "torch_native", "triton", "wave"}
	cudaBackends = []string{"cutlass_mla", "dual_chunk_flash_attn", "fa3", "fa4", "flashinfer", "flashmla", "flex_attention",
		"nsa", "torch_native", "triton", "trtllm_mha", "trtllm_mla"}
)

// AttentionBackends lists the --attention-backend values accepted on
// platform ("cuda" or "hip").
func AttentionBackends(platform string) []string {
	if strings.EqualFold(platform, "hip") {
		return slices.Clone(hipBackends)
	}
	return slices.Clone(cudaBackends)
}

// BackendInput is what SGLang's default attention-backend choice reads.
type BackendInput struct {
	// Platform is "cuda" or "hip"; SM the compute capability ×10.
	Platform string
	SM       int
	// MLA and DSA describe the attention; Mambaish a hybrid linear model.
	MLA, DSA, Mambaish bool
	// Architecture is the model's first architecture.
	Architecture string
	// KVHeadsPerRank is get_num_kv_heads(tp_size): max(1, kv_heads/tp).
	KVHeadsPerRank int
	// Speculative marks speculative decoding.
	Speculative bool
}

func blackwellSM(sm int) bool { return sm == 100 || sm == 103 }

// DefaultAttentionBackend is the backend SGLang picks when
// --attention-backend is not given (_get_default_attn_backend):
//   - HIP, MLA: aiter only with 16 or 128 KV heads per rank (and, before
//     0.5.3, without speculative decoding), else triton;
//   - HIP, MHA: aiter (from 0.4.7; triton before);
//   - CUDA, Hopper: fa3; Blackwell: trtllm_mla for MLA and trtllm_mha for
//     GPT-OSS (every MHA model in the newest), flashinfer otherwise;
//   - other CUDA GPUs: triton for MLA, flashinfer for MHA;
//   - DeepSeek sparse attention: nsa.
func (p Profile) DefaultAttentionBackend(in BackendInput) string {
	hip := strings.EqualFold(in.Platform, "hip")
	switch {
	case in.DSA:
		return BackendNSA
	case hip && in.MLA:
		aiter := p.aiterDefault && (in.KVHeadsPerRank == 16 || in.KVHeadsPerRank == 128)
		if p.hipMLAAiterNoSpec && in.Speculative {
			aiter = false
		}
		if aiter {
			return BackendAiter
		}
		return BackendTriton
	case hip:
		if p.aiterDefault {
			return BackendAiter
		}
		return BackendTriton
	case in.SM == 90:
		return BackendFA3
	case blackwellSM(in.SM) && in.MLA:
		if p.blackwellTRTLLM {
			return BackendTRTLLMMLA
		}
		return BackendFlashInfer
	case blackwellSM(in.SM):
		gptOSS := strings.HasPrefix(in.Architecture, "GptOss")
		switch {
		case in.Mambaish && p.blackwellMHATRTLLM:
			return BackendTriton
		case p.blackwellMHATRTLLM || (gptOSS && p.blackwellTRTLLM):
			return BackendTRTLLMMHA
		}
		return BackendFlashInfer
	case in.MLA:
		return BackendTriton
	}
	return BackendFlashInfer
}

// resolveBackend sets c.backend from --attention-backend or SGLang's
// default choice, refusing a backend the platform does not run.
func (c *Configurator) resolveBackend() error {
	s := c.in.Spec
	hw := c.in.Hardware
	req := strings.ToLower(strings.TrimSpace(c.in.Args.AttentionBackend))
	if req == "" {
		c.backend = c.prof.DefaultAttentionBackend(BackendInput{
			Platform: hw.Platform, SM: hw.SM, MLA: s.Attention == model.MLA, DSA: s.Attention == model.DSA,
			Mambaish: s.Linear != nil, Architecture: s.Architecture,
			KVHeadsPerRank: max(1, s.NumKVHeads/max(c.in.Parallel.TP, 1)), Speculative: c.d.SpeculativeAlgo != "",
		})
		return nil
	}
	accepted := AttentionBackends(hw.Platform)
	if !slices.Contains(accepted, req) {
		return refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: attention backend %q does not run on %s (accepted: %s)", ErrInvalid, req, hw.Platform, strings.Join(accepted, ", ")),
			Flag: "--attention-backend", Hint: "leave --attention-backend out to get SGLang's default",
		})
	}
	switch {
	case req == BackendTRTLLMMLA && !blackwellSM(hw.SM):
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100). Please use a different backend.", ErrInvalid),
			Flag: "--attention-backend", Hint: "leave --attention-backend out to get SGLang's default"})
	case req == BackendTRTLLMMHA && !blackwellSM(hw.SM):
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different backend.", ErrInvalid),
			Flag: "--attention-backend", Hint: "leave --attention-backend out to get SGLang's default"})
	case req == BackendTRTLLMMHA && c.attnMLA:
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: trtllm_mha backend can only be used with non-MLA models.", ErrInvalid),
			Flag: "--attention-backend", Value: BackendTRTLLMMLA, Hint: "use --attention-backend trtllm_mla for an MLA model"})
	}
	c.backend = req
	return nil
}

// backendPageSize applies the page size a backend forces (server args'
// _handle_attention_backend_compatibility) to page (0 = not given).
func (c *Configurator) backendPageSize(page int) int {
	force := func(ok []int, to int) int {
		if slices.Contains(ok, page) {
			return page
		}
		if page != 0 {
			c.notes = append(c.notes, fmt.Sprintf("the %s attention backend forces page_size %d (requested %d)", c.backend, to, page))
		}
		return to
	}
	switch c.backend {
	case BackendFlashMLA:
		return force([]int{64}, 64)
	case BackendCutlassMLA:
		return force([]int{128}, 128)
	case BackendTRTLLMMLA:
		return force([]int{32, 64}, 64)
	case BackendTRTLLMMHA:
		return force([]int{16, 32, 64}, 64)
	}
	return page
}

// aiterScales reports whether the backend scales mem_fraction_static by
// 0.85: only aiter, only with a context above 8192, only in releases that
// have the rule (0.4.7 on).
func (c *Configurator) aiterScales() bool {
	return c.backend == BackendAiter && c.prof.aiterScale && c.d.ContextLength > 8192
}

// distributedReading reports whether the free-memory readings go through
// the float32 all-reduce: the engine's world (TP × PP) has more than one
// rank. Plain --dp-size starts independent workers of TP × PP ranks each.
func (c *Configurator) distributedReading() bool {
	return c.in.Parallel.TP*c.in.Parallel.PP > 1
}

// Profile returns the SGLang version profile the plan is sized with.
func (c *Configurator) Profile() Profile { return c.prof }

// AttentionBackend returns the attention backend the plan assumes
// (--attention-backend or SGLang's default choice).
func (c *Configurator) AttentionBackend() string { return c.backend }
