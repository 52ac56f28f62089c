package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/units"
)

// MaxSweepCombinations bounds the number of plans one Sweep runs.
const MaxSweepCombinations = 1 << 20

// Axis is one list-valued request field of a sweep: the field's JSON key
// ("tp_size", "kv_cache_dtype", "gpu", "model") and the values to try, as
// the command line spells them ("2", "fp8_e4m3", "80GiB").
type Axis struct {
	Field  string   `json:"field"`
	Values []string `json:"values"`
}

// SweepRow is the outcome of one combination of a sweep.
type SweepRow struct {
	// Values maps each axis field to the value of this combination.
	Values map[string]string `json:"values"`
	// Report is the plan; for an infeasible plan it is the partial report
	// and Error says why. Nil when the request itself was invalid.
	Report *Report `json:"report,omitempty"`
	// Error is the plan's error, "" when the plan is feasible.
	Error string `json:"error,omitempty"`
	// Infeasible is true when Error is an engine-equivalent refusal
	// (ErrInfeasible) rather than an invalid combination.
	Infeasible bool `json:"infeasible,omitempty"`

	// b and i rebuild the row's request (Request): a sweep of 100,000
	// rows does not keep 100,000 copies of an 800-byte request.
	b *sweepBuilder
	i int
}

// Request returns the request that was planned: the sweep's base with
// the row's axis values set (the zero Request for a row Sweep did not
// build).
func (r SweepRow) Request() Request {
	var req Request
	if r.b != nil {
		r.b.request(&req, r.i, make([]int, len(r.b.axes)))
	}
	return req
}

// SweepSize returns the number of combinations of axes (the product of
// their value counts), or an error when it exceeds MaxSweepCombinations.
func SweepSize(axes []Axis) (int, error) {
	n := 1
	for _, a := range axes {
		if len(a.Values) == 0 {
			return 0, fieldErr(a.Field, "a sweep axis needs at least one value")
		}
		if n > MaxSweepCombinations/len(a.Values) {
			return 0, fieldErr("", "the sweep has more than %d combinations", MaxSweepCombinations)
		}
		n *= len(a.Values)
	}
	return n, nil
}

