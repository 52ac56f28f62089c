package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
)

// workloadFlags are the workload flags `kvcfg simulate` and `kvcfg fit`
// share: a JSONL trace or a generator.
type workloadFlags struct {
	trace        string
	requests     int
	rate         float64
	arrival      string
	promptLen    int
	outputLen    int
	lengthDist   string
	lengthSigma  float64
	sharedPrefix int
	prefixGroups int
	turns        int
	thinkTime    float64
	seed         uint64
}

// simulateFlags are the workload and simulation flags of `kvcfg simulate`.
type simulateFlags struct {
	workloadFlags
	opts       simulate.Options
	timeseries string
	compare    bool
	progress   bool
}

// bindWorkloadFlags binds the workload flags (--trace or the generator's)
// to f.
func bindWorkloadFlags(fs *pflag.FlagSet, f *workloadFlags) {
	fs.StringVar(&f.trace, "trace", "", `JSONL workload trace ("-": standard input); one request per line: arrival_s, prompt_tokens or prompt_ids, output_tokens, optional prefix_group and prefix_tokens, session`)
	fs.IntVar(&f.requests, "requests", 0, "generate this many requests (instead of --trace)")
	fs.Float64Var(&f.rate, "rate", 0, "arrival rate in requests per second (0: all at once)")
	fs.StringVar(&f.arrival, "arrival", simulate.ArrivalPoisson, "arrival process: poisson or fixed")
	fs.IntVar(&f.promptLen, "prompt-len", 0, "prompt tokens per request (after the shared prefix)")
	fs.IntVar(&f.outputLen, "output-len", 0, "output tokens per request")
	fs.StringVar(&f.lengthDist, "length-dist", simulate.DistFixed, "length distribution: fixed, uniform (half to 1.5x the length) or lognormal (median the length)")
	fs.Float64Var(&f.lengthSigma, "length-sigma", 0.5, "shape of the lognormal length distribution")
	fs.IntVar(&f.sharedPrefix, "shared-prefix", 0, "tokens of shared system prompt in front of every prompt")
	fs.IntVar(&f.prefixGroups, "prefix-groups", 0, "number of distinct shared system prompts (default 1 with --shared-prefix)")
	fs.IntVar(&f.turns, "turns", 0, "turns per multi-turn conversation (each turn's prompt is the history plus --prompt-len)")
	fs.Float64Var(&f.thinkTime, "think-time", 0, "seconds between a conversation's turns")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the generated workload")
}

// given reports whether any workload flag selects a workload.
func (f *workloadFlags) given() bool {
	return f.trace != "" || f.requests > 0 || f.promptLen > 0 || f.outputLen > 0
}

// bindSimOptions binds the simulation's own flags (SGLang's scheduler
// knobs and the time model) to o.
func bindSimOptions(fs *pflag.FlagSet, o *simulate.Options) {
	fs.IntVar(&o.MaxPrefillTokens, "max-prefill-tokens", 0, "SGLang: --max-prefill-tokens (default 16384)")
	fs.Float64Var(&o.ScheduleConservativeness, "schedule-conservativeness", 0, "SGLang: --schedule-conservativeness (default 1.0)")
	fs.Float64Var(&o.StepTimeS, "step-time", 0, "seconds per scheduler step, replacing the roofline time model")
	fs.Float64Var(&o.MBU, "mbu", 0, "roofline: fraction of HBM bandwidth reached (default 0.7)")
	fs.Float64Var(&o.MFU, "mfu", 0, "roofline: fraction of peak FLOPS reached (default 0.5)")
	fs.Float64Var(&o.StepOverheadS, "step-overhead", 0, "roofline: fixed seconds per step (default 0.003)")
	fs.BoolVar(&o.DisableOverlapSchedule, "disable-overlap-schedule", false, "SGLang: --disable-overlap-schedule (simulate the non-overlap loop; the overlap scheduler processes each batch's results one step later)")
	fs.BoolVar(&o.IgnoreEOS, "ignore-eos", false, "SGLang: every request sets ignore_eos (with --disable-radix-cache it is admitted by add_one_req_ignore_eos)")
}

// simulateResult is the JSON / YAML output of one simulation.
type simulateResult struct {
	Model  string          `json:"model"`
	GPU    string          `json:"gpu"`
	Config simulate.Config `json:"config"`
	*simulate.Summary
}

