// End-to-end scenarios of the dashboard in Debian's Chromium, driven by playwright-core
// (tools/node: the same launcher, flags and executable as the report's browser test;
// never a downloaded browser). Prints one JSON object describing what happened; the
// Python tests (test_frontend_browser.py) assert on it.
//
// Usage: node frontend_e2e.cjs SCENARIO --base URL --artifacts DIR [--spec FILE] [--broken FILE]
//   [--run-a ID --run-b ID] [--timeout-ms N]
// Scenarios: broken, keyboard-upload, signed-upload, cloud-upload, compare, capacity, change.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const NODE_TOOLS = path.resolve(__dirname, "../../tools/node");
const { CHROMIUM_ARGS, executablePath } = require(path.join(NODE_TOOLS, "lib/browser.cjs"));
const { chromium } = require(path.join(NODE_TOOLS, "node_modules/playwright-core"));

function parse(argv) {
  const options = { scenario: argv[0], timeoutMs: 240000 };
  for (let i = 1; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    options[key] = argv[++i];
  }
  options.timeoutMs = Number(options.timeoutMs);
  return options;
}

const FINISHED = new Set(["done", "failed", "partial"]);

// The report test's flags, with one change: host resolution stays disabled for every
// name, but 127.0.0.1 (the server under test) is reachable.
const ARGS = CHROMIUM_ARGS.map((arg) =>
  arg.startsWith("--host-resolver-rules=") ? "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" : arg);

/** Every input, select and button has an accessible name from a label (or its text). */
const LABEL_PROBE = `(() => Array.from(document.querySelectorAll("input, select, button"))
  .filter((el) => el.type !== "hidden")
  .filter((el) => {
    if (el.tagName === "BUTTON") return el.textContent.trim() === "";
    return !(el.labels && el.labels.length) && !el.getAttribute("aria-label");
  })
  .map((el) => el.outerHTML.slice(0, 120)))()`;

/** What the results part of a run page shows. */
const RESULTS_PROBE = `(() => {
  const rows = (sel) => Array.from(document.querySelectorAll(sel + " tbody tr"))
    .map((r) => Array.from(r.cells).map((c) => c.textContent.trim()));
  const drawn = (sel) => Array.from(document.querySelectorAll(sel))
    .filter((b) => Number(b.getAttribute("data-value")) > 0 && b.getBBox().width > 0).length;
  return {
    // how far the page scrolls sideways: wide tables scroll in their own box, never the page
    pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    verdict: (document.getElementById("verdict") || {}).textContent || null,
    scoreRows: rows("#table-scores"),
    charts: Array.from(document.querySelectorAll("svg.chart")).map((s) => s.id),
    chartsLabelled: Array.from(document.querySelectorAll("svg.chart")).every(
      (s) => s.getAttribute("role") === "img" && s.querySelector("title") && s.querySelector("desc")),
    throughputBars: document.querySelectorAll("#chart-throughput rect.bar").length,
    throughputBarsDrawn: drawn("#chart-throughput rect.bar"),
    throughputTexts: Array.from(document.querySelectorAll("#chart-throughput text.value")).map((t) => t.textContent),
    whiskers: document.querySelectorAll("#chart-throughput path.whisker").length,
    percentileSegments: drawn("#chart-latency rect.segment"),
    scoreBarsDrawn: drawn("#chart-scores rect.bar"),
    latencyTables: document.querySelectorAll("table[id^='table-latency-']").length,
    overheadRows: rows("#table-overhead").length,
    costRows: rows("#table-costs").map((r) => r.slice(0, 2)),
    downloads: Array.from(document.querySelectorAll(".downloads a")).map((a) => a.textContent),
    statusText: (document.querySelector(".status-line") || {}).textContent || null,
  };
})()`;

