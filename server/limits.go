package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
)

// Error kinds of the server's own limits.
const (
	kindBusy       = "busy"        // 503: every heavy slot taken
	kindTimeout    = "timeout"     // 504: past Config.RequestTimeout
	kindOverBudget = "over_budget" // 422: past Config.MaxSimSteps
	kindBodyRead   = "body_read"   // 400 or 408: the body ended early or came too slowly
)

// busyRetryAfter is the Retry-After of a 503 for a full server, in
// seconds.
const busyRetryAfter = 5

// errBusy answers a heavy request when every slot is taken.
var errBusy = &apiError{status: http.StatusServiceUnavailable, kind: kindBusy, retryAfter: busyRetryAfter,
	body: ErrorBody{Error: fmt.Sprintf("server busy: it runs its limit of simulations and fits at once (serve --heavy-concurrency); retry in %d s", busyRetryAfter)}}

// errStepBudget cancels a simulation past Config.MaxSimSteps.
var errStepBudget = errors.New("server: step budget reached")

// withDeadline returns ctx ending at the request's deadline: RequestTimeout
// after its handler began (ctx carries the middleware's requestInfo; without
// it, from now). Work that may take long (a Hub read, a simulation, a fit)
// runs under it, so that it ends, and its client gets a 504, before the
// write timeout closes the connection unanswered; a plan, well under a
// millisecond, does not pay for the timer.
func (s *Server) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	start := time.Now()
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok && !info.start.IsZero() {
		start = info.start
	}
	return context.WithDeadline(ctx, start.Add(s.cfg.RequestTimeout))
}

// heavy wraps a simulation or fit endpoint: it runs fn in one of the
// server's Config.HeavyConcurrency slots (none free: 503 with Retry-After,
// at once), in a goroutine of its own so that the client is answered when
// ctx ends even if fn is slow to notice, and recovers fn's panics as a 500
// (the process stays up). The slot is freed when fn returns, not before:
// work that outlives its client still counts against the limit.
func heavy[Req, Resp any](s *Server, fn func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	type result struct {
		resp Resp
		err  error
	}
	return func(ctx context.Context, req Req) (Resp, error) {
		var zero Resp
		select {
		case s.heavy <- struct{}{}:
		default:
			return zero, errBusy
		}
		ctx, cancel := s.withDeadline(ctx)
		defer cancel()
		done := make(chan result, 1)
		go func() {
			defer func() { <-s.heavy }()
			defer func() {
				if p := recover(); p != nil {
					s.cfg.Logger.Error("panic serving request", "panic", clip(fmt.Sprint(p)), "stack", string(debug.Stack()))
					done <- result{err: &apiError{status: http.StatusInternalServerError, kind: kindPanic, body: ErrorBody{Error: "internal error"}}}
				}
			}()
			resp, err := fn(ctx, req)
			done <- result{resp, err}
		}()
		select {
		case r := <-done:
			return r.resp, r.err
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// timeoutError is the 504 of a request past its deadline.
func timeoutError(err error) *apiError {
	return &apiError{status: http.StatusGatewayTimeout, kind: kindTimeout,
		body: ErrorBody{Error: "request timed out: its work ran past this server's deadline (serve --request-timeout): " +
			"make it smaller (fewer requests, a shorter trace), or run the same command with the kvcfg CLI (" + err.Error() + ")"}}
}

// stepBudget returns a Progress function for simulate.Config that cancels
// the simulation (cancel with errStepBudget) past max steps; the simulator
// calls Progress every 1024 steps.
func stepBudget(max int64, cancel context.CancelCauseFunc) func(finished, read int64) {
	var calls int64
	return func(int64, int64) {
		calls++
		if (calls-1)*1024 > max {
			cancel(errStepBudget)
		}
	}
}

// maxEcho is how many bytes of a client's input an error message or log
// line repeats.
const maxEcho = 256

// clip returns s cut to maxEcho bytes (at a rune boundary) with an
// ellipsis when it is longer.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	i := maxEcho
	for i > 0 && s[i]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		i--
	}
	return s[:i] + "…"
}

// maxMessage caps an error message or logged error: the longest the API
// writes on its own (a list of accepted keys) is under 2 KiB.
const maxMessage = 2 << 10

// clipMessage cuts what msg repeats of a client's input: each quoted
// string (as %q writes one) longer than maxEcho is clipped, and a message
// still over maxMessage keeps its head and its tail (the hint of what to
// change) around an ellipsis.
func clipMessage(msg string) string {
	if len(msg) <= 2*maxEcho {
		return msg
	}
	msg = clipQuoted(msg)
	if len(msg) <= maxMessage {
		return msg
	}
	head, tail := 3*maxEcho/2, maxEcho
	for head > 0 && msg[head]&0xC0 == 0x80 {
		head--
	}
	t := len(msg) - tail
	for t < len(msg) && msg[t]&0xC0 == 0x80 {
		t++
	}
	return msg[:head] + " … " + msg[t:]
}

// clipQuoted clips the double-quoted strings of msg (backslash escapes
// inside) that are longer than maxEcho.
func clipQuoted(msg string) string {
	var b strings.Builder
	last := 0 // msg[:last] is in b
	for i := 0; i < len(msg); i++ {
		if msg[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(msg) && msg[j] != '"' {
			if msg[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(msg) { // unterminated: leave it to the head/tail cut
			break
		}
		if inner := msg[i+1 : j]; len(inner) > maxEcho {
			b.WriteString(msg[last : i+1])
			b.WriteString(clipEscaped(inner))
			last = j
		}
		i = j
	}
	if last == 0 {
		return msg
	}
	b.WriteString(msg[last:])
	return b.String()
}

// clipEscaped is clip for the inside of a quoted string: it does not cut
// a backslash escape in two.
func clipEscaped(s string) string {
	c := clip(s)
	body := strings.TrimSuffix(c, "…")
	n := 0
	for k := len(body) - 1; k >= 0 && body[k] == '\\'; k-- {
		n++
	}
	if n%2 == 1 {
		body = body[:len(body)-1]
	}
	return body + "…"
}
