// Package metrics is kvcfg's only metrics adapter. It records what the HTTP
// server reports (requests, latencies, errors by kind, plans by outcome) in
// a private set of VictoriaMetrics/metrics counters and histograms and
// writes them, with the Go runtime and process metrics, in the Prometheus
// text exposition format. It never imports net/http: the server calls the
// Observe methods and copies WriteText into its response.
//
// VictoriaMetrics/metrics rather than Prometheus's client_golang: the same
// exposition at a fraction of the binary and start-up cost (client_golang
// and its protobuf dependencies added about a third to the page faults of
// every kvcfg process, `kvcfg plan` included; see docs/PERFORMANCE.md).
package metrics

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
)

// ContentType is the media type of what WriteText writes (Prometheus text
// exposition format 0.0.4).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metric families: name → type and help, written as # HELP / # TYPE.
var families = map[string][2]string{
	"kvcfg_http_requests_total":           {"counter", "HTTP requests served, by route pattern, method and status code."},
	"kvcfg_http_request_duration_seconds": {"histogram", "Time to serve an HTTP request, by route pattern and method."},
	"kvcfg_http_errors_total":             {"counter", "HTTP error responses, by route pattern and error kind (invalid_input, infeasible, malformed_body, body_too_large, not_found, method_not_allowed, forbidden, internal, ...)."},
	"kvcfg_plans_total":                   {"counter", "Plans computed through the API, by endpoint (plan, compare, fit, explain) and outcome (ok, invalid_input, infeasible, error)."},
	"kvcfg_http_requests_in_flight":       {"gauge", "HTTP requests being served now."},
}

// durationBuckets are the latency histogram's upper bounds in seconds.
var durationBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// Recorder holds the server's metrics in its own set. The zero value is
// not usable; call New. A Recorder is safe for concurrent use.
type Recorder struct {
	set      *vm.Set
	inFlight atomic.Int64
	done     func() // ends an in-flight request; made once, not per request
	// counters and histograms by their full name with labels, so the hot
	// path builds no string once a series exists.
	requests  sync.Map // requestKey → *vm.Counter
	durations sync.Map // [2]string{route, method} → *vm.PrometheusHistogram
	errors    sync.Map // [2]string{route, kind} → *vm.Counter
	plans     sync.Map // [2]string{endpoint, outcome} → *vm.Counter
}

type requestKey struct {
	route, method string
	code          int
}

// New returns a Recorder with a fresh set holding the kvcfg_http_* and
// kvcfg_plans_total metrics; WriteText adds the Go runtime and process
// metrics.
func New() *Recorder {
	r := &Recorder{set: vm.NewSet()}
	r.done = func() { r.inFlight.Add(-1) }
	r.set.NewGauge("kvcfg_http_requests_in_flight", func() float64 { return float64(r.inFlight.Load()) })
	return r
}

// Start counts a request as in flight; call the returned func when it ends.
func (r *Recorder) Start() (done func()) {
	r.inFlight.Add(1)
	return r.done
}

// ObserveRequest records one served request. route should be the router's
// pattern ("POST /api/v1/plan") or "unmatched", never the raw URL path, so
// label values stay bounded.
func (r *Recorder) ObserveRequest(route, method string, code int, elapsed time.Duration) {
	method = boundedMethod(method)
	k := requestKey{route, method, code}
	c, ok := r.requests.Load(k)
	if !ok {
		c, _ = r.requests.LoadOrStore(k, r.set.GetOrCreateCounter(series("kvcfg_http_requests_total", "code", strconv.Itoa(code), "method", method, "route", route)))
	}
	c.(*vm.Counter).Inc()
	dk := [2]string{route, method}
	h, ok := r.durations.Load(dk)
	if !ok {
		h, _ = r.durations.LoadOrStore(dk, r.set.GetOrCreatePrometheusHistogramExt(series("kvcfg_http_request_duration_seconds", "method", method, "route", route), durationBuckets))
	}
	h.(*vm.PrometheusHistogram).Update(elapsed.Seconds())
}

// ObserveError records one error response of the given kind on route.
func (r *Recorder) ObserveError(route, kind string) {
	r.counter(&r.errors, "kvcfg_http_errors_total", "kind", kind, "route", route).Inc()
}

// ObservePlan records one planning call on endpoint ("plan", "compare",
// "fit", "explain") with its outcome ("ok", "invalid_input", "infeasible"
// or "error").
func (r *Recorder) ObservePlan(endpoint, outcome string) {
	r.counter(&r.plans, "kvcfg_plans_total", "endpoint", endpoint, "outcome", outcome).Inc()
}

func (r *Recorder) counter(m *sync.Map, name, l1, v1, l2, v2 string) *vm.Counter {
	k := [2]string{v1, v2}
	if c, ok := m.Load(k); ok {
		return c.(*vm.Counter)
	}
	c, _ := m.LoadOrStore(k, r.set.GetOrCreateCounter(series(name, l1, v1, l2, v2)))
	return c.(*vm.Counter)
}

// WriteText writes the set, then the Go runtime and process metrics, to w
// in the text exposition format (see ContentType), each kvcfg family under
// its # HELP and # TYPE lines. It returns the error writing to w.
func (r *Recorder) WriteText(w io.Writer) error {
	var buf bytes.Buffer
	r.set.WritePrometheus(&buf)
	bw := bufio.NewWriter(w)
	last := ""
	for line := range strings.Lines(buf.String()) {
		if f := family(line); f != last {
			last = f
			if meta, ok := families[f]; ok {
				bw.WriteString("# HELP " + f + " " + meta[1] + "\n# TYPE " + f + " " + meta[0] + "\n")
			}
		}
		bw.WriteString(line)
	}
	vm.WriteProcessMetrics(bw)
	return bw.Flush()
}

// family returns the metric family of an exposition line: the name before
// the labels or value, less a histogram's _bucket/_sum/_count suffix.
func family(line string) string {
	name := line
	if i := strings.IndexAny(line, "{ "); i >= 0 {
		name = line[:i]
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if meta, known := families[base]; known && meta[0] == "histogram" {
				return base
			}
		}
	}
	return name
}

// series writes name{l1="v1",...} with the label values escaped as the
// exposition format requires. Callers pass labels sorted by name, as
// Prometheus clients print them.
func series(name string, labels ...string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(labels[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// boundedMethod maps the request method to a small fixed set of label values.
func boundedMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "OTHER"
}
