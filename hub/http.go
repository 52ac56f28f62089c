package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// meta is what the Hub says about a file along a redirect chain: the
// commit, and for LFS files the sha256 and size (on the redirect, not on
// the CDN's answer), and the final answer's ETag.
type meta struct {
	commit     string
	linkedEtag string
	linkedSize int64
	etag       string
}

func (m *meta) absorb(h http.Header) {
	if m.commit == "" {
		m.commit = strings.TrimSpace(h.Get("X-Repo-Commit"))
	}
	if m.linkedEtag == "" {
		m.linkedEtag = normEtag(h.Get("X-Linked-Etag"))
	}
	if m.linkedSize == 0 {
		if n, err := strconv.ParseInt(h.Get("X-Linked-Size"), 10, 64); err == nil && n > 0 {
			m.linkedSize = n
		}
	}
	m.etag = normEtag(h.Get("ETag"))
}

// normEtag strips a weak prefix and the quotes.
func normEtag(e string) string {
	e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
	return strings.Trim(e, `"`)
}

// originOf is a URL's origin: scheme, lower-case host and port (the
// scheme's default when absent), the unit the token is scoped to.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

func unescape(s string) (string, error) { return url.PathUnescape(s) }

// resolveURL is {endpoint}/{id}/resolve/{revision}/{file}: the revision
// escaped as one path segment (refs/pr/1 → refs%2Fpr%2F1), the file per
// segment.
func (c *Client) resolveURL(id, rev, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.opt.Endpoint + "/" + id + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(segs, "/")
}

// retryable are the statuses the Hub's own client retries.
func retryable(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// waitHint reads how long a 429 asks to wait: the RateLimit header's t
// (plus one second) when its remaining count r is 0, else an integer
// Retry-After.
func waitHint(h http.Header) time.Duration {
	if rl := h.Get("RateLimit"); rl != "" {
		r, t := -1, -1
		for _, part := range strings.Split(rl, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				continue
			}
			switch k {
			case "r":
				r = n
			case "t":
				t = n
			}
		}
		if r == 0 && t >= 0 {
			return seconds(t + 1)
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n >= 0 {
		return seconds(n)
	}
	return 0
}

// maxWaitHint bounds what a server may ask to wait: more than a day is
// taken as a day (the total deadline ends the wait long before), and a
// huge count of seconds cannot overflow time.Duration.
const maxWaitHint = 24 * time.Hour

func seconds(n int) time.Duration {
	if n < 0 || n > int(maxWaitHint/time.Second) {
		return maxWaitHint
	}
	return time.Duration(n) * time.Second
}

// get performs a GET of a resolve URL with retries (408, 429, 5xx and
// network errors; waits of 1, 2, 4, 8, 8 s or what a 429 asks), following
// redirects itself so that the token goes to the endpoint's host only. It
// returns the final 2xx answer with its body open.
func (c *Client) get(ctx context.Context, rawURL string, hdr http.Header, id, file string) (*http.Response, meta, error) {
	for attempt := 0; ; attempt++ {
		resp, m, err := c.once(ctx, rawURL, hdr)
		var last error
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, m, c.timeoutErr(ctx, err)
			}
			if errors.Is(err, ErrRedirect) || errors.Is(err, ErrBadID) {
				return nil, m, err // a refused redirect: the same answer next time
			}
			last = fmt.Errorf("%w %s: %v: set HF_HUB_OFFLINE=1 to use the local cache only, or pass --model DIR (a local checkpoint)",
				ErrUnreachable, c.opt.Endpoint, rootCause(err))
			var dns *net.DNSError
			if errors.As(err, &dns) && dns.IsNotFound {
				return nil, m, last // no such host: retrying will not help
			}
		case resp.StatusCode < 300:
			return resp, m, nil
		case retryable(resp.StatusCode):
			wait = waitHint(resp.Header)
			last = c.statusError(resp, id, file)
			resp.Body.Close()
		default:
			resp.Body.Close()
			return nil, m, c.statusError(resp, id, file)
		}
		if attempt >= c.opt.MaxRetries {
			if attempt > 0 {
				return nil, m, fmt.Errorf("%w (gave up after %d retries)", last, attempt)
			}
			return nil, m, last
		}
		if wait == 0 {
			wait = min(time.Second<<attempt, 8*time.Second)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, m, fmt.Errorf("%w; not retrying: the deadline (--timeout) comes before the next try in %s", last, wait)
		}
		if err := c.opt.Sleep(ctx, wait); err != nil {
			return nil, m, c.timeoutErr(ctx, last)
		}
	}
}

