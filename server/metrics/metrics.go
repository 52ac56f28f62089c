// Package metrics is kvcfg's metrics adapter. It records what the HTTP
// server reports (requests, latencies, errors by kind, plans by outcome)
// and writes them, with a few Go runtime and process metrics, in the
// Prometheus text exposition format. It never imports net/http: the server
// calls the Observe methods and copies WriteText into its response.
//
// It is written by hand on purpose: every kvcfg process links it (the
// `serve` command lives in the same binary as `plan`), and the metrics
// libraries do work at package init (client_golang registers collectors
// and builds protobuf descriptors; VictoriaMetrics/metrics reads /proc and
// the runtime/metrics catalogue) that a `kvcfg plan` process paid on every
// start. Counters and histograms are a few atomics; the exposition is
// checked by Prometheus's own parser in the tests. See
// docs/PERFORMANCE.md#start-up.
package metrics

import (
	"bufio"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ContentType is the media type of what WriteText writes (Prometheus text
// exposition format 0.0.4).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// durationBuckets are the latency histogram's upper bounds in seconds.
var durationBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// Recorder holds the server's metrics. The zero value is not usable; call
// New. A Recorder is safe for concurrent use.
type Recorder struct {
	start    time.Time
	inFlight atomic.Int64
	done     func() // ends an in-flight request; made once, not per request
	requests family // labels code, method, route
	duration family // labels method, route; histograms
	errors   family // labels kind, route
	plans    family // labels endpoint, outcome
}

// family is one metric name's series, keyed by their label values joined
// with a NUL byte.
type family struct {
	name, help, kind string
	labels           []string
	series           sync.Map // key → *series
}

// series is one labelled counter or histogram.
type series struct {
	values []string
	count  atomic.Uint64
	// Histograms only: bucket counts (cumulated when written) and the sum
	// in float64 bits.
	buckets []atomic.Uint64
	sumBits atomic.Uint64
}

// New returns a Recorder with the kvcfg_http_* and kvcfg_plans_total
// metrics; WriteText adds the Go runtime and process metrics.
func New() *Recorder {
	r := &Recorder{start: time.Now(),
		requests: family{name: "kvcfg_http_requests_total", kind: "counter", labels: []string{"code", "method", "route"},
			help: "HTTP requests served, by route pattern, method and status code."},
		duration: family{name: "kvcfg_http_request_duration_seconds", kind: "histogram", labels: []string{"method", "route"},
			help: "Time to serve an HTTP request, by route pattern and method."},
		errors: family{name: "kvcfg_http_errors_total", kind: "counter", labels: []string{"kind", "route"},
			help: "HTTP error responses, by route pattern and error kind (invalid_input, infeasible, malformed_body, body_too_large, not_found, method_not_allowed, forbidden, internal, ...)."},
		plans: family{name: "kvcfg_plans_total", kind: "counter", labels: []string{"endpoint", "outcome"},
			help: "Plans computed through the API, by endpoint (plan, compare, fit, explain, simulate) and outcome (ok, invalid_input, infeasible, error)."},
	}
	r.done = func() { r.inFlight.Add(-1) }
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
	r.requests.get(codeString(code), method, route).count.Add(1)
	h := r.duration.get(method, route)
	s := elapsed.Seconds()
	if i, ok := slices.BinarySearch(durationBuckets, s); ok || i < len(durationBuckets) {
		h.buckets[i].Add(1)
	}
	h.count.Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+s)) {
			break
		}
	}
}

// ObserveError records one error response of the given kind on route.
func (r *Recorder) ObserveError(route, kind string) { r.errors.get(kind, route).count.Add(1) }

// ObservePlan records one planning call on endpoint ("plan", "compare",
// "fit", "explain", "simulate") with its outcome ("ok", "invalid_input",
// "infeasible" or "error").
func (r *Recorder) ObservePlan(endpoint, outcome string) {
	r.plans.get(endpoint, outcome).count.Add(1)
}

