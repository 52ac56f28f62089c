// Package engine is the contract every inference engine package of kvcfg
// (engine/sglang, engine/vllm, engine/trtllm) keeps, and the types they
// share: one refusal type and one error-message pattern type.
//
// # Entry points
//
// Each engine package exports the same functions, with its own Input,
// Result and Profile types (the generic function types below spell them):
//
//	// Plan sizes the engine's KV cache for model spec launched with in. A
//	// refusal returns the Result filled up to the refusal and a *Refusal.
//	func Plan(spec *model.Spec, in Input) (*Result, error)
//
//	// ResolveProfile maps a version string ("" for the newest) to the
//	// profile that sizes it, with a note saying why when the version was
//	// not a profile name.
//	func ResolveProfile(version string) (Profile, string, error)
//
//	// AcceptedKVDTypes lists the --kv-cache-dtype values profile p takes.
//	func AcceptedKVDTypes(p Profile) []string
//
//	// MaxConcurrency is how many requests of contextLen tokens the pools
//	// of res hold at once, by the engine's rule (0 when none fits).
//	func MaxConcurrency(res *Result, contextLen int) float64
//
//	// Patterns are the engine's log and error messages about KV cache
//	// sizing and admission that explain recognises, most specific first.
//	func Patterns() []Pattern
//
// An engine's Input has a Validate method that reports every problem at
// once.
//
// # Refusals
//
// When the engine itself would refuse the launch (an assertion at startup,
// a pool too small for one request, a flag value it rejects), Plan returns a
// *Refusal: the engine's message in its own words, the flag to change, the
// value that fixes it when one is known, and a hint. Every refusal satisfies
// errors.Is(err, ErrRefused) and errors.Is(err, <the engine's sentinel>).
// Callers never match an engine's message text: the engine names the fix.
package engine

import (
	"errors"
	"regexp"
	"strings"

	"github.com/kvcfg/kvcfg/model"
)

// ErrRefused is wrapped by every *Refusal: the engine would not start (or
// would reject the request) as launched.
var ErrRefused = errors.New("engine: refused")

// Refusal is an engine's refusal of a launch, with the fix it names.
type Refusal struct {
	// Engine is the engine's name: "sglang", "vllm" or "trtllm".
	Engine string `json:"engine"`
	// Message is what the engine raises or logs, verbatim.
	Message string `json:"message"`
	// Flag is the flag (or option key) to change: "--mem-fraction-static",
	// "--max-model-len", "free_gpu_memory_fraction"; "" when none helps.
	Flag string `json:"flag,omitempty"`
	// Value is a value of Flag that fixes the launch, "" when none is known.
	Value string `json:"value,omitempty"`
	// Hint says what to do, in one line.
	Hint string `json:"hint,omitempty"`
	// Err is the cause: a sentinel of the engine package, or an error
	// wrapping one, so that errors.Is(err, sglang.ErrPoolTooSmall) holds.
	Err error `json:"-"`
}

// Error is the cause's text when it already carries Message (SGLang's
// sentinels wrapped with its words), else "engine: message"; then the hint
// in parentheses.
func (r *Refusal) Error() string {
	var s string
	if r.Err != nil && r.Message != "" && strings.HasSuffix(r.Err.Error(), r.Message) {
		s = r.Err.Error()
	} else {
		s = r.Message
		if r.Engine != "" {
			s = r.Engine + ": " + s
		}
	}
	if r.Hint != "" {
		s += " (" + r.Hint + ")"
	}
	return s
}

// Unwrap returns the cause.
func (r *Refusal) Unwrap() error { return r.Err }

// Is makes errors.Is(err, ErrRefused) hold for every refusal (without
// allocating, as a multi-error Unwrap would on every call).
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// Severity says whether a message stops the launch (or the request).
type Severity string

// The severities.
const (
	// Warning lines are printed and the launch goes on.
	Warning Severity = "warning"
	// Fatal lines are errors: the launch or the request fails.
	Fatal Severity = "error"
)

// Number is the regular expression of a number as engines print it
// ("16,384", "0.835", "-3"), one capture group; patterns build on it.
const Number = `(-?[\d][\d,]*(?:\.\d+)?|-?\.\d+)`

