package cli

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/server"
)

// serveOptions are the flags of `kvcfg serve`.
type serveOptions struct {
	addr            string
	maxBodyBytes    int64
	shutdownTimeout time.Duration
	logFormat       string
	verbose         bool
	hub             bool
	hubConcurrency  int
	hubTimeout      time.Duration
	requestTimeout  time.Duration
	heavy           int
	maxSimRequests  int
	maxSimSteps     int64
}

func newServeCmd() *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the planning HTTP API, the web page with charts, and Prometheus metrics",
		Long: `Serve the planner over HTTP until SIGINT or SIGTERM, then shut down gracefully
(requests in flight get --shutdown-timeout; a second signal stops at once).

  POST /api/v1/plan      body: the plan flags as JSON, snake_case ({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "tp_size": 2})
                         answer: the same JSON as 'kvcfg plan -o json'
  GET  /api/v1/models    catalog models     GET /api/v1/gpus    GPUs     GET /api/v1/dtypes   KV cache dtypes
  GET  /healthz          liveness           GET /metrics        Prometheus text format
  GET  /                 the web page (embedded, works offline)

Invalid input answers 400 with {"error": "...", "field": "..."}; bodies over --max-body-bytes answer 413,
a truncated body 400, one slower than the read timeout 408.
Every request's work ends at --request-timeout (504), before the 30 s write
timeout closes the connection. Simulations and fits run at most
--heavy-concurrency at once (beyond: 503 with Retry-After), each within
--max-sim-requests requests (400) and, for a simulation, --max-sim-steps
scheduler steps (422).
With --hub, "model" may also be a Hugging Face id (org/name, with "revision"):
its config and safetensors headers are read from the Hub (never weights)
within --hub-timeout, concurrent requests for one id sharing one read, and
kept in memory by commit (512 MiB at most); an id that is not org/name is
400, a Hub failure 502 with the reason, a Hub out of time 504. Without
--hub, catalog models only.`,
		Example: `  kvcfg serve
  kvcfg serve --addr 0.0.0.0:8080
  kvcfg serve --hub --hub-timeout 10s
  kvcfg serve --heavy-concurrency 4 --max-sim-requests 50000
  curl -s localhost:8080/api/v1/plan -d '{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", server.DefaultAddr, "listen address (host:port)")
	f.Int64Var(&o.maxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest accepted request body in bytes")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long in-flight requests may run after SIGINT/SIGTERM")
	f.StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text or json")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log every request, not only failures")
	f.BoolVar(&o.hub, "hub", false, "also plan Hugging Face ids outside the catalog, read from the Hub (HF_ENDPOINT, HF_TOKEN, caches as the CLI)")
	f.IntVar(&o.hubConcurrency, "hub-concurrency", 0, "ignored: the Hub client shares concurrent reads of one id")
	_ = f.MarkDeprecated("hub-concurrency", "it is ignored: concurrent requests for one id share one read, and a slow read no longer holds up others")
	f.DurationVar(&o.hubTimeout, "hub-timeout", hub.DefaultServeTimeout, "with --hub: deadline for reading one model from the Hub (the request's own deadline, --request-timeout, also ends it)")
	f.DurationVar(&o.requestTimeout, "request-timeout", server.DefaultRequestTimeout, "deadline of one API request's work (504 past it); below the 30s write timeout")
	f.IntVar(&o.heavy, "heavy-concurrency", server.DefaultHeavyConcurrency, "simulations and fits run at once, server-wide (beyond: 503 with Retry-After)")
	f.IntVar(&o.maxSimRequests, "max-sim-requests", server.DefaultMaxSimRequests, "largest workload or trace, in requests, one simulation or fit replays")
	f.Int64Var(&o.maxSimSteps, "max-sim-steps", server.DefaultMaxSimSteps, "scheduler steps one simulation may run (beyond: 422)")
	return cmd
}

// serveHub is the Hub resolver of `serve --hub`, nil without it.
func serveHub(o serveOptions) catalog.Resolver {
	if !o.hub {
		return nil
	}
	c := hub.FromEnv()
	c.Timeout = o.hubTimeout
	c.MemoryBudget = hub.DefaultMemoryBudget
	return hub.New(c)
}

func runServe(cmd *cobra.Command, o serveOptions) error {
	if o.logFormat != "text" && o.logFormat != "json" {
		return InputError(fmt.Errorf("--log-format: unknown output format %q (accepted: text, json)", o.logFormat))
	}
	if o.maxBodyBytes <= 0 {
		return InputError(fmt.Errorf("--max-body-bytes must be positive, got %d", o.maxBodyBytes))
	}
	for _, p := range []struct {
		flag string
		v    int64
	}{{"--heavy-concurrency", int64(o.heavy)}, {"--max-sim-requests", int64(o.maxSimRequests)}, {"--max-sim-steps", o.maxSimSteps}} {
		if p.v <= 0 {
			return InputError(fmt.Errorf("%s must be positive, got %d", p.flag, p.v))
		}
	}
	if o.requestTimeout <= 0 || o.requestTimeout >= server.DefaultWriteTimeout {
		return InputError(fmt.Errorf("--request-timeout must be positive and below the %v write timeout, got %v", server.DefaultWriteTimeout, o.requestTimeout))
	}
	if o.hubTimeout <= 0 {
		return InputError(fmt.Errorf("--hub-timeout must be positive, got %v", o.hubTimeout))
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(cmd.ErrOrStderr(), hopts)
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(cmd.ErrOrStderr(), hopts)
	}
	logger := slog.New(h)
	server.ApplyGCDefault()
	srv, err := server.New(server.Config{
		MaxBodyBytes:     o.maxBodyBytes,
		ShutdownTimeout:  o.shutdownTimeout,
		Logger:           logger,
		Hub:              serveHub(o),
		RequestTimeout:   o.requestTimeout,
		HeavyConcurrency: o.heavy,
		MaxSimRequests:   o.maxSimRequests,
		MaxSimSteps:      o.maxSimSteps,
	})
	if err != nil {
		return InputError(err)
	}
	return srv.ListenAndServe(cmd.Context(), o.addr, func(a net.Addr) {
		logger.Info("kvcfg serving", "url", "http://"+a.String()+"/")
	})
}