async function withPage(options, body) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "gatebench-chromium-"));
  const result = { consoleErrors: [], pageErrors: [], requests: [], failedRequests: [] };
  let context = null;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: executablePath(),
      headless: true,
      args: ARGS,
      viewport: { width: 1280, height: 900 },
      timeout: 60000,
    });
    context.on("request", (r) => result.requests.push({ url: r.url(), method: r.method(), resourceType: r.resourceType() }));
    context.on("requestfailed", (r) => {
      // A poll cut short by leaving the page is not a failure of the page.
      const why = r.failure() ? r.failure().errorText : "";
      if (why !== "net::ERR_ABORTED") result.failedRequests.push(`${r.url()} ${why}`);
    });
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(30000);
    // File choosers are intercepted from the start: enabling interception is itself
    // asynchronous, so a listener added just before the key press could miss the dialog.
    result.choosers = [];
    page.on("filechooser", (chooser) => result.choosers.push(chooser));
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") result.consoleErrors.push(`${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => result.pageErrors.push(String(e && e.stack ? e.stack : e)));
    try {
      await page.goto(options.base, { waitUntil: "load" });
      await page.waitForSelector("#upload-form, #comparison, h1");
      if (await page.$("#spec-hint")) {
        // What the form says it reads, as the page's mode has it.
        result.hint = await page.textContent("#spec-hint");
        result.accept = await page.getAttribute("#spec-file", "accept");
      }
      await body(page, result);
    } catch (error) {
      // Keep what the page looked like and what it logged: the test prints both.
      result.error = String(error && error.stack ? error.stack : error);
      result.failureScreenshot = await shot(page, options, `frontend-failed-${options.scenario}.png`).catch(() => null);
    }
  } finally {
    if (context) await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return result;
}

async function shot(page, options, name) {
  const file = path.join(options.artifacts, name);
  fs.mkdirSync(options.artifacts, { recursive: true });
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Press Tab until `selector` has the focus; returns how many presses it took. */
async function tabTo(page, selector, max = 40) {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) return i;
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** The file chooser the last key press opened. */
async function waitForChooser(page, result, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (result.choosers.length) return result.choosers.shift();
    await page.waitForTimeout(50);
  }
  throw new Error("the key press did not open a file chooser");
}

/** Watch the run page until the run finishes; the statuses seen, in order. */
async function watchRun(page, options, result, screenshotName) {
  const seen = [];
  const deadline = Date.now() + options.timeoutMs;
  await page.waitForSelector(".status-line [data-status]");
  let shotTaken = false;
  while (Date.now() < deadline) {
    const status = await page.evaluate(() => {
      const el = document.querySelector(".status-line [data-status]");
      return el ? el.getAttribute("data-status") : null;
    });
    if (status && seen[seen.length - 1] !== status) seen.push(status);
    if (!shotTaken && status === "loading" && screenshotName) {
      result.screenshots.push(await shot(page, options, screenshotName));
      shotTaken = true;
    }
    if (FINISHED.has(status)) return seen;
    await page.waitForTimeout(250);
  }
  throw new Error(`the run did not finish in ${options.timeoutMs} ms; statuses seen: ${seen.join(", ")}`);
}

