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
		Short: "Plan one model and GPU on SGLang and vLLM side by side",
		Long: `compare plans the same model, GPU and context length on every engine and
prints one column per engine (and per KV cache dtype and TP size when they
are given as comma-separated lists): bytes per token, the engine's token
capacity, the maximum concurrency at the context length and the flags to
pass each engine.

  kvcfg compare --model meta-llama/Llama-3.1-8B-Instruct --gpu H100-80GB \
      --kv-cache-dtype auto,fp8_e4m3 --tp 1,2

Every other plan flag applies to all columns (engine-specific ones only
affect their engine). Exit status: 0 when at least one column planned,
1 when every engine refused, 2 for invalid input.`,
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
	fs.StringSliceVar(&engines, "engine", nil, "engines to compare, comma-separated (default sglang,vllm)")
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
		return nil
	case errors.Is(err, plan.ErrInvalid):
		return &exitError{code: 2, err: err}
	default:
		return &exitError{code: 1, err: err}
	}
}

// comparisonRows returns the header and the rows of the comparison, one
// column per plan. With notes, a column's error is a numbered note (the
// notes returned) instead of a cell, so the table keeps its width.
func comparisonRows(c *plan.Comparison, notes bool) (header []string, rows [][]string, errNotes []string) {
	header = []string{""}
	labels := []string{"kv_cache_dtype", "tp", "bytes/token per GPU", "tokens (as logged)", "token capacity", "max concurrency", "available KV", "flags", "error"}
	rows = make([][]string, len(labels))
	for i, l := range labels {
		rows[i] = []string{l}
	}
	anyErr := false
	for _, col := range c.Columns {
		header = append(header, col.Engine)
		dt := col.KVCacheDType
		if col.ResolvedKVCacheDType != "" && col.ResolvedKVCacheDType != dt {
			dt += " → " + col.ResolvedKVCacheDType
		}
		num := func(n int64) string {
			if col.Report == nil || (col.Error != "" && n == 0) {
				return "-"
			}
			return group(n)
		}
		avail := "-"
		if col.Report != nil {
			avail = gibs(col.AvailableKVBytes)
		}
		flags := strings.Join(col.Flags, " ")
		if flags == "" {
			flags = "(defaults)"
		}
		errCell := col.Error
		if col.Error != "" {
			anyErr = true
			if notes {
				errNotes = append(errNotes, fmt.Sprintf("[%d] %s, %s, tp %d: %s", len(errNotes)+1, col.Engine, col.KVCacheDType, col.TPSize, oneLine(col.Error)))
				errCell = fmt.Sprintf("see [%d] below", len(errNotes))
			}
		}
		vals := []string{dt, strconv.Itoa(col.TPSize), bytesPerToken(col.BytesPerToken), num(col.Tokens), num(col.TokenCapacity), concurrency(col), avail, flags, errCell}
		for i, v := range vals {
			rows[i] = append(rows[i], v)
		}
	}
	if !anyErr {
		rows = rows[:len(rows)-1]
	}
	return header, rows, errNotes
}

// bytesPerToken writes a per-token size as whole bytes with thousands
// separators; a fractional figure (a hybrid pool's average, full plus
// ratio × sliding-window bytes) is rounded and marked "~".
func bytesPerToken(b float64) string {
	if b <= 0 {
		return "-"
	}
	r := math.Round(b)
	if math.Abs(b-r) > 1e-9 {
		return "~" + group(int64(r))
	}
	return group(int64(r))
}

// concurrency writes every engine's concurrency the same way: the whole
// requests of the context length that fit at once, then vLLM's logged
// fractional figure, which is what its log line shows.
func concurrency(col plan.CompareColumn) string {
	if col.ContextLength <= 0 || col.Error != "" {
		return "-"
	}
	n := int64(math.Floor(col.MaxConcurrency + 1e-9))
	s := fmt.Sprintf("%s at %s", group(n), group(int64(col.ContextLength)))
	if col.Engine == plan.EngineVLLM && float64(n) != col.MaxConcurrency {
		s += fmt.Sprintf(" (vLLM logs %.2fx)", col.MaxConcurrency)
	}
	return s
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
			writeWrapped(w, n, 100, "    ")
		}
	}
}

// writeWrapped writes s in lines of at most width columns (a word longer
// than that on its own line), continuation lines indented.
func writeWrapped(w io.Writer, s string, width int, indent string) {
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) > width:
			fmt.Fprintln(w, line)
			line = indent + word
		default:
			line += " " + word
		}
	}
	if line != "" {
		fmt.Fprintln(w, line)
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
