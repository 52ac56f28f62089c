package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
)

// fitLong is the help of kvcfg fit.
const fitLong = `fit works backwards from a target: "serve --concurrency N requests of
--context-length L tokens of this model". It searches GPU type × GPU count
(up to --max-gpus) × TP/PP layout (and data-parallel replicas, --dp-size)
× KV cache dtype and lists the setups that serve the target, fewest GPUs
first and, for equal counts, the most spare KV memory first, each with the
exact flags to pass the engine. The request cap (--max-running-requests,
--max-num-seqs, --max_batch_size) is set to the target, and where the
engine's default memory share does not serve it, fit raises the share
(--mem-fraction-static up to 0.93, --gpu-memory-utilization up to 0.95,
TensorRT-LLM's free_gpu_memory_fraction up to 0.95) to the smallest value
that does. Hybrid models get their pools solved for the target
(--swa-full-tokens-ratio for sliding-window models, --max-mamba-cache-size
for linear-attention ones). Every listed setup is what ` + "`kvcfg plan`" + `
computes with its flags; GPU types that plan alike share a row.

  kvcfg fit --model Qwen/Qwen3-8B --concurrency 64 --context-length 32768 \
      --gpus H100,H200 --kv-cache-dtypes auto,fp8_e4m3

By default one layout per GPU type and dtype is listed (at its smallest GPU
count); --all lists every feasible layout. When nothing serves the target,
fit prints the closest miss: the layout that comes nearest, by how much it
falls short, the largest concurrency and context it does serve, and what
would serve the target. Other plan flags (--mem-fraction-static,
--weights-memory, --disable-radix-cache, ...) apply to every candidate; a
memory share given is kept as given.

A workload can be the target instead of --concurrency: a JSONL trace
(--trace) or the generator flags of ` + "`kvcfg simulate`" + ` (--requests, --rate,
--prompt-len, --output-len, --shared-prefix, --prefix-groups, ...). fit
then sizes for the workload's peak running requests on an unbounded pool
(the context length defaults to its longest request), filters the
layouts by plan, and simulates the cheapest in order: a layout serves
when every request completes with no retraction (SGLang) or preemption
(vLLM) and the KV pool never holds a waiting request back
(--max-retractions, --max-kv-blocked-share and --allow-kv-pool-binding
loosen that). Each row adds its simulation's figures:

  kvcfg fit --model Qwen/Qwen3-8B --gpus H100 --requests 300 --rate 10 --prompt-len 1000 --output-len 200

Exit status: 0 when a setup serves the target, 3 when none does, 2 for
invalid input (as ` + "`kvcfg plan`" + `: 0 serves, 1 refuses, 2 bad input, 3 misses).`

// fitFlags are the flags of kvcfg fit.
type fitFlags struct {
	base        plan.Request
	pf          *planFlags
	concurrency int
	gpus        []string
	dtypes      []string
	engines     []string
	maxGPUs     int
	all, debug  bool
	format      string
	wf          workloadFlags
	simOpts     simulate.Options
	criteria    fit.Criteria
}

func newFitCmd() *cobra.Command {
	f := &fitFlags{}
	cmd := &cobra.Command{
		Use:   "fit [MODEL]",
		Short: "Find the cheapest GPU setups that serve N concurrent requests of a context length",
		Long:  fitLong,
		Args:  cobra.MaximumNArgs(1),
		RunE:  f.run,
	}
	f.bind(cmd.Flags())
	return cmd
}

