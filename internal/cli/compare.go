package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/plan"
)

// compareListFlags are the plan flags that take lists in compare.
var compareListFlags = map[string]bool{
	"engine": true, "tp-size": true, "tp": true, "tensor-parallel-size": true, "kv-cache-dtype": true,
}

func newCompareCmd() *cobra.Command {
	var (
		req     plan.CompareRequest
		engines []string
		dtypes  []string
		tps     []string
		format  string
	)
	var pf *planFlags
	cmd := &cobra.Command{
		Use:   "compare [MODEL]",
		Short: "Plan one model and GPU on SGLang, vLLM and TensorRT-LLM side by side",
		Long: `compare is a sweep over engine × KV cache dtype × TP size: it plans the same
model, GPU and context length on every engine (--engine sglang,vllm,trtllm;
default sglang,vllm) and prints one column per engine, dtype and TP size
(comma-separated lists): bytes per token, the engine's token capacity, the
maximum concurrency at the context length and the flags to pass each
engine, which plan back to the column.

  kvcfg compare --model meta-llama/Llama-3.1-8B-Instruct --gpu H100-80GB \
      --kv-cache-dtype auto,fp8_e4m3 --tp 1,2

It takes every plan flag: an engine's own flags only affect its columns
(the context length becomes vLLM's --max-model-len and TensorRT-LLM's
max_seq_len), and a flag no compared engine takes is bad input:

  kvcfg compare --engine sglang,vllm,trtllm --tp-size 2 --dp-size 2 --enable-dp-attention

A KV cache dtype may be written in any engine's spelling (fp8_e4m3 is
vLLM's and TensorRT-LLM's fp8): each column plans and prints its engine's
own name, and a dtype an engine has no name for is a refused column with
a numbered note.

Exit status: 0 when every column planned, 1 when an engine refused a
column (the numbered notes say why), 2 for invalid input.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, outTable, outJSON, outYAML, outMarkdown); err != nil {
				return &exitError{code: 2, err: err}
			}
			if len(args) == 1 {
				if req.Model != "" {
					return &exitError{code: 2, err: errors.New("give the model either as an argument or with --model, not both")}
				}
				req.Model = args[0]
			}
			if err := pf.check(); err != nil {
				return &exitError{code: 2, err: err}
			}
			req.Engines = splitList(engines)
			req.KVCacheDTypes = splitList(dtypes)
			req.TPSizes = nil
			for _, s := range splitList(tps) {
				n, err := strconv.Atoi(s)
				if err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--tp: %q is not an integer", s)}
				}
				req.TPSizes = append(req.TPSizes, n)
			}
			cmp, err := plan.Compare(cmd.Context(), req)
			return writeComparison(cmd.OutOrStdout(), format, cmp, err)
		},
	}
	// The plan flags, except those that take lists here.
	planFlags := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	pf = bindPlanFlags(planFlags, &req.Request)
	planFlags.VisitAll(func(f *pflag.Flag) {
		if !compareListFlags[f.Name] {
			cmd.Flags().AddFlag(f)
		}
	})
	fs := cmd.Flags()
	fs.StringSliceVar(&engines, "engine", nil, "engines to compare, comma-separated: sglang, vllm, trtllm (default sglang,vllm)")
	fs.StringSliceVar(&dtypes, "kv-cache-dtype", nil, "KV cache dtypes, comma-separated (e.g. auto,fp8_e4m3)")
	fs.StringSliceVar(&tps, "tp", nil, "tensor parallel sizes, comma-separated (e.g. 1,2,4)")
	fs.StringSliceVar(&tps, "tp-size", nil, "alias of --tp")
	fs.StringSliceVar(&tps, "tensor-parallel-size", nil, "alias of --tp (vLLM's name)")
	fs.StringVarP(&format, "output", "o", outTable, "output format: table, json, yaml or markdown")
	return cmd
}

// splitList trims and drops empty items of a comma-separated flag.
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// writeComparison prints a comparison and maps its error to an exit status.
func writeComparison(out io.Writer, format string, c *plan.Comparison, err error) error {
	if c != nil {
		if ok, werr := writeStructured(out, format, c); ok {
			if werr != nil {
				return werr
			}
		} else if strings.EqualFold(format, outMarkdown) {
			writeComparisonMarkdown(out, c)
		} else {
			writeComparisonTable(out, c)
		}
	}
	switch {
	case err == nil:
		if n := refusedColumns(c); n > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%d of %d columns refused (see the notes)", n, len(c.Columns))}
		}
		return nil
	case errors.Is(err, plan.ErrInvalid):
		return &exitError{code: 2, err: err}
	default:
		return &exitError{code: 1, err: err}
	}
}

// refusedColumns counts the columns of c that did not plan.
func refusedColumns(c *plan.Comparison) int {
	n := 0
	if c != nil {
		for _, col := range c.Columns {
			if col.Error != "" {
				n++
			}
		}
	}
	return n
}

// comparisonRows returns the header and the rows of the comparison, one
// column per plan. With notes, a refused column's error row says
// "refused [N]" and the engine's words are returned as note N (they would
// make the table hundreds of characters wide); without, the row holds them.
func comparisonRows(c *plan.Comparison, withNotes bool) (header []string, rows [][]string, notes []string) {
	header = []string{""}
	labels := []string{"kv_cache_dtype", "tp", "bytes/token per GPU", "tokens (as logged)", "token capacity", "max concurrency", "available KV", "host KV tier", "flags", "error"}
	rows = make([][]string, len(labels))
	for i, l := range labels {
		rows[i] = []string{l}
	}
	anyErr, anyHost := false, false
	for _, col := range c.Columns {
		header = append(header, col.Engine)
		dt := col.KVCacheDType
		if col.Report != nil {
			dt = col.Report.KVCacheDType // the engine's own spelling
		}
		if col.ResolvedKVCacheDType != "" && col.ResolvedKVCacheDType != dt {
			dt += " → " + col.ResolvedKVCacheDType
		}
		// Every engine's column reads the same way: whole requests that
		// fit, then the ratio (vLLM's own "Maximum concurrency" figure; the
		// pool's tokens over the context length for the others).
		conc := "-"
		if col.ContextLength > 0 && col.Error == "" {
			ratio := col.MaxConcurrency
			if col.Engine != plan.EngineVLLM && col.TokenCapacity > 0 {
				ratio = float64(col.TokenCapacity) / float64(col.ContextLength)
			}
			conc = fmt.Sprintf("%s (%.2fx) at %s", group(int64(col.MaxConcurrency)), ratio, group(int64(col.ContextLength)))
		}
		num := func(n int64) string {
			if col.Report == nil || (col.Error != "" && n == 0) {
				return "-"
			}
			return group(n)
		}
		bpt := "-"
		if col.BytesPerToken > 0 {
			bpt = group(int64(math.Round(col.BytesPerToken)))
			if col.BytesPerToken != math.Trunc(col.BytesPerToken) {
				bpt = "≈" + bpt // a page's bytes over its tokens
			}
		}
		avail := "-"
		if col.Report != nil {
			avail = gibs(col.AvailableKVBytes)
		}
		flags := strings.Join(col.Flags, " ")
		if flags == "" {
			flags = "(defaults)"
		}
		if col.Error != "" {
			anyErr = true
		}
		errCell := col.Error
		if withNotes && col.Error != "" {
			note := fmt.Sprintf("[%d] %s, %s, TP %d: %s", len(notes)+1, col.Engine, dt, col.TPSize, col.Error)
			if col.Report != nil && col.Report.FixHint != "" {
				note += "\n    fix: " + col.Report.FixHint
			}
			notes = append(notes, note)
			errCell = fmt.Sprintf("refused [%d]", len(notes))
		}
		host := "-"
		if col.Report != nil && col.Report.HostTier != nil {
			t := col.Report.HostTier
			host, anyHost = fmt.Sprintf("%s tokens (%s per rank)", group(t.Tokens), gibs(t.Bytes)), true
		}
		vals := []string{dt, strconv.Itoa(col.TPSize), bpt, num(col.Tokens), num(col.TokenCapacity), conc, avail, host, flags, errCell}
		for i, v := range vals {
			rows[i] = append(rows[i], v)
		}
	}
	if !anyErr {
		rows = rows[:len(rows)-1]
	}
	if !anyHost { // the host-tier row only when a column has one
		rows = append(rows[:7], rows[8:]...)
	}
	return header, rows, notes
}

func writeComparisonTable(w io.Writer, c *plan.Comparison) {
	fmt.Fprintf(w, "%s on %s\n\n", c.Model, c.GPU)
	header, rows, notes := comparisonRows(c, true)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

func writeComparisonMarkdown(w io.Writer, c *plan.Comparison) {
	fmt.Fprintf(w, "## KV cache comparison: %s on %s\n\n", c.Model, c.GPU)
	header, rows, _ := comparisonRows(c, false)
	fmt.Fprintf(w, "| %s |\n|", strings.Join(header, " | "))
	for range header {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		for i := range r {
			r[i] = mdEscape(r[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}
