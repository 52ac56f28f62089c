package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvcfg/kvcfg/plan"
)

// Sweeps: every planning flag of `kvcfg plan` accepts a comma list
// (`--tp-size 1,2,4 --kv-cache-dtype auto,fp8_e4m3`) and the command then
// prints one row per combination.
//
// pflag's typed flags cannot parse "1,2,4", so enableSweep wraps the Value
// of every flag that writes into the plan.Request: the wrapper accepts a
// comma list, checks each element with the original Value's Set, records
// the list and leaves the first element in the request. Which request
// field a flag writes is found from the address its Value points at, so
// aliases (--tp, --tensor-parallel-size) land on the same axis (tp_size).
// The command's RunE then hands over to sweep.run when a list was given:
//
//	bindPlanFlags(cmd.Flags(), &req)
//	sw := enableSweep(cmd, &req)
//	RunE: if sw.active() { return sw.run(cmd, req, args, format) } ...

// sweep records the lists given to one command's flags.
type sweep struct {
	lists []*listValue // in the order the lists were given
}

// listValue is a pflag.Value that also takes a comma list.
type listValue struct {
	pflag.Value
	key    string // request JSON key
	flag   string
	values []string
	owner  *sweep
}

// Set accepts one value, or a comma list whose every element the wrapped
// Value accepts. A JSON object (vLLM's --kv-transfer-config) is one value.
func (v *listValue) Set(s string) error {
	if !strings.Contains(s, ",") || strings.HasPrefix(strings.TrimSpace(s), "{") {
		v.forget()
		return v.Value.Set(s)
	}
	var parts []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("empty list %q", s)
	}
	for _, p := range parts {
		if err := v.Value.Set(p); err != nil {
			return fmt.Errorf("%q: %w", p, err)
		}
	}
	if err := v.Value.Set(parts[0]); err != nil {
		return err
	}
	v.forget()
	v.values = parts
	v.owner.lists = append(v.owner.lists, v)
	return nil
}

func (v *listValue) forget() {
	v.values = nil
	for i, l := range v.owner.lists {
		if l == v {
			v.owner.lists = append(v.owner.lists[:i], v.owner.lists[i+1:]...)
			break
		}
	}
}

// enableSweep makes every flag of cmd that writes a field of req accept a
// comma list. Call it after the flags are bound.
func enableSweep(cmd *cobra.Command, req *plan.Request) *sweep {
	sw := &sweep{}
	// A flag bound to a field of req by address (not through the flag
	// table) is found by its address: only addresses inside req need the
	// field map, built then.
	base, size := reflect.ValueOf(req).Pointer(), reflect.TypeFor[plan.Request]().Size()
	var keys map[uintptr]string
	n := 0
	cmd.Flags().VisitAll(func(*pflag.Flag) { n++ })
	lists := make([]listValue, 0, n) // one allocation for every flag's wrapper
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		var key string
		if fv, ok := f.Value.(*fieldValue); ok {
			if fv.flag.Kind == plan.KindInts {
				return // one list is one setting, not an axis
			}
			key = fv.flag.Key
		} else {
			rv := reflect.ValueOf(f.Value)
			if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Pointer() < base || rv.Pointer() >= base+size {
				return
			}
			if keys == nil {
				keys = fieldAddrs(req)
			}
			k, ok := keys[rv.Pointer()]
			if !ok {
				return
			}
			key = k
		}
		if t := f.Value.Type(); strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") {
			return
		}
		lists = append(lists, listValue{Value: f.Value, key: key, flag: f.Name, owner: sw})
		f.Value = &lists[len(lists)-1]
	})
	return sw
}

// fieldAddrs maps the address of every settable field of req to its JSON key.
func fieldAddrs(req *plan.Request) map[uintptr]string {
	fields := map[string]bool{}
	for _, k := range plan.SweepFields() {
		fields[k] = true
	}
	rv := reflect.ValueOf(req).Elem()
	t := rv.Type()
	out := map[uintptr]string{}
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if fields[key] {
			out[rv.Field(i).Addr().Pointer()] = key
		}
	}
	return out
}

// active reports whether any flag was given a list.
func (s *sweep) active() bool { return s != nil && len(s.lists) > 0 }

// axes returns the sweep axes in the order the lists were given; two
// aliases of one field must not both carry a list.
func (s *sweep) axes() ([]plan.Axis, error) {
	var out []plan.Axis
	seen := map[string]string{}
	for _, l := range s.lists {
		if prev, ok := seen[l.key]; ok {
			return nil, fmt.Errorf("--%s and --%s set the same field (%s): give the list once", prev, l.flag, l.key)
		}
		seen[l.key] = l.flag
		out = append(out, plan.Axis{Field: l.key, Values: l.values})
	}
	return out, nil
}

