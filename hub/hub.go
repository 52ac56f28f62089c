// Package hub reads models from the Hugging Face Hub over HTTP without
// downloading weights: config.json (and hf_quant_config.json) through the
// Hub's /resolve URLs, and, per safetensors shard, only its 8-byte length
// and JSON header through Range requests. It follows the Python client's
// conventions: HF_ENDPOINT, HF_TOKEN (and the token file under HF_HOME),
// HF_HOME / HF_HUB_CACHE, HF_HUB_OFFLINE. Fetched configs go into the
// shared HF cache layout (blobs, snapshots/COMMIT, refs) so transformers
// finds them; parsed shard headers go into kvcfg's own cache, never into
// the HF cache.
//
// It is the only library package that imports net/http. A Client is a
// catalog.Resolver: pass it to catalog.OpenContext (or plan.Request's
// Resolver) to resolve "org/name" ids after the catalog.
package hub

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/internal/inputfile"
)

// DefaultEndpoint is the Hub's address when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Options configure a Client. FromEnv fills them from the environment.
type Options struct {
	// Endpoint is the Hub (or a mirror) without a trailing slash.
	Endpoint string
	// Token is sent as "Authorization: Bearer" to the endpoint's origin
	// only (its scheme, host and port; never to the CDN a shard redirects
	// to); "" sends none.
	Token string
	// CacheDir is the HF hub cache root (models--ORG--NAME/...).
	CacheDir string
	// HeaderCacheDir is kvcfg's own cache of parsed shard headers.
	HeaderCacheDir string
	// Offline forbids every request: only the caches answer.
	Offline bool
	// Timeout bounds one Resolve in total (0: no bound beyond the
	// context's). A read that concurrent callers share runs under it, not
	// under the first caller's context; each caller waits at most until
	// its own context ends. A server gives it less than its write timeout
	// (DefaultServeTimeout), so that the Hub's error reaches the client.
	Timeout time.Duration
	// RequestTimeout bounds the wait for one answer's headers (default
	// 10s, as huggingface_hub); with HTTPClient set, its own timeouts apply.
	RequestTimeout time.Duration
	// MaxRetries is how often a 408/429/5xx answer or a network error is
	// retried (default 5, with waits of 1, 2, 4, 8, 8 s).
	MaxRetries int
	// Concurrency bounds the shard headers read at once (default 8).
	Concurrency int
	// HTTPClient is the client to use (default: a client with its own
	// transport). Its redirect policy is replaced: the Client follows
	// redirects itself (see ErrRedirect); with it, a redirect's host name
	// is not checked for a private address, only IP literals are.
	HTTPClient *http.Client
	// Progress, when set and a model has more than one shard, receives a
	// "\r"-updated line per shard read.
	Progress io.Writer
	// Sleep waits d or until ctx ends (tests pass a fake clock); nil uses
	// a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// UserAgent is sent with every request.
	UserAgent string

	// MaxHeaderBytes caps one shard's JSON header (default
	// DefaultMaxHeaderBytes); a longer one is ErrTooLarge, refused before
	// it is read.
	MaxHeaderBytes int64
	// MaxTensors caps the tensors of one checkpoint, its shards together
	// (default DefaultMaxTensors); more is ErrTooLarge.
	MaxTensors int
	// MemoryBudget, when positive, keeps resolved models in memory up to
	// about that many bytes (least recently used first out), keyed by
	// commit: every revision naming one commit shares one entry. A
	// long-running server sets it (DefaultMemoryBudget); 0 keeps none.
	MemoryBudget int64
	// FailureTTL is how long a failed Resolve of an id and revision is
	// answered from memory without a request (default DefaultFailureTTL;
	// negative: never). A cancelled Resolve is not remembered.
	FailureTTL time.Duration
	// RevisionTTL is how long the commit a branch or tag named is trusted
	// by the memory cache (default DefaultRevisionTTL); a commit is
	// immutable and needs no request while its model is in memory.
	RevisionTTL time.Duration
}

