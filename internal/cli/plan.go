package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// planFlags are the planning flags of one command, bound from the flag
// table (plan.Flags): each name and alias writes its request key through
// Request.SetField, and records what it was given so that check can refuse
// two aliases that disagree (--tp 2 --tp-size 4) and a 0 where 0 means
// nothing (--tp-size 0).
type planFlags struct {
	req *plan.Request
	// flags is the flag table, copied once for the binding and the checks.
	flags []plan.Flag
	// given maps a request key to the names that set it and their values,
	// in order.
	given map[string][]givenFlag
}

type givenFlag struct{ name, value string }

// fieldValue is the pflag.Value of one flag name of the table.
type fieldValue struct {
	pf   *planFlags
	flag *plan.Flag // a row of pf.flags
	name string
	n    int
}

// Set parses s into the request field (a list flag given again appends).
func (v *fieldValue) Set(s string) error {
	val := s
	if v.flag.Kind == plan.KindInts && v.n > 0 {
		if prev, _ := v.pf.req.FieldString(v.flag.Key); prev != "" {
			val = prev + "," + s
		}
	}
	if err := v.pf.req.SetField(v.flag.Key, val); err != nil {
		var fe *plan.FieldError
		if errors.As(err, &fe) {
			return fe.Err
		}
		return err
	}
	v.n++
	v.pf.given[v.flag.Key] = append(v.pf.given[v.flag.Key], givenFlag{v.name, s})
	return nil
}

// String is the field's current value ("" when not given).
func (v *fieldValue) String() string {
	s, _ := v.pf.req.FieldString(v.flag.Key)
	return s
}

// Type names the value's type as pflag's own values do (the help shows
// "int", "float", "size", ...).
func (v *fieldValue) Type() string {
	switch v.flag.Kind {
	case plan.KindFloat:
		return "float64"
	case plan.KindInts:
		return "ints"
	}
	return string(v.flag.Kind)
}

// IsBoolFlag lets a boolean flag stand alone.
func (v *fieldValue) IsBoolFlag() bool { return v.flag.Kind == plan.KindBool }

// bindPlanFlags registers every planning flag of the table on fs, writing
// into req: kvcfg's name and each alias (SGLang's and vLLM's spellings).
// `plan`, `compare`, `fit` and `explain` share it; skip names keys a
// command binds itself.
func bindPlanFlags(fs *pflag.FlagSet, req *plan.Request, skip ...string) *planFlags {
	pf := &planFlags{req: req, flags: plan.CommandLineFlags(), given: map[string][]givenFlag{}}
	// The values and flags of every name in two allocations (about 150
	// names: the start-up of every planning command).
	n := 0
	for _, f := range pf.flags {
		n += 1 + len(f.Aliases)
	}
	values, flags := make([]fieldValue, 0, n), make([]pflag.Flag, 0, n)
	for i := range pf.flags {
		f := &pf.flags[i]
		if slices.Contains(skip, f.Key) {
			continue
		}
		add := func(name, help string) {
			values = append(values, fieldValue{pf: pf, flag: f, name: name})
			v := &values[len(values)-1]
			flags = append(flags, pflag.Flag{Name: strings.TrimPrefix(name, "--"), Usage: help, Value: v, DefValue: v.String()})
			fl := &flags[len(flags)-1]
			if f.Kind == plan.KindBool {
				fl.NoOptDefVal = "true"
			}
			fs.AddFlag(fl)
		}
		add(f.Name, f.Help)
		for _, a := range f.Aliases {
			help := "alias of " + f.Name
			if a.Note != "" {
				help += " (" + a.Note + ")"
			}
			add(a.Name, help)
		}
	}
	req.Resolver = bindHubFlags(fs, nil) // --revision is a row of the table

	return pf
}

// check reports the aliases given different values and the zeros given
// where 0 means nothing, with every other problem of the request (exit
// status 2); nil when there is none of the first two.
func (pf *planFlags) check() error {
	if pf == nil {
		return nil
	}
	var errs []error
	var zeros []string
	for _, f := range pf.flags {
		given := pf.given[f.Key]
		for i, g := range given {
			for _, h := range given[:i] {
				if h.name != g.name && h.value != g.value {
					errs = append(errs, &plan.FieldError{Field: f.Key,
						Err: fmt.Errorf("%s %s conflicts with %s %s (the same setting): give one", g.name, g.value, h.name, h.value)})
				}
			}
			if f.NonZero && isZero(f.Kind, g.value) && !slices.Contains(zeros, f.Key) {
				zeros = append(zeros, f.Key)
			}
		}
	}
	if err := plan.ZeroErrors(zeros); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	if err := pf.req.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// isZero reports whether a flag value is a zero number ("0", "0.0") or,
// for a size, a zero size ("0GiB"); each element of a comma list counts.
func isZero(kind plan.FlagKind, v string) bool {
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if kind == plan.KindSize {
			if s, err := units.ParseSize(p); err == nil && s == 0 {
				return true
			}
			continue
		}
		if x, err := strconv.ParseFloat(p, 64); err == nil && x == 0 {
			return true
		}
	}
	return false
}

const defaultModelName = "meta-llama/Llama-3.1-8B-Instruct"

func newPlanCmd() *cobra.Command {
	var req plan.Request
	var format string
	var sw *sweep
	var pf *planFlags
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

Exit status:
  0  the plan serves the target (--concurrency requests of the context
     length fit at once)
  1  the engine refuses to start with these settings (the error names the
     flag to change; an over-long --context-length is one), or, for a
     list, no combination plans
  2  invalid input (a flag value, model, GPU or dtype name that is not
     accepted)
  3  the engine starts but the target does not fit (the fix says what to
     change)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := pf.check(); err != nil {
				return &exitError{code: 2, err: err}
			}
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
	pf = bindPlanFlags(cmd.Flags(), &req)
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

// groupFloat writes v with prec decimals and its whole part grouped in
// thousands, as group writes counts ("29,080.57").
func groupFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	whole, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	n, err := strconv.ParseInt(strings.TrimPrefix(whole, "-"), 10, 64)
	if err != nil {
		return s
	}
	out := group(n)
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

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
