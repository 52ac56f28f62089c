// Package server is kvcfg's HTTP face: the planning API (POST /api/v1/plan
// and /api/v1/compare, the same code path and JSON as `kvcfg plan -o json`
// and `kvcfg compare -o json`),
// the catalog endpoints (models, GPUs, KV dtypes), /healthz, Prometheus
// /metrics and the embedded web page at /. It is the only package that
// imports net/http.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
)

// DefaultAddr is the listen address of `kvcfg serve` when --addr is not given.
const DefaultAddr = "127.0.0.1:8080"

// Defaults of the Config fields left zero.
const (
	DefaultMaxBodyBytes      = 1 << 20 // 1 MiB
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	// DefaultRequestTimeout bounds the work of one API request: below the
	// write timeout, so that a request out of time still gets its 504.
	DefaultRequestTimeout = 25 * time.Second
	// DefaultHeavyConcurrency is how many simulations and fits run at
	// once; more get 503 with Retry-After.
	DefaultHeavyConcurrency = 2
	// DefaultMaxSimRequests bounds the requests one simulation (POST
	// /api/v1/simulate, or each of a fit's) replays.
	DefaultMaxSimRequests = 200_000
	// DefaultMaxSimSteps bounds the scheduler steps one POST
	// /api/v1/simulate runs (beyond them: 422).
	DefaultMaxSimSteps = 5_000_000
)

