package hub

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
)

// Errors reported by the package; every error wraps one of them (a repo
// the Hub does not know wraps catalog.ErrUnknownModel instead).
var (
	// ErrBadID reports a reference that is not a Hub model id
	// ("org/name": never a URL or a path) or a malformed revision.
	ErrBadID = errors.New("hub: not a Hub model id")
	// ErrGated reports a gated model whose license the token has not
	// accepted (or no token).
	ErrGated = errors.New("hub: gated model")
	// ErrAuth reports a rejected token or one without access.
	ErrAuth = errors.New("hub: access denied")
	// ErrNotFound reports a revision or file the repo does not have.
	ErrNotFound = errors.New("hub: not found")
	// ErrOffline reports a model that is not cached while HF_HUB_OFFLINE
	// is set.
	ErrOffline = errors.New("hub: not in the local cache")
	// ErrUnreachable reports a network failure (no route, DNS, refused).
	ErrUnreachable = errors.New("hub: cannot reach the Hub")
	// ErrTimeout reports the total deadline (--timeout) passing.
	ErrTimeout = errors.New("hub: timed out")
	// ErrUpstream reports the Hub answering with an error after the
	// retries (429, 5xx) or something the protocol does not allow.
	ErrUpstream = errors.New("hub: the Hub failed")
	// ErrRedirect reports a redirect the client does not follow: a loop,
	// too many, https to http, or to a private or local address while the
	// endpoint is public. It is never retried.
	ErrRedirect = errors.New("hub: redirect refused")
	// ErrTooLarge reports a checkpoint over the client's limits
	// (Options.MaxHeaderBytes, Options.MaxTensors); the error names the
	// limit.
	ErrTooLarge = errors.New("hub: checkpoint over the client's limits")
	// ErrMalformed reports a checkpoint file that breaks the safetensors
	// rules or an index that does not match its shards.
	ErrMalformed = errors.New("hub: malformed checkpoint")
)

// entryNotFound is a 404 EntryNotFound: the file is absent at Commit.
type entryNotFound struct {
	file, commit string
	err          error
}

func (e *entryNotFound) Error() string { return e.err.Error() }
func (e *entryNotFound) Unwrap() error { return e.err }

// statusError turns an error answer into an error that says what to do,
// deciding on X-Error-Code first and the status second, as the Hub's own
// client does.
func (c *Client) statusError(resp *http.Response, id, file string) error {
	code := resp.Header.Get("X-Error-Code")
	msg := strings.TrimSpace(resp.Header.Get("X-Error-Message"))
	page := "https://huggingface.co/" + id
	if c.opt.Endpoint != DefaultEndpoint {
		page = c.opt.Endpoint + "/" + id
	}
	switch {
	case code == "GatedRepo":
		if c.opt.Token == "" {
			return fmt.Errorf("%w: %s is gated: accept the license on the model page (%s) and set HF_TOKEN to a token of that account", ErrGated, id, page)
		}
		return fmt.Errorf("%w: %s is gated and this token's account is not approved: accept the license on the model page (%s) and set HF_TOKEN to a token of that account", ErrGated, id, page)
	case code == "RepoNotFound" || (code == "" && resp.StatusCode == http.StatusUnauthorized && !strings.Contains(msg, "Invalid credentials")):
		h := "check the id"
		if c.opt.Token == "" {
			h += ", or set HF_TOKEN if it is private"
		}
		return fmt.Errorf("%w %q: no such model on %s, or it is private (%s)", catalog.ErrUnknownModel, id, c.opt.Endpoint, h)
	case code == "RevisionNotFound":
		return fmt.Errorf("%w: %s has no revision %q (--revision takes a branch, tag or commit)", ErrNotFound, id, revisionOf(resp))
	case code == "EntryNotFound" || (code == "" && resp.StatusCode == http.StatusNotFound):
		return &entryNotFound{file: file, commit: resp.Header.Get("X-Repo-Commit"),
			err: fmt.Errorf("%w: %s has no file %s", ErrNotFound, id, file)}
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: the Hub rejected the token (%s): fix or unset HF_TOKEN", ErrAuth, orStatus(msg, resp))
	case resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s: %s (a fine-grained token needs read access to this repo)", ErrAuth, id, orStatus(msg, resp))
	}
	return fmt.Errorf("%w: %s %s: %s", ErrUpstream, resp.Request.Method, redact(resp.Request.URL.String()), orStatus(msg, resp))
}

func orStatus(msg string, resp *http.Response) string {
	if msg != "" {
		return resp.Status + ": " + msg
	}
	return resp.Status
}

// redact drops a URL's query (CDN URLs carry signatures).
func redact(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

func revisionOf(resp *http.Response) string {
	p := resp.Request.URL.EscapedPath()
	if _, rest, ok := strings.Cut(p, "/resolve/"); ok {
		rev, _, _ := strings.Cut(rest, "/")
		if r, err := unescape(rev); err == nil {
			return r
		}
		return rev
	}
	return ""
}
