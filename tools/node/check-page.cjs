// Open a page in headless Chromium and print what happened as JSON (one object on stdout).
//
// Usage: node check-page.cjs URL [--screenshot FILE] [--probe-file FILE] [--timeout-ms N]
//        [--width PX]   (the viewport's width; 1280 unless given)
// The probe file holds one JavaScript expression evaluated in the page after it loaded
// (e.g. an IIFE returning counts); its value is printed under "probe".
"use strict";

const fs = require("node:fs");
const { checkPage } = require("./lib/browser.cjs");

function parse(argv) {
  const options = { url: null, screenshot: null, probe: null, timeoutMs: 30000 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--screenshot") options.screenshot = argv[++i];
    else if (arg === "--probe-file") options.probe = fs.readFileSync(argv[++i], "utf8");
    else if (arg === "--timeout-ms") options.timeoutMs = Number.parseInt(argv[++i], 10);
    else if (arg === "--width") options.viewport = { width: Number.parseInt(argv[++i], 10), height: 900 };
    else if (!options.url) options.url = arg;
    else throw new Error(`unexpected argument ${arg}`);
  }
  if (!options.url) throw new Error("usage: node check-page.cjs URL [--screenshot FILE] [--probe-file FILE]");
  return options;
}

(async () => {
  const options = parse(process.argv.slice(2));
  const result = await checkPage(options.url, options);
  process.stdout.write(JSON.stringify(result) + "\n");
})().catch((error) => {
  process.stderr.write(`check-page: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
