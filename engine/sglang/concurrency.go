package sglang

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/kvcfg/kvcfg/engine"
)

// The sources of ConcurrencyLimit, as SGLang names them
// (mem_cache/concurrency_limit.py), plus the request pool of releases
// before 0.5.3.
const (
	// LimitUser is --max-running-requests per DP worker.
	LimitUser = "max_running_requests"
	// LimitKVCapacity is max_total_num_tokens / 2 (KV_TOKENS_PER_REQUEST).
	LimitKVCapacity = "kv_capacity"
	// LimitHeuristic is the default when the user gives none:
	// tokens / context_len · 512, clamped to [2048, 4096].
	LimitHeuristic = "heuristic_estimate"
	// LimitMamba is the hybrid state pool: slots per shard / slots per request.
	LimitMamba = "mamba_state_pool"
	// LimitReqPool is the request pool of SGLang before 0.5.3: one row
	// more than max_num_reqs.
	LimitReqPool = "req_to_token_pool"
)

// kvTokensPerRequest is concurrency_limit.py's KV_TOKENS_PER_REQUEST.
const kvTokensPerRequest = 2

// ConcurrencyLimit is one upper bound on max_running_requests per DP
// worker (SGLang's ConcurrencyLimit): the smallest binds, ties going to
// the first listed.
type ConcurrencyLimit struct {
	// Source names the bound (LimitUser, LimitKVCapacity, ...).
	Source string `json:"source"`
	// Value is the requests per DP worker it allows.
	Value int64 `json:"value"`
	// Detail says how the value was derived, as SGLang prints it.
	Detail string `json:"detail"`
	// Remedy names the flags that raise it ("" for the user's own cap).
	Remedy string `json:"remedy,omitempty"`
}

// maxLimits is the most limits one resolution lists.
const maxLimits = 4

// Concurrency is how max_running_requests was resolved: every limit, the
// one that bound it and, in the newest SGLang, the line it logs. Its JSON
// form lists the limits under "limits".
type Concurrency struct {
	// MaxRunningRequests is the resolved value per DP worker.
	MaxRunningRequests int `json:"max_running_requests"`
	// Requested is the user's --max-running-requests per DP worker (0 =
	// not given).
	Requested int64 `json:"requested,omitempty"`
	// Binding indexes the limit that bound (Limits).
	Binding int `json:"binding"`
	// Line is the newest SGLang's report, logged at INFO, or at WARNING
	// when Downgrade (the user asked for more than they got); "" in older
	// releases, which warn in their own words (Warnings).
	Line      string `json:"log_line,omitempty"`
	Downgrade bool   `json:"downgrade,omitempty"`
	// Warnings are the older releases' warnings.
	Warnings []string `json:"warnings,omitempty"`
	// limits are the bounds in SGLang's reporting order, n of them (an
	// array: a plan resolves without allocating).
	limits [maxLimits]ConcurrencyLimit
	n      int
}

// Limits returns the bounds in SGLang's reporting order (a view of c).
func (c *Concurrency) Limits() []ConcurrencyLimit { return c.limits[:c.n:c.n] }

// Bound returns the binding limit (the zero limit when there is none).
func (c *Concurrency) Bound() ConcurrencyLimit {
	if c.Binding < 0 || c.Binding >= c.n {
		return ConcurrencyLimit{}
	}
	return c.limits[c.Binding]
}

// MarshalJSON writes c with its limits.
func (c Concurrency) MarshalJSON() ([]byte, error) {
	type plain Concurrency
	return json.Marshal(struct {
		plain
		Limits []ConcurrencyLimit `json:"limits"`
	}{plain(c), c.Limits()})
}

func (c *Concurrency) add(l ConcurrencyLimit) {
	if c.n < maxLimits {
		c.limits[c.n] = l
		c.n++
	}
}

