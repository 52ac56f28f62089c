// The "Simulate a workload" panel: POST /api/v1/simulate with the plan
// form's request and a generated workload, then the summary and a chart
// of KV usage, running and waiting requests over (estimated) time.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  let chart = null;

  // planRequest reads the plan form as app.js does: named, enabled fields,
  // numbers as numbers, blanks left out.
  function planRequest() {
    const req = {};
    for (const el of $("plan-form").elements) {
      if (!el.name || el.disabled) continue;
      const v = el.value.trim();
      if (v === "") continue;
      if (el.name === "config") { req.config = JSON.parse(v); continue; }
      req[el.name] = el.type === "number" ? Number(v) : v;
    }
    if (req.hub_model) req.model = req.hub_model;
    delete req.hub_model;
    delete req.concurrency;
    if (req.config) delete req.model;
    return req;
  }

  function num(id) { return Number($(id).value); }

  function card(k, v) {
    const d = document.createElement("div");
    d.className = "card";
    const a = document.createElement("span"); a.className = "k"; a.textContent = k;
    const b = document.createElement("span"); b.className = "v"; b.textContent = v;
    d.append(a, b);
    return d;
  }

  function render(s) {
    const cards = $("sim-cards");
    cards.replaceChildren(
      card("Requests completed", `${s.requests_completed} (${s.unservable_requests} unservable)`),
      card("Peak / mean running", `${s.peak_running} / ${s.mean_running.toFixed(1)}`),
      card(s.engine === "vllm" ? "Preemptions" : "Retractions", String(s.engine === "vllm" ? s.preemptions : s.retractions)),
      card("Recomputed tokens", String(s.recomputed_tokens)),
      card("Prefix hit rate", (100 * s.prefix_hit_rate).toFixed(1) + "%"),
      card("Peak KV tokens", `${s.peak_kv_tokens} of ${s.pool_tokens}`),
      card("Binding limit", s.binding_limit === "compute"
        ? `compute: needs ${s.compute_load_est.toFixed(1)}x the GPU time (a larger pool would not help)` : s.binding_limit),
      card("Mean TTFT (est.)", s.mean_ttft_est_s.toFixed(3) + " s"),
      card("Inter-token latency (est.)", (1000 * s.mean_itl_est_s).toFixed(1) + " ms"),
    );
    const pts = s.timeseries || [];
    const x = pts.map((p) => p.t_est_s.toFixed(1));
    if (chart) chart.destroy();
    chart = new window.Chart($("sim-chart"), {
      type: "line",
      data: {
        labels: x,
        datasets: [
          { label: "KV tokens held", data: pts.map((p) => p.kv_used_tokens), yAxisID: "kv", borderColor: "#59a14f", pointRadius: 0 },
          { label: "KV tokens cached (evictable)", data: pts.map((p) => p.kv_cached_tokens), yAxisID: "kv", borderColor: "#c7e3c0", pointRadius: 0 },
          { label: "Running", data: pts.map((p) => p.running), yAxisID: "reqs", borderColor: "#4e79a7", pointRadius: 0 },
          { label: "Waiting", data: pts.map((p) => p.waiting), yAxisID: "reqs", borderColor: "#e15759", pointRadius: 0 },
        ],
      },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: "time (s, estimate)" } },
          kv: { position: "left", beginAtZero: true, max: s.pool_tokens, title: { display: true, text: "tokens" } },
          reqs: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: "requests" } },
        },
      },
    });
    $("sim-results").hidden = false;
  }

  async function run() {
    const err = $("sim-error");
    err.hidden = true;
    let plan;
    try { plan = planRequest(); } catch (e) { err.textContent = `plan form: ${e.message}`; err.hidden = false; return; }
    const requests = num("s-requests");
    const body = {
      plan,
      workload: {
        requests, rate: num("s-rate"), seed: 1,
        prompt: { mean: num("s-prompt") }, output: { mean: num("s-output") },
        shared_prefix: num("s-prefix") || 0, prefix_groups: num("s-groups") || 0,
      },
      options: { timeseries_every: Math.max(1, Math.round(requests / 50)) },
    };
    $("sim-submit").disabled = true;
    try {
      const r = await fetch("api/v1/simulate", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(body),
      });
      const data = await r.json();
      if (!r.ok) { err.textContent = data.error || `HTTP ${r.status}`; err.hidden = false; return; }
      render(data);
    } catch (e) {
      err.textContent = String(e); err.hidden = false;
    } finally {
      $("sim-submit").disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const f = $("sim-form");
    if (!f) return;
    f.addEventListener("submit", (ev) => { ev.preventDefault(); run(); });
  });
})();