// get returns the series of the label values (in the family's label
// order), creating it on first use.
func (f *family) get(values ...string) *series {
	key := values[0]
	if len(values) > 1 {
		key = strings.Join(values, "\x00")
	}
	if s, ok := f.series.Load(key); ok {
		return s.(*series)
	}
	s := &series{values: slices.Clone(values)}
	if f.kind == "histogram" {
		s.buckets = make([]atomic.Uint64, len(durationBuckets))
	}
	got, _ := f.series.LoadOrStore(key, s)
	return got.(*series)
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

// WriteText writes every metric, then the Go runtime and process metrics,
// to w in the text exposition format (see ContentType): families sorted by
// name, series by their label values. It returns the error writing to w.
func (r *Recorder) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	r.errors.write(bw)
	r.duration.write(bw)
	writeFamily(bw, "kvcfg_http_requests_in_flight", "gauge", "HTTP requests being served now.", float64(r.inFlight.Load()))
	r.requests.write(bw)
	r.plans.write(bw)
	writeRuntime(bw, r.start)
	return bw.Flush()
}

// write prints the family: # HELP, # TYPE, then each series; nothing when
// it has no series yet.
func (f *family) write(w *bufio.Writer) {
	var all []*series
	f.series.Range(func(_, v any) bool {
		all = append(all, v.(*series))
		return true
	})
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, func(a, b *series) int { return slices.Compare(a.values, b.values) })
	w.WriteString("# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.kind + "\n")
	for _, s := range all {
		if f.kind != "histogram" {
			writeSample(w, f.name, f.labels, s.values, "", "", float64(s.count.Load()))
			continue
		}
		var cum uint64
		for i, ub := range durationBuckets {
			cum += s.buckets[i].Load()
			writeSample(w, f.name+"_bucket", f.labels, s.values, "le", strconv.FormatFloat(ub, 'g', -1, 64), float64(cum))
		}
		n := s.count.Load()
		writeSample(w, f.name+"_bucket", f.labels, s.values, "le", "+Inf", float64(n))
		writeSample(w, f.name+"_sum", f.labels, s.values, "", "", math.Float64frombits(s.sumBits.Load()))
		writeSample(w, f.name+"_count", f.labels, s.values, "", "", float64(n))
	}
}

// writeFamily writes an unlabelled metric with its # HELP and # TYPE.
func writeFamily(w *bufio.Writer, name, kind, help string, v float64) {
	w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
	writeSample(w, name, nil, nil, "", "", v)
}

// writeSample writes name{labels...,extra="x"} v with the label values
// escaped as the format requires.
func writeSample(w *bufio.Writer, name string, labels, values []string, extra, extraValue string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l + `="`)
			labelEscaper.WriteString(w, values[i])
			w.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extra + `="` + extraValue + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	w.WriteByte('\n')
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// writeRuntime writes the Go runtime metrics (read now: runtime.MemStats
// rather than runtime/metrics, whose package init builds its catalogue in
// every process), the start time and, where /proc has it, the resident
// memory.
func writeRuntime(w *bufio.Writer, start time.Time) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	writeFamily(w, "go_goroutines", "gauge", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	writeFamily(w, "go_gc_cycles_total", "counter", "Completed GC cycles.", float64(ms.NumGC))
	writeFamily(w, "go_memstats_heap_alloc_bytes", "gauge", "Bytes of allocated heap objects.", float64(ms.HeapAlloc))
	writeFamily(w, "go_memstats_sys_bytes", "gauge", "Bytes of memory obtained from the OS.", float64(ms.Sys))
	writeFamily(w, "go_gc_pause_seconds_total", "counter", "Total time the GC stopped the world.", float64(ms.PauseTotalNs)/1e9)
	writeFamily(w, "go_info_maxprocs", "gauge", "GOMAXPROCS.", float64(runtime.GOMAXPROCS(0)))
	writeFamily(w, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds (when the server's recorder was made).", float64(start.UnixNano())/1e9)
	if rss, ok := residentBytes(); ok {
		writeFamily(w, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", float64(rss))
	}
}

// residentBytes reads the resident set size from /proc/self/statm (Linux).
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// boundedMethod maps the request method to a small fixed set of label values.
func boundedMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "OTHER"
}
