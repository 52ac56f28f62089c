package simulate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
)

// Request is one request of a workload (one JSONL trace line).
//
// Token identity: unless PromptIDs are given, the simulator makes the token
// ids up so that exactly the stated prefixes are shared. Tokens
// [0, PrefixTokens) come from the stream of PrefixGroup (every request of
// the group has the same ids there); the rest come from the stream of
// Session when it is non-zero (multi-turn: a turn's prompt is the previous
// turn's prompt and output plus a new message, so turns of one session
// share everything they have in common), otherwise from a stream of the
// request's own.
type Request struct {
	// ArrivalS is the arrival time in seconds from the start of the trace;
	// arrivals must not go back in time.
	ArrivalS float64 `json:"arrival_s"`
	// PromptTokens is the prompt length (len(PromptIDs) when those are given).
	PromptTokens int `json:"prompt_tokens"`
	// OutputTokens is the number of tokens generated (max_new_tokens, no
	// early stop).
	OutputTokens int `json:"output_tokens"`
	// PrefixGroup and PrefixTokens: the first PrefixTokens prompt tokens
	// are the group's (a shared system prompt).
	PrefixGroup  int `json:"prefix_group,omitempty"`
	PrefixTokens int `json:"prefix_tokens,omitempty"`
	// Session is a conversation id (0: none); see Request.
	Session int `json:"session,omitempty"`
	// PromptIDs are the prompt's token ids, for exact prefix matching.
	PromptIDs []uint32 `json:"prompt_ids,omitempty"`
}

// Validate reports every problem with the request.
func (r Request) Validate() error {
	var errs []error
	if math.IsNaN(r.ArrivalS) || math.IsInf(r.ArrivalS, 0) || r.ArrivalS < 0 {
		errs = append(errs, fmt.Errorf("arrival_s %v must be a finite number >= 0", r.ArrivalS))
	}
	p := r.PromptTokens
	if len(r.PromptIDs) > 0 {
		if r.PromptTokens != 0 && r.PromptTokens != len(r.PromptIDs) {
			errs = append(errs, fmt.Errorf("prompt_tokens %d disagrees with the %d prompt_ids", r.PromptTokens, len(r.PromptIDs)))
		}
		p = len(r.PromptIDs)
	}
	if p < 1 {
		errs = append(errs, fmt.Errorf("prompt_tokens %d must be at least 1", p))
	}
	if r.OutputTokens < 1 {
		errs = append(errs, fmt.Errorf("output_tokens %d must be at least 1", r.OutputTokens))
	}
	if r.PrefixTokens < 0 || (p >= 1 && r.PrefixTokens > p) {
		errs = append(errs, fmt.Errorf("prefix_tokens %d must be between 0 and prompt_tokens %d", r.PrefixTokens, p))
	}
	if r.PrefixGroup < 0 || r.Session < 0 {
		errs = append(errs, fmt.Errorf("prefix_group %d and session %d must not be negative", r.PrefixGroup, r.Session))
	}
	const maxLen = 1 << 26
	if p+r.OutputTokens > maxLen || p+r.OutputTokens < 0 {
		errs = append(errs, fmt.Errorf("prompt_tokens + output_tokens must be at most %d", maxLen))
	}
	return errors.Join(errs...)
}

func (r Request) promptLen() int {
	if len(r.PromptIDs) > 0 {
		return len(r.PromptIDs)
	}
	return r.PromptTokens
}

// Source yields a workload's requests in arrival order. Next returns
// io.EOF after the last one.
type Source interface {
	Next() (Request, error)
}

// TraceReader reads a JSONL trace one line at a time (blank lines and lines
// starting with # are skipped), so a trace of millions of requests is never
// held in memory.
type TraceReader struct {
	sc   *bufio.Scanner
	line int
	last float64
}

// maxTraceLine bounds one line of a JSONL trace (64 MiB: a request with a
// few million prompt_ids).
const maxTraceLine = 64 << 20

// NewTraceReader returns a reader of the JSONL trace r.
func NewTraceReader(r io.Reader) *TraceReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	return &TraceReader{sc: sc}
}

