// The two JSON APIs the page talks to (docs/frontend.md), wherever config.json says they
// are: `gatebench serve` on this machine, or the cloud functions on Google Cloud. The
// upload method is the one switch in behaviour: "direct" posts the spec and gets a run
// id; "signed-url" gets a signed URL, PUTs the spec to the bucket, then waits for the
// pipeline's run to appear in the read API.

export class ApiError extends Error {
  constructor(status, body, fallback) {
    const errors = body && Array.isArray(body.errors) ? body.errors : [];
    super(errors.length ? errors.map((e) => e.message).join("; ") : fallback || `HTTP ${status}`);
    this.status = status;
    this.errors = errors;
    this.warnings = body && Array.isArray(body.warnings) ? body.warnings : [];
  }
}

export async function loadConfig() {
  const response = await fetch("config.json", { cache: "no-store" });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  const config = await response.json();
  if (config.format !== "gatebench-site/1") throw new Error(`config.json: unknown format ${config.format}`);
  return config;
}

async function json(response) {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    if (signal) {
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new DOMException("stopped", "AbortError"));
      }, { once: true });
    }
  });
}

export class Api {
  constructor(config, base = document.baseURI) {
    this.config = config;
    this.read = new URL(config.api, base);
    this.uploads = new URL(config.upload.endpoint, base);
  }

  readUrl(path, params = {}) {
    const url = new URL(path, this.read);
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) url.searchParams.set(k, v);
    return url;
  }

  async get(path, params, signal) {
    const response = await fetch(this.readUrl(path, params), { headers: { Accept: "application/json" }, signal });
    const body = await json(response);
    if (!response.ok) throw new ApiError(response.status, body);
    return body;
  }

  listRuns(params = {}, signal) {
    return this.get("runs", params, signal).then((b) => b.runs);
  }

  getRun(id, signal) {
    return this.get(`runs/${encodeURIComponent(id)}`, {}, signal).then((b) => b.run);
  }

  getView(id, signal) {
    return this.get(`runs/${encodeURIComponent(id)}/view`, {}, signal);
  }

  compare(a, b, signal) {
    return this.get("compare", { a, b }, signal);
  }

  reportUrl(id, format) {
    return this.readUrl(`runs/${encodeURIComponent(id)}/report`, { format }).href;
  }

  scaleUrl(id, format) {
    return this.readUrl(`runs/${encodeURIComponent(id)}/scale`, { format }).href;
  }

  uploadUrl(route, file, options) {
    const url = new URL(route, this.uploads);
    url.searchParams.set("name", file.name);
    url.searchParams.set("quick", options.quick ? "1" : "0");
    if (options.gateways) url.searchParams.set("gateways", options.gateways.length ? options.gateways.join(",") : "none");
    if (options.kind && options.kind !== "fixed") url.searchParams.set("kind", options.kind);
    return url;
  }

  async post(route, file, options, signal) {
    const response = await fetch(this.uploadUrl(route, file, options), {
      method: "POST",
      body: file,
      headers: { "Content-Type": "application/octet-stream", "X-Gatebench": "1", Accept: "application/json" },
      signal,
    });
    const body = await json(response);
    if (!response.ok) throw new ApiError(response.status, body);
    return body;
  }

  /** Check a spec; resolves to the plan summary, or rejects with located errors. */
  validate(file, options, signal) {
    return this.post("validate", file, options, signal);
  }

  /**
   * Upload a spec and resolve to its run id. `onStage(text)` reports each step.
   * direct: the server queues the run at once. signed-url: PUT to the signed URL, then
   * wait for the run the bucket's event creates (found by its spec_uri).
   */
  async upload(file, options, onStage, signal) {
    onStage("Checking the spec and uploading it…");
    const answer = await this.post("uploads", file, options, signal);
    if (this.config.upload.method === "direct") {
      if (!answer.run_id) throw new Error("the server did not answer a run id (is upload.method right in config.json?)");
      return answer.run_id;
    }
    if (!answer.put || !answer.spec_uri) throw new Error("the server did not answer a signed URL (is upload.method right in config.json?)");
    onStage("Uploading to the bucket through a signed URL…");
    const put = await fetch(answer.put.url, { method: answer.put.method, headers: answer.put.headers, body: file, signal });
    if (!put.ok) throw new ApiError(put.status, await json(put), `the bucket refused the upload (HTTP ${put.status})`);
    onStage("Uploaded. Waiting for the pipeline to start the run…");
    const deadline = Date.now() + 10 * 60 * 1000;
    while (Date.now() < deadline) {
      const runs = await this.listRuns({ spec_uri: answer.spec_uri, limit: 1 }, signal);
      if (runs.length) return runs[0].run_id;
      await sleep(this.config.poll_ms, signal);
    }
    throw new Error(`the spec is in the bucket (${answer.object}) but no run started within 10 minutes`);
  }
}

export { sleep };
