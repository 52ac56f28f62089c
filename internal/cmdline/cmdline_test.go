package cmdline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// testSet is a flag set with one flag of each kind.
type testSet struct {
	fs      *FlagSet
	output  string
	verbose bool
	all     bool
	n       int
	size    int64
	seed    uint64
	ratio   float64
	scale   float32
	timeout time.Duration
	engines []string
}

func newTestSet() *testSet {
	s := &testSet{fs: NewFlagSet("test")}
	s.fs.StringVarP(&s.output, "output", "o", "table", "output format")
	s.fs.BoolVarP(&s.verbose, "verbose", "v", false, "log more")
	s.fs.BoolVarP(&s.all, "all", "a", false, "everything")
	s.fs.IntVarP(&s.n, "concurrency", "n", 1, "requests")
	s.fs.Int64Var(&s.size, "max-body-bytes", 1<<20, "body limit")
	s.fs.Uint64Var(&s.seed, "seed", 0, "seed")
	s.fs.Float64Var(&s.ratio, "ratio", 0.5, "ratio")
	s.fs.Float32Var(&s.scale, "scale", 0, "scale")
	s.fs.DurationVar(&s.timeout, "timeout", 2*time.Minute, "deadline")
	s.fs.StringSliceVar(&s.engines, "engine", nil, "engines")
	return s
}

func (s *testSet) String() string {
	return fmt.Sprintf("o=%s v=%v a=%v n=%d size=%d seed=%d ratio=%g scale=%g timeout=%s engines=%q",
		s.output, s.verbose, s.all, s.n, s.size, s.seed, s.ratio, s.scale, s.timeout, s.engines)
}

func TestParse(t *testing.T) {
	def := newTestSet().String()
	tests := []struct {
		args []string
		want string   // the values after Parse ("" for the defaults)
		rest []string // positional arguments
		err  string   // error text ("" for none)
	}{
		{args: nil, want: def},
		{args: []string{"--output", "json"}, want: strings.Replace(def, "o=table", "o=json", 1)},
		{args: []string{"--output=json"}, want: strings.Replace(def, "o=table", "o=json", 1)},
		{args: []string{"-o", "yaml"}, want: strings.Replace(def, "o=table", "o=yaml", 1)},
		{args: []string{"-oyaml"}, want: strings.Replace(def, "o=table", "o=yaml", 1)},
		{args: []string{"-o=csv"}, want: strings.Replace(def, "o=table", "o=csv", 1)},
		{args: []string{"--output="}, want: strings.Replace(def, "o=table", "o=", 1)},
		{args: []string{"--verbose"}, want: strings.Replace(def, "v=false", "v=true", 1)},
		{args: []string{"--verbose=false"}, want: def},
		{args: []string{"-va"}, want: strings.Replace(strings.Replace(def, "v=false", "v=true", 1), "a=false", "a=true", 1)},
		{args: []string{"-van", "8"}, want: strings.Replace(strings.Replace(strings.Replace(def, "v=false", "v=true", 1), "a=false", "a=true", 1), "n=1", "n=8", 1)},
		{args: []string{"-n", "0x10"}, want: strings.Replace(def, "n=1", "n=16", 1)},
		{args: []string{"--timeout", "90s", "--ratio", "0.25", "--scale", "1e-3", "--seed", "7", "--max-body-bytes", "-1"},
			want: strings.NewReplacer("timeout=2m0s", "timeout=1m30s", "ratio=0.5", "ratio=0.25", "scale=0", "scale=0.001", "seed=0", "seed=7", "size=1048576", "size=-1").Replace(def)},
		{args: []string{"--engine", "sglang,vllm", "--engine", "trtllm"}, want: strings.Replace(def, "engines=[]", `engines=["sglang" "vllm" "trtllm"]`, 1)},
		// Positional arguments anywhere; "--" ends the flags; "-" is an argument.
		{args: []string{"MODEL", "-v", "-", "x"}, want: strings.Replace(def, "v=false", "v=true", 1), rest: []string{"MODEL", "-", "x"}},
		{args: []string{"-v", "--", "--output", "-x"}, want: strings.Replace(def, "v=false", "v=true", 1), rest: []string{"--output", "-x"}},
		// A value that looks like a flag is still the value.
		{args: []string{"--output", "--verbose"}, want: strings.Replace(def, "o=table", "o=--verbose", 1)},
		// Errors, in pflag's words.
		{args: []string{"--nope"}, err: "unknown flag: --nope"},
		{args: []string{"--nope=1"}, err: "unknown flag: --nope"},
		{args: []string{"-x"}, err: `unknown shorthand flag: 'x' in -x`},
		{args: []string{"-vx"}, err: `unknown shorthand flag: 'x' in -vx`},
		{args: []string{"--output"}, err: "flag needs an argument: --output"},
		{args: []string{"-o"}, err: `flag needs an argument: 'o' in -o`},
		{args: []string{"-n", "many"}, err: `invalid argument "many" for "-n, --concurrency" flag: strconv.ParseInt: parsing "many": invalid syntax`},
		{args: []string{"--seed", "-1"}, err: `invalid argument "-1" for "--seed" flag`},
		{args: []string{"--verbose=maybe"}, err: `invalid argument "maybe" for "-v, --verbose" flag`},
		{args: []string{"--timeout", "2"}, err: `invalid argument "2" for "--timeout" flag: time: missing unit in duration "2"`},
		{args: []string{"---x"}, err: "bad flag syntax: ---x"},
		{args: []string{"--=x"}, err: "bad flag syntax: --=x"},
	}
	for _, tt := range tests {
		s := newTestSet()
		err := s.fs.Parse(tt.args)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got := s.String(); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.args, got, tt.want)
		}
		if got := s.fs.Args(); fmt.Sprint(got) != fmt.Sprint(tt.rest) {
			t.Errorf("%q: args %q, want %q", tt.args, got, tt.rest)
		}
	}
}

