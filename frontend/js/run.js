// A run's page: its status as it goes (steps in words, the phase running, a progress
// bar), then what is measured so far and the final results: verdict, cautions, the
// throughput, latency and score charts, and every table.

import { ApiError, sleep } from "./api.js";
import { drawChart, drawCurves } from "./charts.js";
import { clock, fill, h, statusBadge, when } from "./dom.js";
import { progressText } from "./runs.js";
import { drawTables } from "./tables.js";

const STEPS = ["received", "parsed", "rendered", "provisioning", "loading", "scoring", "done"];

// The cloud pipeline names the stage that failed ("parse"); the local runner the step.
const STAGE_STEP = { parse: "parsed", render: "rendered", provision: "provisioning", load: "loading", score: "scoring" };

/** Where a run is along the steps, in words: done, current, to do, stopped here, not reached. */
export function stepState(run, index) {
  if (run.status === "queued") return "to do";
  if (run.status === "done") return "done";
  if (run.finished) {
    // A run that stopped says where; a partial run that went to the end stopped at "done".
    const stop = run.failed_step ? STEPS.indexOf(STAGE_STEP[run.failed_step] || run.failed_step) : STEPS.length - 1;
    if (stop < 0) return "not reached";
    if (index < stop) return "done";
    if (index === stop) return run.failed_step ? "stopped here" : run.status;
    return "not reached";
  }
  const at = STEPS.indexOf(run.status);
  return index < at ? "done" : index === at ? "current" : "to do";
}

/** A target's error in words: a gateway left out before the run says so itself (its reason
 * names it), never that it failed. */
export function targetErrorText(run, target, reason) {
  return (run.left_out || []).includes(target) ? reason : `${target} failed: ${reason}`;
}

function steps(run) {
  return h(
    "ol",
    { class: "steps", "aria-label": "Run steps" },
    STEPS.map((step, i) => {
      const state = stepState(run, i);
      return h("li", { class: `step step-${state.replace(/ /g, "-")}` }, `${step} `, h("span", { class: "state" }, `(${state})`));
    }),
  );
}

function statusPanel(run) {
  const p = run.progress;
  const parts = [
    h("p", { class: "status-line" }, "Status: ", statusBadge(run.status, progressText(run))),
    steps(run),
  ];
  if (p && p.phases && !run.finished) {
    parts.push(
      h(
        "p",
        { class: "phase" },
        h("label", { for: "phase-progress" }, `Phase ${p.phase_number} of ${p.phases}`),
        " ",
        h("progress", { id: "phase-progress", max: p.phases, value: p.phase_number }, `${p.phase_number} of ${p.phases}`),
        p.done ? ` ${p.done.toLocaleString("en-US")} requests, ${Math.round(p.rate).toLocaleString("en-US")} req/s` : "",
        p.elapsed != null ? ` · ${clock(p.elapsed)} so far` : "",
        p.left != null ? ` · about ${clock(p.left)} left` : "",
      ),
    );
  }
  if (run.error) parts.push(h("p", { class: "error" }, `Stopped at ${run.failed_step || "?"}: ${run.error}`));
  if (run.teardown && run.teardown !== "ok") parts.push(h("p", { class: "error" }, `Teardown: ${run.teardown}`));
  const failures = Object.entries(run.target_errors || {});
  if (failures.length) {
    parts.push(h("ul", { class: "target-errors" }, failures.map(([t, reason]) => h("li", {}, targetErrorText(run, t, reason)))));
  }
  return parts;
}

function section(id, title, ...content) {
  return h("section", { id, "aria-labelledby": `${id}-h` }, h("h2", { id: `${id}-h` }, title), ...content);
}

function downloads(view, api, note) {
  return section(
    "downloads",
    "Full report",
    h(
      "ul",
      { class: "downloads" },
      ["html", "json", "csv", "md"].map((fmt) =>
        h("li", {}, h("a", { href: api.reportUrl(view.run.run_id, fmt), target: fmt === "html" ? "_blank" : null, rel: "noopener" }, `${fmt.toUpperCase()} report`)),
      ),
    ),
    h("p", { class: "legend" }, note),
  );
}

/** A capacity run (gatebench capacity): the verdict, then per endpoint the knees, the curves,
 * the capacity table and every pair; then the thresholds and the downloads. */
export function capacityBlock(view, api) {
  const out = [];
  out.push(h("div", { class: "verdict", id: "verdict" }, view.verdict.map((v) => h("p", {}, v))));
  if (view.cautions.length) {
    out.push(
      h("aside", { class: "cautions", "aria-label": "Cautions" }, h("strong", {}, "Before you trust these numbers"), h("ul", {}, view.cautions.map((c) => h("li", {}, c)))),
    );
  }
  const knees = Object.fromEntries(view.charts.map((c) => [c.id, c]));
  const curves = view.charts.filter((c) => c.kind === "curves");
  out.push(
    section(
      "capacity",
      "Capacity per endpoint",
      curves.map((chart, i) =>
        h(
          "div",
          { class: "endpoint", dataset: { workload: chart.workload } },
          h("h3", {}, chart.workload),
          knees[`knees-${i}`] ? drawChart(knees[`knees-${i}`]) : null,
          drawCurves(chart),
          drawTables(view.tables.filter((t) => t.id === `capacity-${i}` || t.id === `capacity-pairs-${i}`)),
        ),
      ),
      h("p", { class: "legend" }, `Stopped: ${view.stop}`),
    ),
  );
  if (view.thresholds && view.thresholds.length) {
    out.push(
      section("thresholds", "Thresholds", h("ul", { class: "thresholds" }, view.thresholds.map((t) => h("li", { class: t.passed ? "pass" : "fail" }, `${t.passed ? "pass" : "FAIL"}: ${t.line}`)))),
    );
  }
  out.push(downloads(view, api, view.resolution));
  return out;
}