// Sweep plans every combination of the axes' values on top of base and
// returns one row per combination, the first axis varying slowest. Each
// row is plan.Run of its request without the advice search (as with the
// request's NoAdvice set): an infeasible row carries the engine's own fix
// (FixFlag, FixValue, FixHint) but no re-planned FixArgs; plan.Run of the
// row's Request gives them. A combination that cannot be planned gets its
// error in the row, not in Sweep's error. Sweep's error reports invalid
// axes (unknown fields, values that do not parse, too many combinations;
// every problem at once) or a cancelled context.
//
// Models are resolved and parsed once before the loop and passed to Run as
// the request's Resolved model, so the loop does no I/O and no parsing;
// rows are built and planned on GOMAXPROCS goroutines, each reusing one
// configurator.
func Sweep(ctx context.Context, base Request, axes []Axis) ([]SweepRow, error) {
	if err := validateAxes(axes); err != nil {
		return nil, err
	}
	n, err := SweepSize(axes)
	if err != nil {
		return nil, err
	}
	rows := make([]SweepRow, n)
	planRows(ctx, rows, newSweepBuilder(base, axes))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// sweepBuilder builds the request of each combination of a sweep's axes.
type sweepBuilder struct {
	base Request
	axes []Axis
	// set[j][k] is the request field value of axes[j].Values[k], field[j]
	// the index of axes[j]'s field in Request.
	set   [][]reflect.Value
	field []int
	// models are the models the sweep names, resolved once.
	models map[string]*catalog.Model
	// clearOthers, for an engine axis, clears the inputs a row's engine
	// does not take (nil without one).
	clearOthers func(*Request)
}

// newSweepBuilder prepares the rows of a sweep of base over axes
// (validated): every model resolved and every axis value parsed once.
func newSweepBuilder(base Request, axes []Axis) *sweepBuilder {
	set, field := axisFieldValues(axes)
	return &sweepBuilder{base: base, axes: axes, set: set, field: field, models: sweepModels(base, axes), clearOthers: engineAxisClear(axes)}
}

// request fills req with combination i, the first axis varying slowest;
// idx is scratch room for one index per axis.
func (b *sweepBuilder) request(req *Request, i int, idx []int) {
	for j := len(b.axes) - 1; j >= 0; j-- {
		n := len(b.axes[j].Values)
		idx[j], i = i%n, i/n
	}
	*req = b.base
	rv := reflect.ValueOf(req).Elem()
	for j := range b.axes {
		rv.Field(b.field[j]).Set(b.set[j][idx[j]])
	}
	if b.clearOthers != nil {
		b.clearOthers(req)
	}
	if m, ok := b.models[req.Model]; ok {
		req.Model, req.Resolved = m.Name, m
	}
}

// build fills req with combination i and row with its values (Request
// rebuilds req from the row). Rows are built by the workers that plan
// them, in parallel.
func (b *sweepBuilder) build(row *SweepRow, req *Request, i int, idx []int) {
	b.request(req, i, idx)
	vals := make(map[string]string, len(b.axes))
	for j, a := range b.axes {
		vals[a.Field] = a.Values[idx[j]]
	}
	row.Values, row.b, row.i = vals, b, i
}

// axisFieldValues parses every axis value once: set[j][k] is the request
// field value of axes[j].Values[k] (validated), field[j] the index of
// axes[j]'s field in Request.
func axisFieldValues(axes []Axis) (set [][]reflect.Value, field []int) {
	set = make([][]reflect.Value, len(axes))
	field = make([]int, len(axes))
	for j, a := range axes {
		field[j] = requestFields()[a.Field]
		for _, v := range a.Values {
			var r Request
			_ = r.SetField(a.Field, v)
			set[j] = append(set[j], reflect.ValueOf(r).Field(field[j]))
		}
	}
	return set, field
}

// engineAxisClear is, for a sweep with an engine axis, what plans each row
// with the inputs its engine takes, as a comparison does: it clears the
// inputs of the row's request that its engine does not take but another
// listed engine does (an input no listed engine takes stays, and its rows
// say so). Nil without an engine axis.
func engineAxisClear(axes []Axis) func(*Request) {
	var axisEngines []string
	for _, a := range axes {
		if a.Field == "engine" {
			for _, v := range a.Values {
				axisEngines = append(axisEngines, strings.ToLower(strings.TrimSpace(v)))
			}
		}
	}
	if axisEngines == nil {
		return nil
	}
	return func(req *Request) {
		eng := req.Normalized().Engine
		for _, f := range flagTable {
			if !f.Accepts(eng) && slices.ContainsFunc(axisEngines, f.Accepts) {
				_ = clearField(req, f.Key)
			}
		}
	}
}

// planRows builds and plans every row on GOMAXPROCS goroutines, each
// reusing one configurator, without the advice search, until done or ctx
// ends.
func planRows(ctx context.Context, rows []SweepRow, b *sweepBuilder) {
	n := len(rows)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			o := runOpts{scratch: new(scratch)}
			idx := make([]int, len(b.axes))
			var req Request // the row's request, rebuilt by SweepRow.Request
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				r := &rows[i]
				b.build(r, &req, i, idx)
				rep, err := run(ctx, req, o)
				r.Report = rep
				if err != nil {
					r.Error = err.Error()
					r.Infeasible = errors.Is(err, ErrInfeasible)
				}
			}
		})
	}
	wg.Wait()
}

// sweepModels resolves every model the sweep names (the base model and a
// "model" axis) once, keyed by the name as given. Names that do not
// resolve are left to Run, which reports them per row.
func sweepModels(base Request, axes []Axis) map[string]*catalog.Model {
	if len(base.Config) > 0 || base.Resolved != nil {
		return nil
	}
	names := []string{base.Model}
	for _, a := range axes {
		if a.Field == "revision" {
			return nil // each row resolves its own revision
		}
		if a.Field == "model" {
			names = append(names, a.Values...)
		}
	}
	out := make(map[string]*catalog.Model, len(names))
	for _, name := range names {
		if _, ok := out[name]; ok {
			continue
		}
		if m, err := OpenModel(Request{Model: name, Revision: base.Revision, Resolver: base.Resolver}); err == nil {
			out[name] = m
		}
	}
	return out
}