// run plans every combination on top of base (the request with each list's
// first element) and prints one row per combination as a table, CSV,
// markdown, JSON or YAML. args may carry the model. Exit status: 0 when at
// least one combination planned, 1 when none did, 2 for invalid input.
func (s *sweep) run(cmd *cobra.Command, base plan.Request, args []string, format string) error {
	if err := checkFormat(format, outTable, outJSON, outYAML, outCSV, outMarkdown); err != nil {
		return &exitError{code: 2, err: err}
	}
	if len(args) == 1 {
		if base.Model != "" {
			return &exitError{code: 2, err: errors.New("give the model either as an argument or with --model, not both")}
		}
		base.Model = args[0]
	}
	axes, err := s.axes()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	rows, err := plan.Sweep(cmd.Context(), base, axes)
	if err != nil {
		if errors.Is(err, plan.ErrInvalid) {
			return &exitError{code: 2, err: err}
		}
		return err
	}
	if err := writeSweep(cmd.OutOrStdout(), format, axes, rows); err != nil {
		return err
	}
	invalid := 0
	for _, r := range rows {
		if r.Error == "" {
			return nil
		}
		if !r.Infeasible {
			invalid++
		}
	}
	if invalid == len(rows) {
		// Bad input in every combination (another engine's flag, say).
		return &exitError{code: 2, err: fmt.Errorf("none of the %d combinations is valid input", len(rows))}
	}
	return &exitError{code: 1, err: fmt.Errorf("none of the %d combinations plans", len(rows))}
}

// sweepRecord is one row of the JSON and YAML output.
type sweepRecord struct {
	Values map[string]string `json:"values"`
	Report *plan.Report      `json:"report,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// sweepColumns are the result columns after the axis values.
var sweepColumns = []string{"engine", "gpu", "num_gpus", "resolved_kv_cache_dtype", "mem_fraction_static", "max_total_num_tokens", "max_running_requests", "max_concurrency_at_context_length", "error"}

func sweepCells(r plan.SweepRow) []string {
	rep := r.Report
	if rep == nil {
		rep = &plan.Report{}
	}
	mfs := ""
	if rep.MemFractionStatic > 0 {
		mfs = strconv.FormatFloat(rep.MemFractionStatic, 'f', 3, 64)
	}
	num := func(n int64) string {
		if r.Report == nil {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	return []string{rep.Engine, rep.GPU, num(int64(rep.NumGPUs)), rep.ResolvedKVCacheDType, mfs, num(rep.MaxTotalNumTokens),
		num(int64(rep.MaxRunningRequests)), num(rep.MaxConcurrencyAtContextLength), oneLine(r.Error)}
}

// groupCounts writes the whole numbers of sweep cells with thousands
// separators, as every table of kvcfg prints them.
func groupCounts(cells []string) {
	for i, c := range cells {
		if n, err := strconv.ParseInt(c, 10, 64); err == nil {
			cells[i] = group(n)
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeSweep prints sweep rows.
func writeSweep(w io.Writer, format string, axes []plan.Axis, rows []plan.SweepRow) error {
	recs := make([]sweepRecord, len(rows))
	for i, r := range rows {
		recs[i] = sweepRecord{Values: r.Values, Report: r.Report, Error: r.Error}
	}
	if ok, err := writeStructured(w, format, recs); ok {
		return err
	}
	header := make([]string, 0, len(axes)+len(sweepColumns))
	for _, a := range axes {
		header = append(header, a.Field)
	}
	header = append(header, sweepColumns...)
	cells := make([][]string, len(rows))
	for i, r := range rows {
		c := make([]string, 0, len(header))
		for _, a := range axes {
			c = append(c, r.Values[a.Field])
		}
		cells[i] = append(c, sweepCells(r)...)
		if !strings.EqualFold(format, outCSV) {
			groupCounts(cells[i][len(axes):]) // CSV keeps plain numbers
		}
	}
	switch strings.ToLower(format) {
	case outCSV:
		return writeCSVRows(w, append([][]string{header}, cells...))
	case outMarkdown:
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
		for _, c := range cells {
			for i := range c {
				c[i] = mdEscape(c[i])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(c, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	up := make([]string, len(header))
	for i, h := range header {
		up[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(up, "\t"))
	for _, c := range cells {
		fmt.Fprintln(tw, strings.Join(c, "\t"))
	}
	return tw.Flush()
}

// writeCSVRows writes rows (the first one the header) as CSV.
func writeCSVRows(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}
