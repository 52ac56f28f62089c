package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/hub/hubtest"
	"github.com/kvcfg/kvcfg/server"
)

const hubCommit = "fedcba9876543210fedcba9876543210fedcba98"

func hubServer(t *testing.T) (*hubtest.Server, hubtest.Repo, *hub.Client) {
	t.Helper()
	cfg, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := hubtest.Checkpoint("acme/Qwen3-8B-copy", hubCommit, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	gated := repo
	gated.ID, gated.Gated, gated.Token = "acme/gated", true, "hf_approved"
	fake := hubtest.New(t, repo, gated)
	c := hub.New(hub.Options{Endpoint: fake.URL(), CacheDir: filepath.Join(t.TempDir(), "hub"), HeaderCacheDir: t.TempDir(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	return fake, repo, c
}

func TestHubIDs(t *testing.T) {
	fake, repo, c := hubServer(t)
	ts := newTestServer(t, server.Config{Hub: c})

	// Many clients at once for one id: one read of the Hub.
	var wg sync.WaitGroup
	res := make([]response, 12)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = do(t, ts, "POST", "/api/v1/plan", `{"model": "acme/Qwen3-8B-copy"}`)
		}()
	}
	wg.Wait()
	for _, r := range res {
		if r.status != http.StatusOK || !strings.Contains(r.body, `"weights_source": "hub_safetensors:acme/Qwen3-8B-copy@`+hubCommit) ||
			!strings.Contains(r.body, `"weights_estimated": false`) {
			t.Fatalf("plan: %d %s", r.status, r.body)
		}
	}
	configs := 0
	for _, r := range fake.Requests() {
		if strings.HasSuffix(r.Path, "/config.json") && strings.Contains(r.Path, "/resolve/") {
			configs++
		}
	}
	if configs != 1 {
		t.Errorf("%d config.json reads for 12 requests, want 1", configs)
	}
	_ = repo

	for _, tc := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/v1/plan", `{"model": "acme/Qwen3-8B-copy", "revision": "` + hubCommit + `", "engine": "vllm"}`, 200, `"model_revision": "` + hubCommit},
		{"/api/v1/compare", `{"model": "acme/Qwen3-8B-copy"}`, 200, "acme/Qwen3-8B-copy"},
		{"/api/v1/plan", `{"model": "https://huggingface.co/acme/x"}`, 400, "neither a catalog name nor a Hugging Face id"},
		{"/api/v1/plan", `{"model": "../../etc/passwd"}`, 400, "neither a catalog name"},
		{"/api/v1/plan", `{"model": "acme/missing"}`, 400, "no such model"},
		{"/api/v1/plan", `{"model": "acme/Qwen3-8B-copy", "revision": "nope"}`, 400, `revision \"nope\"`},
		{"/api/v1/plan", `{"model": "acme/gated"}`, 502, "HF_TOKEN"},
	} {
		r := do(t, ts, "POST", tc.path, tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s %s: %d %s (want %d, %q)", tc.path, tc.body, r.status, r.body, tc.status, tc.want)
		}
	}
	if r := do(t, ts, "GET", "/api/v1/models/acme/Qwen3-8B-copy", ""); r.status != 200 || !strings.Contains(r.body, "acme/Qwen3-8B-copy") {
		t.Errorf("model page: %d %s", r.status, r.body)
	}
	// The Hub down: a model not read before is a 502 with the reason; one
	// read before is still served.
	fake.Close()
	if r := do(t, ts, "POST", "/api/v1/plan", `{"model": "acme/other"}`); r.status != http.StatusBadGateway || !strings.Contains(r.body, "cannot reach") {
		t.Errorf("hub down: %d %s", r.status, r.body)
	}
	if r := do(t, ts, "POST", "/api/v1/plan", `{"model": "acme/Qwen3-8B-copy"}`); r.status != 200 {
		t.Errorf("cached model, hub down: %d %s", r.status, r.body)
	}
}

func TestHubOffByDefault(t *testing.T) {
	fake, _, _ := hubServer(t)
	ts := newTestServer(t, server.Config{})
	if r := do(t, ts, "POST", "/api/v1/plan", `{"model": "acme/Qwen3-8B-copy"}`); r.status != 400 || !strings.Contains(r.body, "unknown model") {
		t.Errorf("hub id without --hub: %d %s", r.status, r.body)
	}
	if r := do(t, ts, "POST", "/api/v1/plan", `{"model": "Qwen/Qwen3-8B", "revision": "main"}`); r.status != 400 || !strings.Contains(r.body, "--hub") {
		t.Errorf("revision without --hub: %d %s", r.status, r.body)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests reached the Hub", n)
	}
}

// TestBrowserHubID: with --hub the page offers a Hugging Face id field,
// and a plan of a Hub id shows its weights from the headers.
func TestBrowserHubID(t *testing.T) {
	ctx := browser(t, 60*time.Second, func(any) {}) // skips without Chromium
	_, repo, c := hubServer(t)
	ts := newTestServer(t, server.Config{Hub: c})
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(css(`body[data-state="done"]`)),
		chromedp.WaitVisible(css(`#f-hub_model`)),
		chromedp.SetValue(css(`#f-hub_model`), repo.ID),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`body[data-state="done"], body[data-state="error"]`)),
	); err != nil {
		t.Fatalf("driving the page: %v", err)
	}
	if st, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`body`), "data-state")); err != nil || st.Value != "done" {
		msg, _ := chromedp.Run(ctx, chromedp.TextContent(css(`#error`)))
		t.Fatalf("page ended in state %q (%v): %s", st.Value, err, msg)
	}
	page, err := chromedp.Run(ctx, chromedp.TextContent(css(`body`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, repo.ID) {
		t.Errorf("the page does not show the plan of %s", repo.ID)
	}
}

// stallingHub puts a Hub in front of fake whose answers for ids under
// acme/slow never come (until the request is cancelled or the test ends).
func stallingHub(t *testing.T, fake *hubtest.Server) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	target, err := url.Parse(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	end := make(chan struct{})
	stalled := new(atomic.Int32)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "acme/slow") {
			stalled.Add(1)
			select {
			case <-r.Context().Done():
			case <-end:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(end); ts.Close() })
	return ts, stalled
}

