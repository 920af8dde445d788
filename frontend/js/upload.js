// The upload form: pick a spec (file input, or drag and drop onto the form), see it
// checked before anything runs (the plan as it will run, or every problem with its JSON
// pointer and line), choose the options, start the run.

import { ApiError } from "./api.js";
import { fill, h, size } from "./dom.js";

function place(problem) {
  const parts = [];
  if (problem.source) parts.push(problem.source);
  if (problem.line != null) parts.push(`line ${problem.line}${problem.column != null ? `, column ${problem.column}` : ""}`);
  return parts.join(", ");
}

/** One located problem: where (file, line, column), the JSON pointer, the message. */
function problemItem(problem) {
  return h(
    "li",
    {
      class: `problem problem-${problem.severity || "error"}`,
      dataset: { pointer: problem.pointer, line: problem.line ?? "", severity: problem.severity || "error" },
    },
    h("span", { class: "severity" }, `${problem.severity || "error"}: `),
    place(problem) ? h("span", { class: "where" }, place(problem), " ") : null,
    h("code", { class: "pointer" }, problem.pointer || "/"),
    " ",
    h("span", { class: "message" }, problem.message),
  );
}

function problemList(title, problems, className) {
  if (!problems.length) return null;
  return h("div", { class: className }, h("h3", {}, title), h("ul", { class: "problems" }, problems.map(problemItem)));
}

function summaryBlock(summary, mode) {
  const leftOut = summary.left_out || {};
  const measured = summary.selected.filter((g) => !(g in leftOut));
  const targets = [...measured, ...(summary.baseline ? ["baseline (no gateway)"] : [])];
  const left = Object.keys(leftOut).length
    ? h("div", { class: "note", id: "left-out" }, h("p", {}, "Left out of the run:"), h("ul", {}, Object.values(leftOut).map((why) => h("li", {}, why))))
    : null;
  const cloudOnly = summary.cloud_only && summary.cloud_only.length && mode === "local"
    ? h("p", { class: "note" }, `Only on the cloud path (reported, not measured here): ${summary.cloud_only.join(", ")}.`)
    : null;
  return h(
    "div",
    { class: "check-ok", id: "check-ok" },
    h("p", { class: "ok-line" }, h("span", { "aria-hidden": "true" }, "✓ "), `Ready to run: ${summary.title || summary.name}`),
    h(
      "ul",
      { class: "plan" },
      h("li", {}, `Targets: ${targets.join(", ") || "none"}`),
      summary.kind === "capacity"
        ? h("li", {}, `Capacity search: the highest rate each target carries within the objective${summary.quick ? " (quick run)" : ""}`)
        : h("li", {}, `Repetitions: ${summary.repetitions}${summary.quick ? " (quick run)" : ""}`),
      h("li", {}, `Backend: ${summary.backend}`),
    ),
    cloudOnly,
    left,
    h(
      "table",
      { class: "workloads" },
      h("caption", {}, "Workloads, as they will run"),
      h("thead", {}, h("tr", {}, ["Workload", "Request", "Load"].map((t) => h("th", { scope: "col" }, t)))),
      h(
        "tbody",
        {},
        summary.workloads.map((w) =>
          h("tr", {}, h("th", { scope: "row" }, w.name), h("td", {}, `${w.method} ${w.path}`), h("td", {}, w.injection)),
        ),
      ),
    ),
  );
}

