package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/server"
)

// chromium returns the path of a Chromium binary: $KVCFG_CHROMIUM, else the
// first of the usual names on PATH. Without one the browser test skips
// loudly, except under CI=true, where .ci/run installs Debian's chromium and
// a missing binary is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KVCFG_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium binary on PATH (looked for chromium, chromium-browser, google-chrome, headless-shell; " +
		"or set KVCFG_CHROMIUM): install Debian's package with `apt-get install -y chromium`"
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", msg)
	}
	t.Skipf("\n\n*** SKIPPING THE REAL-BROWSER TEST OF THE WEB PAGE ***\n*** %s ***\n\n", msg)
	return ""
}

// browser starts headless Chromium with the flags a closed network needs
// and a fresh profile; it returns a chromedp context.
func browser(t *testing.T, timeout time.Duration, listen func(ev any)) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1500),
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf), chromedp.WithListener(listen))
	t.Cleanup(bcancel)
	return bctx
}

// fmtInt formats n as the page does: thousands separated by commas.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// chartProbe is what the page reports about one drawn chart.
type chartProbe struct {
	Datasets int `json:"datasets"`
	Labels   int `json:"labels"`
	// Painted counts non-transparent canvas pixels.
	Painted int `json:"painted"`
	// BarsMatching counts bars whose center pixel has the dataset's color.
	BarsMatching int       `json:"bars_matching"`
	Bars         int       `json:"bars"`
	FirstValues  []float64 `json:"first_values"`
}

// probeCharts runs in the page: it inspects both Chart.js charts and their
// canvases (pixels, not just objects), so a chart that never drew fails.
const probeCharts = `(() => {
  const hex = (c) => { const m = /^#([0-9a-f]{6})$/i.exec(c || ""); return m ? [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16)) : null; };
  const out = {};
  for (const id of ["budget-chart", "dtype-chart"]) {
    const canvas = document.getElementById(id);
    const chart = Chart.getChart(canvas);
    const ctx = canvas.getContext("2d");
    const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
    let bars = 0, matching = 0;
    const ratio = canvas.width / canvas.clientWidth;
    const firstValues = [];
    if (chart) {
      chart.data.datasets.forEach((ds, i) => {
        firstValues.push(ds.data[0]);
        const want = hex(Array.isArray(ds.backgroundColor) ? ds.backgroundColor[0] : ds.backgroundColor);
        for (const el of chart.getDatasetMeta(i).data) {
          bars++;
          const horizontal = chart.options.indexAxis === "y";
          const x = Math.round((horizontal ? (el.x + el.base) / 2 : el.x) * ratio);
          const y = Math.round((horizontal ? el.y : (el.y + el.base) / 2) * ratio);
          const p = ctx.getImageData(x, y, 1, 1).data;
          if (want && Math.abs(p[0] - want[0]) < 8 && Math.abs(p[1] - want[1]) < 8 && Math.abs(p[2] - want[2]) < 8) matching++;
        }
      });
    }
    out[id] = { datasets: chart ? chart.data.datasets.length : 0, labels: chart ? chart.data.labels.length : 0,
      painted, bars, bars_matching: matching, first_values: firstValues };
  }
  return out;
})()`

