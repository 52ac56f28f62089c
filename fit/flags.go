package fit

import (
	"errors"
	"strings"

	"github.com/kvcfg/kvcfg/plan"
)

// engineFlag maps a request key to the engine's flag name.
type engineFlag struct {
	key, flag string
}

// sglangFlags are the request fields SGLang's launch_server takes, in the
// order they are printed. Fields that only feed kvcfg's memory model
// (gpu_memory, weights_memory, the free-memory readings, draft layers) are
// not engine flags.
var sglangFlags = []engineFlag{
	{"tp_size", "--tp-size"}, {"pp_size", "--pp-size"}, {"dp_size", "--dp-size"},
	{"enable_dp_attention", "--enable-dp-attention"},
	{"kv_cache_dtype", "--kv-cache-dtype"}, {"context_length", "--context-length"},
	{"mem_fraction_static", "--mem-fraction-static"}, {"max_running_requests", "--max-running-requests"},
	{"max_total_tokens", "--max-total-tokens"}, {"page_size", "--page-size"},
	{"swa_full_tokens_ratio", "--swa-full-tokens-ratio"}, {"disable_hybrid_swa_memory", "--disable-hybrid-swa-memory"},
	{"max_mamba_cache_size", "--max-mamba-cache-size"}, {"mamba_full_memory_ratio", "--mamba-full-memory-ratio"},
	{"mamba_ssm_dtype", "--mamba-ssm-dtype"}, {"chunked_prefill_size", "--chunked-prefill-size"},
	{"cuda_graph_max_bs", "--cuda-graph-max-bs"}, {"disable_radix_cache", "--disable-radix-cache"},
	{"speculative_algorithm", "--speculative-algorithm"}, {"speculative_num_draft_tokens", "--speculative-num-draft-tokens"},
}

// vllmFlags are the request fields `vllm serve` takes, in print order.
var vllmFlags = []engineFlag{
	{"tp_size", "--tensor-parallel-size"}, {"pp_size", "--pipeline-parallel-size"},
	{"kv_cache_dtype", "--kv-cache-dtype"}, {"max_model_len", "--max-model-len"},
	{"gpu_memory_utilization", "--gpu-memory-utilization"}, {"max_num_seqs", "--max-num-seqs"},
	{"block_size", "--block-size"}, {"max_num_batched_tokens", "--max-num-batched-tokens"},
	{"kv_cache_memory_bytes", "--kv-cache-memory-bytes"}, {"num_gpu_blocks_override", "--num-gpu-blocks-override"},
	{"enforce_eager", "--enforce-eager"},
}

// EngineFlags returns the engine command-line flags that req encodes:
// SGLang's launch_server flags, or vLLM's `vllm serve` flags for the vllm
// engine. Zero fields are left out (the engine default applies); boolean
// flags are bare. tp_size is always printed.
func EngineFlags(req plan.Request) []string {
	req = req.Normalized()
	table := sglangFlags
	if req.Engine == plan.EngineVLLM {
		table = vllmFlags
	}
	var out []string
	for _, f := range table {
		v, _ := req.FieldString(f.key)
		if f.key == "tp_size" && v == "" {
			v = "1"
		}
		switch {
		case v == "":
		case v == "true":
			out = append(out, f.flag)
		default:
			out = append(out, f.flag, v)
		}
	}
	return out
}

// PlanArgs returns the `kvcfg plan` arguments that reproduce req: the
// model, GPU and engine, then every non-zero request field as its flag
// (the snake_case key in kebab-case). An inline config is not
// reproducible from flags and is left out.
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
	for _, k := range plan.SweepFields() {
		switch k {
		case "model", "gpu", "engine", "tensor_parallel_size", "pipeline_parallel_size":
			continue
		}
		v, _ := req.FieldString(k)
		switch v {
		case "":
		case "true":
			out = append(out, flagName(k))
		default:
			out = append(out, flagName(k), v)
		}
	}
	return out
}

func flagName(key string) string { return "--" + strings.ReplaceAll(key, "_", "-") }

// ParseFlags reads flags as EngineFlags or PlanArgs print them back into
// the request fields they name (engine aliases such as
// --tensor-parallel-size included). It is the inverse used to check that
// printed flags plan to what was listed.
func ParseFlags(base plan.Request, flags []string) (plan.Request, error) {
	req := base
	alias := map[string]string{"tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size"}
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		if !strings.HasPrefix(f, "--") {
			return req, &plan.FieldError{Field: f, Err: errUnexpected}
		}
		key := strings.ReplaceAll(strings.TrimPrefix(f, "--"), "-", "_")
		if a, ok := alias[key]; ok {
			key = a
		}
		val := "true"
		if i+1 < len(flags) && !strings.HasPrefix(flags[i+1], "--") {
			val = flags[i+1]
			i++
		}
		if err := req.SetField(key, val); err != nil {
			return req, err
		}
	}
	return req, nil
}

var errUnexpected = errors.New("unexpected argument (want a --flag)")