// -h and --help are ErrHelp unless the set defines them; Changed and
// Visit report what the command line set.
func TestHelpAndChanged(t *testing.T) {
	for _, a := range []string{"-h", "--help", "-vh"} {
		if err := newTestSet().fs.Parse([]string{a}); !errors.Is(err, ErrHelp) {
			t.Errorf("%s: %v, want ErrHelp", a, err)
		}
	}
	s := newTestSet()
	var host string
	s.fs.StringVarP(&host, "host", "h", "", "host")
	if err := s.fs.Parse([]string{"-h", "example", "--ratio", "0.5"}); err != nil || host != "example" {
		t.Errorf("-h defined: %v %q", err, host)
	}
	var changed []string
	s.fs.Visit(func(f *Flag) { changed = append(changed, f.Name) })
	if fmt.Sprint(changed) != "[ratio host]" || !s.fs.Changed("ratio") || s.fs.Changed("output") || s.fs.Changed("nope") {
		t.Errorf("changed %v", changed)
	}
}

// Check reports every name and shorthand defined twice.
func TestCheck(t *testing.T) {
	s := newTestSet()
	if err := s.fs.Check(); err != nil {
		t.Fatal(err)
	}
	var x string
	s.fs.StringVarP(&x, "output", "v", "", "again")
	s.fs.StringVarP(&x, "long", "ab", "", "bad shorthand")
	err := s.fs.Check()
	for _, want := range []string{"--output defined twice", "-v defined twice", `shorthand "ab" of --long`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want %q", err, want)
		}
	}
}

func TestFlagUsages(t *testing.T) {
	got := newTestSet().fs.FlagUsages()
	for _, want := range []string{
		"  -a, --all                    everything\n",
		"      --engine strings         engines\n",
		"  -o, --output string          output format (default \"table\")\n",
		"  -n, --concurrency int        requests (default 1)\n",
		"      --timeout duration       deadline (default 2m0s)\n",
		"      --ratio float            ratio (default 0.5)\n",
		"      --scale float            scale\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("usages lack %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "--all") > strings.Index(got, "--verbose") {
		t.Errorf("not in name order:\n%s", got)
	}
}

