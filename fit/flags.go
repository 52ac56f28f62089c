package fit

import (
	"strings"

	"github.com/kvcfg/kvcfg/plan"
)

// EngineFlags returns the engine command-line flags that req encodes, from
// the flag table (plan/flags.go): SGLang's launch_server flags, vLLM's
// `vllm serve` flags or trtllm-serve's (LLM-API options as path=value).
// Zero fields are left out (the engine default applies); boolean flags are
// bare. tp_size is always printed.
func EngineFlags(req plan.Request) []string { return plan.EngineArgs(req, true) }

// PlanArgs returns the `kvcfg plan` arguments that reproduce req: the
// model, GPU and engine, then every non-zero request field as its kvcfg
// flag. An inline config is not reproducible from flags and is left out.
func PlanArgs(req plan.Request) []string {
	req = req.Normalized()
	var out []string
	if req.Model != "" {
		out = append(out, "--model", req.Model)
	}
	if req.GPU != "" {
		out = append(out, "--gpu", req.GPU)
	}
	if req.Engine != plan.EngineSGLang {
		out = append(out, "--engine", req.Engine)
	}
	for _, f := range plan.Flags() {
		switch f.Key {
		case "model", "gpu", "engine":
			continue
		}
		v, _ := req.FieldString(f.Key)
		switch {
		case v == "":
		case f.Kind == plan.KindBool:
			out = append(out, f.Name)
		case strings.ContainsAny(v, "\"{} "):
			// A JSON value (--kv-transfer-config), single-quoted for a shell.
			out = append(out, f.Name, "'"+v+"'")
		default:
			out = append(out, f.Name, v)
		}
	}
	return out
}

// ParseFlags reads flags as EngineFlags or PlanArgs print them back into
// the request fields they name (engine spellings such as
// --tensor-parallel-size included): plan.ParseEngineArgs, the inverse used
// to check that printed flags plan to what was listed.
func ParseFlags(base plan.Request, flags []string) (plan.Request, error) {
	return plan.ParseEngineArgs(base, flags)
}
