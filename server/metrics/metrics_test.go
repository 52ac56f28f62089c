package metrics_test

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvcfg/kvcfg/server/metrics"
)

// samples parses the text exposition and returns "name{labels}" -> value for
// the kvcfg_* counters and gauges, and "name{labels}_count" for histograms.
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

func TestRecorder(t *testing.T) {
	r := metrics.New()
	done := r.Start()
	r.ObserveRequest("POST /api/v1/plan", "POST", 200, 2*time.Millisecond)
	r.ObserveRequest("POST /api/v1/plan", "POST", 400, time.Millisecond)
	r.ObserveRequest("unmatched", "BREW", 405, time.Millisecond)
	r.ObserveError("POST /api/v1/plan", "invalid_input")
	r.ObserveError("unmatched", "method_not_allowed")
	r.ObservePlan("plan", "ok")
	r.ObservePlan("plan", "invalid_input")
	r.ObservePlan("plan", "ok")

	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
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
	if diff := cmp.Diff(want, samples(t, buf.String())); diff != "" {
		t.Errorf("exposition mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(buf.String(), "go_goroutines") {
		t.Errorf("exposition lacks the Go runtime collector")
	}

	done()
	buf.Reset()
	if err := r.WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	if got := samples(t, buf.String())["kvcfg_http_requests_in_flight{}"]; got != 0 {
		t.Errorf("in flight after done = %v, want 0", got)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := metrics.New()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				done := r.Start()
				r.ObserveRequest("GET /healthz", "GET", 200, time.Microsecond)
				done()
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			if err := r.WriteText(&bytes.Buffer{}); err != nil {
				t.Errorf("WriteText: %v", err)
			}
		}
	})
	wg.Wait()
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if got := samples(t, buf.String())["kvcfg_http_requests_total{code=200,method=GET,route=GET /healthz}"]; got != 800 {
		t.Errorf("requests = %v, want 800", got)
	}
}

func TestContentType(t *testing.T) {
	if !strings.HasPrefix(metrics.ContentType, "text/plain; version=0.0.4") {
		t.Errorf("ContentType = %q", metrics.ContentType)
	}
}

// Label values are escaped as the exposition format requires, and the
// output parses.
func TestLabelEscaping(t *testing.T) {
	r := metrics.New()
	r.ObserveError("GET /a\"b\\c", "odd\nkind")
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	got := samples(t, buf.String())
	if got["kvcfg_http_errors_total{kind=odd\nkind,route=GET /a\"b\\c}"] != 1 {
		t.Errorf("escaped series not found: %v", got)
	}
}