// newTree is a root with two subcommands that record how they ran.
func newTree(ran *string) (*Command, *bytes.Buffer) {
	var out bytes.Buffer
	root := &Command{Use: "kvcfg", Short: "Plan KV caches"}
	root.SetOut(&out)
	root.SetErr(&out)
	var format, dtype string
	plan := &Command{Use: "plan [MODEL]", Short: "Plan one model", Long: "plan computes a pool.",
		Example: "  kvcfg plan --output json",
		Args:    MaximumNArgs(1),
		RunE: func(cmd *Command, args []string) error {
			*ran = fmt.Sprintf("plan %q -o %s ctx=%v", args, format, cmd.Context().Value(ctxKey{}))
			return nil
		}}
	plan.Flags().StringVarP(&format, "output", "o", "table", "output format")
	quant := &Command{Use: "quant", Short: "Encode values", Args: NoArgs,
		RunE: func(cmd *Command, args []string) error { *ran = "quant " + dtype; return nil }}
	quant.Flags().StringVar(&dtype, "dtype", "", "codec")
	if err := quant.MarkFlagRequired("dtype"); err != nil {
		panic(err)
	}
	serve := &Command{Use: "serve", Short: "Serve", DisableFlagParsing: true,
		RunE: func(cmd *Command, args []string) error { *ran = fmt.Sprintf("serve %q", args); return nil }}
	root.AddCommand(quant, plan, serve)
	return root, &out
}

type ctxKey struct{}

func TestExecute(t *testing.T) {
	tests := []struct {
		args    []string
		ran     string
		err     string
		outHas  []string
		flagErr bool
	}{
		{args: []string{"plan", "M", "-o", "json"}, ran: `plan ["M"] -o json ctx=v`},
		{args: []string{"plan", "a", "b"}, err: "accepts at most 1 arg(s), received 2"},
		{args: []string{"plan", "--nope"}, err: "flag error: unknown flag: --nope", flagErr: true},
		{args: []string{"quant", "--dtype", "fp8"}, ran: "quant fp8"},
		{args: []string{"quant"}, err: `required flag(s) "dtype" not set`},
		{args: []string{"quant", "x", "--dtype", "fp8"}, err: `unknown command "x" for "kvcfg quant"`},
		{args: []string{"serve", "--addr", ":1", "-h"}, ran: `serve ["--addr" ":1" "-h"]`},
		{args: []string{"plna"}, err: "unknown command \"plna\" for \"kvcfg\"\n\nDid you mean this?\n\tplan"},
		{args: []string{"zzz"}, err: `unknown command "zzz" for "kvcfg"`},
		{args: []string{"-x"}, err: "flag error: unknown shorthand flag: 'x' in -x", flagErr: true},
		{args: nil, outHas: []string{"Plan KV caches\n\nUsage:\n  kvcfg [command]\n\nAvailable Commands:\n  help  ", "  plan  Plan one model\n", "Use \"kvcfg [command] --help\""}},
		{args: []string{"--help"}, outHas: []string{"Available Commands:"}},
		{args: []string{"help", "plan"}, outHas: []string{"plan computes a pool.\n\nUsage:\n  kvcfg plan [MODEL] [flags]\n\nExamples:\n  kvcfg plan --output json\n\nFlags:\n  -h, --help            help for plan\n  -o, --output string   output format (default \"table\")\n"}},
		// The help shows the default, not what the command line set first.
		{args: []string{"plan", "-o", "json", "--help"}, outHas: []string{"Usage:\n  kvcfg plan [MODEL] [flags]", `output format (default "table")`}},
		{args: []string{"help", "nope"}, err: `unknown command "nope" for "kvcfg"`},
	}
	for _, tt := range tests {
		var ran string
		root, out := newTree(&ran)
		root.SetFlagErrorFunc(func(_ *Command, err error) error { return fmt.Errorf("flag error: %w", err) })
		root.SetArgs(tt.args)
		err := root.ExecuteContext(context.WithValue(t.Context(), ctxKey{}, "v"))
		switch {
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case ran != tt.ran:
			t.Errorf("%q: ran %q, want %q", tt.args, ran, tt.ran)
		}
		for _, want := range tt.outHas {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q: output lacks %q:\n%s", tt.args, want, out.String())
			}
		}
	}
}

// FuzzParse: no command line panics, and one that parses leaves every
// argument either to a flag or to the positional list, in order.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"", "-o json M", "-van 8 -- -x", "--engine=a,b --engine c", "---x", "-o", "--output= -", "-h"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		s := newTestSet()
		err := s.fs.Parse(args)
		if err != nil {
			return
		}
		// Every positional argument appears in args, in order.
		i := 0
		for _, a := range s.fs.Args() {
			for i < len(args) && args[i] != a {
				i++
			}
			if i == len(args) {
				t.Fatalf("%q: positional %q not in the command line (or out of order): %q", args, a, s.fs.Args())
			}
			i++
		}
	})
}
