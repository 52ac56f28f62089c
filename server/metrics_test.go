package server

import (
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape serves GET /metrics from m and returns the exposition text.
func scrape(t *testing.T, m *metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	return rec.Body.String()
}

// samples parses the text exposition with Prometheus's own parser and
// returns "name{labels}" -> value for the kvcfg_* counters and gauges, and
// "name{labels}_count" for histograms.
func samples(t *testing.T, text string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, text)
	}
	got := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "kvcfg_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				got[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return got
}

func TestMetrics(t *testing.T) {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.inFlight.Inc()
	m.observeRequest("POST /api/v1/plan", "POST", 200, 2*time.Millisecond)
	m.observeRequest("POST /api/v1/plan", "POST", 400, time.Millisecond)
	m.observeRequest("unmatched", "BREW", 405, time.Millisecond)
	m.observeError("POST /api/v1/plan", "invalid_input")
	m.observeError("unmatched", "method_not_allowed")
	m.observePlan("plan", "ok")
	m.observePlan("plan", "invalid_input")
	m.observePlan("plan", "ok")

	text := scrape(t, m)
	want := map[string]float64{
		"kvcfg_http_requests_total{code=200,method=POST,route=POST /api/v1/plan}":        1,
		"kvcfg_http_requests_total{code=400,method=POST,route=POST /api/v1/plan}":        1,
		"kvcfg_http_requests_total{code=405,method=OTHER,route=unmatched}":               1,
		"kvcfg_http_request_duration_seconds{method=POST,route=POST /api/v1/plan}_count": 2,
		"kvcfg_http_request_duration_seconds{method=OTHER,route=unmatched}_count":        1,
		"kvcfg_http_errors_total{kind=invalid_input,route=POST /api/v1/plan}":            1,
		"kvcfg_http_errors_total{kind=method_not_allowed,route=unmatched}":               1,
		"kvcfg_plans_total{endpoint=plan,outcome=invalid_input}":                         1,
		"kvcfg_plans_total{endpoint=plan,outcome=ok}":                                    2,
		"kvcfg_http_requests_in_flight{}":                                                1,
	}
	if diff := cmp.Diff(want, samples(t, text)); diff != "" {
		t.Errorf("exposition mismatch (-want +got):\n%s", diff)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "process_start_time_seconds"} {
		if !strings.Contains(text, "\n# TYPE "+name+" ") {
			t.Errorf("exposition lacks %s (Go runtime and process collectors)", name)
		}
	}
	if !strings.Contains(text, `kvcfg_http_request_duration_seconds_bucket{method="POST",route="POST /api/v1/plan",le="0.0025"} 2`) {
		t.Errorf("latency buckets are not the server's:\n%s", text)
	}

	m.inFlight.Dec()
	if got := samples(t, scrape(t, m))["kvcfg_http_requests_in_flight{}"]; got != 0 {
		t.Errorf("in flight after done = %v, want 0", got)
	}
}

func TestMetricsConcurrent(t *testing.T) {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				m.inFlight.Inc()
				m.observeRequest("GET /healthz", "GET", 200, time.Microsecond)
				m.inFlight.Dec()
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			rec := httptest.NewRecorder()
			m.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != 200 {
				t.Errorf("GET /metrics: status %d", rec.Code)
			}
		}
	})
	wg.Wait()
	if got := samples(t, scrape(t, m))["kvcfg_http_requests_total{code=200,method=GET,route=GET /healthz}"]; got != 800 {
		t.Errorf("requests = %v, want 800", got)
	}
}

// Label values are escaped as the exposition format requires, and the
// output parses.
func TestMetricsLabelEscaping(t *testing.T) {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.observeError("GET /a\"b\\c", "odd\nkind")
	got := samples(t, scrape(t, m))
	if got["kvcfg_http_errors_total{kind=odd\nkind,route=GET /a\"b\\c}"] != 1 {
		t.Errorf("escaped series not found: %v", got)
	}
}

// Each server has a registry of its own (two in one process do not
// collide, and none touches the global default registry); a registry given
// in Config.Metrics gets only the kvcfg_* metrics, and one registry cannot
// serve two servers.
func TestMetricsRegistry(t *testing.T) {
	before, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := New(Config{}); err != nil {
			t.Fatalf("New: %v", err)
		}
	}
	if after, _ := prometheus.DefaultGatherer.Gather(); len(after) != len(before) {
		t.Errorf("the default registry went from %d to %d families", len(before), len(after))
	}
	reg := prometheus.NewRegistry()
	s, err := New(Config{Metrics: reg})
	if err != nil {
		t.Fatalf("New with a registry: %v", err)
	}
	s.metrics.observePlan("plan", "ok")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "kvcfg_") {
			t.Errorf("the caller's registry got %s", mf.GetName())
		}
	}
	if _, err := New(Config{Metrics: reg}); err == nil || !strings.HasPrefix(err.Error(), "server: metrics: ") {
		t.Errorf("second server on one registry: %v, want a server: metrics: error", err)
	}
}
