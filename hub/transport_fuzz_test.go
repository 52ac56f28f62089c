package hub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
)

// scripted is a RoundTripper (no sockets) answering the i-th request with
// the i-th answer, the last one over and over.
type scripted struct {
	answers []answer
	n       int
}

// answer is one fuzzed answer: a status, header lines "Key: value", a
// body.
type answer struct {
	status int
	header string
	body   []byte
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	a := s.answers[min(s.n, len(s.answers)-1)]
	s.n++
	h := http.Header{}
	sc := bufio.NewScanner(strings.NewReader(a.header))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) != "" {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	cl := int64(-1)
	if v := h.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			cl = n // as sent: it may disagree with the body
		}
	}
	return &http.Response{StatusCode: a.status, Status: strconv.Itoa(a.status) + " fuzzed", Header: h,
		ContentLength: cl, Body: io.NopCloser(bytes.NewReader(a.body)), Request: r}, nil
}

// known reports an error wrapping one of the package's errors.
func known(err error) bool {
	for _, e := range []error{ErrBadID, ErrGated, ErrAuth, ErrNotFound, ErrOffline, ErrUnreachable, ErrTimeout,
		ErrUpstream, ErrRedirect, ErrTooLarge, ErrMalformed, catalog.ErrUnknownModel} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzResponses drives the Hub response handling (status, headers and
// body of two answers in a row: the length read and the header read of a
// shard, or a config and what follows) through a fake transport: never a
// panic, never a buffer sized from an unchecked length, and every failure
// a clean error of the package.
func FuzzResponses(f *testing.F) {
	head := []byte("\x10\x00\x00\x00\x00\x00\x00\x00{}              ")
	f.Add(206, "Content-Range: bytes 0-7/24\nContent-Length: 8", head[:8], 206, "Content-Range: bytes 8-23/24", head[8:])
	f.Add(200, "", head, 200, "X-Linked-Size: 5", head)
	f.Add(200, "X-Linked-Size: -3", head, 200, "Content-Length: 99999999999", head)
	f.Add(302, "Location: /a", []byte{}, 302, "Location: /a", []byte{})
	f.Add(302, "Location: http://10.0.0.1/x", []byte{}, 200, "", head)
	f.Add(206, "Content-Range: bytes 0-7/*\nX-Linked-Size: 4", head[:8], 206, "Content-Range: bytes 8-9/3", head[8:10])
	f.Add(200, "X-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\nETag: \"x\"", []byte(`{"model_type":"llama"}`), 429, "Retry-After: 99999999999999", []byte{})
	f.Fuzz(func(t *testing.T, s1 int, h1 string, b1 []byte, s2 int, h2 string, b2 []byte) {
		s1, s2 = status(s1), status(s2)
		tr := &scripted{answers: []answer{{s1, h1, b1}, {s2, h2, b2}}}
		c := New(Options{Endpoint: "https://hub.example", HTTPClient: &http.Client{Transport: tr}, MaxRetries: 1,
			Sleep: func(context.Context, time.Duration) error { return nil }})
		ctx := context.Background()
		var tensors atomic.Int64
		const commit = "0123456789abcdef0123456789abcdef01234567"
		if _, err := c.readShard(ctx, "org/name", commit, "model.safetensors", &tensors); err != nil && !known(err) {
			t.Errorf("readShard: %v", err)
		}
		tr.n = 0
		if _, _, err := c.fetchSmall(ctx, "org/name", "main", "config.json", 1<<10); err != nil && !known(err) {
			t.Errorf("fetchSmall: %v", err)
		}
		tr.n = 0
		if _, err := c.listSafetensors(ctx, "org/name", commit); err != nil && !known(err) {
			t.Errorf("listSafetensors: %v", err)
		}
		tr.n = 0
		c.opt.HeaderCacheDir, c.opt.CacheDir = "", ""
		if _, err := c.Resolve(ctx, "org/name", ""); err != nil && !known(err) {
			t.Errorf("Resolve: %v", err)
		}
	})
}

// status maps any int to 100-599, keeping those already there.
func status(n int) int {
	if n >= 100 && n <= 599 {
		return n
	}
	if n < 0 {
		n = -(n + 1)
	}
	return 100 + n%500
}

// TestDialGuard: a request to another origin than a public endpoint's
// (a redirect's) does not connect to a loopback address, whatever name
// led there; the endpoint's own requests do.
func TestDialGuard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := New(Options{Endpoint: "https://hub.example"})
	ctx := context.WithValue(context.Background(), guardKey{}, true)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), nil)
	if _, err := c.hc.Do(req); !errors.Is(err, ErrRedirect) {
		t.Errorf("guarded dial to loopback: %v", err)
	}
	if c.privateOK() {
		t.Fatal("a refused dial made the endpoint private")
	}
	req, _ = http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("unguarded dial: %v", err)
	}
	resp.Body.Close()
	if !c.privateOK() {
		t.Error("the endpoint's connection to loopback did not mark it private")
	}
}