// bind registers fit's flags: the plan flags but --concurrency (fit's
// target), the search's, and a workload's with its simulation options and
// criteria.
func (f *fitFlags) bind(fs *pflag.FlagSet) {
	f.pf = bindPlanFlags(fs, &f.base, "concurrency")
	fs.IntVarP(&f.concurrency, "concurrency", "n", 0, "requests that must be resident at once (target)")
	fs.StringSliceVar(&f.gpus, "gpus", nil, "GPU types to try, comma-separated (default: --gpu, else every GPU of kvcfg gpus)")
	fs.StringSliceVar(&f.engines, "engines", nil, "engines to search, comma-separated (e.g. sglang,vllm,trtllm; default: --engine, else sglang)")
	fs.StringSliceVar(&f.dtypes, "kv-cache-dtypes", nil, "KV cache dtypes to try, comma-separated (default: --kv-cache-dtype, else auto)")
	fs.IntVar(&f.maxGPUs, "max-gpus", fit.DefaultMaxGPUs, "largest GPU count to try")
	fs.BoolVar(&f.all, "all", false, "list every feasible layout, not only the smallest count per GPU type and dtype")
	fs.BoolVar(&f.debug, "debug", false, "also list the layouts left out and why (TP sizes the architecture cannot use, ...)")
	fs.StringVarP(&f.format, "output", "o", outTable, "output format: table, json, yaml or csv")
	bindWorkloadFlags(fs, &f.wf)
	bindSimOptions(fs, &f.simOpts)
	fs.Int64Var(&f.criteria.MaxRetractions, "max-retractions", 0, "workload: retractions (SGLang) or preemptions (vLLM) a setup may have")
	fs.Float64Var(&f.criteria.MaxKVBlockedShare, "max-kv-blocked-share", 0, "workload: share of steps (0..1) in which the KV pool may hold a waiting request back")
	fs.BoolVar(&f.criteria.AllowKVPoolBinding, "allow-kv-pool-binding", false, "workload: accept the KV pool as the binding limit")
}

// run runs kvcfg fit. Exit status: 0 when a setup serves the target, 3
// when none does, 2 for invalid input.
func (f *fitFlags) run(cmd *cobra.Command, args []string) error {
	opts, engs, err := f.options(cmd, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	res, err := fit.RunEngines(cmd.Context(), opts, engs)
	if err != nil {
		if errors.Is(err, fit.ErrInvalid) || errors.Is(err, plan.ErrInvalid) {
			return &exitError{code: 2, err: err}
		}
		return err
	}
	if !f.debug {
		// Only the KV dtypes an engine has no name for stay (as notes):
		// the rows they leave out are never silent.
		res.Skipped = slices.DeleteFunc(res.Skipped, func(s fit.Skip) bool { return s.GPU != "" || s.TPSize != 0 })
	}
	if err := writeFit(cmd.OutOrStdout(), f.format, res, f.debug); err != nil {
		return err
	}
	if len(res.Configurations) == 0 {
		return &exitError{code: 3}
	}
	return nil
}

// options checks the command line and turns it into the search's options
// and the engines to search; every error is bad input.
func (f *fitFlags) options(cmd *cobra.Command, args []string) (fit.Options, []string, error) {
	if err := checkFormat(f.format, outTable, outJSON, outYAML, outCSV); err != nil {
		return fit.Options{}, nil, err
	}
	base := &f.base
	if len(args) == 1 {
		if base.Model != "" {
			return fit.Options{}, nil, errors.New("give the model either as an argument or with --model, not both")
		}
		base.Model = args[0]
	}
	if err := f.pf.check(); err != nil {
		return fit.Options{}, nil, err
	}
	ctxLen := base.ContextLength
	if ctxLen == 0 {
		ctxLen = base.MaxModelLen
	}
	opts := fit.Options{
		Base: *base, ContextLength: ctxLen,
		GPUs: trimList(f.gpus), KVCacheDTypes: trimList(f.dtypes), MaxGPUs: f.maxGPUs, All: f.all,
	}
	if err := f.target(cmd, &opts); err != nil {
		return fit.Options{}, nil, err
	}
	engs := trimList(f.engines)
	if len(engs) > 0 && base.Engine != "" {
		return fit.Options{}, nil, errors.New("give --engine or --engines, not both")
	}
	return opts, engs, nil
}

// target sets the target of opts: the workload, or the concurrency at
// opts.ContextLength.
func (f *fitFlags) target(cmd *cobra.Command, opts *fit.Options) error {
	if f.wf.given() {
		if f.concurrency != 0 {
			return errors.New("give --concurrency or a workload (--trace, or --requests with --prompt-len and --output-len), not both: the workload sets the concurrency")
		}
		newSource, err := f.wf.source(cmd, true)
		if err != nil {
			return err
		}
		opts.Source, opts.Simulation, opts.Criteria = newSource, f.simOpts, f.criteria
		return nil
	}
	if opts.ContextLength == 0 {
		return errors.New("--context-length is required (the length of each request, prompt plus output)")
	}
	concurrency := f.concurrency
	if concurrency == 0 {
		concurrency = max(opts.Base.MaxRunningRequests, opts.Base.MaxNumSeqs)
	}
	if concurrency == 0 {
		return errors.New("--concurrency is required (requests resident at once), or give a workload (--trace FILE, or --requests N --prompt-len L --output-len O)")
	}
	opts.Concurrency = concurrency
	return nil
}

// writeFit prints a fit result.
func writeFit(w io.Writer, format string, res *fit.Result, debug bool) error {
	if ok, err := writeStructured(w, format, res); ok {
		return err
	}
	if strings.EqualFold(format, outCSV) {
		return writeFitCSV(w, res)
	}
	writeFitTarget(w, res.Target)
	if len(res.Configurations) > 0 {
		if err := writeFitTable(w, res); err != nil {
			return err
		}
		writeFitNotes(w, res)
	} else {
		fmt.Fprintln(w, "No setup serves the target.")
	}
	if m := res.ClosestMiss; m != nil {
		writeClosestMiss(w, res.Target, m)
	}
	writeDTypeNotes(w, res.Skipped)
	if debug {
		return writeFitDebug(w, res)
	}
	return nil
}

// writeDTypeNotes prints, as numbered notes, the KV dtypes an engine
// searched has no name for (a skip of no GPU and no layout): the rows that
// engine would have had are missing, and the table says why.
func writeDTypeNotes(w io.Writer, skipped []fit.Skip) {
	n := 0
	for _, s := range skipped {
		if s.GPU != "" || s.TPSize != 0 {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w)
		}
		n++
		fmt.Fprintf(w, "[%d] %s\n", n, oneLine(s.Reason))
	}
}