func validateAxes(axes []Axis) error {
	var errs []error
	seen := map[string]bool{}
	for _, a := range axes {
		if seen[a.Field] {
			errs = append(errs, fieldErr(a.Field, "given twice as a sweep axis"))
			continue
		}
		seen[a.Field] = true
		if _, ok := requestFields()[a.Field]; !ok {
			errs = append(errs, fieldErr(a.Field, "not a request field that takes a list (accepted: %s)", strings.Join(SweepFields(), ", ")))
			continue
		}
		if len(a.Values) == 0 {
			errs = append(errs, fieldErr(a.Field, "a sweep axis needs at least one value"))
		}
		var r Request
		for _, v := range a.Values {
			if err := r.SetField(a.Field, v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if _, err := SweepSize(axes); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// requestFields maps the JSON key of every settable Request field to its
// field index (the inline config is not settable from a string).
var requestFields = sync.OnceValue(func() map[string]int {
	t := reflect.TypeFor[Request]()
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" || key == "config" {
			continue
		}
		m[key] = i
	}
	return m
})

// SweepFields lists the request keys SetField (and so a sweep axis) accepts,
// in Request order.
func SweepFields() []string {
	t := reflect.TypeFor[Request]()
	var out []string
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if _, ok := requestFields()[key]; ok {
			out = append(out, key)
		}
	}
	return out
}

var (
	sizeType = reflect.TypeFor[units.Size]()
	intsType = reflect.TypeFor[[]int]()
)

// SetField sets the request field whose JSON key is key ("tp_size") from
// its command-line spelling ("2"): integers, decimals, booleans, sizes
// ("80GiB") and strings. Errors are *FieldError values.
func (r *Request) SetField(key, value string) error {
	i, ok := requestFields()[key]
	if !ok {
		return fieldErr(key, "unknown request field")
	}
	f := reflect.ValueOf(r).Elem().Field(i)
	v := strings.TrimSpace(value)
	switch {
	case f.Type() == sizeType:
		s, err := units.ParseSize(v)
		if err != nil {
			return &FieldError{Field: key, Err: err}
		}
		f.SetInt(int64(s))
	case f.Kind() == reflect.String:
		f.SetString(v)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fieldErr(key, "%q is not true or false", value)
		}
		f.SetBool(b)
	case f.CanInt():
		n, err := strconv.ParseInt(v, 10, f.Type().Bits())
		if err != nil {
			return fieldErr(key, "%q is not an integer", value)
		}
		f.SetInt(n)
	case f.CanFloat():
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fieldErr(key, "%q is not a number", value)
		}
		f.SetFloat(x)
	case f.Type() == intsType:
		// A list value ("128,131072" or "128 131072"): one setting, not a
		// sweep axis.
		var ns []int
		for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '[' || r == ']' }) {
			n, err := strconv.Atoi(p)
			if err != nil {
				return fieldErr(key, "%q is not a list of integers", value)
			}
			ns = append(ns, n)
		}
		f.Set(reflect.ValueOf(ns))
	default:
		return fieldErr(key, "cannot be set from text")
	}
	return nil
}

// FieldString returns the command-line spelling of the request field whose
// JSON key is key ("" for a zero value), the inverse of SetField. (A
// pointer receiver, like SetField's: reflecting on a value would copy the
// whole request to the heap on every call.)
func (r *Request) FieldString(key string) (string, error) {
	i, ok := requestFields()[key]
	if !ok {
		return "", fieldErr(key, "unknown request field")
	}
	f := reflect.ValueOf(r).Elem().Field(i)
	if f.IsZero() {
		return "", nil
	}
	switch {
	case f.Kind() == reflect.String:
		return f.String(), nil
	case f.Kind() == reflect.Bool:
		return strconv.FormatBool(f.Bool()), nil
	case f.CanInt():
		return strconv.FormatInt(f.Int(), 10), nil
	case f.CanFloat():
		return FormatFloat(f.Float()), nil
	case f.Type() == intsType:
		parts := make([]string, f.Len())
		for i := range parts {
			parts[i] = strconv.FormatInt(f.Index(i).Int(), 10)
		}
		return strings.Join(parts, ","), nil
	}
	return fmt.Sprint(f.Interface()), nil
}
