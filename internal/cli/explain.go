package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/explain"
	"github.com/kvcfg/kvcfg/plan"
)

// explainResult is the JSON / YAML output of `kvcfg explain`.
type explainResult struct {
	*explain.Explanation
	Advice *explain.Advice `json:"plan_advice,omitempty"`
}

// explainLong is the help of kvcfg explain.
const explainLong = `explain reads an engine error or warning about the KV cache (paste the log
line or the exception text; "-" or no argument reads standard input, so a
whole log can be piped in) and says what it means, which flag to change and
to what value, computed from the numbers in the message.

  kvcfg explain "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.835"

With the launch's flags (the same flags as kvcfg plan: --model, --gpu,
--tp-size, ...) it also plans the launch and searches the value of the knob
that makes it start and hold --concurrency requests (default 1) of the
context length:

  kvcfg explain --model meta-llama/Llama-3.1-70B-Instruct --gpu H100 --tp-size 2 --context-length 32768 "$(tail -5 sglang.log)"

The plan starts from the launch that failed: the settings the message
states (SGLang's current --mem-fraction-static, vLLM's max_model_len,
available KV cache memory and block count, TensorRT-LLM's
free_gpu_memory_fraction, max_seq_len, max_num_tokens) and the log's memory
readings stand where no flag gives them. The answer then names one value,
the planned one, in "turn", "WHAT TO DO" and the JSON "value"; when no
value of the knob works, a larger --tp-size, or none. Without
--context-length the model's full context is planned, and the answer says
so ("assumed").

Recognised: SGLang's memory-pool errors (no KV memory after weights, not
enough memory, SWA pool too small, SWA pool cap, mamba state cache, context
length, KV dtype) and warnings (requests capped by the mamba state or the
KV pool), vLLM's "To serve at least one request...", "Free memory on
device...", "No available memory for the cache blocks" and max-model-len
errors, and TensorRT-LLM's KV-cache messages (free_gpu_memory_fraction with
max_tokens, attention windows and max_seq_len adjusted or over their bound,
a pool too small to fit, prompts over max_num_tokens or max_seq_len, KV
dtype and override mismatches, pipeline stages over the layers, NVFP4
divisibility; --list prints them all).

A message that itself starts with "--" must follow a "--" separator (or come
on standard input), or it is read as a flag:

  kvcfg explain -- "--kv-cache-dtype=fp4_e2m1 is deprecated. Use --kv-cache-dtype=fp4_mx_block16."

Exit status: 0 when the message is recognised, 2 when it is not.`

func newExplainCmd() *cobra.Command {
	var (
		req    plan.Request
		format string
		list   bool
	)
	var pf *planFlags
	cmd := &cobra.Command{
		Use:   `explain "<log line or error>"`,
		Short: "Explain an SGLang, vLLM or TensorRT-LLM KV-cache error and say which knob to turn",
		Long:  explainLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, outTable, outJSON, outYAML); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := pf.check(); err != nil {
				return &exitError{code: 2, err: err}
			}
			if list {
				for _, k := range explain.Known() {
					fmt.Fprintln(cmd.OutOrStdout(), k)
				}
				return nil
			}
			text := strings.Join(args, " ")
			if len(args) == 0 || text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
				if err != nil {
					return err
				}
				text = string(b)
			}
			e, err := explain.Explain(text)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			res := explainResult{Explanation: e}
			if planFlagsGiven(cmd.Flags()) {
				a, err := explain.Advise(cmd.Context(), e, req)
				if err != nil {
					if errors.Is(err, plan.ErrInvalid) {
						return &exitError{code: 2, err: err}
					}
					return err
				}
				res.Advice = a
			}
			return writeExplain(cmd.OutOrStdout(), format, res)
		},
	}
	pf = bindPlanFlags(cmd.Flags(), &req)
	cmd.Flags().StringVarP(&format, "output", "o", outTable, "output format: table, json or yaml")
	cmd.Flags().BoolVar(&list, "list", false, "list the messages explain recognises")
	return cmd
}

// planFlagsGiven reports whether any planning flag was set on the command
// line (the output and list flags do not count).
func planFlagsGiven(fs *pflag.FlagSet) bool {
	given := false
	fs.Visit(func(f *pflag.Flag) {
		if f.Name != "output" && f.Name != "list" {
			given = true
		}
	})
	return given
}

func writeExplain(w io.Writer, format string, res explainResult) error {
	if res.Advice != nil && res.Advice.Report != nil && !strings.EqualFold(format, outTable) {
		// The full plan belongs to `kvcfg plan`; keep the advice compact.
		a := *res.Advice
		a.Report = nil
		res.Advice = &a
	}
	if ok, err := writeStructured(w, format, res); ok {
		return err
	}
	e := res.Explanation
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "engine\t%s\n", e.Engine)
	fmt.Fprintf(tw, "message\t%s\n", e.Kind)
	fmt.Fprintf(tw, "matched\t%s\n", e.Match)
	knob := e.Knob
	if e.Value != "" {
		knob += " " + e.Value
	}
	fmt.Fprintf(tw, "turn\t%s\n", knob)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nWHAT IT MEANS\n  %s\n\nWHAT TO DO\n  %s\n", e.Meaning, e.Advice)
	if len(e.Alternatives) > 0 {
		fmt.Fprintf(w, "\nALSO HELPS\n")
		for _, a := range e.Alternatives {
			fmt.Fprintf(w, "  - %s\n", a)
		}
	}
	if a := res.Advice; a != nil {
		fmt.Fprintf(w, "\nWITH YOUR FLAGS\n")
		if len(a.Measured) > 0 {
			fmt.Fprintf(w, "  planned with the log's readings: %s\n", strings.Join(a.Measured, ", "))
		}
		if len(a.FromMessage) > 0 {
			fmt.Fprintf(w, "  planned with the message's own settings: %s\n", strings.Join(a.FromMessage, ", "))
		}
		for _, s := range a.Assumed {
			fmt.Fprintf(w, "  assumed: %s\n", s)
		}
		if a.TargetConcurrency > 1 {
			fmt.Fprintf(w, "  target: %d requests at once (--concurrency)\n", a.TargetConcurrency)
		}
		switch {
		case a.PlanError != "":
			fmt.Fprintf(w, "  kvcfg plans this launch to fail too: %s\n", oneLine(a.PlanError))
		case a.Report != nil && a.LaunchConcurrency < int64(a.TargetConcurrency):
			fmt.Fprintf(w, "  kvcfg plans this launch to start, but to hold %d of the %d requests of its context asked at once.\n", a.LaunchConcurrency, a.TargetConcurrency)
		default:
			fmt.Fprintf(w, "  kvcfg plans this launch to start.\n")
		}
		if a.Flag != "" {
			fmt.Fprintf(w, "  use %s %s: %s\n", a.Flag, a.Value, a.Note)
		} else if a.Note != "" {
			fmt.Fprintf(w, "  %s\n", a.Note)
		}
	}
	return nil
}