// writeFitTarget prints what fit searched for: the target (a workload
// with its demand, or a concurrency and context length) and the space.
func writeFitTarget(w io.Writer, t fit.Target) {
	if wl := t.Workload; wl != nil {
		fmt.Fprintf(w, "Target: a workload of %s (up to %s tokens, %s on average) of %s on %s (GPUs: %s; KV dtypes: %s; up to %d GPUs)\n",
			requests(int(wl.Requests), "request"), group(int64(wl.MaxRequestTokens)), group(int64(wl.MeanRequestTokens)), t.Model, t.Engine,
			strings.Join(t.GPUs, ", "), strings.Join(t.KVCacheDTypes, ", "), t.MaxGPUs)
		fmt.Fprintf(w, "Demand: peak %s running and %s KV tokens on an unbounded pool (time model of %s): sized for %s of %s tokens on average, the longest %s tokens\n",
			group(int64(wl.PeakRunning)), group(wl.PeakKVTokens), orNone(wl.Reference), requests(t.Concurrency, "concurrent request"), group(int64(wl.MeanRequestTokens)), group(int64(t.ContextLength)))
	} else {
		fmt.Fprintf(w, "Target: %s of %s tokens of %s on %s (GPUs: %s; KV dtypes: %s; up to %d GPUs)\n",
			requests(t.Concurrency, "concurrent request"), group(int64(t.ContextLength)), t.Model, t.Engine, strings.Join(t.GPUs, ", "), strings.Join(t.KVCacheDTypes, ", "), t.MaxGPUs)
	}
	if t.SGLangProfile != "" {
		fmt.Fprintf(w, "SGLang profile: %s\n", t.SGLangProfile)
	}
	fmt.Fprintln(w)
}

