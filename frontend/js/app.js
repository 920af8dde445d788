// The dashboard: one page, routes in the URL's hash so any static host serves it
// (a bucket, `gatebench serve`):  #/  upload and runs · #/runs/ID  a run · #/compare/A/B

import { Api, loadConfig } from "./api.js";
import { comparePage } from "./compare.js";
import { fill, h } from "./dom.js";
import { runPage } from "./run.js";
import { runsList } from "./runs.js";
import { uploadForm } from "./upload.js";

const main = document.getElementById("main");
let controller = null;

function home(ctx) {
  const where = ctx.config.mode === "gcp" ? "on Google Cloud" : "on this machine";
  return [
    h("h1", { tabindex: "-1", id: "page-title" }, "Benchmark API gateways with your API"),
    h("p", { class: "sub" }, `Upload an API description with an x-gatebench section; gatebench runs it ${where} and shows the results here.`),
    uploadForm(ctx),
    runsList(ctx),
  ];
}

function route(ctx) {
  const hash = location.hash || "#/";
  if (!hash.startsWith("#/")) return; // an in-page link (the skip link), not a route
  if (controller) controller.abort();
  controller = new AbortController();
  const page = { ...ctx, signal: controller.signal };
  const parts = hash.slice(2).split("/").filter(Boolean).map(decodeURIComponent);
  let content;
  if (parts[0] === "runs" && parts[1]) content = runPage(page, parts[1]);
  else if (parts[0] === "compare") content = comparePage(page, parts[1], parts[2]);
  else content = home(page);
  fill(main, ...content);
  document.title = parts[0] === "runs" ? `gatebench: run ${parts[1]}` : parts[0] === "compare" ? "gatebench: compare runs" : "gatebench";
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === (parts[0] === "compare" ? "#/compare" : "#/")) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const title = document.getElementById("page-title");
  if (title && ctx.moved) title.focus();
  ctx.moved = true;
}

(async () => {
  try {
    const config = await loadConfig();
    const ctx = { config, api: new Api(config), moved: false };
    document.getElementById("where").textContent = config.mode === "gcp" ? "Runs on Google Cloud" : "Runs on this machine";
    window.addEventListener("hashchange", () => route(ctx));
    route(ctx);
  } catch (error) {
    fill(main, h("p", { class: "error" }, `The dashboard could not start: ${error.message}`));
  }
})();
