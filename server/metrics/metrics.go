// Package metrics is kvcfg's only adapter to Prometheus (client_golang). It
// records what the HTTP server reports (requests, latencies, errors by kind,
// plans by outcome) in a private registry and writes the registry in the
// Prometheus text exposition format. It never imports net/http: the server
// calls the Observe methods and copies WriteText into its response.
package metrics

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// ContentType is the media type of what WriteText writes (Prometheus text
// exposition format 0.0.4).
var ContentType = string(expfmt.NewFormat(expfmt.TypeTextPlain))

// Recorder holds the server's metrics in its own registry. The zero value is
// not usable; call New. A Recorder is safe for concurrent use.
type Recorder struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	plans    *prometheus.CounterVec
	inFlight prometheus.Gauge
}

// New returns a Recorder with a fresh registry holding the kvcfg_http_*
// and kvcfg_plans_total metrics plus the Go runtime and process collectors.
func New() *Recorder {
	reg := prometheus.NewRegistry()
	r := &Recorder{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvcfg_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kvcfg_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route pattern and method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvcfg_http_errors_total",
			Help: "HTTP error responses, by route pattern and error kind (invalid_input, infeasible, malformed_body, body_too_large, not_found, method_not_allowed, forbidden, internal, ...).",
		}, []string{"route", "kind"}),
		plans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvcfg_plans_total",
			Help: "Plans computed through the API, by endpoint (plan, compare) and outcome (ok, invalid_input, infeasible, error).",
		}, []string{"endpoint", "outcome"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kvcfg_http_requests_in_flight",
			Help: "HTTP requests being served now.",
		}),
	}
	reg.MustRegister(r.requests, r.duration, r.errors, r.plans, r.inFlight,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return r
}

// Start counts a request as in flight; call the returned func when it ends.
func (r *Recorder) Start() (done func()) {
	r.inFlight.Inc()
	return r.inFlight.Dec
}

// ObserveRequest records one served request. route should be the router's
// pattern ("POST /api/v1/plan") or "unmatched", never the raw URL path, so
// label values stay bounded.
func (r *Recorder) ObserveRequest(route, method string, code int, elapsed time.Duration) {
	method = boundedMethod(method)
	r.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	r.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
}

// ObserveError records one error response of the given kind on route.
func (r *Recorder) ObserveError(route, kind string) {
	r.errors.WithLabelValues(route, kind).Inc()
}

// ObservePlan records one planning call on endpoint ("plan" or "compare")
// with its outcome ("ok", "invalid_input", "infeasible" or "error").
func (r *Recorder) ObservePlan(endpoint, outcome string) {
	r.plans.WithLabelValues(endpoint, outcome).Inc()
}

// WriteText gathers the registry and writes it to w in the text exposition
// format (see ContentType).
func (r *Recorder) WriteText(w io.Writer) error {
	mfs, err := r.reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: gather: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("metrics: encode %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// boundedMethod maps the request method to a small fixed set of label values.
func boundedMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "OTHER"
}
