package sglang

import "slices"

// The newest SGLang picks a prefill CUDA-graph backend (cuda_graph_config.py
// default_prefill_backend: breakable on CUDA, tc_piecewise elsewhere) and
// runs its compatibility checks (arg_groups/cuda_graph_hook.py
// apply_cuda_graph_compatibility, disable_tc_piecewise_cudagraph_if_incompatible,
// disable_breakable_cudagraph_if_incompatible) before the memory defaults
// (arg_groups/pipeline.py), so a launch whose prefill graph is switched off
// reserves nothing for it (memory_hook.py reserve_for_graph_mb).

// multimodalBreakableArchs is model_config.py's
// multimodal_breakable_cuda_graph_supported_model_archs: multimodal models
// whose prefill runs under the breakable graph.
var multimodalBreakableArchs = []string{
	"Qwen3_5ForConditionalGeneration",
	"Qwen3_5MoeForConditionalGeneration",
}

// multimodalPiecewiseArchs is model_config.py's
// multimodal_piecewise_cuda_graph_supported_model_archs: multimodal models
// switched to the tc_piecewise prefill graph.
var multimodalPiecewiseArchs = []string{
	"Cohere2VisionForConditionalGeneration",
	"KimiK25ForConditionalGeneration",
	"MiniMaxM3SparseForCausalLM",
	"MiniMaxM3SparseForConditionalGeneration",
}

// prefillGraphOff says whether the newest SGLang runs this launch without
// a prefill CUDA graph, and why ("" when it keeps one). Older profiles
// reserve for it whenever it is not switched off by the flag.
func (c *Configurator) prefillGraphOff(platform string) (bool, string) {
	if c.in.Args.DisablePiecewiseCudaGraph {
		return true, ""
	}
	if !c.prof.prefillGraphCompat {
		return false, ""
	}
	s, p := c.in.Spec, c.in.Parallel
	breakable := platform == "cuda" // default_prefill_backend
	mm := s.Multimodal
	if breakable && mm && slices.Contains(multimodalPiecewiseArchs, s.Architecture) && !slices.Contains(multimodalBreakableArchs, s.Architecture) {
		breakable = false // validated multimodal decoder prefill: tc_piecewise
	}
	dpAttn := p.EnableDPAttention && p.DP > 1
	switch {
	case p.PP > 1:
		return true, "pipeline parallelism"
	case !breakable && platform != "cuda":
		return true, "non-CUDA hardware"
	case breakable && s.Linear != nil && s.Linear.Kind == "kda":
		return true, "KDA hybrid linear attention"
	case breakable && mm && !slices.Contains(multimodalBreakableArchs, s.Architecture):
		return true, "multimodal model"
	case !breakable && dpAttn:
		return true, "DP attention"
	case !breakable && mm && !slices.Contains(multimodalPiecewiseArchs, s.Architecture):
		return true, "multimodal model"
	}
	return false, ""
}
