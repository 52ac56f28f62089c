// kvcfg web page: fills the form from the catalog endpoints, posts the form
// to /api/v1/plan (the same code path as `kvcfg plan -o json`), and draws
// the results with the vendored Chart.js. No build step, no external assets.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("plan-form");

  // state is exposed as window.kvcfg for debugging and the browser test.
  const state = { sweep: [], engineDTypes: {}, charts: {}, report: null, sweepResults: [], generation: 0 };

  // Spellings that name the same KV storage as another accepted value; the
  // dtype chart leaves them out.
  const dtypeAliases = { bfloat16: "bf16", float16: "fp16", fp8: "fp8_e4m3" };

  // fillDTypes lists the selected engine's accepted KV cache dtypes in the
  // form and picks the dtype chart's columns.
  function fillDTypes() {
    const list = state.engineDTypes[$("f-engine").value] || [];
    const dsel = $("f-kv_cache_dtype");
    const keep = dsel.value;
    dsel.replaceChildren(...list.map((d) => option(d)));
    dsel.value = list.includes(keep) ? keep : (list.includes("auto") ? "auto" : list[0] || "");
    state.sweep = list.filter((d) => d !== "auto" && !(dtypeAliases[d] && list.includes(dtypeAliases[d])));
  }
  window.kvcfg = state;

  // applyEngine shows the selected engine's own fields and disables the
  // others' (disabled fields are not sent: the API refuses another
  // engine's flags).
  function applyEngine() {
    const eng = $("f-engine").value;
    for (const el of document.querySelectorAll("[data-engines]")) {
      const on = el.dataset.engines.split(" ").includes(eng);
      el.hidden = !on;
      for (const input of el.querySelectorAll("input, select")) input.disabled = !on;
    }
    fillDTypes();
  }

  function setState(s) { document.body.dataset.state = s; }

  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return r.json();
  }

  async function postJSON(url, body) {
    const r = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    let data;
    try { data = await r.json(); } catch (e) { data = { error: `HTTP ${r.status}` }; }
    return { ok: r.ok, status: r.status, data };
  }

  function option(value, label) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = label || value;
    return o;
  }

  // fmtInt writes an integer with thousands separators, independent of locale.
  function fmtInt(n) {
    const s = String(Math.trunc(Math.abs(n)));
    return (n < 0 ? "-" : "") + s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  function fmtBytes(n) {
    const units = [["TiB", 2 ** 40], ["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
    for (const [u, m] of units) {
      if (Math.abs(n) >= m) return `${(n / m).toFixed(2)} ${u}`;
    }
    return `${fmtInt(n)} B`;
  }

  // fmt renders one report value for humans. Integers get separators;
  // *_bytes values also show a binary unit.
  function fmt(key, v, compact) {
    if (v === null || v === undefined || v === "") return "-";
    if (typeof v === "number") {
      if (Number.isInteger(v)) {
        if (/_bytes$/.test(key)) {
          if (compact) return Math.abs(v) >= 2 ** 30 ? fmtBytes(v) : `${fmtInt(v)} B`;
          if (Math.abs(v) >= 1024) return `${fmtInt(v)} (${fmtBytes(v)})`;
        }
        return fmtInt(v);
      }
      return String(Math.round(v * 1000) / 1000);
    }
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function showError(msg, field) {
    const box = $("error");
    box.textContent = msg;
    box.hidden = false;
    for (const el of form.elements) el.removeAttribute("aria-invalid");
    if (field && form.elements[field]) form.elements[field].setAttribute("aria-invalid", "true");
  }

  function clearError() {
    $("error").hidden = true;
    $("error").textContent = "";
    for (const el of form.elements) el.removeAttribute("aria-invalid");
  }

  // buildRequest turns the form into a plan request: one key per named
  // field, numbers as numbers, blanks left out (engine defaults apply).
  function buildRequest() {
    const req = {};
    for (const el of form.elements) {
      if (!el.name || el.disabled) continue;
      const v = el.value.trim();
      if (v === "") continue;
      if (el.name === "config") {
        try { req.config = JSON.parse(v); } catch (e) {
          const err = new Error(`not valid JSON: ${e.message}`);
          err.field = "config";
          throw err;
        }
        continue;
      }
      req[el.name] = el.type === "number" ? Number(v) : v;
    }
    // A Hugging Face id (servers started with --hub) replaces the
    // catalog choice.
    if (req.hub_model) req.model = req.hub_model;
    delete req.hub_model;
    if (req.config) delete req.model;
    return req;
  }

  // budgetSegments are the parts of report.breakdown that add up to the
  // per-GPU total, in stacking order (see plan.Breakdown):
  // total = runtime overhead + weights + first kernel + reserved +
  // multimodal cache + state + KV pool + unused (reserved less
  // over_budget_bytes where the pool outgrows its budget).
  const budgetSegments = [
    ["runtime_overhead_bytes", "Runtime overhead", "#9c755f"],
    ["weights_bytes", "Weights", "#4e79a7"],
    ["first_kernel_bytes", "First CUDA kernel", "#76b7b2"],
    ["reserved_bytes", "Reserved (activations, graphs)", "#bab0ac"],
    ["multimodal_cache_bytes", "Multimodal cache", "#b07aa1"],
    ["state_bytes", "State (Mamba)", "#f28e2b"],
    ["kv_pool_bytes", "KV cache", "#59a14f"],
    ["unused_bytes", "Unused", "#c7e3c0"],
  ];

  // dsv4Segments split DeepSeek-V4's KV pool into its sub-pools
  // (report.dsv4_pools.bytes, SGLang's DSV4PoolConfigurator): they stand in
  // for the one "KV cache" segment and add up to it.
  const dsv4Segments = [
    ["swa_bytes", "SWA window KV", "#59a14f"],
    ["c4_bytes", "c4 compressed KV", "#8cd17d"],
    ["c128_bytes", "c128 compressed KV", "#b6992d"],
    ["indexer_bytes", "c4 indexer", "#f1ce63"],
    ["c4_state_bytes", "c4 compress state", "#86bcb6"],
    ["c128_state_bytes", "c128 compress state (fixed)", "#499894"],
    ["draft_bytes", "MTP draft pools", "#d37295"],
  ];

  // segmentsOf returns [value, name, color] of each budget part of rep.
  function segmentsOf(rep) {
    const bd = rep.breakdown || {};
    const out = [];
    for (const [key, name, color] of budgetSegments) {
      const sub = rep.dsv4_pools && rep.dsv4_pools.bytes;
      if (key === "kv_pool_bytes" && sub) {
        let sum = 0;
        for (const [k, n, c] of dsv4Segments) {
          if (sub[k] > 0) {
            out.push([sub[k], n, c]);
            sum += sub[k];
          }
        }
        // Rounding of the fractional cell: keep the total exact.
        if (bd.kv_pool_bytes > sum) out.push([bd.kv_pool_bytes - sum, "KV cache (rest)", "#59a14f"]);
        continue;
      }
      // The unified memory pool (report.unified_memory_pool): the state
      // and KV segments are its two sub-pools at their sized split, one
      // byte buffer that either side can grow into.
      let label = name;
      // A pool that outgrows its budget (report.breakdown.over_budget_bytes:
      // an SGLang release counting fewer bytes a token than it allocates)
      // takes the excess out of the reserve; the stack keeps the total.
      if (key === "reserved_bytes" && bd.over_budget_bytes > 0) {
        out.push([bd[key] - bd.over_budget_bytes, `${name}, less ${fmtBytes(bd.over_budget_bytes)} the KV pool overruns`, color]);
        continue;
      }
      if (rep.unified_memory_pool && (key === "kv_pool_bytes" || key === "state_bytes")) {
        label = `Unified buffer: ${key === "kv_pool_bytes" ? "full KV" : rep.unified_memory_pool.other.name} (sized)`;
      }
      out.push([bd[key], label, color]);
    }
    return out;
  }

  // hostTierLine says the host KV tier (report.host_tier: HiCache,
  // host_cache_size, kv_offloading_size), which sits outside the GPU budget.
  function hostTierLine(rep) {
    const t = rep.host_tier;
    if (!t) return "";
    const gib = (b) => (b / 2 ** 30).toFixed(2) + " GiB";
    return `Host KV tier (${t.option}): ${t.tokens.toLocaleString("en-US")} tokens in ${t.blocks.toLocaleString("en-US")} blocks of ${t.block_size}, ${gib(t.bytes)} of host RAM per rank; the GPU pool is unchanged.`;
  }

  function drawBudget(rep) {
    const bd = rep.breakdown || {};
    const datasets = [];
    let stacked = 0;
    // Up to the GPU's total each part is drawn in its colour; what the
    // launch needs beyond it (weights that do not fit, say) is one red
    // segment past the total.
    let room = bd.total_bytes > 0 ? bd.total_bytes : Infinity;
    for (const [v, name, color] of segmentsOf(rep)) {
      if (typeof v !== "number" || v <= 0) continue;
      stacked += v;
      const inside = Math.min(v, room);
      room -= inside;
      if (inside <= 0) continue;
      datasets.push({
        label: `${name} ${fmtBytes(v)}`,
        data: [inside / 2 ** 30],
        backgroundColor: color,
        borderColor: "#ffffff",
        borderWidth: 1,
      });
    }
    const over = bd.total_bytes > 0 ? stacked - bd.total_bytes : 0;
    if (over > 0) {
      datasets.push({
        label: `Over the GPU by ${fmtBytes(over)}`,
        data: [over / 2 ** 30],
        backgroundColor: "#b3261e",
        borderColor: "#ffffff",
        borderWidth: 1,
      });
    }
    state.overflowBytes = Math.max(over, 0);
    $("budget-total").textContent = bd.total_bytes
      ? `(total ${fmtBytes(bd.total_bytes)} per GPU${over > 0 ? `; the launch needs ${fmtBytes(stacked)}, ${fmtBytes(over)} more` : ""})${hostTierLine(rep) ? " " + hostTierLine(rep) : ""}`
      : "";
    replaceChart("budget", $("budget-chart"), {
      type: "bar",
      data: { labels: ["per GPU"], datasets },
      options: {
        indexAxis: "y",
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, title: { display: true, text: "GiB" }, beginAtZero: true,
            max: bd.total_bytes ? Math.max(bd.total_bytes, stacked) / 2 ** 30 : undefined },
          y: { stacked: true },
        },
        plugins: { legend: { position: "bottom" } },
      },
    });
  }

  // drawSweep charts the columns of POST /api/v1/compare: one per KV
  // cache dtype, same model, GPU and flags.
  function drawSweep(req, rep, columns) {
    const ok = columns.filter((c) => !c.error);
    const failed = columns.filter((c) => c.error);
    // Mark this plan's column: the dtype as asked, else ("auto", an alias)
    // the first column that resolved to the same storage.
    let mine = ok.findIndex((c) => c.kv_cache_dtype === req.kv_cache_dtype);
    if (mine < 0) mine = ok.findIndex((c) => c.resolved_kv_cache_dtype === rep.resolved_kv_cache_dtype);
    const labels = ok.map((c, i) => (i === mine ? `${c.kv_cache_dtype} (this plan)` : c.kv_cache_dtype));
    replaceChart("dtype", $("dtype-chart"), {
      type: "bar",
      data: {
        labels,
        datasets: [
          {
            label: "Tokens in the KV pool",
            data: ok.map((c) => c.tokens || 0),
            backgroundColor: "#59a14f",
            yAxisID: "y",
          },
          {
            label: "Concurrent requests at context length",
            data: ok.map((c) => c.max_concurrency || 0),
            backgroundColor: "#edc948",
            yAxisID: "y1",
          },
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          y: { beginAtZero: true, position: "left", title: { display: true, text: "tokens" } },
          y1: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false }, title: { display: true, text: "requests" } },
        },
        plugins: { legend: { position: "bottom" } },
      },
    });
    const note = $("dtype-note");
    note.textContent = failed.length
      ? `Not plannable here: ${failed.map((c) => c.kv_cache_dtype).join(", ")} (hover for the reasons)`
      : "";
    note.title = failed.map((c) => `${c.kv_cache_dtype}: ${c.error}`).join("\n\n");
  }

  function replaceChart(name, canvas, config) {
    if (state.charts[name]) state.charts[name].destroy();
    state.charts[name] = new window.Chart(canvas, config);
  }

  function renderNumbers(rep) {
    const body = $("numbers").tBodies[0];
    body.replaceChildren();
    const add = (key, v) => {
      const tr = document.createElement("tr");
      tr.dataset.key = key;
      const th = document.createElement("th");
      th.textContent = key;
      const td = document.createElement("td");
      td.id = "v-" + key;
      td.textContent = fmt(key, v);
      tr.append(th, td);
      body.append(tr);
    };
    for (const [k, v] of Object.entries(rep)) {
      if (Array.isArray(v)) continue;
      if (v && typeof v === "object") {
        for (const [k2, v2] of Object.entries(v)) {
          if (Array.isArray(v2)) continue;
          if (v2 && typeof v2 === "object") {
            // One level deeper: dsv4_pools.tokens.* and dsv4_pools.bytes.*.
            for (const [k3, v3] of Object.entries(v2)) {
              if (v3 === null || typeof v3 !== "object") add(`${k}.${k2}.${k3}`, v3);
            }
            continue;
          }
          add(`${k}.${k2}`, v2);
        }
        continue;
      }
      add(k, v);
    }
  }

  // applyFlagTable lets the flag table (GET /api/v1/flags, the table the
  // CLI is built from) decide which engines each form field belongs to and
  // what its tooltip says: a field shows for the engines whose row takes
  // it, and for a setting the engines name differently (the context
  // length, the memory share) only under the engine's own name.
  function applyFlagTable(table) {
    state.flags = table;
    for (const f of (table && table.flags) || []) {
      const el = form.elements[f.key];
      const label = el && el.closest ? el.closest("label") : null;
      if (!label) continue;
      let engines = f.engines || [];
      if (f.role && f.spelling) engines = engines.filter((e) => f.spelling[e]);
      label.dataset.engines = engines.join(" ");
      const names = f.spelling ? Object.entries(f.spelling).map(([e, n]) => `${e}: ${n}`).join(", ") : f.name;
      el.title = `${f.help} (${names})`;
    }
  }

  function renderVerdict(rep) {
    const box = $("verdict");
    box.dataset.verdict = rep.verdict || "";
    $("answer").textContent = rep.answer || rep.error || "";
    const fix = rep.verdict && rep.verdict !== "serves" ? rep.fix_hint : "";
    $("fix").textContent = fix ? "Fix: " + fix : "";
    $("fix").hidden = !fix;
    const flags = fix && rep.fix_args && rep.fix_args.length ? rep.fix_args.join(" ") : "";
    $("fix-flags").textContent = flags;
    $("fix-flags").hidden = !flags;
  }

  // shareKeys is each engine's memory share: the report key and flag name.
  const shareKeys = {
    sglang: { key: "mem_fraction_static", label: "--mem-fraction-static" },
    vllm: { key: "gpu_memory_utilization", label: "--gpu-memory-utilization" },
    trtllm: { key: "free_gpu_memory_fraction", label: "free_gpu_memory_fraction" },
  };

  function render(req, rep) {
    $("results").hidden = false;
    renderVerdict(rep);
    const parts = [rep.engine, rep.model, rep.gpu].filter(Boolean);
    $("title").textContent = parts.join(" · ") + (rep.tp_size ? ` · TP ${rep.tp_size}` : "");
    // The SGLang version profile the plan used, and why (every SGLang plan).
    $("profile").textContent = rep.sglang_profile ? "Profile: " + rep.sglang_profile : "";
    $("profile").hidden = !rep.sglang_profile;
    // Each number once, under the engine's own name: vLLM's KV cache size
    // is its max total tokens unless the pools are hybrid, and its
    // "Maximum concurrency" (3.51x) is the whole requests that fit (3).
    const share = shareKeys[rep.engine] || shareKeys.sglang;
    const same = {
      max_total_num_tokens: rep.kv_cache_size_tokens !== undefined && rep.kv_cache_size_tokens === rep.max_total_num_tokens,
      max_concurrency_at_context_length: rep.max_concurrency !== undefined,
    };
    for (const el of document.querySelectorAll("#cards .v")) {
      const key = el.id.slice(2);
      if (key === "memory_share") {
        // The engine's memory share under its own flag name (a vLLM or
        // TensorRT-LLM report leaves mem_fraction_static 0).
        $("k-memory_share").textContent = share.label;
        el.textContent = fmt(share.key, rep[share.key], true);
        el.parentElement.hidden = !rep[share.key];
        continue;
      }
      el.textContent = key === "max_concurrency" && typeof rep[key] === "number"
        ? `${fmtInt(Math.floor(rep[key]))} (${rep[key].toFixed(2)}x)` : fmt(key, rep[key], true);
      el.parentElement.hidden = rep[key] === undefined || same[key] === true;
    }
    // A blank memory share plans the version's default: the placeholder
    // says which (the planner's number, not a guess of the page's).
    const input = form.elements[share.key];
    if (input && input.value === "" && rep[share.key]) input.placeholder = String(rep[share.key]);
    const warn = $("warnings");
    warn.replaceChildren();
    for (const w of rep.warnings || []) {
      const li = document.createElement("li");
      li.textContent = w;
      warn.append(li);
    }
    warn.hidden = !(rep.warnings && rep.warnings.length);
    $("log").textContent = (rep.log_lines || []).join("\n");
    $("log-box").hidden = !(rep.log_lines && rep.log_lines.length);
    renderTerms(rep);
    renderNumbers(rep);
    drawBudget(rep);
  }

  // renderTerms lists a computed budget's terms (report.budget): each
  // term's size, origin (computed, exact, measured, given, estimated,
  // predicted) and parts, then the validation table's band.
  function renderTerms(rep) {
    const b = rep.budget;
    const table = $("terms");
    table.replaceChildren();
    $("terms-box").hidden = !b;
    if (!b) return;
    const gib = (n) => (n / 2 ** 30).toFixed(2) + " GiB";
    b.terms.forEach((t, i) => {
      const tr = document.createElement("tr");
      const parts = (t.parts || []).map((p) => `${p.name} ${gib(p.bytes)} (${p.source})`).join("; ");
      for (const text of [t.name, (i ? "− " : "") + gib(t.bytes), t.origin, parts]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      table.append(tr);
    });
    const bd = b.band;
    $("band").textContent = bd
      ? `Band ±${(100 * bd.rel_error).toFixed(2)} % of the KV memory: ${fmtInt(bd.tokens_low)}–${fmtInt(bd.tokens_high)} tokens, `
        + `${fmtInt(bd.concurrency_low)}–${fmtInt(bd.concurrency_high)} requests (${bd.basis})`
        + (bd.weights_estimated ? "; the weights are the config's estimate, outside the band" : "")
      : "No band: every term was given or measured.";
  }

  async function runPlan() {
    const gen = ++state.generation;
    clearError();
    setState("planning");
    let req;
    try { req = buildRequest(); } catch (e) {
      showError(e.message, e.field);
      setState("error");
      return;
    }
    history.replaceState(null, "", "?" + toQuery(req));
    const res = await postJSON("api/v1/plan", req);
    if (gen !== state.generation) return;
    const rep = res.ok ? res.data : res.data.report;
    if (!rep) {
      // Bad input: no plan to show, and the last one no longer applies.
      state.report = null;
      $("results").hidden = true;
      showError(res.data.error || `HTTP ${res.status}`, res.data.field);
      setState("error");
      return;
    }
    state.report = rep;
    render(req, rep); // an infeasible plan too: its budget shows why
    if (!res.ok) showError(res.data.error || `HTTP ${res.status}`, res.data.field);
    $("dtype-figure").hidden = false;
    // One comparison across the KV cache dtypes, same engine and flags:
    // most useful when this one does not fit.
    const cmpReq = Object.assign({}, req, { engines: [req.engine || "sglang"], kv_cache_dtypes: state.sweep });
    delete cmpReq.engine;
    delete cmpReq.kv_cache_dtype;
    const cmp = await postJSON("api/v1/compare", cmpReq);
    if (gen !== state.generation) return;
    const columns = cmp.ok ? cmp.data.columns || [] : (cmp.data.report && cmp.data.report.columns) || [];
    state.sweepResults = columns;
    drawSweep(req, rep, columns);
    if (!cmp.ok && !columns.length) $("dtype-note").textContent = `Comparison failed: ${cmp.data.error || "HTTP " + cmp.status}`;
    setState(res.ok ? "done" : "error");
  }

  function toQuery(req) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(req)) {
      q.set(k, typeof v === "object" ? JSON.stringify(v) : String(v));
    }
    return q.toString();
  }

  // applyQuery fills the form from the URL (?model=...&gpu=...), so a plan
  // can be linked.
  function applyQuery() {
    const q = new URLSearchParams(location.search);
    if (q.has("engine")) {
      $("f-engine").value = q.get("engine");
      applyEngine(); // the engine decides which fields and dtypes the form offers
    }
    for (const [k, v] of q) {
      const el = form.elements[k];
      if (!el || k === "engine") continue;
      el.value = v;
      if (k === "config") $("config-box").open = true;
      if ($("measured-box").contains(el)) $("measured-box").open = true;
    }
  }

  async function init() {
    if (!window.Chart) {
      showError("the chart library did not load");
      setState("error");
      return;
    }
    try {
      const [models, gpus, dtypes, flags] = await Promise.all([
        getJSON("api/v1/models"), getJSON("api/v1/gpus"), getJSON("api/v1/dtypes"), getJSON("api/v1/flags"),
      ]);
      const msel = $("f-model");
      for (const m of models.models || []) {
        if (m.error) continue;
        msel.append(option(m.name));
      }
      if (models.default) msel.value = models.default;
      if (models.hub) { $("hub-box").hidden = false; $("revision-box").hidden = false; }
      const gsel = $("f-gpu");
      for (const g of gpus.gpus || []) {
        gsel.append(option(g.name, `${g.name} (${(g.memory_mib / 1024).toFixed(1)} GiB)`));
      }
      applyFlagTable(flags);
      state.engineDTypes = dtypes.engines || { sglang: dtypes.kv_cache_dtypes || [] };
      applyEngine();
      $("f-engine").addEventListener("change", applyEngine);
    } catch (e) {
      showError(`could not load the catalogs: ${e.message}`);
      setState("error");
      return;
    }
    applyQuery();
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      runPlan().catch((e) => { showError(String(e)); setState("error"); });
    });
    setState("ready");
    // The page opens with a plan: the linked one, else the default.
    runPlan().catch((e) => { showError(String(e)); setState("error"); });
  }

  init();
})();
