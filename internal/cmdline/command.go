package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/internal/edit"
)

// Command is one command of a tree: the root (the program) or a
// subcommand.
type Command struct {
	// Use is the one-line usage: the command's name, then what its
	// positional arguments are ("plan [MODEL]").
	Use string
	// Short is the summary the parent's help lists.
	Short string
	// Long is the help text (Short when empty).
	Long string
	// Example is the help's examples section, indented by the author.
	Example string
	// Args checks the positional arguments; nil accepts any.
	Args PositionalArgs
	// RunE runs the command; nil makes the command print its help.
	RunE func(cmd *Command, args []string) error
	// DisableFlagParsing hands every argument, flags and -h included, to
	// RunE as they are.
	DisableFlagParsing bool

	flags     *FlagSet
	parent    *Command
	commands  []*Command
	required  []string
	flagErr   func(*Command, error) error
	args      []string
	argsSet   bool
	ctx       context.Context
	in        io.Reader
	out, errw io.Writer
}

// PositionalArgs checks a command's positional arguments.
type PositionalArgs func(cmd *Command, args []string) error

// NoArgs refuses any positional argument.
func NoArgs(cmd *Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// MaximumNArgs accepts at most n positional arguments.
func MaximumNArgs(n int) PositionalArgs {
	return func(_ *Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("accepts at most %d arg(s), received %d", n, len(args))
		}
		return nil
	}
}

// Name is the first word of Use.
func (c *Command) Name() string {
	name, _, _ := strings.Cut(c.Use, " ")
	return name
}

// CommandPath is the names from the root down to c ("kvcfg plan").
func (c *Command) CommandPath() string {
	if c.parent == nil {
		return c.Name()
	}
	return c.parent.CommandPath() + " " + c.Name()
}

// Flags returns the command's flags.
func (c *Command) Flags() *FlagSet {
	if c.flags == nil {
		c.flags = NewFlagSet(c.Name())
	}
	return c.flags
}

// AddCommand adds subcommands.
func (c *Command) AddCommand(cmds ...*Command) {
	for _, s := range cmds {
		if s == c {
			panic("cmdline: a command cannot be its own subcommand")
		}
		s.parent = c
		c.commands = append(c.commands, s)
	}
}

// Commands returns the subcommands in name order.
func (c *Command) Commands() []*Command {
	s := slices.Clone(c.commands)
	slices.SortFunc(s, func(a, b *Command) int { return strings.Compare(a.Name(), b.Name()) })
	return s
}

// MarkFlagRequired makes the flag called name required: running the
// command without it is an error.
func (c *Command) MarkFlagRequired(name string) error {
	if c.Flags().Lookup(name) == nil {
		return fmt.Errorf("cmdline: no such flag --%s", name)
	}
	c.required = append(c.required, name)
	return nil
}

// SetFlagErrorFunc sets what a flag that does not parse returns; the
// subcommands without their own inherit it.
func (c *Command) SetFlagErrorFunc(f func(*Command, error) error) { c.flagErr = f }

// SetArgs sets the command line (without the program name) that Execute
// runs instead of os.Args[1:].
func (c *Command) SetArgs(args []string) { c.args, c.argsSet = args, true }

// SetIn sets standard input for the tree below c.
func (c *Command) SetIn(r io.Reader) { c.in = r }

// SetOut sets standard output for the tree below c.
func (c *Command) SetOut(w io.Writer) { c.out = w }

// SetErr sets standard error for the tree below c.
func (c *Command) SetErr(w io.Writer) { c.errw = w }

// InOrStdin returns the input set on c or an ancestor, else os.Stdin.
func (c *Command) InOrStdin() io.Reader {
	for p := c; p != nil; p = p.parent {
		if p.in != nil {
			return p.in
		}
	}
	return os.Stdin
}

// OutOrStdout returns the output set on c or an ancestor, else os.Stdout.
func (c *Command) OutOrStdout() io.Writer {
	for p := c; p != nil; p = p.parent {
		if p.out != nil {
			return p.out
		}
	}
	return os.Stdout
}

// ErrOrStderr returns the error output set on c or an ancestor, else
// os.Stderr.
func (c *Command) ErrOrStderr() io.Writer {
	for p := c; p != nil; p = p.parent {
		if p.errw != nil {
			return p.errw
		}
	}
	return os.Stderr
}

// Context returns the context the command runs with.
func (c *Command) Context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// Execute runs the command line with a background context.
func (c *Command) Execute() error { return c.ExecuteContext(context.Background()) }

// ExecuteContext runs the command line (SetArgs, or os.Args[1:]): the
// subcommand its first word names, with its flags parsed and positional
// arguments checked. Help (-h, --help, "help [command]", or a command
// without RunE) goes to standard output and returns nil. Errors are
// returned, never printed.
func (c *Command) ExecuteContext(ctx context.Context) error {
	args := os.Args[1:]
	if c.argsSet {
		args = c.args
	}
	return c.execute(ctx, args)
}

func (c *Command) execute(ctx context.Context, args []string) error {
	c.ctx = ctx
	if len(c.commands) > 0 && len(args) > 0 {
		first := args[0]
		if first == "help" && c.parent == nil {
			target := c
			if len(args) > 1 {
				if target = c.find(args[1]); target == nil {
					return c.unknown(args[1])
				}
			}
			return target.writeHelp()
		}
		if sub := c.find(first); sub != nil {
			return sub.execute(ctx, args[1:])
		}
		if c.RunE == nil && !strings.HasPrefix(first, "-") {
			return c.unknown(first)
		}
	}
	positional := args
	if !c.DisableFlagParsing {
		err := c.Flags().Parse(args)
		if errors.Is(err, ErrHelp) {
			return c.writeHelp()
		}
		if err != nil {
			return c.flagError(err)
		}
		positional = c.Flags().Args()
	}
	if c.RunE == nil {
		if len(positional) > 0 {
			return c.unknown(positional[0])
		}
		return c.writeHelp()
	}
	if c.Args != nil {
		if err := c.Args(c, positional); err != nil {
			return err
		}
	}
	var missing []string
	for _, name := range c.required {
		if !c.Flags().Changed(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf(`required flag(s) "%s" not set`, strings.Join(missing, `", "`))
	}
	return c.RunE(c, positional)
}

// find returns the subcommand called name, nil for none.
func (c *Command) find(name string) *Command {
	for _, s := range c.commands {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// flagError passes err through the nearest flag error function.
func (c *Command) flagError(err error) error {
	for p := c; p != nil; p = p.parent {
		if p.flagErr != nil {
			return p.flagErr(c, err)
		}
	}
	return err
}

// unknown is the error for a word that names no subcommand, with the
// close names as suggestions.
func (c *Command) unknown(word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, c.CommandPath())
	var close []string
	for _, s := range c.Commands() {
		if n := s.Name(); strings.HasPrefix(n, word) || edit.Distance(n, word) <= 2 {
			close = append(close, n)
		}
	}
	if len(close) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(close, "\n\t")
	}
	return errors.New(msg)
}