// ResolveConcurrency resolves max_running_requests from its limits
// (docs/sglang.md#max-running-requests): the user's cap per DP worker or,
// without one, the [2048, 4096] heuristic; KV tokens ÷ 2; Mamba slots ÷
// slots per request. Before 0.5.3 (in.ReqPoolPlusOne) the request pool's
// rows replace KV tokens ÷ 2 under a user cap. The newest SGLang
// (in.Report) prints the result as one line naming the binding limit.
func ResolveConcurrency(in MaxReqsInput) (*Concurrency, error) {
	c := new(Concurrency)
	return c, c.resolve(in)
}

// resolve is ResolveConcurrency into c, whose own array holds the limits.
func (c *Concurrency) resolve(in MaxReqsInput) error {
	*c = Concurrency{}
	ctx := max(in.ContextLen, 1)
	est := int64(math.Min(float64(in.TokenCapacity)/float64(ctx)*512, 1<<40))
	est = max(min(est, 4096), 2048)
	dp := int64(max(in.AttnDP, 1))
	user := func() {
		c.Requested = int64(in.MaxRunningRequests) / dp
		c.add(ConcurrencyLimit{Source: LimitUser, Value: c.Requested, Detail: "--max-running-requests=" + strconv.Itoa(in.MaxRunningRequests)})
	}
	kv := ConcurrencyLimit{Source: LimitKVCapacity, Value: in.TokenCapacity / kvTokensPerRequest, Detail: "max_total_num_tokens / 2",
		Remedy: "raise --mem-fraction-static or lower the context length"}
	heur := ConcurrencyLimit{Source: LimitHeuristic, Value: est, Detail: "token_capacity / context_len * 512, clamped to [2048, 4096]",
		Remedy: "set --max-running-requests explicitly"}
	switch {
	case in.ReqPoolPlusOne && in.MaxRunningRequests > 0:
		user()
		c.add(ConcurrencyLimit{Source: LimitReqPool, Value: int64(in.MaxRunningRequests) + 1, Detail: "max_num_reqs + 1 rows",
			Remedy: "set --max-running-requests"})
	case in.ReqPoolPlusOne:
		c.add(kv)
		heur.Value, heur.Detail = est+1, "token_capacity / context_len * 512, clamped to [2048, 4096], + 1 row"
		c.add(heur)
	case in.MaxRunningRequests > 0:
		user()
		c.add(kv)
	default:
		c.add(kv)
		c.add(heur)
	}
	var ratio int64
	if in.Mambaish {
		ratio = int64(max(in.MambaRatio, 1))
		c.add(ConcurrencyLimit{Source: LimitMamba, Value: in.MaxMambaCacheSize / ratio, Detail: "max_mamba_cache_size per shard / slots per request",
			Remedy: mambaRemedy(c.Requested, ratio, dp)})
	}
	for i, l := range c.Limits() {
		if l.Value < c.limits[c.Binding].Value {
			c.Binding = i
		}
	}
	b := c.Bound()
	n := b.Value
	c.MaxRunningRequests = int(min(n, math.MaxInt32))
	if in.Report {
		c.Downgrade = c.Requested > 0 && n < c.Requested
		if c.Downgrade || !in.deferLine {
			c.Line = concurrencyLine(c, in)
		}
	} else {
		c.Warnings = legacyWarnings(c, in, ratio)
	}
	if in.Mambaish && n <= 0 {
		return refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. max_mamba_cache_size=%d with %d state slots per request", ErrNoRequests, in.MaxMambaCacheSize, ratio),
			Flag: "--max-mamba-cache-size", Value: fmt.Sprint(ratio * dp),
			Hint: fmt.Sprintf("set --max-mamba-cache-size %d or more, or raise --mamba-full-memory-ratio", ratio*dp),
		})
	}
	if n <= 0 {
		return refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: max_running_request is zero (token capacity %d)", ErrNoRequests, in.TokenCapacity),
			Flag: "--mem-fraction-static", Hint: "give the KV cache more memory",
		})
	}
	return nil
}

