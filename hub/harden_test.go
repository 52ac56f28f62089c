package hub_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/hub/hubtest"
)

// TestHeaderReadLengthsChecked: a peer answering the header read with 200,
// no Content-Length and X-Linked-Size: 5 once crashed the process
// (makeslice: len out of range in rangeGet); it is a clean error.
func TestHeaderReadLengthsChecked(t *testing.T) {
	repo := qwenRepo(t, "acme/q", 1)
	srv := hubtest.New(t, repo)
	head := repo.Shards["model.safetensors"].Head
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, ".safetensors") || r.Header.Get("Range") == "bytes=0-7" {
			return false
		}
		w.Header().Set("X-Linked-Size", "5")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // chunked: no Content-Length
		w.Write(head)
		return true
	}
	c, _, _ := client(t, srv.URL())
	_, err := c.Resolve(context.Background(), "acme/q", "")
	if !errors.Is(err, hub.ErrUpstream) && !errors.Is(err, hub.ErrMalformed) {
		t.Fatalf("error %v", err)
	}
	t.Log(err)
}

// TestRedirectLoop: a loop is reported once as a loop, never retried as
// "cannot reach the Hub".
func TestRedirectLoop(t *testing.T) {
	srv := hubtest.New(t, qwenRepo(t, "acme/model", 1))
	var n atomic.Int32
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		n.Add(1)
		next := "/loop/a"
		if r.URL.Path == "/loop/a" {
			next = "/loop/b"
		}
		w.Header().Set("Location", next)
		w.WriteHeader(http.StatusFound)
		return true
	}
	c, sl, _ := client(t, srv.URL())
	_, err := c.Resolve(context.Background(), "acme/model", "")
	if !errors.Is(err, hub.ErrRedirect) || errors.Is(err, hub.ErrUnreachable) || !strings.Contains(err.Error(), "loop") {
		t.Errorf("error %v", err)
	}
	if len(sl.waits) != 0 || n.Load() != 3 {
		t.Errorf("%d requests, %d retries: want 3 and none", n.Load(), len(sl.waits))
	}
}

// fakeHub is a RoundTripper that answers the endpoint https://hub.example
// and records every request (no sockets).
type fakeHub struct {
	mu     sync.Mutex
	reqs   []*http.Request
	answer func(r *http.Request) *http.Response
}

func (f *fakeHub) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	resp := f.answer(r)
	resp.Request = r
	if resp.Body == nil {
		resp.Body = io.NopCloser(strings.NewReader(""))
	}
	return resp, nil
}

func redirectTo(loc string) *http.Response {
	return &http.Response{StatusCode: http.StatusFound, Status: "302 Found", Header: http.Header{"Location": {loc}}, ContentLength: 0}
}

// TestRedirectPolicy: from a public endpoint, no redirect reaches a
// loopback, link-local or private address, nor goes from https to http;
// a public CDN is followed without the token.
func TestRedirectPolicy(t *testing.T) {
	for _, loc := range []string{"https://127.0.0.1/x", "https://10.1.2.3/x", "https://169.254.169.254/latest/meta-data",
		"https://[::1]:8443/x", "https://[::ffff:192.168.0.1]/x", "http://hub.example/x", "http://cdn.example/x", "file:///etc/passwd"} {
		f := &fakeHub{answer: func(r *http.Request) *http.Response { return redirectTo(loc) }}
		c, sl, _ := client(t, "https://hub.example", func(o *hub.Options) {
			o.HTTPClient = &http.Client{Transport: f}
			o.Token = "hf_secret"
		})
		_, err := c.Resolve(context.Background(), "acme/model", "")
		if !errors.Is(err, hub.ErrRedirect) || len(f.reqs) != 1 || len(sl.waits) != 0 {
			t.Errorf("redirect to %s: %v after %d requests, %d retries", loc, err, len(f.reqs), len(sl.waits))
		}
	}
	// Cross-origin (another host, port or scheme): followed, no token.
	for _, loc := range []string{"https://cdn.example/x", "https://hub.example:8443/x"} {
		f := &fakeHub{answer: func(r *http.Request) *http.Response {
			if r.URL.Path == "/x" {
				return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: http.Header{}}
			}
			return redirectTo(loc)
		}}
		c, _, _ := client(t, "https://hub.example", func(o *hub.Options) {
			o.HTTPClient = &http.Client{Transport: f}
			o.Token = "hf_secret"
		})
		c.Resolve(context.Background(), "acme/model", "")
		if len(f.reqs) != 2 || f.reqs[0].Header.Get("Authorization") != "Bearer hf_secret" || f.reqs[1].Header.Get("Authorization") != "" {
			t.Errorf("redirect to %s: %d requests, tokens %q", loc, len(f.reqs), authOf(f.reqs))
		}
	}
}

