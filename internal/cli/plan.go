package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// bindPlanFlags registers every planning flag on fs, writing into req. The
// names are SGLang's (and vLLM's for the vLLM-only knobs); aliases write to
// the same field. `plan`, `compare` and `fit` share it.
func bindPlanFlags(fs *pflag.FlagSet, req *plan.Request) {
	fs.StringVar(&req.Model, "model", "", "model: catalog name (kvcfg models), config.json path, model directory or Hugging Face id org/name (default "+defaultModelName+")")
	fs.StringVar(&req.Model, "model-path", "", "alias of --model (SGLang's name)")
	req.Resolver = bindHubFlags(fs, &req.Revision)
	fs.StringVar(&req.Engine, "engine", "", "inference engine: sglang (default), vllm or trtllm")

	fs.StringVar(&req.GPU, "gpu", "", "GPU name (kvcfg gpus; default "+plan.DefaultGPU+")")
	fs.Var(&req.GPUMemory, "gpu-memory", "total GPU memory, overriding the GPU's (80GiB, 80GB, 81559MiB or bytes)")
	fs.StringVar(&req.Platform, "platform", "", "platform: cuda or hip (default: the GPU's)")

	fs.IntVar(&req.TPSize, "tp-size", 0, "tensor parallel size (default 1)")
	fs.IntVar(&req.TPSize, "tp", 0, "alias of --tp-size")
	fs.IntVar(&req.TPSize, "tensor-parallel-size", 0, "alias of --tp-size (vLLM's name)")
	fs.IntVar(&req.PPSize, "pp-size", 0, "pipeline parallel size (default 1)")
	fs.IntVar(&req.PPSize, "pipeline-parallel-size", 0, "alias of --pp-size (vLLM's name)")
	fs.IntVar(&req.DPSize, "dp-size", 0, "data parallel size (default 1)")
	fs.BoolVar(&req.EnableDPAttention, "enable-dp-attention", false, "data-parallel attention (attention TP = tp / dp)")

	fs.StringVar(&req.KVCacheDType, "kv-cache-dtype", "", "KV cache dtype: auto, bf16, fp8_e4m3, fp8_e5m2, mxfp8, nvfp4, fp4_mx_block16, ...")
	fs.Float64Var(&req.MemFractionStatic, "mem-fraction-static", 0, "fraction of GPU memory for weights and KV cache (default: SGLang's heuristic)")
	fs.IntVar(&req.PageSize, "page-size", 0, "tokens per KV page (default 1, or what the attention backend forces)")
	fs.IntVar(&req.ContextLength, "context-length", 0, "context length (default: the model's)")
	fs.Int64Var(&req.MaxTotalTokens, "max-total-tokens", 0, "upper bound on the KV pool's tokens")
	fs.IntVar(&req.MaxRunningRequests, "max-running-requests", 0, "maximum running requests")
	fs.Float64Var(&req.SWAFullTokensRatio, "swa-full-tokens-ratio", 0, "SWA pool tokens / full pool tokens for hybrid sliding-window models (default 0.8)")
	fs.BoolVar(&req.DisableHybridSWAMemory, "disable-hybrid-swa-memory", false, "use one full-size pool for sliding-window models")
	fs.IntVar(&req.ChunkedPrefillSize, "chunked-prefill-size", 0, "chunked prefill size (default by GPU memory; -1 disables)")
	fs.IntVar(&req.CudaGraphMaxBS, "cuda-graph-max-bs", 0, "largest CUDA-graph batch size (default by GPU memory)")
	fs.BoolVar(&req.DisableRadixCache, "disable-radix-cache", false, "disable the radix (prefix) cache")
	fs.StringVar(&req.SpeculativeAlgorithm, "speculative-algorithm", "", "speculative decoding: EAGLE, EAGLE3, STANDALONE, DFLASH or NGRAM")
	fs.IntVar(&req.SpeculativeNumDraftTokens, "speculative-num-draft-tokens", 0, "draft tokens per step (default 4)")
	fs.IntVar(&req.SpeculativeDraftNumLayers, "speculative-draft-num-layers", 0, "layers of the draft model (default: the checkpoint's MTP layers, else 1)")
	fs.Float64Var(&req.MambaFullMemoryRatio, "mamba-full-memory-ratio", 0, "mamba state memory / KV memory for hybrid linear-attention models (default 0.9)")
	fs.IntVar(&req.MaxMambaCacheSize, "max-mamba-cache-size", 0, "number of mamba state slots")
	fs.StringVar(&req.MambaSSMDType, "mamba-ssm-dtype", "", "mamba SSM state dtype: float32 or bfloat16 (default: the config's, else float32)")

	fs.Var(&req.PreLoadFreeMemory, "pre-load-free-memory", "free memory before weight load as the engine logged it (e.g. 78.81GiB)")
	fs.Var(&req.PostLoadFreeMemory, "post-load-free-memory", "free memory after weight load as the engine logged it (e.g. 63.72GiB)")
	fs.Var(&req.WeightsMemory, "weights-memory", "weight memory per GPU, replacing the estimate")

	fs.Float64Var(&req.GPUMemoryUtilization, "gpu-memory-utilization", 0, "vLLM: fraction of GPU memory vLLM may use (default 0.92; 0.9 with --vllm-version 0.6 or 0.11)")
	fs.IntVar(&req.BlockSize, "block-size", 0, "vLLM: tokens per KV block (default 16)")
	fs.IntVar(&req.MaxModelLen, "max-model-len", 0, "vLLM: context length (default: the model's; -1 fits it to memory, latest only)")
	fs.IntVar(&req.MaxNumSeqs, "max-num-seqs", 0, "vLLM: maximum running sequences (default 1024 on GPUs of 70 GiB or more except A100, else 256)")
	fs.IntVar(&req.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "vLLM: tokens per scheduler step")
	fs.Var(&req.KVCacheMemoryBytes, "kv-cache-memory-bytes", "vLLM: KV cache size per GPU, bypassing profiling (vLLM's flag)")
	fs.Var(&req.KVCacheMemory, "kv-cache-memory", "vLLM: \"Available KV cache memory\" a run logged (e.g. 51.63GiB), replacing the budget estimate")
	fs.BoolVar(&req.EnforceEager, "enforce-eager", false, "vLLM: no CUDA graphs (nothing set aside for them)")
	fs.Int64Var(&req.NumGPUBlocksOverride, "num-gpu-blocks-override", 0, "vLLM: number of KV blocks, overriding the profiled count")
	fs.StringVar(&req.VLLMVersion, "vllm-version", "", "vLLM: sizing rules to follow: 0.6, 0.11 or latest (default); a version number such as 0.10.2 maps to its profile")

	fs.StringVar(&req.TRTLLMVersion, "trtllm-version", "", "TensorRT-LLM: sizing rules to follow: 0.x (engine builds), 1.0, 1.1 or latest (default); a version number such as 1.1.0rc3 maps to its profile")
	fs.Float64Var(&req.FreeGPUMemoryFraction, "free-gpu-memory-fraction", 0, "TensorRT-LLM: share of the memory free after loading for the KV cache (default 0.9)")
	fs.IntVar(&req.TokensPerBlock, "tokens-per-block", 0, "TensorRT-LLM: tokens per KV block (default 32; 64 for engine builds)")
	fs.Int64Var(&req.MaxTokens, "max-tokens", 0, "TensorRT-LLM: kv_cache_config.max_tokens, a cap on the pool's tokens")
	fs.Var(&req.MaxGPUTotalBytes, "max-gpu-total-bytes", "TensorRT-LLM: kv_cache_config.max_gpu_total_bytes, a cap on the pool's bytes")
	fs.IntVar(&req.MaxSeqLen, "max-seq-len", 0, "TensorRT-LLM: max_seq_len (default: the model's context length)")
	fs.IntVar(&req.MaxBatchSize, "max-batch-size", 0, "TensorRT-LLM: max_batch_size (default 2048)")
	fs.IntVar(&req.MaxNumTokens, "max-num-tokens", 0, "TensorRT-LLM: max_num_tokens per iteration (default 8192)")
	fs.IntVar(&req.MaxBeamWidth, "max-beam-width", 0, "TensorRT-LLM: max_beam_width (default 1)")
	fs.IntVar(&req.MaxInputLen, "max-input-len", 0, "TensorRT-LLM: an engine build's max_input_len (0.x; default 1024)")
	fs.IntSliceVar(&req.MaxAttentionWindow, "max-attention-window", nil, "TensorRT-LLM: per-layer attention windows, repeated over the layers (e.g. 128,131072)")
	fs.Var(&req.HostCacheSize, "host-cache-size", "TensorRT-LLM: host (secondary) KV cache size")
	fs.BoolVar(&req.EnableChunkedPrefill, "enable-chunked-prefill", false, "TensorRT-LLM: enable_chunked_prefill")
	fs.BoolVar(&req.DisableOverlapScheduler, "disable-overlap-scheduler", false, "TensorRT-LLM: disable_overlap_scheduler")
	fs.IntVar(&req.MaxDraftLen, "max-draft-len", 0, "TensorRT-LLM: speculative_config.max_draft_len")
	fs.Var(&req.FreeMemoryAfterLoad, "free-memory-after-load", "TensorRT-LLM 0.x: the free memory of \"Memory usage when calculating max tokens in paged kv cache\" a run logged")

	// A zero size means "not given": keep "(default 0 B)" out of the help.
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Value.(*units.Size); ok && f.DefValue == units.Size(0).String() {
			f.DefValue = ""
		}
	})
}

