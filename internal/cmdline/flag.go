// Package cmdline parses kvcfg's command lines: a tree of commands, each
// with GNU-style flags (--name value, --name=value, -n value, -nvalue,
// bare boolean flags, positional arguments anywhere, "--" ending the
// flags), and their help.
//
// It keeps the shape of the spf13/cobra and spf13/pflag API that kvcfg's
// commands were written against (Command, FlagSet, Value, VarPF,
// NoOptDefVal, the same error messages), without their dependency on the
// net package: a program that imports net is dynamically linked whenever
// cgo is on, and that alone doubled the start-up of every kvcfg process
// (docs/PERFORMANCE.md#start-up).
package cmdline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrHelp is what Parse returns for -h or --help when the set does not
// define them.
var ErrHelp = errors.New("cmdline: help requested")

// Value is the value of one flag.
type Value interface {
	// String is the current value as the help shows it.
	String() string
	// Set parses one command-line value.
	Set(string) error
	// Type names the value's type in the help ("string", "int", ...).
	Type() string
}

// Flag is one flag of a FlagSet.
type Flag struct {
	// Name is the long name, without the dashes.
	Name string
	// Shorthand is the one-letter name ("" for none).
	Shorthand string
	// Usage is the help text.
	Usage string
	// Value holds the flag's value.
	Value Value
	// NoOptDefVal, when not "", is the value a flag given without one
	// takes (--verbose): such a flag never consumes the next argument.
	NoOptDefVal string
	// Changed reports whether the command line set the flag.
	Changed bool

	// def is Value's String from before the command line set it, taken
	// on the first set (only the help needs it, so a flag that is never
	// set, or a process that prints no help, does not format it).
	def string
}

// Default is the flag's value before the command line set it.
func (f *Flag) Default() string {
	if f.Changed {
		return f.def
	}
	return f.Value.String()
}

// FlagSet is a set of flags and the positional arguments that Parse
// leaves.
//
// The flags are a slice searched in order, not a map: a command defines
// about 150 flags and a command line names a few, so building an index
// would cost more than it saves in a process that parses one command
// line. Check reports names defined twice.
type FlagSet struct {
	name  string
	flags []*Flag // in definition order
	args  []string
}

// NewFlagSet returns an empty set; name is used in messages only.
func NewFlagSet(name string) *FlagSet {
	return &FlagSet{name: name, flags: make([]*Flag, 0, 16)}
}

// AddFlag adds f (which may belong to another set: both then share its
// value). A name or shorthand defined twice is a programming error that
// Check reports; the first definition wins.
func (fs *FlagSet) AddFlag(f *Flag) { fs.flags = append(fs.flags, f) }

// Check reports the flags badly named or defined twice, and shorthands
// that are not one letter or are defined twice.
func (fs *FlagSet) Check() error {
	var errs []error
	names, shorts := map[string]bool{}, map[string]bool{}
	for _, f := range fs.flags {
		if f.Name == "" || strings.HasPrefix(f.Name, "-") || strings.ContainsAny(f.Name, "= ") {
			errs = append(errs, fmt.Errorf("cmdline: %s: bad flag name %q", fs.name, f.Name))
		}
		if names[f.Name] {
			errs = append(errs, fmt.Errorf("cmdline: %s: --%s defined twice", fs.name, f.Name))
		}
		names[f.Name] = true
		if f.Shorthand == "" {
			continue
		}
		if len(f.Shorthand) != 1 || f.Shorthand == "-" || f.Shorthand == "=" {
			errs = append(errs, fmt.Errorf("cmdline: %s: shorthand %q of --%s is not one letter", fs.name, f.Shorthand, f.Name))
		}
		if shorts[f.Shorthand] {
			errs = append(errs, fmt.Errorf("cmdline: %s: -%s defined twice", fs.name, f.Shorthand))
		}
		shorts[f.Shorthand] = true
	}
	return errors.Join(errs...)
}

// shorthand returns the flag whose shorthand is c, nil for none.
func (fs *FlagSet) shorthand(c byte) *Flag {
	for _, f := range fs.flags {
		if len(f.Shorthand) == 1 && f.Shorthand[0] == c {
			return f
		}
	}
	return nil
}

// VarPF defines a flag with a shorthand ("" for none) and returns it.
func (fs *FlagSet) VarPF(v Value, name, shorthand, usage string) *Flag {
	f := &Flag{Name: name, Shorthand: shorthand, Usage: usage, Value: v}
	if b, ok := v.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		f.NoOptDefVal = "true"
	}
	fs.AddFlag(f)
	return f
}

