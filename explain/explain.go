// Package explain reads an inference engine's KV-cache error or warning
// (a pasted log line or exception text from SGLang, vLLM or TensorRT-LLM), says what it
// means and which knob to turn, with a value taken from the numbers in the
// message. Advise goes further when the launch flags are known: it plans
// the launch and searches the knob's value that makes it start.
package explain

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/plan"
)

// ErrUnrecognized reports text that matches no known engine message.
var ErrUnrecognized = errors.New("explain: unrecognized message")

// Engines.
const (
	SGLang = "sglang"
	VLLM   = "vllm"
	TRTLLM = "trtllm"
	// Any marks a message every engine prints.
	Any = engine.Any
)

// Explanation is what an engine message means and what to change.
type Explanation struct {
	// Engine is "sglang", "vllm" or "any" (a message both print).
	Engine string `json:"engine"`
	// Kind names the message ("no_kv_memory", "max_seq_len_too_long", ...).
	Kind string `json:"kind"`
	// Match is the part of the input that was recognised.
	Match string `json:"match"`
	// Meaning says what happened, in the engine's own terms.
	Meaning string `json:"meaning"`
	// Knob is the flag (or environment variable) to change.
	Knob string `json:"knob"`
	// Value is a value of Knob that follows from the message's numbers, ""
	// when the message does not carry enough to compute one.
	Value string `json:"value,omitempty"`
	// Advice says what to do, with the numbers.
	Advice string `json:"advice"`
	// Alternatives are other knobs that also help.
	Alternatives []string `json:"alternatives,omitempty"`
	// Numbers are the figures read from the message.
	Numbers map[string]float64 `json:"numbers,omitempty"`
	// Launch are the launch's own settings the message states, as request
	// keys and values as a plan request takes them ("mem_fraction_static":
	// "0.7" from SGLang's not-enough-memory error that quotes the current
	// fraction, "kv_cache_memory": "8.56GiB" from the KV budget vLLM says
	// was available); Advise plans with them where the flags give none.
	Launch map[string]string `json:"launch,omitempty"`
	// Readings are the memory measurements elsewhere in the pasted log
	// (SGLang's "avail mem" before and after loading weights, vLLM's
	// "Available KV cache memory"); Advise plans with them.
	Readings *Readings `json:"readings,omitempty"`
}

// rule recognises one message: an engine's pattern, converted.
type rule struct {
	engine, kind string
	re           *regexp.Regexp
	names        []string // one per capture group
	severity     engine.Severity
	launch       map[string]string // group name to request key
	build        func(e *Explanation, n map[string]float64, s []string)
}

// rules are compiled on first use: a process that never explains (kvcfg
// plan) pays nothing for them. Each engine's messages come from its
// package; the order (SGLang, the messages every engine prints, vLLM,
// TensorRT-LLM) breaks ties between patterns matching at one place.
var rules = sync.OnceValue(func() []rule {
	var rs []rule
	for _, ps := range [][]engine.Pattern{sglang.Patterns(), engine.Patterns(), vllm.Patterns(), trtllm.Patterns()} {
		for _, p := range ps {
			rs = append(rs, ruleOf(p))
		}
	}
	return rs
})

// ruleOf converts an engine's pattern: its advice fills the explanation,
// with the knob as kvcfg's flag for the request key (or the engine's own
// spelling, when the pattern gives one).
func ruleOf(p engine.Pattern) rule {
	return rule{engine: p.Engine, kind: p.Name, re: p.Regexp, names: p.Groups, severity: p.Severity, launch: p.Launch,
		build: func(e *Explanation, n map[string]float64, s []string) {
			a := p.Advise(n, s)
			e.Meaning, e.Value, e.Advice, e.Alternatives = a.Meaning, a.Value, a.Text, a.Alternatives
			e.Knob = a.Flag
			if e.Knob == "" {
				e.Knob = knob(a.Knob)
			}
		}}
}

// Explain recognises an engine message in text (a log line, an exception,
// or a whole log: the first known message wins) and explains it.
func Explain(text string) (*Explanation, error) {
	t := strings.Join(strings.Fields(text), " ") // engines wrap long messages
	if t == "" {
		return nil, ErrNoInput
	}
	best, bestAt := -1, len(t)+1
	var bestLoc []int
	for i, r := range rules() {
		loc := r.re.FindStringSubmatchIndex(t)
		if loc != nil && loc[0] < bestAt {
			best, bestAt, bestLoc = i, loc[0], loc
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("%w: no SGLang, vLLM or TensorRT-LLM KV-cache message found (run `kvcfg explain --list` for the known ones)", ErrUnrecognized)
	}
	r := rules()[best]
	e := &Explanation{Engine: r.engine, Kind: r.kind, Match: t[bestLoc[0]:bestLoc[1]], Numbers: map[string]float64{}}
	subs := make([]string, len(r.names))
	for i := range r.names {
		a, b := bestLoc[2+2*i], bestLoc[3+2*i]
		if a < 0 {
			continue
		}
		subs[i] = t[a:b]
		if r.names[i] == "" {
			continue
		}
		if v, err := strconv.ParseFloat(strings.ReplaceAll(subs[i], ",", ""), 64); err == nil {
			e.Numbers[r.names[i]] = v
		}
	}
	e.Launch = r.launchOf(e.Numbers)
	if len(e.Numbers) == 0 {
		e.Numbers = nil
	}
	r.build(e, e.Numbers, subs)
	if rd := ReadMeasurements(t); !rd.Empty() {
		e.Readings = &rd
	}
	return e, nil
}

// launchOf is the launch's settings among the numbers read: each group
// the pattern names as a request key, its value formatted as a plan
// request takes it (a "*_gib" group in GiB); nil when there are none.
func (r rule) launchOf(numbers map[string]float64) map[string]string {
	var out map[string]string
	for group, key := range r.launch {
		v, ok := numbers[group]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = strconv.FormatFloat(v, 'f', -1, 64)
		if strings.HasSuffix(group, "_gib") {
			out[key] += "GiB"
		}
	}
	return out
}

// Known lists the kinds of message Explain recognises, as "engine/kind".
func Known() []string {
	rs := rules()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.engine + "/" + r.kind
	}
	return out
}

// knob is the flag of the request key key, from the flag table
// (plan/flags.go), so that a knob explain names is one kvcfg and the
// engine take; an environment variable (upper case) stays as it is.
func knob(key string) string {
	if key == "" || strings.ToUpper(key) == key { // none, or an environment variable
		return key
	}
	if f, ok := plan.LookupFlag(key); ok {
		return f.Name
	}
	return "--" + strings.ReplaceAll(key, "_", "-")
}
