package explain

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// TRTLLM marks a TensorRT-LLM message.
const TRTLLM = "trtllm"

// TensorRT-LLM's messages come from engine/trtllm, which knows its sizing:
// each pattern's meaning, and the knob as trtllm-serve users spell it (the
// command-line flag when there is one, else the --extra_llm_api_options
// YAML key).
func trtllmRules() []rule {
	var rules []rule
	for _, p := range trtllm.Patterns() {
		names := make([]string, p.Regexp.NumSubexp())
		for i := range names {
			names[i] = fmt.Sprintf("value%d", i+1)
		}
		rules = append(rules, rule{engine: TRTLLM, kind: p.Name, re: p.Regexp, names: names,
			build: func(e *Explanation, _ map[string]float64, _ []string) {
				e.Meaning = p.Meaning
				e.Knob = p.Flag
				if e.Knob == "" && p.Knob != "" {
					e.Knob = "kv_cache_config." + p.Knob
					if !strings.HasPrefix(p.Knob, "kv_cache") && p.Knob != "free_gpu_memory_fraction" && p.Knob != "max_tokens" {
						e.Knob = p.Knob
					}
				}
				switch p.Severity {
				case trtllm.Warning:
					e.Advice = "A warning: the launch goes on. " + p.Meaning
				default:
					e.Advice = p.Meaning
				}
				if p.Knob != "" {
					e.Advice += fmt.Sprintf(" Knob: %s (kvcfg plan --engine trtllm --%s).", p.Knob, strings.ReplaceAll(p.Knob, "_", "-"))
				}
			}})
	}
	return rules
}