// Pattern is one engine message that explain recognises: a regular
// expression over a log line, the names of what its groups capture, and
// the engine's advice for it.
type Pattern struct {
	// Engine is the engine that prints it; Any for a message every engine
	// prints (CUDA's out-of-memory error).
	Engine string `json:"engine"`
	// Name is a short stable identifier ("no_kv_memory").
	Name string `json:"name"`
	// Regexp matches the line; Expr is its source.
	Regexp *regexp.Regexp `json:"-"`
	Expr   string         `json:"regexp"`
	// Groups names the capture groups, one each: a number's name, or "" for
	// a group read as text only.
	Groups []string `json:"groups,omitempty"`
	// Severity is Warning or Fatal.
	Severity Severity `json:"severity"`
	// Advise reads a match: numbers holds each named group that parsed as
	// a number, text every group as matched ("" when it did not take part).
	Advise func(numbers map[string]float64, text []string) Advice `json:"-"`
	// Launch maps the groups that read back the launch's own settings to
	// their kvcfg request keys: SGLang's "Current value:
	// mem_fraction_static=0.7" is the launch's mem_fraction_static, vLLM's
	// "available KV cache memory (8.56 GiB)" its measured kv_cache_memory.
	// A group named "*_gib" is in GiB. One key is not a request key:
	// KVCacheTokens, the pool's size in tokens as the engine reported it,
	// which explain pins as whole blocks of the plan's block size
	// (--num-gpu-blocks-override on vLLM). explain plans the launch with
	// these where the caller's flags give none, so that its advice starts
	// from the launch that failed, not from the defaults.
	Launch map[string]string `json:"launch,omitempty"`
}

// KVCacheTokens is the Launch key of the KV pool's size in tokens.
const KVCacheTokens = "kv_cache_tokens"

// WithLaunch returns p with Launch set to launch (group name to request
// key).
func (p Pattern) WithLaunch(launch map[string]string) Pattern {
	p.Launch = launch
	return p
}

// Any marks a message every engine prints.
const Any = "any"

// Advice is what a matched message means and what to change.
type Advice struct {
	// Meaning says what happened, in the engine's own terms.
	Meaning string `json:"meaning"`
	// Knob is the setting to change as a kvcfg request key in snake_case
	// ("mem_fraction_static"), or an environment variable
	// ("CUDA_VISIBLE_DEVICES"); "" when none helps.
	Knob string `json:"knob,omitempty"`
	// Flag is the engine's own spelling of Knob when it is not kvcfg's
	// flag ("--kv_cache_free_gpu_memory_fraction", "kv_cache_config.dtype").
	Flag string `json:"flag,omitempty"`
	// Value is a value of Knob that follows from the message's numbers.
	Value string `json:"value,omitempty"`
	// Text says what to do, with the numbers.
	Text string `json:"advice"`
	// Alternatives are other knobs that also help.
	Alternatives []string `json:"alternatives,omitempty"`
}

// NewPattern compiles expr into a Pattern of engine eng.
func NewPattern(eng, name string, sev Severity, expr string, groups []string, advise func(map[string]float64, []string) Advice) Pattern {
	return Pattern{Engine: eng, Name: name, Regexp: regexp.MustCompile(expr), Expr: expr, Groups: groups, Severity: sev, Advise: advise}
}

// Patterns are the messages every engine prints (Engine Any).
func Patterns() []Pattern {
	return []Pattern{
		NewPattern(Any, "cuda_out_of_memory", Fatal, `(?:CUDA|HIP) out of memory\. Tried to allocate `+Number+` (GiB|MiB|KiB)`,
			[]string{"tried", ""},
			func(_ map[string]float64, s []string) Advice {
				return Advice{
					Meaning:      "A " + s[0] + " " + s[1] + " allocation at run time (activations, CUDA graphs, sampling buffers) found no free memory: the engine's static pools (weights + KV cache) left too little outside them.",
					Knob:         "mem_fraction_static",
					Text:         "SGLang: lower --mem-fraction-static by 0.02-0.05 (the reserve outside the pools grows by that share of the free memory) or lower --chunked-prefill-size / --cuda-graph-max-bs. vLLM: lower --gpu-memory-utilization or --max-num-batched-tokens.",
					Alternatives: []string{"--gpu-memory-utilization (vLLM)", "--chunked-prefill-size", "--cuda-graph-max-bs", "--max-num-batched-tokens (vLLM)"},
				}
			}),
	}
}

// The contract's function types, for an engine's Input (In), Result (Res)
// and Profile (P): tests assign each engine's functions to them.
type (
	// PlanFunc is the shape of Plan.
	PlanFunc[In, Res any] func(spec *model.Spec, in In) (*Res, error)
	// ResolveProfileFunc is the shape of ResolveProfile.
	ResolveProfileFunc[P any] func(version string) (P, string, error)
	// AcceptedKVDTypesFunc is the shape of AcceptedKVDTypes.
	AcceptedKVDTypesFunc[P any] func(p P) []string
	// MaxConcurrencyFunc is the shape of MaxConcurrency.
	MaxConcurrencyFunc[Res any] func(res *Res, contextLen int) float64
	// PatternsFunc is the shape of Patterns.
	PatternsFunc func() []Pattern
)
