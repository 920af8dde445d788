// Two runs side by side: their throughput on the same scales (one per endpoint), their scores and ranks, and the
// change of each metric from run A to run B with its interval.

import { drawChart } from "./charts.js";
import { fill, h, statusBadge, when } from "./dom.js";
import { drawTables } from "./tables.js";

function runCard(label, run) {
  return h(
    "div",
    { class: "run-card", dataset: { side: label } },
    h("h2", {}, `Run ${label}: `, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.title || run.spec_name)),
    h("p", { class: "sub" }, `${run.run_id} · started ${when(run.created_at)}`, run.quick ? " · quick run" : ""),
    h("p", {}, "Status: ", statusBadge(run.status)),
    h("p", {}, `Scoring: ${run.scoring}`),
    h("p", { class: "verdict" }, (run.verdict || []).join(" ")),
  );
}

function picker(ctx) {
  const { api, signal } = ctx;
  const a = h("select", { id: "run-a", name: "a" });
  const b = h("select", { id: "run-b", name: "b" });
  const message = h("p", { role: "status" });
  const form = h(
    "form",
    { class: "compare-form" },
    h("div", { class: "field" }, h("label", { for: "run-a" }, "Run A"), a),
    h("div", { class: "field" }, h("label", { for: "run-b" }, "Run B"), b),
    h("button", { type: "submit" }, "Compare"),
    message,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!a.value || !b.value) return;
    location.hash = `#/compare/${encodeURIComponent(a.value)}/${encodeURIComponent(b.value)}`;
  });
  api.listRuns({ limit: 200 }, signal).then((runs) => {
    const finished = runs.filter((r) => r.finished);
    for (const select of [a, b]) {
      fill(select, ...finished.map((r) => h("option", { value: r.run_id }, `${r.title || r.spec_name} · ${r.run_id} · ${r.status}`)));
    }
    if (finished.length > 1) b.selectedIndex = 1;
    if (finished.length < 2) message.textContent = "Two finished runs are needed for a comparison.";
  }).catch((error) => {
    if (error.name !== "AbortError") message.textContent = `Could not list the runs: ${error.message}`;
  });
  return form;
}

export function comparePage(ctx, a, b) {
  const { api, signal } = ctx;
  const heading = h("h1", { tabindex: "-1", id: "page-title" }, "Compare two runs");
  if (!a || !b) return [heading, picker(ctx)];
  const body = h("div", { id: "comparison", "aria-busy": "true" }, h("p", {}, "Loading both runs…"));
  api.compare(a, b, signal).then((view) => {
    const [chartA, chartB] = view.charts;
    // different profiles: the first note says the scores are not comparable, above everything
    const notes = view.same_scoring ? view.notes : view.notes.slice(1);
    fill(body, 
      h("div", { class: "side-by-side" }, runCard("A", view.a), runCard("B", view.b)),
      view.same_scoring ? null : h("aside", { class: "cautions", "aria-label": "Scores not comparable" }, h("strong", {}, view.notes[0])),
      notes.length ? h("ul", { class: "notes" }, notes.map((n) => h("li", {}, n))) : null,
      h(
        "section",
        { "aria-labelledby": "cmp-throughput-h" },
        h("h2", { id: "cmp-throughput-h" }, "Throughput per endpoint, both runs on the same scales"),
        h(
          "div",
          { class: "side-by-side" },
          h("figure", {}, h("figcaption", {}, "Run A"), drawChart(chartA, "a-")),
          h("figure", {}, h("figcaption", {}, "Run B"), drawChart(chartB, "b-")),
        ),
      ),
      h("section", { "aria-labelledby": "cmp-tables-h" }, h("h2", { id: "cmp-tables-h" }, "Scores and metrics"), drawTables(view.tables)),
      h("p", { class: "legend" }, view.resolution),
    );
    body.removeAttribute("aria-busy");
  }).catch((error) => {
    if (error.name !== "AbortError") fill(body, h("p", { class: "error" }, `Could not compare: ${error.message}`));
  });
  return [heading, body];
}