// FromEnv returns Options read from the environment as huggingface_hub
// reads it: HF_ENDPOINT, HF_TOKEN (else HUGGING_FACE_HUB_TOKEN, else the
// file HF_TOKEN_PATH or HF_HOME/token), HF_HUB_CACHE (HUGGINGFACE_HUB_CACHE,
// HF_HOME/hub), HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) truthy, and
// HF_HUB_DOWNLOAD_TIMEOUT (seconds) for one request. kvcfg's header cache
// is KVCFG_CACHE_DIR, else the user cache directory's kvcfg/hub.
func FromEnv() Options {
	o := Options{
		Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"),
		Token:    envToken(),
		CacheDir: catalog.HFCacheDir(),
		Offline:  truthy(os.Getenv("HF_HUB_OFFLINE")) || truthy(os.Getenv("TRANSFORMERS_OFFLINE")),
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	if d, err := time.ParseDuration(strings.TrimSpace(os.Getenv("HF_HUB_DOWNLOAD_TIMEOUT")) + "s"); err == nil && d > 0 {
		o.RequestTimeout = d
	}
	if d := os.Getenv("KVCFG_CACHE_DIR"); d != "" {
		o.HeaderCacheDir = filepath.Join(d, "hub")
	} else if d, err := os.UserCacheDir(); err == nil {
		o.HeaderCacheDir = filepath.Join(d, "kvcfg", "hub")
	}
	return o
}

// truthy is huggingface_hub's reading of a boolean variable.
func truthy(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func envToken() string {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(k)); t != "" {
			return t
		}
	}
	p := os.Getenv("HF_TOKEN_PATH")
	if p == "" {
		if h := catalog.HFHome(); h != "" {
			p = filepath.Join(h, "token")
		}
	}
	if p == "" {
		return ""
	}
	b, err := inputfile.ReadFile(p, maxRefBytes<<6, "an HF token file")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Client reads models from the Hub and the caches. It is safe for
// concurrent use.
type Client struct {
	opt    Options
	hc     *http.Client
	host   string // the endpoint's host: the file listing stays on it
	origin string // the endpoint's origin: the only one that gets the token

	// endpointPrivate: the endpoint is a private address or localhost;
	// dialedPrivate: a connection to it landed on one. Either lets
	// redirects reach private addresses (see redirect.go).
	endpointPrivate bool
	dialedPrivate   atomic.Bool
	// ownDial: the transport is the client's own (guardDial checks
	// redirects' addresses); proxy is its proxy function.
	ownDial bool
	proxy   func(*http.Request) (*url.URL, error)

	mem      *memory
	inflight *byteSem // header bytes being read (inflightBytes)
	parsing  *byteSem // header bytes being parsed (parseBytes)
}

// New returns a Client for o, defaults filled in.
func New(o Options) *Client {
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.MaxRetries < 0 {
		o.MaxRetries = 0
	} else if o.MaxRetries == 0 {
		o.MaxRetries = 5
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.UserAgent == "" {
		o.UserAgent = "kvcfg (+hub client; header-only reads)"
	}
	o = withLimits(o)
	c := &Client{opt: o, hc: &http.Client{}, host: hostOf(o.Endpoint), endpointPrivate: endpointIsPrivate(o.Endpoint)}
	if p, err := url.Parse(o.Endpoint); err == nil {
		c.origin = originOf(p)
	}
	if o.HTTPClient != nil {
		hc := *o.HTTPClient
		c.hc = &hc
	} else if t, ok := http.DefaultTransport.(*http.Transport); ok {
		// RequestTimeout bounds the wait for an answer's headers; reading
		// a body is bounded by Timeout (the whole Resolve) only, so a large
		// header on a slow link is not cut off.
		tr := t.Clone()
		tr.ResponseHeaderTimeout = o.RequestTimeout
		tr.DialContext = c.guardDial()
		c.ownDial, c.proxy = true, tr.Proxy
		c.hc.Transport = tr
	}
	c.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.mem = newMemory(o.MemoryBudget, o.FailureTTL, o.RevisionTTL)
	c.inflight = newByteSem(inflightBytes(o))
	c.parsing = newByteSem(parseBytes(o))
	return c
}

// Options returns the client's options, defaults filled in.
func (c *Client) Options() Options { return c.opt }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
