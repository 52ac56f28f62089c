package server_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kvcfg/kvcfg/server"
)

// POST /api/v1/simulate plans the server and replays the workload; bad
// workloads and options are 400, an infeasible plan 422.
func TestSimulateEndpoint(t *testing.T) {
	ts := newTestServer(t, server.Config{})
	r := do(t, ts, "POST", "/api/v1/simulate", `{"plan": {"model": "meta-llama/Llama-3.1-8B-Instruct", "engine": "vllm"},
		"workload": {"requests": 100, "rate": 10, "prompt": {"mean": 1000}, "output": {"mean": 100}, "shared_prefix": 500, "seed": 1},
		"options": {"timeseries_every": 50}}`)
	if r.status != 200 {
		t.Fatalf("simulate: %d %s", r.status, r.body)
	}
	var got struct {
		Completed   int64            `json:"requests_completed"`
		Preemptions *int64           `json:"preemptions"`
		HitRate     float64          `json:"prefix_hit_rate"`
		Timeseries  []map[string]any `json:"timeseries"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Completed != 100 || got.Preemptions == nil || got.HitRate < 0.3 || len(got.Timeseries) == 0 {
		t.Errorf("answer %.400s", r.body)
	}
	r = do(t, ts, "POST", "/api/v1/simulate", `{"plan": {}, "trace": [{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 10}], "options": {"step_time_s": 0.01}}`)
	if r.status != 200 || !strings.Contains(r.body, `"requests_completed": 1`) {
		t.Errorf("trace: %d %.300s", r.status, r.body)
	}
	for _, c := range []struct {
		body, field string
		status      int
	}{
		{`{"plan": {}}`, "workload", 400},
		{`{"plan": {}, "workload": {"requests": 0, "prompt": {"mean": 1}, "output": {"mean": 1}}}`, "workload", 400},
		{`{"plan": {}, "trace": [{"arrival_s": 0, "prompt_tokens": 0, "output_tokens": 1}]}`, "trace", 400},
		{`{"plan": {}, "workload": {"requests": 1, "prompt": {"mean": 1}, "output": {"mean": 1}}, "options": {"mbu": 3}}`, "options", 400},
		{`{"plan": {"engine": "trtllm"}, "workload": {"requests": 1, "prompt": {"mean": 1}, "output": {"mean": 1}}}`, "plan", 400},
		{`{"plan": {"model": "meta-llama/Llama-3.1-70B-Instruct"}, "workload": {"requests": 1, "prompt": {"mean": 1}, "output": {"mean": 1}}}`, "", 422},
	} {
		r := do(t, ts, "POST", "/api/v1/simulate", c.body)
		if r.status != c.status || c.field != "" && !strings.Contains(r.body, `"field":"`+c.field+`"`) && !strings.Contains(r.body, `"field": "`+c.field+`"`) {
			t.Errorf("%s: %d %s, want %d on %s", c.body, r.status, r.body, c.status, c.field)
		}
	}
}

// The page's simulate panel posts the plan form with a workload and draws
// the time series (a real browser; skipped without Chromium).
func TestBrowserSimulatePanel(t *testing.T) {
	var mu sync.Mutex
	var problems []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, "console.error")
			}
		}
	}
	ctx := browser(t, 120*time.Second, listen)
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	type simProbe struct {
		Datasets int `json:"datasets"`
		Points   int `json:"points"`
		Painted  int `json:"painted"`
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(css(`body[data-state="done"]`)),
		chromedp.Click(css(`#simulate-box summary`)),
		chromedp.SetValue(css(`#s-requests`), "200"),
		chromedp.Click(css(`#sim-submit`)),
		chromedp.WaitVisible(css(`#sim-results`)),
	); err != nil {
		t.Fatalf("simulate panel: %v", err)
	}
	probe, err := chromedp.Run(ctx, chromedp.Evaluate[simProbe](`(() => { const c = document.getElementById("sim-chart"); const ch = Chart.getChart(c);
		const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; let p = 0;
		for (let i = 3; i < px.length; i += 4) if (px[i] > 0) p++;
		return { datasets: ch.data.datasets.length, points: ch.data.labels.length, painted: p }; })()`))
	if err != nil {
		t.Fatal(err)
	}
	binding, err := chromedp.Run(ctx, chromedp.TextContent(css(`#sim-cards`)))
	if err != nil {
		t.Fatal(err)
	}
	if probe.Datasets != 4 || probe.Points < 10 || probe.Painted < 1000 {
		t.Errorf("chart %+v, want 4 datasets over the time series, drawn", probe)
	}
	if !strings.Contains(binding, "Requests completed200") {
		t.Errorf("cards %q", binding)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("page errors: %v", problems)
	}
}
