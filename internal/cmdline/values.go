package cmdline

import (
	"strconv"
	"strings"
	"time"
)

type stringValue string

func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }
func (s *stringValue) String() string     { return string(*s) }
func (s *stringValue) Type() string       { return "string" }

type boolValue bool

func (b *boolValue) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*b = boolValue(x)
	return nil
}
func (b *boolValue) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolValue) Type() string     { return "bool" }
func (b *boolValue) IsBoolFlag() bool { return true }

type intValue int

func (i *intValue) Set(v string) error {
	x, err := strconv.ParseInt(v, 0, strconv.IntSize)
	if err != nil {
		return err
	}
	*i = intValue(x)
	return nil
}
func (i *intValue) String() string { return strconv.Itoa(int(*i)) }
func (i *intValue) Type() string   { return "int" }

type int64Value int64

func (i *int64Value) Set(v string) error {
	x, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return err
	}
	*i = int64Value(x)
	return nil
}
func (i *int64Value) String() string { return strconv.FormatInt(int64(*i), 10) }
func (i *int64Value) Type() string   { return "int64" }

type uint64Value uint64

func (u *uint64Value) Set(v string) error {
	x, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return err
	}
	*u = uint64Value(x)
	return nil
}
func (u *uint64Value) String() string { return strconv.FormatUint(uint64(*u), 10) }
func (u *uint64Value) Type() string   { return "uint64" }

type float64Value float64

func (f *float64Value) Set(v string) error {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return err
	}
	*f = float64Value(x)
	return nil
}
func (f *float64Value) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *float64Value) Type() string   { return "float64" }

type float32Value float32

func (f *float32Value) Set(v string) error {
	x, err := strconv.ParseFloat(v, 32)
	if err != nil {
		return err
	}
	*f = float32Value(x)
	return nil
}
func (f *float32Value) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 32) }
func (f *float32Value) Type() string   { return "float32" }

type durationValue time.Duration

func (d *durationValue) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	*d = durationValue(x)
	return nil
}
func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }

// stringSliceValue takes a comma list; the first Set replaces the default,
// later ones append (--engine sglang --engine vllm).
type stringSliceValue struct {
	p       *[]string
	changed bool
}

func (s *stringSliceValue) Set(v string) error {
	parts := strings.Split(v, ",")
	if !s.changed {
		*s.p = parts
	} else {
		*s.p = append(*s.p, parts...)
	}
	s.changed = true
	return nil
}
func (s *stringSliceValue) String() string { return "[" + strings.Join(*s.p, ",") + "]" }
func (s *stringSliceValue) Type() string   { return "stringSlice" }

// StringVar defines a string flag.
func (fs *FlagSet) StringVar(p *string, name, value, usage string) {
	fs.StringVarP(p, name, "", value, usage)
}

// StringVarP defines a string flag with a shorthand.
func (fs *FlagSet) StringVarP(p *string, name, shorthand, value, usage string) {
	*p = value
	fs.VarPF((*stringValue)(p), name, shorthand, usage)
}

// BoolVar defines a boolean flag (--name alone sets it).
func (fs *FlagSet) BoolVar(p *bool, name string, value bool, usage string) {
	fs.BoolVarP(p, name, "", value, usage)
}

// BoolVarP defines a boolean flag with a shorthand.
func (fs *FlagSet) BoolVarP(p *bool, name, shorthand string, value bool, usage string) {
	*p = value
	fs.VarPF((*boolValue)(p), name, shorthand, usage)
}

// IntVar defines an int flag (decimal, or 0x/0o/0b prefixed).
func (fs *FlagSet) IntVar(p *int, name string, value int, usage string) {
	fs.IntVarP(p, name, "", value, usage)
}

// IntVarP defines an int flag with a shorthand.
func (fs *FlagSet) IntVarP(p *int, name, shorthand string, value int, usage string) {
	*p = value
	fs.VarPF((*intValue)(p), name, shorthand, usage)
}

// Int64Var defines an int64 flag.
func (fs *FlagSet) Int64Var(p *int64, name string, value int64, usage string) {
	*p = value
	fs.VarPF((*int64Value)(p), name, "", usage)
}

// Uint64Var defines a uint64 flag.
func (fs *FlagSet) Uint64Var(p *uint64, name string, value uint64, usage string) {
	*p = value
	fs.VarPF((*uint64Value)(p), name, "", usage)
}

// Float64Var defines a float64 flag.
func (fs *FlagSet) Float64Var(p *float64, name string, value float64, usage string) {
	*p = value
	fs.VarPF((*float64Value)(p), name, "", usage)
}

// Float32Var defines a float32 flag.
func (fs *FlagSet) Float32Var(p *float32, name string, value float32, usage string) {
	*p = value
	fs.VarPF((*float32Value)(p), name, "", usage)
}

// DurationVar defines a time.Duration flag ("90s", "2m").
func (fs *FlagSet) DurationVar(p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.VarPF((*durationValue)(p), name, "", usage)
}

// StringSliceVar defines a comma-list flag that may also be repeated.
func (fs *FlagSet) StringSliceVar(p *[]string, name string, value []string, usage string) {
	*p = value
	fs.VarPF(&stringSliceValue{p: p}, name, "", usage)
}
