// Package cli wires the kvcfg commands (cobra) to the library packages,
// the Hugging Face Hub client and the HTTP server. It is the only package
// besides cmd/kvcfg that prints or reads flags.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Main runs the kvcfg command line with args and returns the exit code.
//
// Standard output is buffered and written when the command ends: the
// printers write cell by cell (a plan took 150 write calls). Nothing
// long-running writes there (serve logs and progress bars go to standard
// error), and it is flushed before an error is printed.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := bufio.NewWriterSize(stdout, 64<<10)
	code, abandoned := execute(ctx, args, stdin, out, stderr)
	if abandoned {
		return code // the command may still write to out: its output is dropped
	}
	if err := out.Flush(); err != nil && code == 0 {
		fmt.Fprintln(stderr, "kvcfg: writing the output:", err)
		return 1
	}
	return code
}

// signalGrace is how long a command has to return after SIGINT or SIGTERM
// canceled its context; then Main returns without it (serve excepted: its
// --shutdown-timeout bounds the drain). A second signal stops at once.
const signalGrace = 750 * time.Millisecond

// signalsReady is called once SIGINT and SIGTERM cancel the context
// instead of ending the process (the signal tests wait for it).
var signalsReady = func() {}

// execute is Main with a buffered standard output, flushed before errors.
// abandoned reports that the command was left running after a signal
// (Main then returns while it may still write to stdout).
func execute(ctx context.Context, args []string, stdin io.Reader, stdout *bufio.Writer, stderr io.Writer) (code int, abandoned bool) {
	only := invoked(args)
	if c := commandNamed(only); c != nil && !c.signals {
		// The short commands keep the default action of SIGINT and
		// SIGTERM, which ends the process at once and spares every plan
		// the signal goroutine and its thread.
		return report(runCommand(ctx, args, only, stdin, stdout, stderr), stdout, stderr), false
	}
	// SIGINT and SIGTERM cancel the context: serve shuts down gracefully,
	// a simulation, search or measurement stops; the command runs on its
	// own goroutine so that one blocked in a read cannot hold the process.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	signalsReady()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- runCommand(ctx, args, only, stdin, stdout, stderr) }()
	var got os.Signal
	var expired <-chan time.Time
	for {
		select {
		case err := <-done:
			if got != nil && err != nil {
				_ = stdout.Flush() // what the command printed comes before the message
				return stopped(stderr, only, got), false
			}
			return report(err, stdout, stderr), false
		case sig := <-sigs:
			if got != nil {
				return stopped(stderr, only, got), true
			}
			got = sig
			cancel(fmt.Errorf("kvcfg: %s", signalWords(sig)))
			if only != "serve" {
				expired = time.After(signalGrace)
			}
		case <-expired:
			return stopped(stderr, only, got), true
		}
	}
}

// runCommand builds the command tree and runs the command line.
func runCommand(ctx context.Context, args []string, only string, stdin io.Reader, stdout *bufio.Writer, stderr io.Writer) error {
	// Hidden behind a plain io.Writer, so that a writer stacked on it
	// (encoding/csv's bufio.NewWriter would return stdout itself) flushes
	// into the buffer, not through it: Main decides when output is final.
	root := newRoot(stdin, struct{ io.Writer }{stdout}, stderr, only)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// report prints a command's error and returns the exit status.
func report(err error, stdout *bufio.Writer, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	_ = stdout.Flush() // what the command printed comes before the error
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "kvcfg:", ee.err)
		}
		return ee.code
	}
	// cobra ends an unknown command's suggestions with a newline.
	fmt.Fprintln(stderr, "kvcfg:", strings.TrimRight(err.Error(), "\n"))
	if usageError(err) {
		return 2
	}
	return 1
}

// stopped prints that the command stopped on sig and returns the shell's
// status for it, 128 + the signal number (130 for SIGINT, 143 for SIGTERM).
func stopped(stderr io.Writer, only string, sig os.Signal) int {
	what := "kvcfg"
	if only != "" {
		what = only
	}
	fmt.Fprintf(stderr, "kvcfg: %s stopped: %s\n", what, signalWords(sig))
	n, ok := sig.(syscall.Signal)
	if !ok {
		return 1
	}
	return 128 + int(n)
}

// signalWords says what a signal means: "interrupted (SIGINT)".
func signalWords(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "terminated (SIGTERM)"
	}
	return "interrupted (SIGINT)"
}

// usageError reports the errors cobra itself returns for a command line it
// cannot take (an unknown command, a required flag missing): bad input, so
// exit status 2 like every other input problem.
func usageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "required flag(s) ", "unknown flag: ", "unknown shorthand flag: "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// argsAreInput makes every command's positional-argument check report
// bad input (exit status 2), recursively.
func argsAreInput(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &exitError{code: 2, err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		argsAreInput(sub)
	}
}

// NewRootCommand builds the kvcfg command tree writing to the given streams.
func NewRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRoot(stdin, stdout, stderr, "")
}