// Next implements Source.
func (t *TraceReader) Next() (Request, error) {
	for t.sc.Scan() {
		t.line++
		b := t.sc.Bytes()
		s := strings.TrimSpace(string(b))
		if s == "" || s[0] == '#' {
			continue
		}
		var r Request
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return Request{}, fmt.Errorf("%w: trace line %d: %w", ErrWorkload, t.line, err)
		}
		if dec.More() {
			return Request{}, fmt.Errorf("%w: trace line %d: more than one JSON object on the line", ErrWorkload, t.line)
		}
		if len(r.PromptIDs) > 0 && r.PromptTokens == 0 {
			r.PromptTokens = len(r.PromptIDs)
		}
		if err := r.Validate(); err != nil {
			return Request{}, fmt.Errorf("%w: trace line %d: %w", ErrWorkload, t.line, err)
		}
		if r.ArrivalS < t.last {
			return Request{}, fmt.Errorf("%w: trace line %d: arrival_s %v is before the previous line's %v (sort the trace by arrival)", ErrWorkload, t.line, r.ArrivalS, t.last)
		}
		t.last = r.ArrivalS
		return r, nil
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Request{}, fmt.Errorf("%w: trace line %d is longer than %d MiB, the longest line read (one request per line)", ErrWorkload, t.line+1, maxTraceLine>>20)
		}
		return Request{}, fmt.Errorf("%w: trace line %d: %w", ErrWorkload, t.line+1, err)
	}
	return Request{}, io.EOF
}

// SliceSource yields the requests of a slice.
type SliceSource struct {
	// Reqs are the requests, in arrival order.
	Reqs []Request
	i    int
}

// Next implements Source.
func (s *SliceSource) Next() (Request, error) {
	if s.i >= len(s.Reqs) {
		return Request{}, io.EOF
	}
	r := s.Reqs[s.i]
	s.i++
	if len(r.PromptIDs) > 0 && r.PromptTokens == 0 {
		r.PromptTokens = len(r.PromptIDs)
	}
	if err := r.Validate(); err != nil {
		return Request{}, fmt.Errorf("%w: request %d: %w", ErrWorkload, s.i-1, err)
	}
	return r, nil
}

// Distribution kinds of Lengths.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	DistLogNormal = "lognormal"
)

// Lengths is a token-length distribution: fixed (Mean), uniform on
// [Min, Max], or log-normal with median Mean and shape Sigma, clamped to
// [Min, Max] when those are set.
type Lengths struct {
	Kind  string  `json:"kind,omitempty"`
	Mean  int     `json:"mean"`
	Min   int     `json:"min,omitempty"`
	Max   int     `json:"max,omitempty"`
	Sigma float64 `json:"sigma,omitempty"`
}

func (l Lengths) validate(name string) error {
	var errs []error
	switch l.Kind {
	case "", DistFixed:
		if l.Mean < 1 {
			errs = append(errs, fmt.Errorf("%s %d must be at least 1", name, l.Mean))
		}
	case DistUniform:
		if l.Min < 1 || l.Max < l.Min {
			errs = append(errs, fmt.Errorf("%s uniform range [%d, %d] needs 1 <= min <= max", name, l.Min, l.Max))
		}
	case DistLogNormal:
		if l.Mean < 1 || !(l.Sigma > 0) || l.Sigma > 5 {
			errs = append(errs, fmt.Errorf("%s log-normal needs a median >= 1 and 0 < sigma <= 5 (got %d, %v)", name, l.Mean, l.Sigma))
		}
		if l.Max != 0 && l.Max < max(l.Min, 1) {
			errs = append(errs, fmt.Errorf("%s log-normal clamp [%d, %d] is empty", name, l.Min, l.Max))
		}
	default:
		errs = append(errs, fmt.Errorf("%s distribution %q is not fixed, uniform or lognormal", name, l.Kind))
	}
	return errors.Join(errs...)
}

func (l Lengths) draw(rng *rand.Rand) int {
	switch l.Kind {
	case DistUniform:
		return l.Min + rng.IntN(l.Max-l.Min+1)
	case DistLogNormal:
		v := int(math.Round(float64(l.Mean) * math.Exp(l.Sigma*rng.NormFloat64())))
		v = max(v, l.Min, 1)
		if l.Max > 0 {
			v = min(v, l.Max)
		}
		return v
	}
	return l.Mean
}

// Arrival processes of Generator.
const (
	ArrivalPoisson = "poisson"
	ArrivalFixed   = "fixed"
)

// Generator describes a synthetic workload; Source returns its requests.
type Generator struct {
	// Requests is the number of requests (multi-turn: turns in all).
	Requests int `json:"requests"`
	// Rate is the arrival rate in requests per second; 0 means all at t=0.
	Rate float64 `json:"rate"`
	// Arrival is ArrivalPoisson (default) or ArrivalFixed.
	Arrival string `json:"arrival,omitempty"`
	// Prompt and Output are the length distributions.
	Prompt Lengths `json:"prompt"`
	Output Lengths `json:"output"`
	// SharedPrefix tokens of every prompt come from one of PrefixGroups
	// shared system prompts (chosen uniformly); the prompt length is the
	// prefix plus the drawn length.
	SharedPrefix int `json:"shared_prefix,omitempty"`
	PrefixGroups int `json:"prefix_groups,omitempty"`
	// Turns > 1 makes multi-turn sessions: each turn's prompt is the
	// previous turn's prompt and output plus a drawn message, arriving
	// ThinkS seconds after the previous turn's arrival.
	Turns  int     `json:"turns,omitempty"`
	ThinkS float64 `json:"think_s,omitempty"`
	// Seed makes the workload reproducible.
	Seed uint64 `json:"seed"`
}

