// Debian's Chromium driven by playwright-core, for the report and dashboard tests.
//
// Never downloads a browser: it runs /usr/bin/chromium (CHROMIUM_PATH overrides) with a
// fresh profile directory that is deleted afterwards. Host resolution is disabled, so a
// page cannot reach the network even by mistake; every request is recorded so a test can
// assert there were none.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { chromium } = require("playwright-core");

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--host-resolver-rules=MAP * ~NOTFOUND",
];

function executablePath() {
  return process.env.CHROMIUM_PATH || "/usr/bin/chromium";
}

/**
 * Open `url`, record console errors, page errors and requests, optionally run `probe`
 * (a JavaScript expression evaluated in the page; its JSON-able value is returned) and
 * save a screenshot. Resolves to a plain object describing what happened.
 */
async function checkPage(url, { screenshot = null, probe = null, timeoutMs = 30000, viewport = { width: 1280, height: 900 } } = {}) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "gatebench-chromium-"));
  const result = { url, title: null, consoleErrors: [], pageErrors: [], requests: [], failedRequests: [], probe: null, screenshot: null };
  let context = null;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: executablePath(),
      headless: true,
      args: CHROMIUM_ARGS,
      viewport,
      timeout: timeoutMs,
    });
    context.on("request", (request) => result.requests.push({ url: request.url(), resourceType: request.resourceType() }));
    context.on("requestfailed", (request) => result.failedRequests.push(request.url()));
    const page = context.pages()[0] || (await context.newPage());
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") {
        result.consoleErrors.push(`${message.type()}: ${message.text()}`);
      }
    });
    page.on("pageerror", (error) => result.pageErrors.push(String(error && error.stack ? error.stack : error)));
    await page.goto(url, { waitUntil: "load", timeout: timeoutMs });
    result.title = await page.title();
    if (probe) {
      result.probe = await page.evaluate(probe);
    }
    if (screenshot) {
      fs.mkdirSync(path.dirname(screenshot), { recursive: true });
      await page.screenshot({ path: screenshot, fullPage: true });
      result.screenshot = screenshot;
    }
  } finally {
    if (context) {
      await context.close();
    }
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return result;
}

module.exports = { CHROMIUM_ARGS, checkPage, executablePath };