// TestBrowserEndToEnd drives the page in headless Chromium: it fills the
// form, submits a plan, and checks the rendered numbers against the API and
// that both charts drew (pixels of the bars' colors on the canvases).
func TestBrowserEndToEnd(t *testing.T) {
	// Collect console errors, uncaught exceptions and browser log errors
	// (CSP violations, failed loads).
	var mu sync.Mutex
	var problems []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := d.Text
			if d.Exception != nil {
				desc += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, desc))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value))
				}
				problems = append(problems, "console.error: "+strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	}
	ctx := browser(t, 120*time.Second, listen) // skips without Chromium
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	const gpuName, kvDType = "H200", "fp8_e4m3"
	// The body the form posts: every named field, blanks left out.
	body := fmt.Sprintf(`{"model": %q, "gpu": %q, "engine": "sglang", "tp_size": 1, "pp_size": 1, "dp_size": 1, "kv_cache_dtype": %q}`,
		catalog.Default, gpuName, kvDType)
	want := apiPlan(t, ts, body)

	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	// The page opens with the default plan already shown, verdict first.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(css(`body[data-state="done"]`)),
	); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	if a, err := chromedp.Run(ctx, chromedp.TextContent(css(`#answer`))); err != nil || !strings.HasPrefix(a, "Serves:") {
		t.Errorf("the opening plan's answer is %q (%v), want the default plan's verdict", a, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`#f-model`), catalog.Default),
		chromedp.SetValue(css(`#f-gpu`), gpuName),
		chromedp.SetValue(css(`#f-kv_cache_dtype`), kvDType),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`body[data-state="done"], body[data-state="error"]`)),
	); err != nil {
		t.Fatalf("driving the page: %v", err)
	}
	state, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`body`), "data-state"))
	if err != nil {
		t.Fatal(err)
	}
	if state.Value != "done" {
		msg, _ := chromedp.Run(ctx, chromedp.TextContent(css(`#error`)))
		t.Fatalf("page ended in state %q: %s", state.Value, msg)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.TextContent(css(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	cardKeys := []string{"max_total_num_tokens", "max_running_requests", "resolved_kv_cache_dtype", "cell_size_bytes"}
	cards := map[string]string{}
	for _, k := range cardKeys {
		cards[k] = text("#c-" + k)
	}
	tableValue := text("#v-max_total_num_tokens")
	logText := text("#log")
	// Every SGLang plan names its version profile: the newest by default.
	if p := text("#profile"); !strings.HasPrefix(p, "Profile: no --sglang-version: sized with the newest profile") {
		t.Errorf("#profile = %q, want the newest profile and why", p)
	}
	probes, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]chartProbe](probeCharts))
	if err != nil {
		t.Fatalf("probing the charts: %v", err)
	}
	if dir := os.Getenv("KVCFG_E2E_SCREENSHOT_DIR"); dir != "" {
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot: %v", err)
		} else if err := os.WriteFile(filepath.Join(dir, "kvcfg-page.png"), shot, 0o644); err != nil {
			t.Errorf("writing screenshot: %v", err)
		}
	}

	// The numbers on the page are the API's numbers.
	tokens := int64(want["max_total_num_tokens"].(float64))
	wantCards := map[string]string{
		"max_total_num_tokens":    fmtInt(tokens),
		"max_running_requests":    fmtInt(int64(want["max_running_requests"].(float64))),
		"resolved_kv_cache_dtype": fmt.Sprint(want["resolved_kv_cache_dtype"]),
		"cell_size_bytes":         fmtInt(int64(want["cell_size_bytes"].(float64))) + " B",
	}
	for k, w := range wantCards {
		if cards[k] != w {
			t.Errorf("card %s shows %q, want %q", k, cards[k], w)
		}
	}
	if tableValue != fmtInt(tokens) {
		t.Errorf("numbers table max_total_num_tokens %q, want %q", tableValue, fmtInt(tokens))
	}
	var lines []string
	for _, l := range want["log_lines"].([]any) {
		lines = append(lines, l.(string))
	}
	if len(lines) == 0 {
		t.Errorf("the plan has no log lines to show")
	}
	if logText != strings.Join(lines, "\n") {
		t.Errorf("engine log shows\n%s\nwant\n%s", logText, strings.Join(lines, "\n"))
	}

	// Both charts drew: datasets exist, canvases are painted, and the
	// bars' centers carry their dataset colors.
	for _, id := range []string{"budget-chart", "dtype-chart"} {
		p := probes[id]
		t.Logf("%s: %+v", id, p)
		if p.Datasets == 0 || p.Bars == 0 {
			t.Errorf("%s has no bars: %+v", id, p)
		}
		if p.Painted < 2000 {
			t.Errorf("%s canvas is nearly blank (%d painted pixels)", id, p.Painted)
		}
		if p.BarsMatching == 0 {
			t.Errorf("%s: no bar center has its dataset's color (%+v)", id, p)
		}
	}
	if p := probes["budget-chart"]; p.Datasets < 2 {
		t.Errorf("budget chart has %d segments, want at least weights and KV", p.Datasets)
	}
	if p := probes["dtype-chart"]; p.Labels < 2 {
		t.Errorf("dtype chart has %d dtypes, want several", p.Labels)
	}
	// The dtype chart's bar for this plan's dtype is this plan's capacity.
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => {
	  const c = Chart.getChart(document.getElementById("dtype-chart"));
	  const out = {};
	  c.data.labels.forEach((l, i) => { out[l] = c.data.datasets[0].data[i]; });
	  return out;
	})()`))
	if err != nil {
		t.Fatalf("reading the dtype chart: %v", err)
	}
	if got, ok := bars[kvDType+" (this plan)"]; !ok || int64(got) != tokens {
		t.Errorf("dtype chart bar %q = %v (present %v), want %d; bars %v", kvDType+" (this plan)", got, ok, tokens, bars)
	}

	// Switching the engine to vLLM offers vLLM's dtype spellings and plans
	// through vLLM's code path.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`#f-engine`), "vllm"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("f-engine").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(css(`#f-kv_cache_dtype`), "fp8"),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`body[data-state="done"], body[data-state="error"]`)),
	); err != nil {
		t.Fatalf("planning with vLLM: %v", err)
	}
	if st, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`body`), "data-state")); err != nil || st.Value != "done" {
		t.Fatalf("vLLM plan ended in state %q (%v): %s", st.Value, err, text("#error"))
	}
	wantVLLM := apiPlan(t, ts, fmt.Sprintf(`{"model": %q, "gpu": %q, "engine": "vllm", "tp_size": 1, "pp_size": 1, "dp_size": 1, "kv_cache_dtype": "fp8"}`,
		catalog.Default, gpuName))
	if got, want := text("#c-kv_cache_size_tokens"), fmtInt(int64(wantVLLM["kv_cache_size_tokens"].(float64))); got != want {
		t.Errorf("vLLM card kv_cache_size_tokens shows %q, want %q", got, want)
	}
	// Each number once (issue 32): vLLM's KV cache size is not repeated as
	// "Max total tokens", nor its concurrency as two cards; the memory
	// share card and the blank field's placeholder are vLLM's own.
	type cardView struct {
		Shown       []string `json:"shown"`
		ShareLabel  string   `json:"share_label"`
		Placeholder string   `json:"placeholder"`
	}
	cv, err := chromedp.Run(ctx, chromedp.Evaluate[cardView](`(() => ({
	  shown: [...document.querySelectorAll("#cards .card")].filter((c) => !c.hidden).map((c) => c.querySelector(".v").textContent),
	  share_label: document.getElementById("k-memory_share").textContent,
	  placeholder: document.getElementById("f-gpu_memory_utilization").placeholder,
	}))()`))
	if err != nil {
		t.Fatalf("reading the vLLM cards: %v", err)
	}
	seen := map[string]bool{}
	for _, v := range cv.Shown {
		if seen[v] && v != "-" {
			t.Errorf("vLLM cards repeat %q: %q", v, cv.Shown)
		}
		seen[v] = true
	}
	if util := fmt.Sprint(wantVLLM["gpu_memory_utilization"]); cv.ShareLabel != "--gpu-memory-utilization" || cv.Placeholder != util || !seen[util] {
		t.Errorf("vLLM memory share: card %q, placeholder %q, cards %q; want --gpu-memory-utilization %s", cv.ShareLabel, cv.Placeholder, cv.Shown, util)
	}
	if got := text("#title"); !strings.HasPrefix(got, "vllm") {
		t.Errorf("title %q does not name vllm", got)
	}
	// The flag table drives the form: vLLM takes SGLang's free-memory
	// readings too (the static page said SGLang only), and each field's
	// tooltip is the table's help.
	type fieldView struct {
		PreEngines string `json:"pre_engines"`
		CtxEngines string `json:"ctx_engines"`
		Title      string `json:"title"`
		Help       string `json:"help"`
	}
	fv, err := chromedp.Run(ctx, chromedp.Evaluate[fieldView](`(() => {
	  const f = window.kvcfg.flags.flags.find((f) => f.key === "mem_fraction_static");
	  return {
	    pre_engines: document.getElementById("f-pre_load_free_memory").closest("label").dataset.engines,
	    ctx_engines: document.getElementById("f-context_length").closest("label").dataset.engines,
	    title: document.getElementById("f-mem_fraction_static").title,
	    help: f.help,
	  };
	})()`))
	if err != nil {
		t.Fatalf("reading the form: %v", err)
	}
	if fv.PreEngines != "sglang vllm" || fv.CtxEngines != "sglang" || !strings.HasPrefix(fv.Title, fv.Help) || fv.Help == "" {
		t.Errorf("form not driven by the flag table: %+v", fv)
	}
	// The form shows the engine's own fields only: vLLM has no
	// --mem-fraction-static, and a disabled field is not sent.
	if shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]bool](`[document.getElementById("f-mem_fraction_static").disabled, document.getElementById("f-gpu_memory_utilization").disabled]`)); err != nil || !shown[0] || shown[1] {
		t.Errorf("with vLLM selected, mem_fraction_static disabled / gpu_memory_utilization disabled = %v (%v), want true / false", shown, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`#f-engine`), "sglang"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("f-engine").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(css(`#f-kv_cache_dtype`), kvDType),
	); err != nil {
		t.Fatalf("switching back to SGLang: %v", err)
	}

	// An invalid plan shows the API's error message next to the form.
	const badFraction = "1.5"
	errBody := fmt.Sprintf(`{"model": %q, "gpu": %q, "engine": "sglang", "tp_size": 1, "pp_size": 1, "dp_size": 1, "kv_cache_dtype": %q, "mem_fraction_static": %s}`,
		catalog.Default, gpuName, kvDType, badFraction)
	wantErr := apiError(t, ts, errBody)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`#f-mem_fraction_static`), badFraction),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`body[data-state="error"]`)),
	); err != nil {
		t.Fatalf("submitting an invalid plan: %v", err)
	}
	if errText := text("#error"); errText != wantErr.Error {
		t.Errorf("error box shows %q, want %q", errText, wantErr.Error)
	}
	if wantErr.Field != "" {
		invalid, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`[name="`+wantErr.Field+`"]`), "aria-invalid"))
		if err != nil {
			t.Fatalf("reading aria-invalid: %v", err)
		}
		if invalid.Value != "true" {
			t.Errorf("field %s not marked invalid", wantErr.Field)
		}
	}

	// Bad input leaves no stale plan on the page.
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("results").hidden`)); err != nil || !hidden {
		t.Errorf("after a 400 the old results are still shown (hidden=%v, %v)", hidden, err)
	}

	// An infeasible plan (70B on one L4) shows its verdict, marks the
	// overflow on the memory bar and keeps the dtype chart.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(css(`#f-mem_fraction_static`), ""),
		chromedp.SetValue(css(`#f-model`), "meta-llama/Llama-3.1-70B-Instruct"),
		chromedp.SetValue(css(`#f-gpu`), "L4"),
		chromedp.SetValue(css(`#f-kv_cache_dtype`), "auto"),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`body[data-state="error"]`)),
	); err != nil {
		t.Fatalf("submitting an infeasible plan: %v", err)
	}
	type infeasibleView struct {
		Verdict      string  `json:"verdict"`
		Results      bool    `json:"results"`
		Overflow     float64 `json:"overflow"`
		DTypeVisible bool    `json:"dtype_visible"`
		OverSegment  bool    `json:"over_segment"`
	}
	iv, err := chromedp.Run(ctx, chromedp.Evaluate[infeasibleView](`(() => {
	  const c = Chart.getChart(document.getElementById("budget-chart"));
	  return {
	    verdict: document.getElementById("verdict").dataset.verdict,
	    results: !document.getElementById("results").hidden,
	    overflow: window.kvcfg.overflowBytes,
	    dtype_visible: !document.getElementById("dtype-figure").hidden && !!Chart.getChart(document.getElementById("dtype-chart")),
	    over_segment: c.data.datasets.some((d) => d.label.startsWith("Over the GPU")),
	  };
	})()`))
	if err != nil {
		t.Fatalf("reading the infeasible view: %v", err)
	}
	if iv.Verdict != "refuses" || !iv.Results || iv.Overflow <= 0 || !iv.DTypeVisible || !iv.OverSegment {
		t.Errorf("infeasible plan view %+v, want verdict refuses, results shown, overflow marked, dtype chart kept", iv)
	}

	// Usable on a phone: at a 420 px viewport nothing overflows sideways.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(420, 900, chromedp.EmulateMobile),
		chromedp.Sleep(200*time.Millisecond),
	); err != nil {
		t.Fatalf("narrow viewport: %v", err)
	}
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 420 {
		wide, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 421).slice(0, 8).map((e) => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`))
		t.Errorf("at 420 px the page is %d px wide (%v); widest: %v", w, err, wide)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		// The invalid plan's 400 is logged by the browser as a failed
		// resource load; everything else is a page bug.
		if strings.Contains(p, "status of 400") || strings.Contains(p, "status of 422") {
			continue
		}
		t.Errorf("browser reported: %s", p)
	}
}

// apiPlan posts body to /api/v1/plan and returns the decoded report.
func apiPlan(t *testing.T, ts *httptest.Server, body string) map[string]any {
	t.Helper()
	res, err := http.Post(ts.URL+"/api/v1/plan", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("POST /api/v1/plan %s: status %d: %s", body, res.StatusCode, buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// apiError posts body to /api/v1/plan, which must fail with 400.
func apiError(t *testing.T, ts *httptest.Server, body string) server.ErrorBody {
	t.Helper()
	res, err := http.Post(ts.URL+"/api/v1/plan", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var eb server.ErrorBody
	if err := json.NewDecoder(res.Body).Decode(&eb); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 400 {
		t.Fatalf("POST /api/v1/plan %s: status %d, want 400 (%+v)", body, res.StatusCode, eb)
	}
	return eb
}