// Validate reports every problem with the generator.
func (g Generator) Validate() error {
	var errs []error
	if g.Requests < 1 || g.Requests > 100_000_000 {
		errs = append(errs, fmt.Errorf("requests %d must be between 1 and 100000000", g.Requests))
	}
	if math.IsNaN(g.Rate) || math.IsInf(g.Rate, 0) || g.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %v must be a finite number >= 0 (0: all at once)", g.Rate))
	}
	if g.Arrival != "" && g.Arrival != ArrivalPoisson && g.Arrival != ArrivalFixed {
		errs = append(errs, fmt.Errorf("arrival %q is not poisson or fixed", g.Arrival))
	}
	if err := g.Prompt.validate("prompt length"); err != nil {
		errs = append(errs, err)
	}
	if err := g.Output.validate("output length"); err != nil {
		errs = append(errs, err)
	}
	if g.SharedPrefix < 0 || g.PrefixGroups < 0 {
		errs = append(errs, fmt.Errorf("shared prefix %d and prefix groups %d must not be negative", g.SharedPrefix, g.PrefixGroups))
	}
	if g.Turns < 0 || g.Turns > 1000 || math.IsNaN(g.ThinkS) || g.ThinkS < 0 {
		errs = append(errs, fmt.Errorf("turns %d must be 0..1000 and think time %v >= 0", g.Turns, g.ThinkS))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrWorkload, err)
	}
	return nil
}

// Source returns the generator's requests in arrival order. Multi-turn
// sessions are interleaved by arrival; the generator holds only the
// sessions still in progress.
func (g Generator) Source() (Source, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	groups := g.PrefixGroups
	if g.SharedPrefix > 0 && groups == 0 {
		groups = 1
	}
	return &genSource{g: g, groups: groups, rng: rand.New(rand.NewPCG(g.Seed, 0x6b7663666773696d))}, nil
}

type pendingTurn struct {
	at      float64
	session int
	turn    int
	context int // prompt+output so far
	group   int
	left    int // turns after this one
}

type genSource struct {
	g       Generator
	groups  int
	rng     *rand.Rand
	emitted int
	started int
	clock   float64
	nextNew float64
	drawn   bool
	pending []pendingTurn // sessions waiting for their next turn
	owed    int           // turns promised to sessions in progress
}

func (s *genSource) interarrival() float64 {
	if s.g.Rate <= 0 {
		return 0
	}
	if s.g.Arrival == ArrivalFixed {
		return 1 / s.g.Rate
	}
	return s.rng.ExpFloat64() / s.g.Rate
}

func (s *genSource) Next() (Request, error) {
	if s.emitted >= s.g.Requests {
		return Request{}, io.EOF
	}
	turns := max(s.g.Turns, 1)
	canStart := s.emitted+s.owed < s.g.Requests
	if canStart && !s.drawn {
		s.nextNew = 0
		if s.started > 0 {
			s.nextNew = s.clock + s.interarrival()
		}
		s.drawn = true
	}
	pi := -1
	for i, p := range s.pending {
		if pi < 0 || p.at < s.pending[pi].at {
			pi = i
		}
	}
	var pt pendingTurn
	if pi >= 0 && (!canStart || s.pending[pi].at <= s.nextNew) {
		pt = s.pending[pi]
		s.pending = append(s.pending[:pi], s.pending[pi+1:]...)
		s.owed--
	} else {
		s.clock = s.nextNew
		s.drawn = false
		s.started++
		pt = pendingTurn{at: s.clock, session: s.started}
		pt.left = min(turns-1, s.g.Requests-s.emitted-1-s.owed)
		s.owed += pt.left
		if s.groups > 0 {
			pt.group = s.rng.IntN(s.groups)
		}
	}
	msg := s.g.Prompt.draw(s.rng)
	out := s.g.Output.draw(s.rng)
	r := Request{ArrivalS: pt.at, OutputTokens: out, PromptTokens: s.g.SharedPrefix + msg}
	if pt.turn > 0 {
		r.PromptTokens = pt.context + msg
	}
	if s.g.SharedPrefix > 0 {
		r.PrefixGroup, r.PrefixTokens = pt.group, s.g.SharedPrefix
	}
	if turns > 1 {
		r.Session = pt.session
	}
	s.emitted++
	if pt.left > 0 {
		s.pending = append(s.pending, pendingTurn{at: pt.at + s.g.ThinkS, session: pt.session, turn: pt.turn + 1,
			context: r.PromptTokens + out, group: pt.group, left: pt.left - 1})
	}
	return r, nil
}