// invoked returns the subcommand a command line runs when its first word
// names one ("" otherwise: help, completion, an unknown command or a flag
// first, which need the whole tree).
func invoked(args []string) string {
	if len(args) == 0 {
		return ""
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.name
		}
	}
	return ""
}

// newRoot builds the tree; with only set, the other subcommands are
// placeholders with their name and summary (what the root's help lists),
// so a process pays for building one command's flags, not all of them
// (the planning commands each bind the whole flag table).
func newRoot(stdin io.Reader, stdout, stderr io.Writer, only string) *cobra.Command {
	root := &cobra.Command{
		Use:           "kvcfg",
		Short:         "Plan the KV cache of LLM inference servers (SGLang, vLLM, TensorRT-LLM) before renting a GPU",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// A flag that does not parse or does not exist is bad input on every
	// command: exit status 2 (subcommands inherit this).
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 2, err: err} })
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, c := range commands {
		if only != "" && c.name != only {
			root.AddCommand(&cobra.Command{Use: c.name, Short: c.short, DisableFlagParsing: true,
				RunE: func(*cobra.Command, []string) error { return fmt.Errorf("%s: not built in this process", c.name) }})
			continue
		}
		root.AddCommand(c.mk())
	}
	// cobra's completion command (kvcfg completion bash|zsh|fish|powershell,
	// five commands with long help texts) only when no command of the table
	// runs: neither it nor the hidden __complete its scripts call is in the
	// table, so a command line naming them builds every command.
	if only == "" {
		root.InitDefaultCompletionCmd()
		shellsAreInput(root)
		completeFlagValues(root)
		helpTopicsAreInput(root)
	} else {
		root.CompletionOptions.DisableDefaultCmd = true
	}
	argsAreInput(root)
	return root
}

// helpTopicsAreInput makes `kvcfg help WORD`, where WORD names no command,
// the unknown-command error (exit status 2) instead of cobra's "Unknown
// help topic" and the usage.
func helpTopicsAreInput(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		run := c.Run
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if _, _, err := root.Find(args); err != nil {
				return err
			}
			run(cmd, args)
			return nil
		}
	}
}

// command is one subcommand: its name and summary (TestCommandTable keeps
// them equal to what the constructor builds) and its constructor, which
// lives in its own file.
type command struct {
	name, short string
	mk          func() *cobra.Command
	// signals: the command runs long, so SIGINT and SIGTERM cancel its
	// context instead of ending the process.
	signals bool
}

// commandNamed returns the table's entry for name, nil for none.
func commandNamed(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// commands lists the subcommands in the order help shows them.
var commands = []command{
	{"version", "Print the kvcfg module version, commit and Go version", newVersionCmd, false},
	{"inspect", "Print the KV-relevant shape of a model (config.json, model directory, catalog name or Hub id)", newInspectCmd, false},
	{"models", "List the models of the built-in catalog (usable as --model NAME)", newModelsCmd, false},
	{"plan", "Compute the KV cache an engine would build for a model, GPU and flags", newPlanCmd, false},
	{"gpus", "List the GPUs kvcfg knows (names accepted by --gpu)", newGPUsCmd, false},
	{"quant", "Encode float values from stdin with a KV codec and show codes, scales and payload bytes", newQuantCmd, false},
	{"quant-error", "Measure the round-trip error of each KV cache dtype on real or synthetic KV tensors", newQuantErrorCmd, true},
	{"serve", "Serve the planning HTTP API, the web page with charts, and Prometheus metrics", newServeCmd, true},
	{"compare", "Plan one model and GPU on SGLang, vLLM and TensorRT-LLM side by side", newCompareCmd, false},
	{"fit", "Find the cheapest GPU setups that serve N concurrent requests of a context length", newFitCmd, true},
	{"explain", "Explain an SGLang, vLLM or TensorRT-LLM KV-cache error and say which knob to turn", newExplainCmd, false},
	{"validate", "Predict the public real runs of the validation table before launch and print each run's KV-memory error", newValidateCmd, false},
	{"simulate", "Replay a workload through the engine's KV admission, retraction/preemption and prefix cache", newSimulateCmd, true},
}

// exitError carries a non-default exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// InputError marks err as bad input: Main prints it and exits with status
// 2, as for every other input problem.
func InputError(err error) error { return &exitError{code: 2, err: err} }

// Output formats accepted by -o.
const (
	outTable    = "table"
	outJSON     = "json"
	outYAML     = "yaml"
	outMarkdown = "markdown"
	outCSV      = "csv"
)

// writeStructured writes v as JSON or YAML; ok is false for other formats.
func writeStructured(w io.Writer, format string, v any) (ok bool, err error) {
	switch strings.ToLower(format) {
	case outJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case outYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// checkFormat reports an error unless format is one of allowed.
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if strings.EqualFold(format, a) {
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q (accepted: %s)", format, strings.Join(allowed, ", "))
}
