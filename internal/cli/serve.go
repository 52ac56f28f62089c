package cli

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/catalog"
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

Invalid input answers 400 with {"error": "...", "field": "..."}; bodies over --max-body-bytes answer 413.
With --hub, "model" may also be a Hugging Face id (org/name, with "revision"):
its config and safetensors headers are read from the Hub (never weights),
at most --hub-concurrency at once, and kept; an id that is not org/name is
400, a Hub failure 502 with the reason. Without --hub, catalog models only.`,
		Example: `  kvcfg serve
  kvcfg serve --addr 0.0.0.0:8080
  kvcfg serve --hub --hub-concurrency 8
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
	f.IntVar(&o.hubConcurrency, "hub-concurrency", server.DefaultHubConcurrency, "with --hub: models read from the Hub at once")
	f.DurationVar(&o.hubTimeout, "hub-timeout", DefaultHubTimeout, "with --hub: deadline for reading one model from the Hub")
	return cmd
}

// serveHub is the Hub resolver of `serve --hub`, nil without it.
func serveHub(o serveOptions) catalog.Resolver {
	if !o.hub {
		return nil
	}
	return newHubClient(o.hubTimeout, nil)
}

func runServe(cmd *cobra.Command, o serveOptions) error {
	if o.logFormat != "text" && o.logFormat != "json" {
		return InputError(fmt.Errorf("--log-format: unknown output format %q (accepted: text, json)", o.logFormat))
	}
	if o.maxBodyBytes <= 0 {
		return InputError(fmt.Errorf("--max-body-bytes must be positive, got %d", o.maxBodyBytes))
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
		MaxBodyBytes:    o.maxBodyBytes,
		ShutdownTimeout: o.shutdownTimeout,
		Logger:          logger,
		Hub:             serveHub(o),
		HubConcurrency:  o.hubConcurrency,
	})
	if err != nil {
		return InputError(err)
	}
	return srv.ListenAndServe(cmd.Context(), o.addr, func(a net.Addr) {
		logger.Info("kvcfg serving", "url", "http://"+a.String()+"/")
	})
}