// simulateLong is the help of kvcfg simulate.
const simulateLong = `simulate plans the server (the same flags and plan as kvcfg plan), builds
its KV pool with the real allocators, and replays a workload through the
engine's scheduler memory policy: SGLang's prefill admission budgets,
new_token_ratio, decode retraction and radix cache, or vLLM V1's token
budget, block allocation, preemption by recompute and block-hash prefix
cache. It reports how many requests really run at once, retractions or
preemptions and the tokens recomputed, the prefix hit rate, peak KV usage
and what limited admission (docs/simulate.md).

The workload is a JSONL trace (--trace; one request per line:
{"arrival_s":0.25,"prompt_tokens":2000,"output_tokens":500,"prefix_group":3,"prefix_tokens":1500})
or generated (Poisson arrivals at --rate, shared system prompts, multi-turn):

  kvcfg simulate --model meta-llama/Llama-3.1-8B-Instruct --requests 2000 --rate 20 --prompt-len 1500 --output-len 300 --shared-prefix 1000 --prefix-groups 4

The memory-side counts are exact for the policy; times (TTFT, inter-token
latency, throughput: the JSON keys with _est) come from a roofline of the
GPU's datasheet figures, or --step-time seconds per step, and are estimates.

--compare runs the same workload through every combination of the
comma-separated plan flags, side by side:

  kvcfg simulate --engine sglang,vllm --kv-cache-dtype auto,fp8_e4m3 --requests 500 --rate 10 --prompt-len 2000 --output-len 500 --compare

Exit status: 0 when every request was served, 3 when some could never be
(longer than the pool or the context), 1 when the engine would not start,
2 for invalid input.`

// simulateCommand is kvcfg simulate: its request, flags and sweep.
type simulateCommand struct {
	req    plan.Request
	f      simulateFlags
	format string
	sw     *sweep
}

func newSimulateCmd() *cobra.Command {
	s := &simulateCommand{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a workload through the engine's KV admission, retraction/preemption and prefix cache",
		Long:  simulateLong,
		Args:  cobra.NoArgs,
		RunE:  s.run,
	}
	bindPlanFlags(cmd.Flags(), &s.req)
	fs := cmd.Flags()
	bindWorkloadFlags(fs, &s.f.workloadFlags)
	bindSimOptions(fs, &s.f.opts)
	fs.StringVar(&s.f.timeseries, "timeseries", "", "write the per-step time series to this file (.csv or .json)")
	fs.IntVar(&s.f.opts.TimeseriesEvery, "timeseries-every", 0, "steps between time-series points (default 10 with --timeseries; alone it adds the series to -o json)")
	fs.BoolVar(&s.f.compare, "compare", false, "simulate every combination of the comma-separated plan flags side by side")
	fs.BoolVar(&s.f.progress, "progress", true, "show a progress bar on standard error when it is a terminal")
	fs.StringVarP(&s.format, "output", "o", outTable, "output format: table, json or yaml")
	s.sw = enableSweep(cmd, &s.req)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 2, err: err} })
	return cmd
}

// run checks the flags and the workload, then runs one simulation or,
// with --compare or a comma list, one per combination.
func (s *simulateCommand) run(cmd *cobra.Command, _ []string) error {
	f := &s.f
	if err := checkFormat(s.format, outTable, outJSON, outYAML); err != nil {
		return &exitError{code: 2, err: err}
	}
	newSource, err := f.source(cmd, f.compare || s.sw.active())
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := f.opts.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.timeseries != "" && f.opts.TimeseriesEvery == 0 {
		f.opts.TimeseriesEvery = 10
	}
	if f.compare || s.sw.active() {
		axes, err := s.sw.axes()
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		rows, err := simulate.Compare(cmd.Context(), s.req, axes, f.opts, newSource)
		if err != nil {
			return simulateExit(err)
		}
		return writeSimCompare(cmd.OutOrStdout(), s.format, rows)
	}
	return s.runOne(cmd, newSource)
}