// Config configures a Server. The zero value is usable: zero fields take
// the defaults above, nil functions the real planner.
type Config struct {
	// MaxBodyBytes caps request bodies; larger bodies get 413. 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// net/http server timeouts; 0 means the Default* value.
	ReadHeaderTimeout time.Duration `json:"read_header_timeout"`
	ReadTimeout       time.Duration `json:"read_timeout"`
	WriteTimeout      time.Duration `json:"write_timeout"`
	IdleTimeout       time.Duration `json:"idle_timeout"`
	// ShutdownTimeout bounds the graceful shutdown of Serve; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`

	// Logger receives one line per failed request (debug: every request);
	// nil discards.
	Logger *slog.Logger `json:"-"`
	// Metrics is the registry the server registers its kvcfg_* metrics
	// in and GET /metrics serves; nil means a new registry of the
	// server's own, with the Go runtime and process collectors. A
	// registry given here gets only the kvcfg_* metrics (the caller
	// chooses the collectors); two servers cannot share one.
	Metrics *prometheus.Registry `json:"-"`
	// Plan computes a plan; nil means plan.Run. Tests substitute it.
	Plan func(context.Context, plan.Request) (*plan.Report, error) `json:"-"`
	// Compare computes a side-by-side comparison; nil means plan.Compare.
	Compare func(context.Context, plan.CompareRequest) (*plan.Comparison, error) `json:"-"`
	// Hub, when set, resolves Hugging Face ids outside the catalog
	// (`kvcfg serve --hub`; a hub.Client); nil, the default, plans catalog
	// models and inline configs only.
	Hub catalog.Resolver `json:"-"`

	// RequestTimeout bounds the long work of one API request (a Hub read,
	// a simulation, a fit), counted from the start of its handler: past it
	// the client gets 504. It must
	// be below WriteTimeout, after which net/http closes the connection
	// unanswered; 0 means DefaultRequestTimeout, or WriteTimeout less
	// 5 s when that is shorter (WriteTimeout*3/4 below 20 s).
	RequestTimeout time.Duration `json:"request_timeout"`
	// HeavyConcurrency bounds the simulations and fits (POST
	// /api/v1/simulate and /api/v1/fit) running at once, server-wide;
	// beyond it a request gets 503 with Retry-After at once. 0 means
	// DefaultHeavyConcurrency.
	HeavyConcurrency int `json:"heavy_concurrency"`
	// MaxSimRequests bounds the requests of one simulated workload or
	// trace (simulate and fit); 0 means DefaultMaxSimRequests.
	MaxSimRequests int `json:"max_sim_requests"`
	// MaxSimSteps bounds the scheduler steps of one POST
	// /api/v1/simulate; 0 means DefaultMaxSimSteps.
	MaxSimSteps int64 `json:"max_sim_steps"`
	// Simulate runs a simulation; nil means simulate.Run. Tests
	// substitute it.
	Simulate func(context.Context, simulate.Config, simulate.Source) (*simulate.Summary, error) `json:"-"`
	// Fit runs a fit; nil means fit.Run. Tests substitute it.
	Fit func(context.Context, fit.Options) (*fit.Result, error) `json:"-"`
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("server: max_body_bytes %d is negative", c.MaxBodyBytes))
	}
	if c.HeavyConcurrency < 0 {
		errs = append(errs, fmt.Errorf("server: heavy_concurrency %d is negative", c.HeavyConcurrency))
	}
	if c.MaxSimRequests < 0 {
		errs = append(errs, fmt.Errorf("server: max_sim_requests %d is negative", c.MaxSimRequests))
	}
	if c.MaxSimSteps < 0 {
		errs = append(errs, fmt.Errorf("server: max_sim_steps %d is negative", c.MaxSimSteps))
	}
	if c.RequestTimeout > 0 {
		if wt := cmp.Or(c.WriteTimeout, DefaultWriteTimeout); c.RequestTimeout >= wt {
			errs = append(errs, fmt.Errorf("server: request_timeout %v must be below write_timeout %v (the connection closes then, unanswered)", c.RequestTimeout, wt))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read_header_timeout", c.ReadHeaderTimeout},
		{"read_timeout", c.ReadTimeout},
		{"write_timeout", c.WriteTimeout},
		{"idle_timeout", c.IdleTimeout},
		{"shutdown_timeout", c.ShutdownTimeout},
		{"request_timeout", c.RequestTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("server: %s %v is negative", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns c with zero fields replaced by the defaults.
func (c Config) withDefaults() Config {
	def := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.RequestTimeout, defaultRequestTimeout(c.WriteTimeout))
	c.HeavyConcurrency = cmp.Or(c.HeavyConcurrency, DefaultHeavyConcurrency)
	c.MaxSimRequests = cmp.Or(c.MaxSimRequests, DefaultMaxSimRequests)
	c.MaxSimSteps = cmp.Or(c.MaxSimSteps, DefaultMaxSimSteps)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Plan == nil {
		c.Plan = plan.Run
	}
	if c.Compare == nil {
		c.Compare = plan.Compare
	}
	if c.Simulate == nil {
		c.Simulate = simulate.Run
	}
	if c.Fit == nil {
		c.Fit = fit.Run
	}
	return c
}

// defaultRequestTimeout is the request deadline under the write timeout
// wt: DefaultRequestTimeout, at most wt less 5 s, or 3/4 of wt when that
// is longer (below a 20 s write timeout).
func defaultRequestTimeout(wt time.Duration) time.Duration {
	return min(DefaultRequestTimeout, max(wt-5*time.Second, wt*3/4))
}

// Server serves the kvcfg API and page. Create it with New; it is safe for
// concurrent use.
type Server struct {
	cfg     Config
	handler http.Handler
	metrics *metrics
	heavy   chan struct{} // a slot per simulation or fit running
}

// New validates cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg.withDefaults()}
	var err error
	if s.metrics, err = newMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	s.heavy = make(chan struct{}, s.cfg.HeavyConcurrency)
	s.handler = s.routes()
	return s, nil
}

// Handler returns the HTTP handler with every route and middleware; tests
// mount it on httptest.NewServer.
func (s *Server) Handler() http.Handler { return s.handler }

// httpServer returns a net/http server with the configured timeouts.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish (up to ShutdownTimeout) and
// returns nil. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := s.httpServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.cfg.Logger.Info("shutting down", "addr", ln.Addr().String())
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
		return fmt.Errorf("server: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// ListenAndServe listens on addr ("" means DefaultAddr), calls ready (if not
// nil) with the bound address, and serves until ctx is done (see Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	if addr == "" {
		addr = DefaultAddr
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	return s.Serve(ctx, ln)
}

// DefaultGCPercent is the GC target `kvcfg serve` runs with when GOGC is not
// set: a plan allocates ~13 KB and the live heap is small, and 400% measured
// more plans per second under load than 100% (docs/PERFORMANCE.md#http).
const DefaultGCPercent = 400

// ApplyGCDefault sets DefaultGCPercent unless the GOGC environment variable
// is set (GOGC and GOMEMLIMIT always win).
func ApplyGCDefault() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