// mambaRemedy is state_pool_limit's remedy: with a target (the user's
// cap per DP worker) the exact --max-mamba-cache-size, else how to get one.
func mambaRemedy(target, slots, dp int64) string {
	sizing := "--max-running-requests to state a target and get an exact size"
	if target > 0 {
		sizing = "--max-mamba-cache-size " + strconv.FormatInt(target*slots*dp, 10) + " (memory permitting)"
	}
	return "try one of: " + sizing + ", a larger --mamba-full-memory-ratio, or --mamba-ssm-dtype bfloat16"
}

// appendDetail appends how l's value was derived, as SGLang prints it.
func appendDetail(b []byte, l ConcurrencyLimit, in MaxReqsInput, ratio int64) []byte {
	switch l.Source {
	case LimitKVCapacity:
		b = append(b, "max_total_num_tokens="...)
		b = strconv.AppendInt(b, in.TokenCapacity, 10)
		return append(b, " / 2"...)
	case LimitMamba:
		b = append(b, "max_mamba_cache_size="...)
		b = strconv.AppendInt(b, in.MaxMambaCacheSize, 10)
		b = append(b, " per shard / "...)
		b = strconv.AppendInt(b, ratio, 10)
		return append(b, " slots per request"...)
	}
	return append(b, l.Detail...)
}

// concurrencyLine is format_concurrency_report's message
// (concurrency_limit.py @ 038c37b).
func concurrencyLine(c *Concurrency, in MaxReqsInput) string {
	return string(appendConcurrencyLine(make([]byte, 0, 320), c, in))
}

// appendConcurrencyLine appends concurrencyLine to buf (a plan of the
// newest profile builds it with the pool's line in one allocation).
func appendConcurrencyLine(buf []byte, c *Concurrency, in MaxReqsInput) []byte {
	b := c.Bound()
	ratio := int64(max(in.MambaRatio, 1))
	if c.Downgrade {
		buf = append(buf, "max_running_requests reduced from the requested "...)
		buf = strconv.AppendInt(buf, c.Requested, 10)
		buf = append(buf, " to "...)
	} else {
		buf = append(buf, "max_running_requests="...)
	}
	buf = strconv.AppendInt(buf, b.Value, 10)
	buf = append(buf, " (per dp worker), bound by "...)
	buf = append(buf, b.Source...)
	buf = append(buf, " ("...)
	buf = appendDetail(buf, b, in, ratio)
	buf = append(buf, ')')
	first := true
	for i, l := range c.Limits() {
		if i == c.Binding {
			continue
		}
		if first {
			buf = append(buf, "; other limits: "...)
			first = false
		} else {
			buf = append(buf, ", "...)
		}
		buf = append(buf, l.Source...)
		buf = append(buf, '=')
		buf = strconv.AppendInt(buf, l.Value, 10)
	}
	buf = append(buf, '.')
	if b.Remedy != "" {
		buf = append(buf, " To raise it: "...)
		buf = append(buf, b.Remedy...)
		buf = append(buf, '.')
	}
	return buf
}

// legacyWarnings are the warnings of the releases before the concurrency
// report: the Mamba cap, and the reduction of a requested value by the KV
// capacity.
func legacyWarnings(c *Concurrency, in MaxReqsInput, ratio int64) []string {
	var warns []string
	b := c.Bound()
	capped := false
	if in.Mambaish {
		// The Mamba cap warns whenever it lowers the others' minimum.
		others := int64(math.MaxInt64)
		for _, l := range c.limits[:c.n-1] {
			others = min(others, l.Value)
		}
		capped = b.Value < others
		if capped {
			warns = append(warns, fmt.Sprintf("max_running_requests is capped to %d by the mamba state cache (max_mamba_cache_size=%d, %d state slots per request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.", b.Value, in.MaxMambaCacheSize, ratio))
		}
	}
	if c.Requested > 0 && b.Value < c.Requested && !capped {
		warns = append(warns, fmt.Sprintf("max_running_requests was reduced from the requested %d to %d (per dp worker) due to the available KV cache capacity.", c.Requested, b.Value))
	}
	return warns
}
