package model

import "strings"

// family is the reading rule set of a group of architectures.
type family int

const (
	famGeneric family = iota
	famLlama
	famLlama4
	famMistral
	famQwen2 // qwen2, qwen3, qwen2_moe, qwen3_moe: use_sliding_window + max_window_layers
	famQwen3Next
	famPhi3
	famGemma2
	famGemma3
	famCohere
	famCohere2
	famOlmo2
	famGranite
	famFalcon
	famGLM4MoE
	famDeepseek // DeepSeek-V2/V3/V3.2, Kimi-K2
	famGptOss
	famMiMo
	famKimiLinear
	famNemotronH
	famMamba2
	famMiniMax
	famGemma4
	famStep3p5
	famDeepseekV4 // DeepSeek-V4 compressed attention (docs/sglang.md#dsv4)
	famMiniMaxM3  // MiniMax-M3 sparse attention (docs/sglang.md#minimax-sparse)
)

// knownArchs maps architectures[0] to its family.
var knownArchs = map[string]family{
	"LlamaForCausalLM":                 famLlama,
	"Llama4ForConditionalGeneration":   famLlama4,
	"Llama4ForCausalLM":                famLlama4,
	"MistralForCausalLM":               famMistral,
	"MixtralForCausalLM":               famMistral,
	"Mistral3ForConditionalGeneration": famMistral,
	"Qwen2ForCausalLM":                 famQwen2,
	"Qwen2MoeForCausalLM":              famQwen2,
	"Qwen3ForCausalLM":                 famQwen2,
	"Qwen3MoeForCausalLM":              famQwen2,
	"Qwen3NextForCausalLM":             famQwen3Next,
	"Phi3ForCausalLM":                  famPhi3,
	"Gemma2ForCausalLM":                famGemma2,
	"Gemma3ForCausalLM":                famGemma3,
	"Gemma3ForConditionalGeneration":   famGemma3,
	"Gemma4ForCausalLM":                famGemma4,
	"Gemma4ForConditionalGeneration":   famGemma4,
	"CohereForCausalLM":                famCohere,
	"Cohere2ForCausalLM":               famCohere2,
	"Olmo2ForCausalLM":                 famOlmo2,
	"GraniteForCausalLM":               famGranite,
	"FalconForCausalLM":                famFalcon,
	"Glm4MoeForCausalLM":               famGLM4MoE,
	"DeepseekV2ForCausalLM":            famDeepseek,
	"DeepseekV3ForCausalLM":            famDeepseek,
	"DeepseekV32ForCausalLM":           famDeepseek,
	"DeepseekV3ForCausalLMNextN":       famDeepseek,
	"Glm4MoeLiteForCausalLM":           famDeepseek,
	"GptOssForCausalLM":                famGptOss,
	"MiMoV2FlashForCausalLM":           famMiMo,
	"MiMoV2MTP":                        famMiMo,
	"KimiLinearForCausalLM":            famKimiLinear,
	"NemotronHForCausalLM":             famNemotronH,
	"Mamba2ForCausalLM":                famMamba2,
	"MiniMaxM2ForCausalLM":             famMiniMax,
	"DeepseekV4ForCausalLM":            famDeepseekV4,
	"MiniMaxM3SparseForCausalLM":       famMiniMaxM3,
	"Step3p5ForCausalLM":               famStep3p5,
	"Step3p5MTP":                       famStep3p5,
}

// modelTypeArch maps a model_type to the architecture transformers would
// instantiate, for configs without "architectures" (mamba2-130m).
var modelTypeArch = map[string]string{
	"llama":        "LlamaForCausalLM",
	"mistral":      "MistralForCausalLM",
	"mixtral":      "MixtralForCausalLM",
	"qwen2":        "Qwen2ForCausalLM",
	"qwen2_moe":    "Qwen2MoeForCausalLM",
	"qwen3":        "Qwen3ForCausalLM",
	"qwen3_moe":    "Qwen3MoeForCausalLM",
	"qwen3_next":   "Qwen3NextForCausalLM",
	"phi3":         "Phi3ForCausalLM",
	"gemma2":       "Gemma2ForCausalLM",
	"gemma3_text":  "Gemma3ForCausalLM",
	"cohere":       "CohereForCausalLM",
	"cohere2":      "Cohere2ForCausalLM",
	"olmo2":        "Olmo2ForCausalLM",
	"granite":      "GraniteForCausalLM",
	"falcon":       "FalconForCausalLM",
	"glm4_moe":     "Glm4MoeForCausalLM",
	"deepseek_v2":  "DeepseekV2ForCausalLM",
	"deepseek_v3":  "DeepseekV3ForCausalLM",
	"deepseek_v32": "DeepseekV32ForCausalLM",
	"gpt_oss":      "GptOssForCausalLM",
	"nemotron_h":   "NemotronHForCausalLM",
	"mamba2":       "Mamba2ForCausalLM",
	"kimi_linear":  "KimiLinearForCausalLM",
	"minimax_m2":   "MiniMaxM2ForCausalLM",
	"deepseek_v4":  "DeepseekV4ForCausalLM",
	"minimax_m3":   "MiniMaxM3SparseForCausalLM",
}