// Lookup returns the flag called name, nil for none.
func (fs *FlagSet) Lookup(name string) *Flag {
	for _, f := range fs.flags {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Changed reports whether the command line set the flag called name.
func (fs *FlagSet) Changed(name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}

// VisitAll calls fn for every flag, in definition order.
func (fs *FlagSet) VisitAll(fn func(*Flag)) {
	for _, f := range fs.flags {
		fn(f)
	}
}

// Visit calls fn for every flag the command line set, in definition
// order.
func (fs *FlagSet) Visit(fn func(*Flag)) {
	for _, f := range fs.flags {
		if f.Changed {
			fn(f)
		}
	}
}

// sorted returns the flags in name order (the help's).
func (fs *FlagSet) sorted() []*Flag {
	s := slices.Clone(fs.flags)
	slices.SortStableFunc(s, func(a, b *Flag) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// Args returns the positional arguments after Parse.
func (fs *FlagSet) Args() []string { return fs.args }

// Parse sets the flags from args and keeps the rest as positional
// arguments, which may come before, between or after the flags; "--" ends
// the flags, and a lone "-" is an argument. -h and --help, when the set
// does not define them, return ErrHelp.
func (fs *FlagSet) Parse(args []string) error {
	fs.args = fs.args[:0]
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			fs.args = append(fs.args, args...)
			return nil
		case len(a) < 2 || a[0] != '-':
			fs.args = append(fs.args, a)
		case a[1] == '-':
			var err error
			if args, err = fs.parseLong(a, args); err != nil {
				return err
			}
		default:
			var err error
			if args, err = fs.parseShort(a, args); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseLong parses "--name", "--name=value" or "--name value".
func (fs *FlagSet) parseLong(a string, rest []string) ([]string, error) {
	name, value, hasValue := strings.Cut(a[2:], "=")
	if name == "" || name[0] == '-' || name[0] == '=' {
		return rest, fmt.Errorf("bad flag syntax: %s", a)
	}
	f := fs.Lookup(name)
	if f == nil {
		if name == "help" {
			return rest, ErrHelp
		}
		return rest, fmt.Errorf("unknown flag: --%s", name)
	}
	switch {
	case hasValue:
	case f.NoOptDefVal != "":
		value = f.NoOptDefVal
	case len(rest) > 0:
		value, rest = rest[0], rest[1:]
	default:
		return rest, fmt.Errorf("flag needs an argument: --%s", name)
	}
	return rest, fs.set(f, value)
}

// parseShort parses "-abc" (bare boolean shorthands), "-o value", "-ovalue"
// and "-o=value".
func (fs *FlagSet) parseShort(a string, rest []string) ([]string, error) {
	s := a[1:]
	for len(s) > 0 {
		c := s[0]
		f := fs.shorthand(c)
		if f == nil {
			if c == 'h' {
				return rest, ErrHelp
			}
			return rest, fmt.Errorf("unknown shorthand flag: %q in -%s", c, a[1:])
		}
		var value string
		switch {
		case len(s) > 1 && s[1] == '=':
			value, s = s[2:], ""
		case f.NoOptDefVal != "":
			value, s = f.NoOptDefVal, s[1:]
		case len(s) > 1:
			value, s = s[1:], ""
		case len(rest) > 0:
			value, rest, s = rest[0], rest[1:], ""
		default:
			return rest, fmt.Errorf("flag needs an argument: %q in -%s", c, a[1:])
		}
		if err := fs.set(f, value); err != nil {
			return rest, err
		}
	}
	return rest, nil
}

func (fs *FlagSet) set(f *Flag, value string) error {
	if !f.Changed {
		f.def = f.Value.String()
	}
	if err := f.Value.Set(value); err != nil {
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		return fmt.Errorf("invalid argument %q for %q flag: %w", value, name, err)
	}
	f.Changed = true
	return nil
}

// FlagUsages returns the help lines of the flags, in name order, aligned:
//
//	-o, --output string   output format (default "table")
func (fs *FlagSet) FlagUsages() string {
	type line struct{ left, right string }
	var lines []line
	width := 0
	for _, f := range fs.sorted() {
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		if t := typeName(f); t != "" {
			left += " " + t
		}
		right := f.Usage
		if d := defaultText(f); d != "" {
			right += " (default " + d + ")"
		}
		lines = append(lines, line{left, right})
		width = max(width, len(left))
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.left)
		b.WriteString(strings.Repeat(" ", width-len(l.left)+3))
		b.WriteString(strings.ReplaceAll(l.right, "\n", "\n"+strings.Repeat(" ", width+3)))
		b.WriteByte('\n')
	}
	return b.String()
}

// typeName is the word after a flag's name in the help: none for a
// boolean, the value's type otherwise ("strings" for a string list).
func typeName(f *Flag) string {
	t := f.Value.Type()
	switch {
	case t == "bool" || f.NoOptDefVal == "true":
		return ""
	case t == "stringSlice":
		return "strings"
	case t == "float64" || t == "float32":
		return "float"
	}
	return t
}

// defaultText is the default the help shows, "" when it is the type's
// zero value.
func defaultText(f *Flag) string {
	switch d := f.Default(); {
	case d == "" || d == "[]":
		return ""
	case f.Value.Type() == "bool" && d == "false":
		return ""
	case (f.Value.Type() == "int" || f.Value.Type() == "int64" || f.Value.Type() == "uint64" || f.Value.Type() == "uint") && d == "0":
		return ""
	case (f.Value.Type() == "float64" || f.Value.Type() == "float32") && d == "0":
		return ""
	case f.Value.Type() == "duration" && d == "0s":
		return ""
	case f.Value.Type() == "string":
		return fmt.Sprintf("%q", d)
	default:
		return d
	}
}