// TestTokenOnlyToTheEndpointOrigin: same host and port, another scheme is
// another origin: no token.
func TestTokenOnlyToTheEndpointOrigin(t *testing.T) {
	f := &fakeHub{answer: func(r *http.Request) *http.Response {
		if r.URL.Scheme == "https" {
			return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: http.Header{}}
		}
		return redirectTo("https://hub.example:8080" + r.URL.Path)
	}}
	c, _, _ := client(t, "http://hub.example:8080", func(o *hub.Options) {
		o.HTTPClient = &http.Client{Transport: f}
		o.Token = "hf_secret"
	})
	c.Resolve(context.Background(), "acme/model", "")
	if len(f.reqs) != 2 || f.reqs[1].Header.Get("Authorization") != "" {
		t.Errorf("%d requests, tokens %q", len(f.reqs), authOf(f.reqs))
	}
}

func authOf(reqs []*http.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.URL.String()+" "+r.Header.Get("Authorization"))
	}
	return out
}

// TestFailuresCachedBriefly: a failing id is not read again by every
// caller within FailureTTL; after it, it is.
func TestFailuresCachedBriefly(t *testing.T) {
	srv := hubtest.New(t, qwenRepo(t, "acme/model", 1))
	var n atomic.Int32
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}
	c, _, _ := client(t, srv.URL(), func(o *hub.Options) { o.MaxRetries = -1 })
	_, err1 := c.Resolve(context.Background(), "acme/model", "")
	_, err2 := c.Resolve(context.Background(), "acme/model", "")
	if !errors.Is(err1, hub.ErrUpstream) || err2 == nil || err2.Error() != err1.Error() || n.Load() != 1 {
		t.Errorf("errors %v, %v after %d requests (want 1)", err1, err2, n.Load())
	}
	c, _, _ = client(t, srv.URL(), func(o *hub.Options) { o.MaxRetries, o.FailureTTL = -1, time.Millisecond })
	n.Store(0)
	c.Resolve(context.Background(), "acme/model", "")
	time.Sleep(5 * time.Millisecond)
	c.Resolve(context.Background(), "acme/model", "")
	if n.Load() != 2 {
		t.Errorf("after the TTL: %d requests, want 2", n.Load())
	}
}