export function resultsBlock(view, api) {
  if (view.kind === "capacity") return capacityBlock(view, api);
  const charts = Object.fromEntries(view.charts.map((c) => [c.id, c]));
  const tables = view.tables;
  const byId = (prefix) => tables.filter((t) => t.id === prefix || t.id.startsWith(`${prefix}-`));
  const out = [];
  out.push(h("p", { class: "verdict", id: "verdict" }, view.verdict.join(" ")));
  if (view.cautions.length) {
    out.push(
      h("aside", { class: "cautions", "aria-label": "Cautions" }, h("strong", {}, "Before you trust these numbers"), h("ul", {}, view.cautions.map((c) => h("li", {}, c)))),
    );
  }
  const chart = (id) => (charts[id] ? drawChart(charts[id]) : null);
  const legend = (id) => (charts[id] ? h("p", { class: "legend" }, charts[id].legend) : null);
  if (charts.scores || byId("scores").length) {
    out.push(
      section("scores", "Scores", chart("scores"), legend("scores"), drawTables(byId("scores")), chart("workload-scores"), drawTables(byId("workload-scores"))),
    );
  }
  if (charts.throughput) {
    out.push(section("throughput", "Throughput per endpoint", chart("throughput"), legend("throughput")));
  }
  if (charts.latency) {
    out.push(section("latency", "Latency percentiles", chart("latency"), legend("latency"), drawTables(byId("latency"))));
  }
  if (byId("overhead").length) {
    out.push(section("overhead", "Overhead against the baseline", drawTables(byId("overhead"))));
  }
  if (byId("costs").length) {
    out.push(section("costs", "What each target cost", drawTables(byId("costs"))));
  }
  out.push(downloads(view, api, view.resolution));
  return out;
}

/** Runs of the route-scale and change-under-load kinds (docs/scale.md) have their own report. */
export function isScaleRun(run) {
  return run.kind === "scale" || run.kind === "change-under-load";
}

export function scaleBlock(run, api) {
  const title = run.kind === "scale" ? "Route scale" : "Configuration change under load";
  return [
    section(
      "scale",
      title,
      // Sandboxed: the report's own script (its sortable tables) runs in an origin of its own.
      h("iframe", { class: "scale-report", src: api.scaleUrl(run.run_id, "html"), title: `${title} report`, sandbox: "allow-scripts" }),
      h(
        "ul",
        { class: "downloads" },
        ["html", "json"].map((fmt) =>
          h("li", {}, h("a", { href: api.scaleUrl(run.run_id, fmt), target: fmt === "html" ? "_blank" : null, rel: "noopener" }, `${fmt.toUpperCase()} report`)),
        ),
      ),
    ),
  ];
}

export function runPage(ctx, runId) {
  const { api, config, signal } = ctx;
  const heading = h("h1", { tabindex: "-1", id: "page-title" }, `Run ${runId}`);
  const sub = h("p", { class: "sub" });
  // Only the status words are announced (when they change), not every progress tick.
  const announce = h("p", { class: "sr-only", role: "status", id: "status-announce" });
  const status = h("div", { class: "status-panel", id: "status" });
  const results = h("div", { id: "results", class: "results" });

  let lastStatus = null;
  let lastView = 0;
  async function showView(run) {
    if (isScaleRun(run)) {
      results.dataset.state = run.finished ? "final" : "partial";
      fill(results, ...scaleBlock(run, api));
      return;
    }
    let view;
    try {
      view = await api.getView(runId, signal);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return; // not recorded yet
      throw error;
    }
    // "final" once the view of a finished run is shown: the status can read "done" a moment
    // before its results arrive, and until then the previous (partial) view is on screen.
    results.dataset.state = run.finished ? "final" : "partial";
    if (!view.measurements && !run.finished) {
      fill(results, h("p", { class: "hint" }, "Results appear here as phases are measured."));
      return;
    }
    fill(results,
      ...(run.finished ? [] : [h("p", { class: "note" }, "Results so far; the run is still going.")]),
      ...resultsBlock(view, api),
    );
  }

  (async () => {
    try {
      while (!signal.aborted) {
        const run = await api.getRun(runId, signal);
        heading.textContent = run.title ? `${run.title}` : `Run ${runId}`;
        sub.textContent = `Run ${run.run_id} · ${run.spec_name} · started ${when(run.created_at)}${run.quick ? " · quick run" : ""}`;
        fill(status, ...statusPanel(run));
        const changed = run.status !== lastStatus;
        if (changed) announce.textContent = `Status: ${run.status}`;
        lastStatus = run.status;
        const started = !["queued", "received"].includes(run.status);
        if (started && (changed || Date.now() - lastView > 5000)) {
          lastView = Date.now();
          await showView(run);
        }
        if (run.finished) break;
        await sleep(config.poll_ms, signal);
      }
    } catch (error) {
      if (error.name === "AbortError") return;
      const missing = error instanceof ApiError && error.status === 404;
      fill(status, h("p", { class: "error" }, missing ? `There is no run ${runId}.` : `Could not read the run: ${error.message}`));
    }
  })();

  return [h("header", { class: "page-head" }, heading, sub), announce, status, results];
}