const scenarios = {
  /** Drag and drop a broken spec onto the form: located errors, nothing uploaded. */
  async broken(page, options, result) {
    const text = fs.readFileSync(options.broken, "utf8");
    const name = path.basename(options.broken);
    const dataTransfer = await page.evaluateHandle(([content, fileName]) => {
      const dt = new DataTransfer();
      dt.items.add(new File([content], fileName, { type: "application/yaml" }));
      return dt;
    }, [text, name]);
    await page.dispatchEvent("#drop-zone", "dragenter", { dataTransfer });
    result.dragClass = await page.getAttribute("#drop-zone", "class");
    await page.dispatchEvent("#drop-zone", "drop", { dataTransfer });
    await page.waitForSelector(".check-errors li.problem");
    result.heading = await page.textContent(".check-errors h3");
    result.problems = await page.$$eval(".check-errors li.problem", (items) =>
      items.map((li) => ({
        pointer: li.querySelector(".pointer").textContent,
        where: (li.querySelector(".where") || {}).textContent || "",
        message: li.querySelector(".message").textContent,
        line: li.dataset.line,
      })));
    result.screenshots = [await shot(page, options, "frontend-broken-spec.png")];
    // Starting it anyway is refused in words; nothing is uploaded.
    await page.click("#start");
    result.startMessage = await page.textContent("#upload-status");
    // A file over the limit is refused before it is sent.
    const big = await page.evaluateHandle(() => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(25000001)], "huge.yaml"));
      return dt;
    });
    await page.dispatchEvent("#drop-zone", "drop", { dataTransfer: big });
    await page.waitForSelector(".check-errors li.problem >> text=huge.yaml");
    result.tooBig = await page.textContent(".check-errors li.problem .message");
    result.unlabelled = await page.evaluate(LABEL_PROBE);
  },

  /** A plan some gateway cannot apply: the form says who is left out, and why, before the run. */
  async "left-out"(page, options, result) {
    await page.setInputFiles("#spec-file", options.spec);
    await page.waitForSelector("#check-ok");
    result.targets = await page.textContent("#check-ok ul.plan li");
    result.leftOut = await page.$$eval("#left-out li", (items) => items.map((li) => li.textContent));
    result.unlabelled = await page.evaluate(LABEL_PROBE);
  },

  /** Keyboard only: Tab to the file input, Space opens the chooser, pick the petstore,
   * Tab to "quick", Space, Tab to "Start", Enter; then watch the run reach its end. */
  async "keyboard-upload"(page, options, result) {
    result.screenshots = [];
    result.tabsToFile = await tabTo(page, "#spec-file");
    await page.keyboard.press("Space");
    const chooser = await waitForChooser(page, result);
    result.chooserFrom = await chooser.element().evaluate((el) => el.id);
    await chooser.setFiles(options.spec);
    await page.waitForSelector("#check-ok");
    result.summaryBefore = await page.textContent("#check-ok");
    await tabTo(page, "#quick");
    await page.keyboard.press("Space");
    await page.waitForSelector("#check-ok >> text=quick run");
    result.summary = await page.textContent("#check-ok");
    result.workloadRows = await page.$$eval("#check-ok table.workloads tbody tr", (rows) =>
      rows.map((r) => Array.from(r.cells).map((c) => c.textContent)));
    result.unlabelled = await page.evaluate(LABEL_PROBE);
    result.screenshots.push(await shot(page, options, "frontend-upload-checked.png"));
    await tabTo(page, "#start");
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/runs\//);
    result.runUrl = page.url();
    result.focusAfterNavigation = await page.evaluate(() => document.activeElement && document.activeElement.id);
    result.statuses = await watchRun(page, options, result, "frontend-run-loading.png");
    await page.waitForSelector('#results[data-state="final"] #table-scores');
    await page.waitForSelector("#chart-throughput");
    result.results = await page.evaluate(RESULTS_PROBE);
    result.screenshots.push(await shot(page, options, "frontend-run-done.png"));
    // Back on the list, the run is there with its status in words.
    await page.goto(options.base, { waitUntil: "load" });
    await page.waitForSelector("#runs tbody tr[data-run]");
    result.listed = await page.$$eval("#runs tbody tr[data-run]", (rows) =>
      rows.map((r) => ({ run: r.dataset.run, status: r.querySelector(".status-cell").textContent.trim() })));
  },

  /** GCP mode, locally: the signed-URL path (POST uploads → PUT to the signed URL →
   * find the run by spec_uri), baseline only, quick. */
  async "signed-upload"(page, options, result) {
    result.screenshots = [];
    result.where = await page.textContent("#where");
    await page.setInputFiles("#spec-file", options.spec);
    await page.waitForSelector("#check-ok");
    await page.check("#quick");
    await page.waitForSelector("#check-ok >> text=quick run");
    for (const box of await page.$$("#gateways input[type=checkbox]")) await box.uncheck();
    await page.waitForSelector("#check-ok >> text=Targets: baseline (no gateway)");
    result.summary = await page.textContent("#check-ok");
    await page.click("#start");
    await page.waitForURL(/#\/runs\//, { timeout: 60000 });
    result.runUrl = page.url();
    result.statuses = await watchRun(page, options, result, null);
    await page.waitForSelector('#results[data-state="final"] #chart-throughput');
    result.results = await page.evaluate(RESULTS_PROBE);
    result.screenshots.push(await shot(page, options, "frontend-signed-upload-done.png"));
  },

  /** The exported GCP site against the upload function: choose the spec, quick, nginx
   * only, Start; the page asks for a ticket, PUTs to the signed URL and waits for the
   * pipeline's run (the test plays the pipeline's first steps), then shows its page. */
  async "cloud-upload"(page, options, result) {
    result.screenshots = [];
    result.where = await page.textContent("#where");
    await page.setInputFiles("#spec-file", options.spec);
    await page.waitForSelector("#check-ok");
    await page.check("#quick");
    await page.waitForSelector("#check-ok >> text=quick run");
    for (const box of await page.$$("#gateways input[type=checkbox]")) {
      if ((await box.getAttribute("value")) !== "nginx") await box.uncheck();
    }
    await page.waitForSelector("#check-ok >> text=Targets: nginx, baseline (no gateway)");
    result.summary = await page.textContent("#check-ok");
    // Every stage the page announces (some last a few milliseconds), until it leaves.
    await page.evaluate(() => {
      const stage = document.getElementById("upload-status");
      window.gatebenchStages = [];
      new MutationObserver(() => window.gatebenchStages.push(stage.textContent))
        .observe(stage, { childList: true, characterData: true, subtree: true });
    });
    await page.click("#start");
    try {
      await page.waitForURL(/#\/runs\//, { timeout: Number(options.timeoutMs) });
    } finally {
      result.stages = await page.evaluate(() => window.gatebenchStages || []).catch(() => null);
    }
    result.runUrl = page.url();
    await page.waitForSelector(".status-line [data-status]");
    result.status = await page.getAttribute(".status-line [data-status]", "data-status");
    result.heading = await page.textContent("h1");
    result.screenshots.push(await shot(page, options, "frontend-cloud-upload.png"));
  },

  /** A stored capacity run: its page shows the verdict, a curve chart per endpoint with every
   * probe and each target's knee, and its tables; the runs list says it is a capacity run. */
  async capacity(page, options, result) {
    await page.waitForSelector(`#runs tbody tr[data-run="${options.runA}"]`);
    result.listedRow = await page.textContent(`#runs tbody tr[data-run="${options.runA}"]`);
    result.pickDisabled = await page.isDisabled(`#pick-${options.runA}`);
    await page.goto(`${options.base}#/runs/${encodeURIComponent(options.runA)}`, { waitUntil: "load" });
    await page.waitForSelector("svg.chart-curves");
    result.verdict = await page.textContent("#verdict");
    result.curves = await page.$$eval("svg.chart-curves", (svgs) =>
      svgs.map((s) => {
        const box = s.getBoundingClientRect();
        const inside = (el) => {
          const r = el.getBoundingClientRect();
          return r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
        };
        return {
          points: s.querySelectorAll("circle.p99").length,
          knees: Array.from(s.querySelectorAll("line.knee")).map((l) => l.closest("g.series").dataset.target),
          objective: s.querySelectorAll("line.objective").length,
          inside: Array.from(s.querySelectorAll("circle.p99, line.knee")).every(inside),
          labelled: s.getAttribute("role") === "img" && !!s.querySelector("title"),
        };
      }));
    result.tables = await page.$$eval("table", (ts) => ts.map((t) => ({ id: t.id, rows: t.tBodies[0].rows.length })));
    result.unlabelled = await page.evaluate(LABEL_PROBE);
    result.screenshots = [await shot(page, options, "frontend-capacity.png")];
  },

  /** A stored change-under-load run: its page frames the run's own report (sandboxed), and
   * the frame shows it: the verdict, the timeline chart, the table. */
  async change(page, options, result) {
    await page.goto(`${options.base}#/runs/${encodeURIComponent(options.runA)}`, { waitUntil: "load" });
    const frameElement = await page.waitForSelector("iframe.scale-report");
    result.sandbox = await frameElement.getAttribute("sandbox");
    const frame = await frameElement.contentFrame();
    if (!frame) throw new Error("the report's frame has no document");
    await frame.waitForSelector("#change-timeline", { timeout: 10000 });
    result.frameVerdict = await frame.textContent(".verdict");
    result.frameCircles = await frame.$$eval("#change-timeline circle", (cs) => cs.length);
    result.frameTables = await frame.$$eval("table", (ts) => ts.map((t) => t.tBodies[0].rows.length));
    result.screenshots = [await shot(page, options, "frontend-change.png")];
  },

  /** Two runs side by side: picked in the runs list, then the comparison page. */
  async compare(page, options, result) {
    await page.waitForSelector(`#runs tbody tr[data-run="${options.runB}"]`);
    result.listed = await page.$$eval("#runs tbody tr[data-run]", (rows) => rows.map((r) => r.dataset.run));
    result.compareDisabledBefore = await page.isDisabled("#compare");
    await page.check(`#pick-${options.runA}`);
    await page.check(`#pick-${options.runB}`);
    result.compareDisabledAfter = await page.isDisabled("#compare");
    await page.click("#compare");
    await page.waitForURL(/#\/compare\//);
    await page.waitForSelector("#comparison svg.chart");
    result.url = page.url();
    result.cards = await page.$$eval(".run-card h2", (hs) => hs.map((x) => x.textContent));
    result.charts = await page.$$eval("#comparison svg.chart", (svgs) =>
      svgs.map((s) => ({
        id: s.id,
        bars: s.querySelectorAll("rect.bar").length,
        whiskers: s.querySelectorAll("path.whisker").length,
        // the same scale: the last tick label of each chart
        lastTick: Array.from(s.querySelectorAll("text.tick")).map((t) => t.textContent).pop(),
        width: Math.round(s.getBoundingClientRect().width),
      })));
    result.tables = await page.$$eval("#comparison table", (ts) => ts.map((t) => ({ id: t.id, rows: t.tBodies[0].rows.length })));
    result.changeTags = await page.$$eval("#comparison td .tag", (tags) => [...new Set(tags.map((t) => t.textContent))].sort());
    result.screenshots = [await shot(page, options, "frontend-compare.png")];
    // Sorting a table by keyboard: focus a column's button, Enter.
    const before = await page.$$eval("#table-scores-compared tbody th", (ths) => ths.map((t) => t.textContent));
    await page.focus("#table-scores-compared thead th:nth-child(2) button");
    await page.keyboard.press("Enter");
    result.sortState = await page.getAttribute("#table-scores-compared thead th:nth-child(2)", "aria-sort");
    result.sortedRows = await page.$$eval("#table-scores-compared tbody th", (ths) => ths.map((t) => t.textContent));
    result.unsortedRows = before;
  },
};

(async () => {
  const options = parse(process.argv.slice(2));
  const scenario = scenarios[options.scenario];
  if (!scenario) throw new Error(`unknown scenario ${options.scenario}; known: ${Object.keys(scenarios).join(", ")}`);
  const result = await withPage(options, (page, res) => scenario(page, options, res));
  delete result.choosers;
  process.stdout.write(JSON.stringify(result) + "\n");
  if (result.error) process.exit(2);
})().catch((error) => {
  process.stderr.write(`frontend_e2e: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