// TestMemoryByCommit: with a memory budget, every revision naming one
// commit shares one entry (a second revision costs one config.json read,
// the commit itself none), and the budget bounds what is kept.
func TestMemoryByCommit(t *testing.T) {
	repo := qwenRepo(t, "acme/Qwen3-8B-copy", 2)
	repo.Revisions = []string{"v1"}
	other := qwenRepo(t, "acme/other", 2)
	srv := hubtest.New(t, repo, other)
	c, _, _ := client(t, srv.URL(), func(o *hub.Options) {
		o.CacheDir, o.HeaderCacheDir, o.MemoryBudget = "", "", hub.DefaultMemoryBudget
	})
	ctx := context.Background()
	m1, err := c.Resolve(ctx, "acme/Qwen3-8B-copy", "main")
	if err != nil {
		t.Fatal(err)
	}
	srv.Reset()
	for _, rev := range []string{"main", commit, "v1"} {
		m, err := c.Resolve(ctx, "acme/Qwen3-8B-copy", rev)
		if err != nil || m != m1 {
			t.Fatalf("revision %s: %v, same model %v", rev, err, m == m1)
		}
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || len(reqs) > 2 || !strings.Contains(reqs[0].Path, "/resolve/v1/config.json") {
		t.Errorf("requests %v, want v1's config.json only", reqs)
	}
	for _, r := range reqs {
		if !strings.HasSuffix(r.Path, "/config.json") {
			t.Errorf("request %s: want v1's config.json only", r.Path)
		}
	}
	size, models := c.MemoryUsage()
	if models != 1 || size <= 0 {
		t.Fatalf("memory %d bytes, %d models", size, models)
	}
	// A budget for one model keeps the most recent one.
	c, _, _ = client(t, srv.URL(), func(o *hub.Options) { o.CacheDir, o.HeaderCacheDir, o.MemoryBudget = "", "", size+size/2 })
	for _, id := range []string{"acme/Qwen3-8B-copy", "acme/other"} {
		if _, err := c.Resolve(ctx, id, commit); err != nil {
			t.Fatal(err)
		}
	}
	if got, n := c.MemoryUsage(); n != 1 || got > size+size/2 {
		t.Errorf("memory %d bytes, %d models, budget %d", got, n, size+size/2)
	}
}

// TestHeaderLimits: a checkpoint over MaxTensors or with a header over
// MaxHeaderBytes is refused with an error naming the limit, the long
// header never read.
func TestHeaderLimits(t *testing.T) {
	cfg, err := os.ReadFile("testdata/qwen3-8b.json")
	if err != nil {
		t.Fatal(err)
	}
	repo := hubtest.ManyTensors("acme/many", commit, cfg, 20_000, 4)
	srv := hubtest.New(t, repo)
	c, _, _ := client(t, srv.URL(), func(o *hub.Options) { o.MaxTensors = 10_000 })
	_, err = c.Resolve(context.Background(), "acme/many", "")
	if !errors.Is(err, hub.ErrTooLarge) || !strings.Contains(err.Error(), "10000 tensors") || !strings.Contains(err.Error(), "MaxTensors") {
		t.Errorf("tensors: %v", err)
	}
	c, _, _ = client(t, srv.URL(), func(o *hub.Options) { o.MaxHeaderBytes = 64 << 10 })
	srv.Reset()
	_, err = c.Resolve(context.Background(), "acme/many", "")
	if !errors.Is(err, hub.ErrTooLarge) || !strings.Contains(err.Error(), "MaxHeaderBytes") || !strings.Contains(err.Error(), "65536") {
		t.Errorf("header bytes: %v", err)
	}
	for _, r := range srv.Requests() {
		if r.Server == "cdn" && r.Range != "bytes=0-7" {
			t.Errorf("a header over the limit was read: %s %s", r.Path, r.Range)
		}
	}
}

// TestSlowReadsDoNotBlockOthers: four reads stalled on a slow Hub do not
// hold back a read of another model.
func TestSlowReadsDoNotBlockOthers(t *testing.T) {
	var repos []hubtest.Repo
	for _, id := range []string{"slow/a", "slow/b", "slow/c", "slow/d", "fast/e"} {
		repos = append(repos, qwenRepo(t, id, 1))
	}
	srv := hubtest.New(t, repos...)
	release := make(chan struct{})
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/slow/") && strings.HasSuffix(r.URL.Path, ".safetensors") {
			<-release
		}
		return false
	}
	var wg sync.WaitGroup
	defer func() { close(release); wg.Wait() }()
	c, _, _ := client(t, srv.URL(), func(o *hub.Options) { o.MemoryBudget, o.Timeout = hub.DefaultMemoryBudget, time.Minute })
	for _, id := range []string{"slow/a", "slow/b", "slow/c", "slow/d"} {
		wg.Go(func() { c.Resolve(context.Background(), id, "") })
	}
	time.Sleep(100 * time.Millisecond) // the slow reads are stalled
	start := time.Now()
	if _, err := c.Resolve(context.Background(), "fast/e", ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the fast read took %s behind four slow ones", d)
	}
	t.Logf("fast read behind four stalled ones: %s", time.Since(start))
}

// TestCallerDeadlineNotRemembered: without a Timeout the read ends with
// its caller's context, and that failure is not answered to the next
// caller.
func TestCallerDeadlineNotRemembered(t *testing.T) {
	srv := hubtest.New(t, qwenRepo(t, "acme/model", 1))
	var slow atomic.Bool
	slow.Store(true)
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if slow.Load() {
			<-r.Context().Done()
			return true
		}
		return false
	}
	c, _, _ := client(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Resolve(ctx, "acme/model", ""); !errors.Is(err, hub.ErrTimeout) {
		t.Fatalf("first: %v", err)
	}
	slow.Store(false)
	// Until the shared read has landed a second caller may still join it;
	// a remembered failure would answer for FailureTTL (5 s).
	var err error
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err = c.Resolve(context.Background(), "acme/model", ""); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("second: %v", err)
	}
}