// writeFitTable prints the setups that serve the target, one row each.
func writeFitTable(w io.Writer, res *fit.Result) error {
	t := res.Target
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Several engines searched: each row says whose flags it lists.
	engineCol := strings.Contains(t.Engine, ",")
	head := "#\tGPU\tGPUS\tTP\tPP\tDP\tKV DTYPE\tTOKENS/GPU\tCAPACITY\tHEADROOM/GPU\tFLAGS"
	if engineCol {
		head = strings.Replace(head, "#\t", "#\tENGINE\t", 1)
	}
	if t.Workload != nil {
		head = strings.Replace(head, "\tFLAGS", "\tPEAK RUN\tRETRACT/PREEMPT\tBINDING\tPREFIX HIT\tFLAGS", 1)
	}
	fmt.Fprintln(tw, head)
	for i, c := range res.Configurations {
		rank := strconv.Itoa(i + 1)
		if engineCol {
			rank += "\t" + c.Engine
		}
		sim := ""
		if m := c.Simulation; m != nil {
			sim = fmt.Sprintf("%s\t%s\t%s\t%.3f\t", group(int64(m.PeakRunning)), group(m.Setbacks()), m.BindingLimit, m.PrefixHitRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s%s\n", rank, strings.Join(append([]string{c.GPU}, c.SameAs...), "/"),
			c.GPUCount, c.TPSize, c.PPSize, max(c.DPSize, 1), dtypeLabel(c),
			group(c.MaxTotalNumTokens), group(c.CapacityAtContextLength), gibs(c.HeadroomBytes), sim, strings.Join(c.Flags, " "))
	}
	return tw.Flush()
}

// writeFitNotes prints what the table's columns and rows mean, each
// setup's notes, and the plan command that checks the first.
func writeFitNotes(w io.Writer, res *fit.Result) {
	t := res.Target
	if wl := t.Workload; wl != nil {
		fmt.Fprintf(w, "\nCAPACITY is how many requests of %s tokens (the workload's mean) the pools hold (over all DP replicas); the engine's own request cap is kept.\n",
			group(int64(wl.MeanRequestTokens)))
		fmt.Fprintf(w, "Each row is the first of its GPU type and dtype whose simulation of the workload serves it (%s).\n", criteriaText(wl.Criteria))
	} else {
		fmt.Fprintf(w, "\nCAPACITY is how many requests of %s tokens the pools hold (over all DP replicas); the flags cap running requests at %d",
			group(int64(t.ContextLength)), t.Concurrency)
		if anyDP(res.Configurations) {
			fmt.Fprint(w, " (per replica: its share)")
		}
		fmt.Fprintln(w, ".")
	}
	for i, c := range res.Configurations {
		for _, n := range c.Notes {
			fmt.Fprintf(w, "#%d: %s.\n", i+1, n)
		}
	}
	fmt.Fprintf(w, "Check one with: kvcfg plan %s\n", strings.Join(res.Configurations[0].PlanArgs, " "))
}

// writeClosestMiss prints the layout that comes nearest the target when
// none serves it: by how much it falls short, what it serves, what helps.
func writeClosestMiss(w io.Writer, t fit.Target, m *fit.Miss) {
	on := ""
	if strings.Contains(t.Engine, ",") {
		on = " on " + m.Engine
	}
	lay := fmt.Sprintf("%d× %s%s, tp %d, pp %d", m.GPUCount, m.GPU, on, m.TPSize, m.PPSize)
	if m.DPSize > 1 {
		lay += fmt.Sprintf(", dp %d", m.DPSize)
	}
	fmt.Fprintf(w, "\nClosest miss: %s, kv %s\n", lay, m.KVCacheDType)
	fmt.Fprintf(w, "  short:        %s\n", m.Shortfall)
	if m.Error != "" && !strings.HasPrefix(m.Error, "holds ") && m.Simulation == nil {
		fmt.Fprintf(w, "  why:          %s\n", oneLine(m.Error))
	}
	wl := t.Workload
	switch sim := m.Simulation; {
	case sim != nil:
		fmt.Fprintf(w, "  simulated:    %s of %s requests completed, peak %s running, %s, binding limit %s, prefix hit rate %.3f\n",
			group(sim.RequestsCompleted), group(wl.Requests), group(int64(sim.PeakRunning)), sim.SetbackText(), sim.BindingLimit, sim.PrefixHitRate)
	case m.MaxConcurrency == 0 && m.MaxContextLength == 0:
		fmt.Fprintf(w, "  serves:       no request at this layout\n")
	case wl != nil:
		fmt.Fprintf(w, "  serves:       %s of %s tokens (the workload's mean)\n", requests(m.MaxConcurrency, "request"), group(int64(wl.MeanRequestTokens)))
	case m.MaxContextLength == 0:
		fmt.Fprintf(w, "  serves:       %s of %s tokens\n", requests(m.MaxConcurrency, "request"), group(int64(t.ContextLength)))
	default:
		fmt.Fprintf(w, "  serves:       %s of %s tokens, or %s of up to %s tokens\n",
			requests(m.MaxConcurrency, "request"), group(int64(t.ContextLength)), requests(t.Concurrency, "request"), group(int64(m.MaxContextLength)))
	}
	if m.MaxConcurrency > 0 || m.Simulation != nil {
		fmt.Fprintf(w, "  flags:        %s\n", strings.Join(m.Flags, " "))
	}
	if wl == nil && m.MaxContextLength > 0 && len(m.MaxContextFlags) > 0 {
		// The second alternative's own flags: its memory share may differ.
		fmt.Fprintf(w, "  or flags:     %s\n", strings.Join(m.MaxContextFlags, " "))
	}
	fmt.Fprintf(w, "  what helps:   %s\n", m.Hint)
}

// writeFitDebug prints, for --debug, the layouts left out and why, and how
// many plans and simulations the search ran.
func writeFitDebug(w io.Writer, res *fit.Result) error {
	if len(res.Skipped) > 0 {
		fmt.Fprintln(w, "\nLEFT OUT")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, s := range res.Skipped {
			layout := fmt.Sprintf("tp %d\tpp %d", s.TPSize, s.PPSize)
			if s.TPSize == 0 {
				layout = "any tp\tany pp"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.GPU, layout, s.KVCacheDType, oneLine(s.Reason))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\n%d plans run", res.Plans)
	if wl := res.Target.Workload; wl != nil {
		fmt.Fprintf(w, ", %d simulations", wl.Simulations)
	}
	fmt.Fprintln(w)
	return nil
}

// requests writes n noun(s) with thousands separators.
func requests(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return group(int64(n)) + " " + noun + "s"
}

func anyDP(cs []fit.Configuration) bool {
	for _, c := range cs {
		if c.DPSize > 1 {
			return true
		}
	}
	return false
}

func dtypeLabel(c fit.Configuration) string {
	if c.ResolvedKVCacheDType != "" && c.ResolvedKVCacheDType != c.KVCacheDType {
		return c.KVCacheDType + " (" + c.ResolvedKVCacheDType + ")"
	}
	return c.KVCacheDType
}

func writeFitCSV(w io.Writer, res *fit.Result) error {
	head := []string{"rank", "engine", "gpu", "same_as", "gpu_count", "tp_size", "pp_size", "dp_size", "kv_cache_dtype", "max_total_num_tokens",
		"max_concurrency_at_context_length", "capacity_at_context_length", "headroom_bytes", "memory_share", "flags"}
	wl := res.Target.Workload != nil
	if wl {
		head = append(head, "peak_running", "retractions_or_preemptions", "binding_limit", "prefix_hit_rate")
	}
	rows := [][]string{head}
	for i, c := range res.Configurations {
		share := ""
		if c.MemoryShare > 0 {
			share = plan.FormatFloat(c.MemoryShare)
		}
		row := []string{strconv.Itoa(i + 1), c.Engine, c.GPU, strings.Join(c.SameAs, " "), strconv.Itoa(c.GPUCount), strconv.Itoa(c.TPSize), strconv.Itoa(c.PPSize),
			strconv.Itoa(c.DPSize), c.KVCacheDType, strconv.FormatInt(c.MaxTotalNumTokens, 10), strconv.FormatInt(c.MaxConcurrencyAtContextLength, 10),
			strconv.FormatInt(c.CapacityAtContextLength, 10), strconv.FormatInt(c.HeadroomBytes, 10), share, strings.Join(c.Flags, " ")}
		if m := c.Simulation; wl && m != nil {
			row = append(row, strconv.Itoa(m.PeakRunning), strconv.FormatInt(m.Setbacks(), 10), m.BindingLimit, strconv.FormatFloat(m.PrefixHitRate, 'f', 4, 64))
		}
		rows = append(rows, row)
	}
	return writeCSVRows(w, rows)
}

// criteriaText says what a workload's simulation must show.
func criteriaText(c fit.Criteria) string {
	parts := []string{"every request completes"}
	if c.MaxRetractions == 0 {
		parts = append(parts, "no retraction or preemption")
	} else {
		parts = append(parts, fmt.Sprintf("at most %d retractions or preemptions", c.MaxRetractions))
	}
	if c.MaxKVBlockedShare == 0 {
		parts = append(parts, "the KV pool never holds a waiting request back")
	} else {
		parts = append(parts, fmt.Sprintf("the KV pool holds waiting requests back in at most %.1f%% of the steps", 100*c.MaxKVBlockedShare))
	}
	if !c.AllowKVPoolBinding && c.MaxKVBlockedShare > 0 {
		parts = append(parts, "the KV pool is not the binding limit")
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "no layout starts"
	}
	return s
}

// trimList trims the elements of a StringSlice flag and drops empty ones.
func trimList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