// TestSlowHubAnswered: a Hub that never answers is a 504 with a JSON
// error written before the write timeout closes the connection, even with
// a Hub deadline longer than it.
func TestSlowHubAnswered(t *testing.T) {
	fake, _, _ := hubServer(t)
	slow, _ := stallingHub(t, fake)
	c := hub.New(hub.Options{Endpoint: slow.URL, CacheDir: filepath.Join(t.TempDir(), "hub"), HeaderCacheDir: t.TempDir(),
		Timeout: time.Minute, MemoryBudget: hub.DefaultMemoryBudget})
	base := serveLoopback(t, server.Config{Hub: c, WriteTimeout: 2 * time.Second, RequestTimeout: 500 * time.Millisecond})
	start := time.Now()
	st, _, body := post(base, "/api/v1/plan", `{"model": "acme/slow-model"}`, 10*time.Second)
	if st != http.StatusGatewayTimeout || !strings.Contains(body, `"field":"model"`) {
		t.Fatalf("stalled Hub: %d %s after %v (want a 504 before the 2s write timeout)", st, body, time.Since(start))
	}
}

// TestSlowHubReadsDoNotBlockOthers: through the server, a read of a
// model the Hub answers does not wait behind reads the Hub stalls.
func TestSlowHubReadsDoNotBlockOthers(t *testing.T) {
	fake, repo, _ := hubServer(t)
	slow, stalled := stallingHub(t, fake)
	c := hub.New(hub.Options{Endpoint: slow.URL, CacheDir: filepath.Join(t.TempDir(), "hub"), HeaderCacheDir: t.TempDir(),
		Timeout: time.Minute, MemoryBudget: hub.DefaultMemoryBudget, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	ts := newTestServer(t, server.Config{Hub: c})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/v1/plan", strings.NewReader(fmt.Sprintf(`{"model": "acme/slow-%d"}`, i)))
			if res, err := ts.Client().Do(req); err == nil {
				res.Body.Close()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	for stalled.Load() < 6 {
		time.Sleep(5 * time.Millisecond)
	}
	st, _, body := post(ts.URL, "/api/v1/plan", `{"model": "`+repo.ID+`"}`, 10*time.Second)
	if st != http.StatusOK {
		t.Fatalf("a model the Hub serves, behind six stalled reads: %d %.300s", st, body)
	}
}