export function uploadForm(ctx) {
  const { api, config, signal } = ctx;
  const fileInput = h("input", {
    type: "file",
    id: "spec-file",
    name: "spec",
    // API Blueprint is read with Node.js, which the local server has and the Cloud Functions
    // do not (docs/input.md, "API Blueprint").
    accept: config.mode === "local" ? ".yaml,.yml,.json,.raml,.apib,.md,.zip" : ".yaml,.yml,.json,.raml,.zip",
    "aria-describedby": "spec-hint",
  });
  const quick = h("input", { type: "checkbox", id: "quick", name: "quick", "aria-describedby": "quick-hint" });
  const capacity = h("input", { type: "checkbox", id: "capacity", name: "kind", value: "capacity", "aria-describedby": "capacity-hint" });
  const gatewayBox = h("fieldset", { id: "gateways", class: "gateways", hidden: true }, h("legend", {}, "Gateways to measure"));
  const chosen = h("p", { id: "chosen", class: "chosen" });
  const check = h("div", { id: "check", class: "check", "aria-live": "polite" });
  const stage = h("p", { id: "upload-status", role: "status", class: "stage" });
  const start = h("button", { type: "submit", id: "start" }, "Start the run");
  const dropZone = h(
    "div",
    { class: "drop-zone", id: "drop-zone" },
    h("label", { for: "spec-file", class: "file-label" }, "API description with an x-gatebench section"),
    fileInput,
    chosen,
    h(
      "p",
      { id: "spec-hint", class: "hint" },
      config.mode === "local"
        ? `OpenAPI 3.x, Swagger 2.0, RAML or API Blueprint, as a file or a zip; up to ${size(config.max_bytes)}. `
        : `OpenAPI 3.x, Swagger 2.0 or RAML, as YAML, JSON or a zip; up to ${size(config.max_bytes)} (convert API Blueprint to OpenAPI first). `,
      "Choose a file or drag and drop it onto this box. It is checked before anything runs.",
    ),
  );
  let file = null;
  let valid = false;
  let planGateways = null;
  let generation = 0;

  function options() {
    const boxes = Array.from(gatewayBox.querySelectorAll("input[type=checkbox]"));
    const gateways = planGateways && boxes.length ? boxes.filter((b) => b.checked).map((b) => b.value) : null;
    const all = gateways && planGateways && gateways.length === planGateways.length;
    return { quick: quick.checked, gateways: all ? null : gateways, kind: capacity.checked ? "capacity" : "fixed" };
  }

  function showGateways(names) {
    if (planGateways && names.join() === planGateways.join()) return;
    planGateways = names;
    fill(gatewayBox, h("legend", {}, "Gateways to measure"));
    for (const name of names) {
      const id = `gw-${name}`;
      gatewayBox.append(
        h(
          "div",
          { class: "choice" },
          h("input", { type: "checkbox", id, value: name, checked: true, onchange: () => validate() }),
          h("label", { for: id }, name),
        ),
      );
    }
    gatewayBox.hidden = names.length === 0;
  }

  async function validate() {
    valid = false;
    if (!file) return;
    const mine = ++generation;
    if (file.size > config.max_bytes) {
      fill(check, 
        problemList("This file cannot be uploaded", [
          { pointer: "", message: `${file.name} is ${file.size.toLocaleString("en-US")} bytes; the limit is ${config.max_bytes.toLocaleString("en-US")} (${size(config.max_bytes)})`, severity: "error" },
        ], "check-errors"),
      );
      return;
    }
    fill(check, h("p", { class: "busy" }, `Checking ${file.name}…`));
    try {
      const summary = await api.validate(file, options(), signal);
      if (mine !== generation) return;
      showGateways(summary.gateways);
      valid = true;
      fill(check, summaryBlock(summary, config.mode), problemList("Warnings", summary.warnings, "check-warnings"));
    } catch (error) {
      if (mine !== generation || error.name === "AbortError") return;
      const errors = error instanceof ApiError && error.errors.length
        ? error.errors
        : [{ pointer: "", message: error.message, severity: "error" }];
      const count = errors.length === 1 ? "1 problem" : `${errors.length} problems`;
      fill(check, 
        problemList(`${file.name}: ${count} to fix before it can run`, errors, "check-errors"),
        problemList("Warnings", error.warnings || [], "check-warnings"),
      );
    }
  }

  function choose(picked) {
    if (!picked) return;
    file = picked;
    fill(chosen, "Chosen: ", h("strong", {}, file.name), ` (${size(file.size)})`);
    planGateways = null;
    gatewayBox.hidden = true;
    stage.textContent = "";
    validate();
  }

  fileInput.addEventListener("change", () => choose(fileInput.files[0]));
  quick.addEventListener("change", () => validate());
  capacity.addEventListener("change", () => validate());
  for (const type of ["dragenter", "dragover"]) {
    dropZone.addEventListener(type, (event) => {
      event.preventDefault();
      dropZone.classList.add("dragging");
    });
  }
  dropZone.addEventListener("dragleave", () => dropZone.classList.remove("dragging"));
  dropZone.addEventListener("drop", (event) => {
    event.preventDefault();
    dropZone.classList.remove("dragging");
    const dropped = event.dataTransfer && event.dataTransfer.files[0];
    if (!dropped) return;
    fileInput.files = event.dataTransfer.files; // the input names the dropped file too
    choose(dropped);
  });

  const form = h(
    "form",
    { id: "upload-form", novalidate: true },
    dropZone,
    check,
    h(
      "fieldset",
      { class: "options" },
      h("legend", {}, "Run options"),
      h(
        "div",
        { class: "choice" },
        quick,
        h("label", { for: "quick" }, "Quick smoke run"),
        h("p", { id: "quick-hint", class: "hint" }, "One repetition, 1 s warm-up, phases of at most 2 s or 100 requests (like gatebench run --quick)."),
      ),
      h(
        "div",
        { class: "choice" },
        capacity,
        h("label", { for: "capacity" }, "Capacity search"),
        h("p", { id: "capacity-hint", class: "hint" }, "Instead of the workloads' own load: the highest arrival rate each gateway carries within the plan's objective, per endpoint, with a 95 % interval (like gatebench capacity)."),
      ),
      gatewayBox,
    ),
    h("div", { class: "actions" }, start, stage),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!file) {
      stage.textContent = "Choose a spec file first.";
      fileInput.focus();
      return;
    }
    if (!valid) {
      stage.textContent = "The spec has problems (listed above): fix them and choose the file again.";
      return;
    }
    start.disabled = true;
    try {
      const runId = await api.upload(file, options(), (text) => { stage.textContent = text; }, signal);
      location.hash = `#/runs/${encodeURIComponent(runId)}`;
    } catch (error) {
      if (error.name === "AbortError") return;
      stage.textContent = `Not started: ${error.message}`;
      if (error instanceof ApiError && error.errors.length) {
        fill(check, problemList("Problems", error.errors, "check-errors"));
      }
    } finally {
      start.disabled = false;
    }
  });
  return h(
    "section",
    { "aria-labelledby": "upload-h", class: "upload" },
    h("h2", { id: "upload-h" }, "Upload a spec"),
    form,
  );
}