func (c *Client) timeoutErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: no complete answer from %s in time (raise --timeout, or set HF_HUB_OFFLINE=1 to use the local cache): %v",
			ErrTimeout, c.opt.Endpoint, rootCause(err))
	}
	return fmt.Errorf("hub: %w", ctx.Err())
}

// rootCause unwraps a *url.Error, whose message repeats the (signed) URL.
func rootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// maxRedirects bounds the redirects after one GET.
const maxRedirects = 10

// once is one GET and the redirects after it (at most maxRedirects). The
// token is sent only to the endpoint's origin (scheme, host and port): a
// redirect to a CDN gets none, and an Authorization header in hdr is
// dropped there too. A redirect loop, an https to http redirect and one to
// a private address are refused (ErrRedirect, see checkRedirect).
func (c *Client) once(ctx context.Context, rawURL string, hdr http.Header) (*http.Response, meta, error) {
	var m meta
	u := rawURL
	seen := make(map[string]bool, 2)
	for hop := 0; ; hop++ {
		if seen[u] {
			return nil, m, fmt.Errorf("%w: redirect loop at %s (from %s)", ErrRedirect, redact(u), redact(rawURL))
		}
		if hop > maxRedirects {
			return nil, m, fmt.Errorf("%w: more than %d redirects from %s", ErrRedirect, maxRedirects, redact(rawURL))
		}
		seen[u] = true
		req, err := c.newRequest(ctx, u, hdr)
		if err != nil {
			return nil, m, err
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, m, err
		}
		m.absorb(resp.Header)
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode >= 400 || loc == "" {
			return resp, m, nil
		}
		resp.Body.Close()
		next, err := resp.Request.URL.Parse(loc)
		if err != nil {
			return nil, m, fmt.Errorf("%w: bad redirect %q: %v", ErrRedirect, redact(loc), err)
		}
		if err := c.checkRedirect(resp.Request.URL, next); err != nil {
			return nil, m, err
		}
		u = next.String()
	}
}

// newRequest is a GET of u with hdr, the token only for the endpoint's
// origin; a request to another origin carries the redirect guard (see
// guardDial).
func (c *Client) newRequest(ctx context.Context, u string, hdr http.Header) (*http.Request, error) {
	p, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadID, err)
	}
	same := originOf(p) == c.origin
	if !same && c.guarded(p) {
		ctx = context.WithValue(ctx, guardKey{}, true)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadID, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Del("Authorization")
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", c.opt.UserAgent)
	if c.opt.Token != "" && same {
		req.Header.Set("Authorization", "Bearer "+c.opt.Token)
	}
	return req, nil
}

// fetchSmall reads a small git file (config.json, an index) whole; more
// than limit bytes is an error.
func (c *Client) fetchSmall(ctx context.Context, id, rev, file string, limit int64) ([]byte, meta, error) {
	resp, m, err := c.get(ctx, c.resolveURL(id, rev, file), nil, id, file)
	if err != nil {
		return nil, m, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return nil, m, fmt.Errorf("%w: %s of %s is larger than %d bytes", ErrMalformed, file, id, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, m, c.timeoutErr(ctx, err)
		}
		return nil, m, fmt.Errorf("%w: reading %s of %s: %v", ErrUpstream, file, id, rootCause(err))
	}
	if int64(len(body)) > limit {
		return nil, m, fmt.Errorf("%w: %s of %s is larger than %d bytes", ErrMalformed, file, id, limit)
	}
	if resp.ContentLength >= 0 && resp.ContentLength != int64(len(body)) {
		return nil, m, fmt.Errorf("%w: %s of %s: got %d of %d bytes", ErrUpstream, file, id, len(body), resp.ContentLength)
	}
	return body, m, nil
}