// mlaArchs are SGLang's MLA architectures (model_config.py attention_arch).
var mlaArchs = map[string]bool{
	"DeepseekV2ForCausalLM":           true,
	"DeepseekV3ForCausalLM":           true,
	"DeepseekV32ForCausalLM":          true,
	"DeepseekV3ForCausalLMNextN":      true,
	"Glm4MoeLiteForCausalLM":          true,
	"LongcatFlashForCausalLM":         true,
	"DotsVLMForCausalLM":              true,
	"MistralLarge3ForCausalLM":        true,
	"PixtralForConditionalGeneration": true,
	"KimiK25ForConditionalGeneration": true,
	"DeepseekVL2ForCausalLM":          true,
	"KimiVLForConditionalGeneration":  true,
	"MiniCPM3ForCausalLM":             true,
	"KimiLinearForCausalLM":           true,
	"GlmMoeDsaForCausalLM":            true,
}

// dsaArchs are the architectures on which index_topk turns MLA into DSA
// (is_deepseek_dsa, docs/sglang.md#model-dsa).
var dsaArchs = map[string]bool{
	"DeepseekV3ForCausalLM":           true,
	"DeepseekV32ForCausalLM":          true,
	"DeepseekV3ForCausalLMNextN":      true,
	"MistralLarge3ForCausalLM":        true,
	"PixtralForConditionalGeneration": true,
	"GlmMoeDsaForCausalLM":            true,
}

// hybridSWAArchs are SGLang's HYBRID_SWA_ARCHS: the only architectures that
// get separate full and sliding pools (docs/sglang.md#model-sliding-window).
var hybridSWAArchs = map[string]bool{
	"Llama4ForConditionalGeneration": true,
	"GptOssForCausalLM":              true,
	"MiMoV2FlashForCausalLM":         true,
	"MiMoV2MTP":                      true,
	"Step3p5ForCausalLM":             true,
	"Step3p5MTP":                     true,
	"Gemma4ForCausalLM":              true,
	"Gemma4ForConditionalGeneration": true,
}

// languageOnlyByDefault are multimodal architectures SGLang serves as
// language-only unless multimodal is enabled (docs/sglang.md#model-multimodal).
var languageOnlyByDefault = map[string]bool{
	"Gemma3ForConditionalGeneration":  true,
	"Llama4ForConditionalGeneration":  true,
	"Step3VLForConditionalGeneration": true,
}

// isMultimodalArch guesses a multimodal wrapper from its class name.
func isMultimodalArch(arch string) bool {
	for _, s := range []string{"ForConditionalGeneration", "VL", "Vision", "Llava", "Omni"} {
		if strings.Contains(arch, s) {
			return true
		}
	}
	return false
}

// untiedByDefault lists model types whose config class defaults
// tie_word_embeddings to false; for the rest transformers' default (true)
// applies. Used for parameter counts only.
var tiedByDefault = map[string]bool{
	"gemma": true, "gemma2": true, "gemma3": true, "gemma3_text": true,
	"falcon": true, "cohere": true, "cohere2": true, "mamba2": true, "granite": true,
}

// nonGatedMLP lists model types whose MLP is up/down without a gate.
var nonGatedMLP = map[string]bool{
	"falcon": true, "nemotron_h": true, "gpt2": true, "gpt_bigcode": true,
	"starcoder2": true, "phi": true, "mpt": true, "gpt_neox": true,
}