const defaultModelName = "meta-llama/Llama-3.1-8B-Instruct"

func newPlanCmd() *cobra.Command {
	var req plan.Request
	var format string
	var sw *sweep
	cmd := &cobra.Command{
		Use:   "plan [MODEL]",
		Short: "Compute the KV cache an engine would build for a model, GPU and flags",
		Long: `plan computes exactly the KV pool SGLang (or vLLM) would build: pool sizes,
max running requests, per-GPU memory budget and the lines the engine logs.

With no flags it plans ` + defaultModelName + ` on one H100 80GB.
Reproduce a real run exactly by passing the free memory the engine logged
before and after loading weights:

  kvcfg plan --pre-load-free-memory 78.81GiB --post-load-free-memory 63.72GiB

Every planning flag also takes a comma list; plan then plans every
combination and prints one row each (table, CSV, markdown, JSON or YAML):

  kvcfg plan --tp-size 1,2,4 --kv-cache-dtype auto,fp8_e4m3 -o csv

Exit status: 0 on success, 1 when the engine could not start with these
settings (the error names the flag to change) or, for a list, when no
combination plans, 2 for invalid input.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sw.active() {
				return sw.run(cmd, req, args, format)
			}
			if err := checkFormat(format, outTable, outJSON, outYAML, outMarkdown); err != nil {
				return &exitError{code: 2, err: err}
			}
			if len(args) == 1 {
				if req.Model != "" {
					return &exitError{code: 2, err: errors.New("give the model either as an argument or with --model, not both")}
				}
				req.Model = args[0]
			}
			rep, err := plan.Run(cmd.Context(), req)
			return writePlan(cmd.OutOrStdout(), cmd.ErrOrStderr(), format, rep, err)
		},
	}
	bindPlanFlags(cmd.Flags(), &req)
	cmd.Flags().StringVarP(&format, "output", "o", outTable, "output format: table, json, yaml or markdown (and csv with a comma list)")
	sw = enableSweep(cmd, &req)
	// A flag value that does not parse is invalid input: exit status 2.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 2, err: err} })
	return cmd
}

// writePlan prints a plan result and maps its error to an exit status.
func writePlan(out, errw io.Writer, format string, rep *plan.Report, err error) error {
	if rep != nil {
		if ok, werr := writeStructured(out, format, rep); ok {
			if werr != nil {
				return werr
			}
		} else if strings.EqualFold(format, outMarkdown) {
			if werr := rep.WriteMarkdown(out); werr != nil {
				return werr
			}
		} else if werr := rep.WriteText(out); werr != nil {
			return werr
		}
	}
	// A table or markdown report already opens with the verdict and the
	// fix; the structured formats leave them to standard error too.
	structured := strings.EqualFold(format, outJSON) || strings.EqualFold(format, outYAML)
	if err == nil {
		if rep != nil && rep.Verdict == plan.VerdictMisses {
			if !structured {
				return &exitError{code: 3}
			}
			msg := rep.Answer
			if rep.FixHint != "" {
				msg += "\nfix: " + rep.FixHint
			}
			return &exitError{code: 3, err: errors.New(msg)}
		}
		return nil
	}
	if errors.Is(err, plan.ErrInfeasible) {
		if !structured && rep != nil {
			return &exitError{code: 1}
		}
		return &exitError{code: 1, err: plan.WithFix(err, rep)}
	}
	if errors.Is(err, plan.ErrInvalid) {
		return &exitError{code: 2, err: err}
	}
	return &exitError{code: 1, err: err}
}

// gibs formats a byte count as the plan printer does ("25.29 GiB").
func gibs(n int64) string { return units.FormatBytes(n) }

// group writes n with thousands separators, as the plan printer does.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// mdEscape keeps a markdown table cell's pipes from ending the cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