// rangeGet reads bytes [start, end] (inclusive) of a file. A server that
// ignores Range (200) is read only as far as needed, then closed. total is
// the file's size when the answer says it (Content-Range, X-Linked-Size,
// or a 200's Content-Length), else -1.
func (c *Client) rangeGet(ctx context.Context, id, commit, file string, start, end int64) ([]byte, int64, meta, error) {
	hdr := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", start, end)}}
	resp, m, err := c.get(ctx, c.resolveURL(id, commit, file), hdr, id, file)
	if err != nil {
		return nil, -1, m, err
	}
	defer resp.Body.Close()
	total := int64(-1)
	if m.linkedSize > 0 {
		total = m.linkedSize
	}
	want := end - start + 1
	switch resp.StatusCode {
	case http.StatusPartialContent:
		a, b, t, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || a != start || b > end || b < a || (t >= 0 && b >= t) {
			return nil, -1, m, fmt.Errorf("%w: %s of %s: asked for bytes %d-%d, got Content-Range %q",
				ErrUpstream, file, id, start, end, resp.Header.Get("Content-Range"))
		}
		if t >= 0 {
			if total >= 0 && t != total {
				return nil, -1, m, fmt.Errorf("%w: %s of %s: the Hub says %d bytes (X-Linked-Size), the answer %d", ErrUpstream, file, id, total, t)
			}
			total = t
		}
		want = b - a + 1
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			if total >= 0 && resp.ContentLength != total {
				return nil, -1, m, fmt.Errorf("%w: %s of %s: the Hub says %d bytes (X-Linked-Size), the answer %d", ErrUpstream, file, id, total, resp.ContentLength)
			}
			total = resp.ContentLength
		}
		if total >= 0 && start >= total {
			return nil, -1, m, fmt.Errorf("%w: %s of %s: the file's %d bytes end before byte %d", ErrMalformed, file, id, total, start)
		}
		if _, err := io.CopyN(io.Discard, resp.Body, start); err != nil {
			return nil, -1, m, fmt.Errorf("%w: %s of %s ends before byte %d", ErrMalformed, file, id, start)
		}
		if total >= 0 {
			want = min(want, total-start)
		}
	default:
		return nil, -1, m, fmt.Errorf("%w: %s of %s: unexpected %s to a range request", ErrUpstream, file, id, resp.Status)
	}
	// Every length above came from the peer: checked, a buffer is never
	// larger than the range asked for, nor empty.
	if want <= 0 || want > end-start+1 {
		return nil, -1, m, fmt.Errorf("%w: %s of %s: asked for bytes %d-%d, the answer's lengths give %d", ErrUpstream, file, id, start, end, want)
	}
	buf := make([]byte, want)
	n, err := io.ReadFull(resp.Body, buf)
	if err != nil && !(resp.StatusCode == http.StatusOK && total < 0 && errors.Is(err, io.ErrUnexpectedEOF)) {
		if ctx.Err() != nil {
			return nil, -1, m, c.timeoutErr(ctx, err)
		}
		return nil, -1, m, fmt.Errorf("%w: %s of %s: read %d of %d bytes: %v", ErrUpstream, file, id, n, want, err)
	}
	return buf[:n], total, m, nil
}

// parseContentRange reads "bytes A-B/TOTAL" (TOTAL may be "*": -1).
func parseContentRange(s string) (a, b, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	as, bs, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2 error
	a, err1 = strconv.ParseInt(as, 10, 64)
	b, err2 = strconv.ParseInt(bs, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		total = t
	}
	return a, b, total, true
}