// runOne plans the server, replays the workload once and prints the
// summary (the time series to its own file). Exit status 3 when some
// requests could never be served.
func (s *simulateCommand) runOne(cmd *cobra.Command, newSource func() (simulate.Source, error)) error {
	f := &s.f
	c, rep, err := simulate.FromPlan(cmd.Context(), s.req, f.opts)
	if err != nil {
		return simulateExit(err)
	}
	src, err := newSource()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	stopBar := f.startProgress(cmd.ErrOrStderr(), &c)
	sum, err := simulate.Run(cmd.Context(), c, src)
	stopBar()
	if err != nil {
		return simulateExit(err)
	}
	if f.timeseries != "" {
		if err := writeTimeseries(f.timeseries, sum.Timeseries); err != nil {
			return err
		}
		sum.Timeseries = nil
	}
	res := simulateResult{Model: rep.Model, GPU: rep.GPU, Config: c, Summary: sum}
	if ok, err := writeStructured(cmd.OutOrStdout(), s.format, res); ok {
		if err != nil {
			return err
		}
	} else if err := writeSimTable(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	if sum.UnservableRequests > 0 {
		return &exitError{code: 3, err: fmt.Errorf("%d of %d requests could never be served (longer than the KV pool or the context length)", sum.UnservableRequests, sum.RequestsRead)}
	}
	return nil
}

// simulateExit maps a plan or simulation error to an exit status.
func simulateExit(err error) error {
	switch {
	case errors.Is(err, plan.ErrInvalid), errors.Is(err, simulate.ErrConfig), errors.Is(err, simulate.ErrWorkload):
		return &exitError{code: 2, err: err}
	case errors.Is(err, context.Canceled):
		return &exitError{code: 1, err: err}
	}
	return &exitError{code: 1, err: err}
}

func (f *workloadFlags) lengths(mean int) simulate.Lengths {
	switch f.lengthDist {
	case simulate.DistUniform:
		return simulate.Lengths{Kind: simulate.DistUniform, Min: max(mean/2, 1), Max: max(mean+mean/2, 1)}
	case simulate.DistLogNormal:
		return simulate.Lengths{Kind: simulate.DistLogNormal, Mean: mean, Sigma: f.lengthSigma}
	}
	return simulate.Lengths{Kind: f.lengthDist, Mean: mean}
}

// maxStdinTrace bounds a trace read whole from standard input (--trace -
// replayed by --compare, a sweep or fit).
var maxStdinTrace int64 = 1 << 30 // a variable for the tests

// source returns a function that opens the workload afresh (--compare
// replays it once per plan: replay buffers standard input; a single run
// streams it).
func (f *workloadFlags) source(cmd *cobra.Command, replay bool) (func() (simulate.Source, error), error) {
	gen := f.requests > 0 || f.promptLen > 0 || f.outputLen > 0
	switch {
	case f.trace != "" && gen:
		return nil, errors.New("give either --trace or a generated workload (--requests, --prompt-len, --output-len), not both")
	case f.trace == "-" && !replay:
		used := false
		return func() (simulate.Source, error) {
			if used {
				return nil, errors.New("standard input can be read only once")
			}
			used = true
			return simulate.NewTraceReader(newContextReader(cmd.Context(), cmd.InOrStdin())), nil
		}, nil
	case f.trace == "-":
		b, err := readAllCapped(newContextReader(cmd.Context(), cmd.InOrStdin()), maxStdinTrace, "--trace -: standard input",
			"a trace replayed more than once (--compare, a comma list, fit) is read whole; give it as --trace FILE")
		if err != nil {
			return nil, err
		}
		return func() (simulate.Source, error) {
			return simulate.NewTraceReader(strings.NewReader(string(b))), nil
		}, nil
	case f.trace != "":
		fh, _, err := openInput("--trace", f.trace, true)
		if err != nil {
			return nil, err
		}
		open := fh // each replay reopens the file; the last one open is closed then
		first := true
		return func() (simulate.Source, error) {
			if !first {
				open.Close()
				fh, _, err := openInput("--trace", f.trace, true)
				if err != nil {
					return nil, err
				}
				open = fh
			}
			first = false
			return simulate.NewTraceReader(open), nil
		}, nil
	}
	if f.requests == 0 || f.promptLen == 0 || f.outputLen == 0 {
		return nil, errors.New("give a workload: --trace FILE, or --requests N --prompt-len L --output-len O (with --rate R)")
	}
	g := simulate.Generator{Requests: f.requests, Rate: f.rate, Arrival: f.arrival, Prompt: f.lengths(f.promptLen), Output: f.lengths(f.outputLen),
		SharedPrefix: f.sharedPrefix, PrefixGroups: f.prefixGroups, Turns: f.turns, ThinkS: f.thinkTime, Seed: f.seed}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g.Source, nil
}

// startProgress draws a progress bar on w while the simulation runs, when
// w is a terminal; the returned function clears it.
func (f *simulateFlags) startProgress(w io.Writer, c *simulate.Config) func() {
	fh, ok := w.(*os.File)
	if !f.progress || !ok {
		return func() {}
	}
	if st, err := fh.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	total := f.requests
	start := time.Now()
	var last time.Time
	drawn := false
	c.Progress = func(done, read int64) {
		now := time.Now()
		if now.Sub(last) < 200*time.Millisecond || now.Sub(start) < time.Second {
			return
		}
		last = now
		n := int(read)
		if total > 0 {
			n = total
		}
		const width = 30
		filled := 0
		if n > 0 {
			filled = int(done) * width / n
		}
		fmt.Fprintf(fh, "\r[%s%s] %d/%d requests", strings.Repeat("#", min(filled, width)), strings.Repeat(".", width-min(filled, width)), done, n)
		drawn = true
	}
	return func() {
		if drawn {
			fmt.Fprintf(fh, "\r%s\r", strings.Repeat(" ", 60))
		}
	}
}

func writeTimeseries(path string, pts []simulate.Point) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		enc := json.NewEncoder(fh)
		err = enc.Encode(pts)
	} else {
		w := csv.NewWriter(fh)
		_ = w.Write([]string{"step", "t_est_s", "running", "waiting", "kv_used_tokens", "kv_cached_tokens", "batch_tokens"})
		for _, p := range pts {
			_ = w.Write([]string{strconv.FormatInt(p.Step, 10), strconv.FormatFloat(p.TimeS, 'f', 4, 64), strconv.Itoa(p.Running),
				strconv.Itoa(p.Waiting), strconv.Itoa(p.KVUsedTokens), strconv.Itoa(p.KVCachedTokens), strconv.Itoa(p.BatchTokens)})
		}
		w.Flush()
		err = w.Error()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// simRows are the table rows of a summary, label then value.
func simRows(s *simulate.Summary, both bool) [][2]string {
	f2 := func(v float64) string { return groupFloat(v, 2) }
	f3 := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	d := func(v int64) string { return group(v) }
	rows := [][2]string{
		{"requests completed", d(s.RequestsCompleted)},
		{"unservable requests", d(s.UnservableRequests)},
	}
	if s.ClippedRequests > 0 {
		// SGLang's init_req_max_new_tokens: served with fewer outputs.
		rows = append(rows, [2]string{"clipped requests (fewer outputs)", d(s.ClippedRequests)})
	}
	rows = append(rows, [][2]string{
		{"peak running", strconv.Itoa(s.PeakRunning)},
		{"mean running", f2(s.MeanRunning)},
		{"peak waiting", strconv.Itoa(s.PeakWaiting)},
	}...)
	if s.Retractions != nil {
		rows = append(rows, [2]string{"retractions", d(*s.Retractions)})
	} else if both {
		rows = append(rows, [2]string{"retractions", "-"})
	}
	if s.Preemptions != nil {
		rows = append(rows, [2]string{"preemptions", d(*s.Preemptions)})
	} else if both {
		rows = append(rows, [2]string{"preemptions", "-"})
	}
	rows = append(rows,
		[2]string{"recomputed tokens", d(s.RecomputedTokens)},
		[2]string{"prefix hit rate", f3(s.PrefixHitRate)},
		[2]string{"peak KV tokens", fmt.Sprintf("%s of %s (%.1f%%)", group(s.PeakKVTokens), group(s.PoolTokens), 100*float64(s.PeakKVTokens)/float64(max(s.PoolTokens, 1)))},
		[2]string{"binding limit", s.BindingLimit},
		[2]string{"steps", fmt.Sprintf("%s (%s prefill, %s decode)", group(s.Steps), group(s.PrefillSteps), group(s.DecodeSteps))},
		[2]string{"duration (est.)", f2(s.DurationEstS) + " s"},
		[2]string{"mean TTFT (est.)", f3(s.MeanTTFTEstS) + " s"},
		[2]string{"mean inter-token latency (est.)", groupFloat(s.MeanITLEstS*1000, 1) + " ms"},
		[2]string{"output throughput (est.)", group(int64(math.Round(s.OutputTokensPerSEst))) + " tok/s"},
		[2]string{"queue time behind the KV pool (est.)", f2(s.KVQueueEstS) + " request-s"},
		[2]string{"GPU time needed / arrival time (est.)", f2(s.ComputeLoadEst)},
	)
	return rows
}

func writeSimTable(w io.Writer, r simulateResult) error {
	if _, err := fmt.Fprintf(w, "%s\n\n", simAnswer(r.Summary)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "engine\t%s\nmodel\t%s\ngpu\t%s\n", r.Engine, r.Model, r.GPU)
	for _, row := range simRows(r.Summary, false) {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\ntimes: %s\n", r.TimeModel); err != nil {
		return err
	}
	for _, n := range r.Config.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// simAnswer is the run's answer in one sentence, printed first: does the
// KV pool hold this traffic, and if not, what it cost.
func simAnswer(s *simulate.Summary) string {
	evictions, word := int64(0), "retractions"
	if s.Retractions != nil {
		evictions = *s.Retractions
	}
	if s.Preemptions != nil {
		evictions, word = *s.Preemptions, "preemptions"
	}
	peak := ""
	if s.PoolTokens > 0 {
		peak = fmt.Sprintf("peak %s of %s KV tokens (%.1f%%)", group(s.PeakKVTokens), group(s.PoolTokens), 100*float64(s.PeakKVTokens)/float64(s.PoolTokens))
	}
	switch {
	case s.UnservableRequests > 0:
		return fmt.Sprintf("Does not serve this workload: %d of %d requests can never run (longer than the KV pool or the context length).", s.UnservableRequests, s.RequestsRead)
	case s.BindingLimit == simulate.LimitCompute:
		return computeAnswer(s.ComputeLoadEst)
	case s.BindingLimit == simulate.LimitKVPool || evictions > 0:
		return fmt.Sprintf("The KV pool limits this workload: %d %s, %s recomputed tokens, requests waited %.0f request-seconds behind the pool (est.), %s.",
			evictions, word, group(s.RecomputedTokens), s.KVQueueEstS, peak)
	}
	return fmt.Sprintf("The KV pool holds this workload: %s, no %s; the binding limit is %s.", peak, word, strings.ReplaceAll(s.BindingLimit, "_", " "))
}

// computeAnswer is the verdict of a run whose GPUs cannot keep up with
// the arrivals: load is the GPU time the work needs over the time it
// arrives in.
func computeAnswer(load float64) string {
	l := strconv.FormatFloat(load, 'f', 1, 64)
	return fmt.Sprintf("Compute limits this workload: its tokens need about %s times the GPU time this server has while they arrive (est.), so requests queue whatever the pool and a larger KV pool would not help. More GPUs would: at least %d replicas of this server (data parallelism, each taking its share of the requests) or a wider tensor-parallel layout; or a rate about %s times lower.",
		l, int(math.Ceil(load)), l)
}

func writeSimCompare(w io.Writer, format string, rows []simulate.CompareRow) error {
	if ok, err := writeStructured(w, format, rows); ok {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Header: one column per plan, labelled by its axis values.
	fmt.Fprint(tw, "plan")
	for _, r := range rows {
		var parts []string
		for k, v := range r.Values {
			parts = append(parts, k+"="+v)
		}
		slices.Sort(parts)
		fmt.Fprintf(tw, "\t%s", strings.Join(parts, " "))
	}
	fmt.Fprintln(tw)
	var labels []string
	cells := make([]map[string]string, len(rows))
	for i, r := range rows {
		cells[i] = map[string]string{}
		if r.Summary == nil {
			continue
		}
		cells[i]["engine"] = r.Summary.Engine
		for _, row := range simRows(r.Summary, true) {
			cells[i][row[0]] = row[1]
			if !slices.Contains(labels, row[0]) {
				labels = append(labels, row[0])
			}
		}
	}
	labels = append([]string{"engine"}, labels...)
	for _, l := range labels {
		empty := true
		for i := range rows {
			if v := cells[i][l]; v != "" && v != "-" {
				empty = false
			}
		}
		if empty && l != "engine" {
			continue // retractions on vLLM-only columns, and the reverse
		}
		fmt.Fprint(tw, l)
		for i, r := range rows {
			v := cells[i][l]
			if r.Summary == nil && l == "engine" {
				v = "error: " + oneLine(r.Error)
			}
			if v == "" {
				v = "-"
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
