// Package server is kvcfg's HTTP face: the planning API (POST /api/v1/plan
// and /api/v1/compare, the same code path and JSON as `kvcfg plan -o json`
// and `kvcfg compare -o json`),
// the catalog endpoints (models, GPUs, KV dtypes), /healthz, Prometheus
// /metrics and the embedded web page at /. It is the only package that
// imports net/http.
package server

import (
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
	"github.com/kvcfg/kvcfg/plan"
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
	// HubConcurrency bounds the Hub reads in flight; 0 means
	// DefaultHubConcurrency.
	HubConcurrency int `json:"hub_concurrency"`
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("server: max_body_bytes %d is negative", c.MaxBodyBytes))
	}
	if c.HubConcurrency < 0 {
		errs = append(errs, fmt.Errorf("server: hub_concurrency %d is negative", c.HubConcurrency))
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Plan == nil {
		c.Plan = plan.Run
	}
	if c.Compare == nil {
		c.Compare = plan.Compare
	}
	return c
}

// Server serves the kvcfg API and page. Create it with New; it is safe for
// concurrent use.
type Server struct {
	cfg     Config
	handler http.Handler
	metrics *metrics
	hub     *hubModels // nil unless Config.Hub is set
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
	if cfg.Hub != nil {
		s.hub = newHubModels(cfg.Hub, cfg.HubConcurrency)
	}
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
