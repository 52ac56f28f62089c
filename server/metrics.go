package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// durationBuckets are the latency histogram's upper bounds in seconds.
var durationBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// metrics are the server's Prometheus metrics (client_golang), registered
// in Config.Metrics or else a registry of the server's own, never the
// global default one: two servers in one process (tests, say) do not
// collide.
type metrics struct {
	inFlight prometheus.Gauge
	requests *prometheus.CounterVec   // labels code, method, route
	duration *prometheus.HistogramVec // labels method, route
	errors   *prometheus.CounterVec   // labels kind, route
	plans    *prometheus.CounterVec   // labels endpoint, outcome
	handler  http.Handler             // GET /metrics
}

// newMetrics registers the kvcfg_* metrics in reg; when reg is nil, in a
// new registry, with the Go runtime and process collectors.
func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	var cs []prometheus.Collector
	if reg == nil {
		reg = prometheus.NewRegistry()
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kvcfg_http_requests_in_flight",
			Help: "HTTP requests being served now."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvcfg_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code."}, []string{"code", "method", "route"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kvcfg_http_request_duration_seconds",
			Help: "Time to serve an HTTP request, by route pattern and method.", Buckets: durationBuckets}, []string{"method", "route"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvcfg_http_errors_total",
			Help: "HTTP error responses, by route pattern and error kind (invalid_input, infeasible, malformed_body, body_too_large, not_found, method_not_allowed, forbidden, internal, ...)."},
			[]string{"kind", "route"}),
		plans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvcfg_plans_total",
			Help: "Plans computed through the API, by endpoint (plan, compare, fit, explain, simulate) and outcome (ok, invalid_input, infeasible, error)."},
			[]string{"endpoint", "outcome"}),
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
	}
	cs = append(cs, m.inFlight, m.requests, m.duration, m.errors, m.plans)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: metrics: %w", err)
		}
	}
	return m, nil
}

// observeRequest records one served request. route should be the router's
// pattern ("POST /api/v1/plan") or "unmatched", never the raw URL path, so
// label values stay bounded.
func (m *metrics) observeRequest(route, method string, code int, elapsed time.Duration) {
	method = boundedMethod(method)
	m.requests.WithLabelValues(codeString(code), method, route).Inc()
	m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

// observeError records one error response of the given kind on route.
func (m *metrics) observeError(route, kind string) { m.errors.WithLabelValues(kind, route).Inc() }

// observePlan records one planning call on endpoint ("plan", "compare",
// "fit", "explain", "simulate") with its outcome ("ok", "invalid_input",
// "infeasible" or "error").
func (m *metrics) observePlan(endpoint, outcome string) {
	m.plans.WithLabelValues(endpoint, outcome).Inc()
}

// codeString is strconv.Itoa without allocating for the usual codes.
func codeString(code int) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 404:
		return "404"
	case 422:
		return "422"
	}
	return strconv.Itoa(code)
}

// boundedMethod maps the request method to a small fixed set of label values.
func boundedMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "OTHER"
}
