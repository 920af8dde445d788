// The runs list: newest first, status in words, live while a run is unfinished; pick two
// runs to compare them side by side.

import { sleep } from "./api.js";
import { fill, h, statusBadge, when } from "./dom.js";

export function progressText(run) {
  if (run.status === "queued") {
    return run.queue_position === 1 ? "(next)" : `(${run.queue_position} in line)`;
  }
  const p = run.progress;
  if (!p || run.finished) return "";
  if (p.phase) return `(phase ${p.phase_number} of ${p.phases}: ${p.phase})`;
  return p.message ? `(${p.step}: ${p.message})` : "";
}

const KIND_WORDS = { capacity: "capacity search", scale: "route scale", "change-under-load": "change under load" };

/** What the runs list says of a run's kind: a capacity search, a route scale or a change
 * under load by name; a fixed-workload run by its repetitions. */
export function kindText(run) {
  const words = KIND_WORDS[run.kind];
  if (words) return run.quick ? `${words}, quick` : words;
  return run.quick ? "quick" : run.repetitions ? `${run.repetitions} reps` : "–";
}

/** Only fixed-workload runs stand side by side (the read API's compare refuses the others; a
 * capacity run compares its targets itself). */
export function comparable(run) {
  return run.status !== "queued" && (run.kind === undefined || run.kind === "fixed");
}

function row(run, onPick) {
  const pick = h("input", {
    type: "checkbox",
    id: `pick-${run.run_id}`,
    value: run.run_id,
    class: "pick",
    disabled: !comparable(run),
    onchange: onPick,
  });
  return h(
    "tr",
    { dataset: { run: run.run_id, status: run.status } },
    h(
      "th",
      { scope: "row" },
      h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.title || run.spec_name),
      h("span", { class: "run-id" }, run.run_id),
    ),
    h("td", { class: "status-cell" }, statusBadge(run.status, progressText(run))),
    h("td", {}, [...run.gateways, ...(run.baseline ? ["baseline"] : [])].join(", ") || "–"),
    h("td", {}, kindText(run)),
    h("td", {}, when(run.created_at)),
    h("td", {}, pick, h("label", { for: `pick-${run.run_id}`, class: "sr-only" }, `Compare ${run.run_id}`)),
  );
}

export function runsList(ctx) {
  const { api, config, signal } = ctx;
  const body = h("tbody", {});
  const compare = h("button", { type: "button", id: "compare", disabled: true }, "Compare the two selected runs");
  const note = h("p", { class: "hint", id: "compare-hint" }, "Select two runs to compare them side by side.");
  const message = h("p", { role: "status", class: "stage" });
  const table = h(
    "table",
    { id: "runs", class: "runs" },
    h("caption", {}, "Runs, newest first"),
    h(
      "thead",
      {},
      h("tr", {}, ["Run", "Status", "Targets", "Load", "Started", "Compare"].map((t) => h("th", { scope: "col" }, t))),
    ),
    body,
  );
  const picked = () => Array.from(body.querySelectorAll("input.pick:checked")).map((b) => b.value);
  const onPick = () => {
    compare.disabled = picked().length !== 2;
  };
  compare.addEventListener("click", () => {
    // The list is newest first: A is the older run, so the change B − A reads forward in time.
    const [b, a] = picked();
    if (a && b) location.hash = `#/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
  });

  async function refresh() {
    const runs = await api.listRuns({ limit: 50 }, signal);
    const keep = new Set(picked());
    fill(body, ...runs.map((run) => row(run, onPick)));
    for (const box of body.querySelectorAll("input.pick")) box.checked = keep.has(box.value);
    onPick();
    if (!runs.length) {
      body.append(h("tr", {}, h("td", { colspan: 6 }, "No run yet: upload a spec above.")));
    }
    return runs.some((r) => !r.finished);
  }

  (async () => {
    try {
      while (!signal.aborted) {
        const live = await refresh();
        message.textContent = "";
        await sleep(live ? config.poll_ms : config.poll_ms * 5, signal);
      }
    } catch (error) {
      if (error.name !== "AbortError") message.textContent = `Could not list the runs: ${error.message}`;
    }
  })();

  return h(
    "section",
    { "aria-labelledby": "runs-h", class: "runs-section" },
    h("h2", { id: "runs-h" }, "Runs"),
    message,
    h("div", { class: "scroll" }, table),
    h("div", { class: "actions" }, compare, note),
  );
}
