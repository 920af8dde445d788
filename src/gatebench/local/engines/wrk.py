"""The wrk engine: a second load generator behind the same port as Gatling (the AGE paper's
Strategy), for closed-model load only.

wrk (Debian's 4.1.0, LuaJIT) keeps N connections busy for a number of seconds: each
connection sends a request, waits for its response, sends the next. That is the closed model
of a plan's ``concurrent: N, duration: D`` and nothing else: it has no arrival schedule (open
models: ``at_once``, ``ramp``, ``constant_rate``) and no request budget (``sequential``,
``concurrent`` with ``requests``). Those are refused before any load is sent: by the plan
(``engine: wrk``, a located :class:`~gatebench.core.errors.PlanError`) and by this engine
(:class:`~gatebench.core.errors.UnsupportedFeature` located in the workload document). A measured
duration must be whole seconds (wrk's ``-d``); warm-ups are rounded up to whole seconds.

One wrk process runs each phase, with ``engines/wrk_phase.lua``: requests are built from the
workload document's templates and generators (so a phase addresses many resources, as in
Gatling), responses are counted per status, and at the end the script writes wrk's latency
histogram bin by bin. wrk records every latency in a 1 µs bin, so the histogram *is* the
multiset of per-request latencies at microsecond resolution, and percentiles computed from
it are exact (nearest rank, as for Gatling: :mod:`gatebench.core.stats`). Two details:

* wrk "corrects" that histogram for coordinated omission before the script sees it: every
  latency of at least 2E (E = run time / (requests / connections)) adds copies at
  ``n - E, n - 2E, ...`` down to E. :func:`remove_correction` undoes it exactly, and the result
  is checked: the recorded latencies plus wrk's timeouts must equal its request count.
* Latencies at or above the request timeout are not recorded by wrk (they count as
  timeouts); they enter the statistics at the timeout (a lower bound), and a KO reason says so.
* Socket errors are failed requests (docs/engine.md, "A connection closed without a
  response"): a read or write error is a request the target closed or reset its connection on
  without a (complete) answer, a connect error a connection the target refused; wrk counts
  them apart from its requests, reconnects and goes on. Each is a KO of the phase with its
  reason. wrk measures no latency for them: they count as requests and errors, never in the
  latency figures (``PhaseSample.unanswered``).

Throughput is requests / wrk's run time (from its threads' start to their stop, which checks
every 100 ms). Connections are opened by each phase (a wrk process per phase), not kept
across phases as Gatling's users keep theirs.

CPU: the phase's window is sampled as Gatling's is (:mod:`gatebench.local.engines.cpu`), the wrk
process being the tester; its last figures are read before it is reaped.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from gatebench.core.backend import CONTROL_TIMEOUT_S
from gatebench.core.capabilities import wrk_injection_problem
from gatebench.core.errors import Problem, RunError, UnsupportedFeature, pointer
from gatebench.core.stats import PhaseSample
from gatebench.local.engines._process import Launch, ProcessEngine, WatchedProcess
from gatebench.run.ports import EngineEvent, EngineRun, Hooks, PhaseResult

LUA_SCRIPT = Path(__file__).with_name("wrk_phase.lua")
WRK_VERSION = "4.1.0"


# -- what wrk can run -----------------------------------------------------------------------


def _document_problems(document: Mapping[str, Any]) -> list[Problem]:
    problems = []
    for i, phase in enumerate(document["phases"]):
        inj = phase["injection"]
        duration_ms = inj.get("duration_ms")
        duration = duration_ms / 1000.0 if duration_ms is not None else None
        if not phase.get("measured", True) and inj.get("kind") == "concurrent" and duration:
            duration = float(max(1, math.ceil(duration)))  # warm-ups: rounded up
        reason = wrk_injection_problem(str(inj.get("kind")), duration, inj.get("requests"))
        if reason is not None:
            problems.append(Problem(pointer("phases", i, "injection"), reason))
        for j, auth in enumerate(phase["request"].get("auth") or []):
            if auth.get("per_user"):
                problems.append(
                    Problem(
                        pointer("phases", i, "request", "auth", j),
                        "engine wrk sends one token from every connection, not one per "
                        "simulated user (auth.jwt with a pool of subjects): use engine: gatling",
                    )
                )
    return problems


# -- the phase as Lua data ------------------------------------------------------------------

_LUA_PLAIN = re.compile(rb"[A-Za-z0-9 _.,/:=+-]")


def lua_string(text: str | bytes) -> str:
    """A Lua string literal for any text: every byte outside a small safe set becomes a
    ``\\ddd`` escape, so no quote, bracket or newline from an API description can end the
    literal."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    out = []
    for b in data:
        ch = bytes([b])
        out.append(ch.decode("ascii") if _LUA_PLAIN.fullmatch(ch) else f"\\{b:03d}")
    return '"' + "".join(out) + '"'


def lua_value(value: Any) -> str:
    """Data as a Lua expression: strings, finite numbers, booleans, None, lists, mappings."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        return repr(value)
    if isinstance(value, str | bytes):
        return lua_string(value)
    if isinstance(value, Mapping):
        items = [f"[{lua_string(str(k))}] = {lua_value(v)}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list | tuple):
        return "{" + ", ".join(lua_value(v) for v in value) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as Lua data")


def _java_text(value: Any) -> str:
    """A generator value as text, as the Gatling simulation prints it (String.valueOf)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def value_texts(value: Any) -> dict[str, str]:
    """A constant's text in every template encoding (``path``, ``query``, ``json``,
    ``json-string``, ``raw``), as the Gatling simulation encodes it."""
    text = _java_text(value)
    encoded = quote(text, safe="")  # unreserved characters stay, all else %XX (upper case)
    as_json = json.dumps(value, ensure_ascii=False) if value is not None else "null"
    return {
        "path": encoded,
        "query": encoded,
        "json": as_json,
        "json-string": json.dumps(text, ensure_ascii=False)[1:-1],
        "raw": text,
    }


def _parts(parts: Sequence[Mapping[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        if "param" in part:
            out.append({"p": str(part["param"]), "e": str(part.get("as", "raw"))})
        else:
            out.append(str(part.get("text", "")))
    return out


def _generator(spec: Mapping[str, Any]) -> dict[str, Any]:
    kind = spec["kind"]
    if kind == "constant":
        return {"kind": "constant", "text": value_texts(spec["value"])}
    if kind == "list":
        return {
            "kind": "list",
            "texts": [value_texts(v) for v in spec["values"]],
            "random": bool(spec.get("random", False)),
        }
    if kind in ("range", "random"):
        return {"kind": kind, "low": int(spec["low"]), "high": int(spec["high"])}
    if kind == "counter":
        return {"kind": "counter", "start": int(spec["start"]), "step": int(spec.get("step", 1))}
    if kind == "weighted":
        return _weighted(spec)
    raise RunError(f"unknown value generator {kind!r}")


def _weighted(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A weighted list (gatebench.core.workload.weighted_value) as the script draws it: the listed
    values' texts, and for text ``others`` the prefix's text and what follows the digits in
    every encoding (a number's digits read the same in all of them)."""
    out: dict[str, Any] = {
        "kind": "weighted",
        "texts": [value_texts(v) for v in spec["values"]],
        "cumulative": [float(c) for c in spec["cumulative"]],
        "total": float(spec["total"]),
        "seed": int(spec["seed"]),
        "offset": int(spec.get("offset", 0)),
        "stride": int(spec.get("stride", 1)),
    }
    others = spec.get("others")
    if others is not None:
        prefix = value_texts(str(others.get("prefix", "")))
        out["others"] = {
            "count": int(others["count"]),
            "weight": float(others["weight"]),
            "start": int(others["start"]),
            "text": bool(others.get("text", False)),
            "width": int(others.get("width", 0)),
            "heads": {e: t[:-1] if e == "json" else t for e, t in prefix.items()},
            "tails": {e: '"' if e == "json" else "" for e in prefix},
        }
    return out


def _boundary(seed: int) -> str:
    return f"gatebench{seed:x}"


def _form_name(text: str) -> str:
    """A multipart name or filename inside its quotes (the HTML form encoding's escapes)."""
    return text.replace("\r", "%0D").replace("\n", "%0A").replace('"', "%22")


def _body(body: Mapping[str, Any], seed: int) -> dict[str, Any]:
    kind = body.get("kind", "none")
    if kind == "none":
        return {"kind": "none"}
    if kind == "template":
        return {
            "kind": "template",
            "content_type": body.get("content_type"),
            "parts": _parts(body["parts"]),
        }
    if kind == "bytes":
        return {
            "kind": "bytes",
            "size": int(body["size"]),
            "content_type": body.get("content_type"),
        }
    if kind == "base64":
        return {
            "kind": "template",
            "content_type": body.get("content_type"),
            "parts": [base64.b64decode(body["data"])],
        }
    if kind == "multipart":
        boundary = _boundary(seed)
        parts = []
        for part in body["parts"]:
            disposition = f'Content-Disposition: form-data; name="{_form_name(part["name"])}"'
            if "size" in part:
                head = (
                    f"--{boundary}\r\n{disposition}; "
                    f'filename="{_form_name(part.get("filename") or part["name"] + ".bin")}"\r\n'
                    f"Content-Type: {part.get('content_type') or 'application/octet-stream'}"
                    "\r\n\r\n"
                )
                parts.append({"head": head, "size": int(part["size"])})
            else:
                if part.get("content_type"):
                    disposition += f"\r\nContent-Type: {part['content_type']}"
                parts.append(
                    {
                        "head": f"--{boundary}\r\n{disposition}\r\n\r\n",
                        "parts": _parts(part["parts"]),
                    }
                )
        return {
            "kind": "multipart",
            "content_type": f"multipart/form-data; boundary={boundary}",
            "parts": parts,
            "tail": f"--{boundary}--\r\n",
        }
    raise RunError(f"unknown body kind {kind!r}")


def split_users(users: int, cpus: int | None = None) -> tuple[int, int]:
    """(threads, connections) for ``users`` closed-model users: one connection per user, and
    as many threads as cores (at most), dividing the users evenly (wrk gives each thread
    connections / threads and drops the remainder)."""
    cpus = cpus or os.cpu_count() or 1
    threads = max(t for t in range(1, max(1, min(cpus, users)) + 1) if users % t == 0)
    return threads, users


def _header_safe(text: str, what: str) -> str:
    if "\r" in text or "\n" in text:
        raise RunError(f"{what} holds a line break; a header value cannot")
    return text


def render_phase_data(
    phase: Mapping[str, Any],
    *,
    out_path: Path,
    secret_env: Mapping[str, str],
    cpus: int | None = None,
) -> tuple[str, dict[str, str], list[str]]:
    """The phase as Lua data (the script's input), the secret variables wrk's environment
    needs (name → value; never written to a file), and wrk's own argument list (without the
    program and script)."""
    request = phase["request"]
    inj = phase["injection"]
    users = int(inj["users"])
    threads, connections = split_users(users, cpus)
    duration_s = max(1, math.ceil(int(inj["duration_ms"]) / 1000.0))
    timeout_s = max(1, math.ceil(int(request.get("timeout_ms", 60000)) / 1000.0))
    base = urlsplit(str(request["base_url"]))
    if base.scheme not in ("http", "https") or not base.netloc:
        raise RunError(f"phase {phase['id']}: not an http(s) base URL: {request['base_url']!r}")
    prefix = base.path.rstrip("/")
    params = {str(k): _generator(v) for k, v in (phase.get("params") or {}).items()}
    env: dict[str, str] = {}
    secret_headers = []
    for i, auth in enumerate(request.get("auth") or []):
        names = auth["env"] if isinstance(auth["env"], list) else [auth["env"]]
        values = [secret_env[n] for n in names]
        value = str(auth.get("prefix", ""))
        if len(values) == 2:  # Basic: base64(user:password)
            value += base64.b64encode(f"{values[0]}:{values[1]}".encode()).decode("ascii")
        else:
            value += values[0]
        var = f"GATEBENCH_WRK_SECRET_H{i}"
        env[var] = _header_safe(value, f"the credential of header {auth['header']!r}")
        secret_headers.append({"name": str(auth["header"]), "env": var})
    query: list[dict[str, Any]] = []
    for i, (name, parts) in enumerate(request.get("query") or []):
        secret = next((p["secret"] for p in parts if "secret" in p), None)
        if secret is not None:
            var = f"GATEBENCH_WRK_SECRET_Q{i}"
            env[var] = quote(secret_env[secret], safe="")
            query.append({"name": str(name), "secret": var})
        else:
            query.append({"name": str(name), "parts": _parts(parts)})
    headers = []
    for name, parts in request.get("headers") or []:
        rendered = _parts(parts)
        for part in rendered:
            if isinstance(part, str):
                _header_safe(part, f"header {name!r}")
            else:
                gen = params.get(part["p"], {})
                for texts in [gen.get("text"), *(gen.get("texts") or [])]:
                    if texts:
                        _header_safe(texts["raw"], f"a value of header {name!r}")
        headers.append({"name": _header_safe(str(name), "a header name"), "parts": rendered})
    path = [prefix, *_parts(request["path"])] if prefix else _parts(request["path"])
    body = _body(request.get("body") or {"kind": "none"}, int(phase.get("seed", 0)))
    data = {
        "method": str(request["method"]).upper(),
        "host": base.netloc,
        "path": path,
        "query": query,
        "headers": headers,
        "secret_headers": secret_headers,
        "body": body,
        "params": params,
        "static": all(g["kind"] == "constant" for g in params.values()),
        # the generators' seed, exact: a Lua number holds 53 bits, the seed 64
        "seed_hi": (int(phase.get("seed", 0)) >> 32) & 0xFFFFFFFF,
        "seed_lo": int(phase.get("seed", 0)) & 0xFFFFFFFF,
        "threads": threads,
        "connections": connections,
        "out": str(out_path),
    }
    text = (
        f"-- phase {phase['id']} ({phase['target']} · {phase['workload']}), "
        "rendered by gatebench.local.engines.wrk\nreturn " + lua_value(data) + "\n"
    )
    argv = [
        "-t",
        str(threads),
        "-c",
        str(connections),
        "-d",
        f"{duration_s}s",
        "--timeout",
        f"{timeout_s}s",
        f"{base.scheme}://{base.netloc}/",
    ]
    return text, env, argv


# -- the result -----------------------------------------------------------------------------


def correction_interval(duration_us: int, requests: int, connections: int) -> int | None:
    """The E of wrk's coordinated-omission correction (``stats_correct``), computed as wrk does
    in integers; None when wrk applied none."""
    per_connection = requests // connections if connections else 0
    if per_connection <= 0:
        return None
    return duration_us // per_connection


def apply_correction(bins: Mapping[int, int], expected: int) -> dict[int, int]:
    """wrk 4.1.0's ``stats_correct`` on a sparse histogram (µs → count): the forward model,
    used to test :func:`remove_correction`."""
    data = dict(bins)
    if not data:
        return data
    top = max(data)
    for n in range(expected * 2, top + 1):
        count = data.get(n, 0)
        m = n - expected
        while count and m > expected:
            data[m] = data.get(m, 0) + count
            m -= expected
    return {k: v for k, v in data.items() if v}


def remove_correction(bins: Mapping[int, int], expected: int | None) -> dict[int, int]:
    """The histogram wrk recorded, before ``stats_correct`` added its synthetic latencies.

    The correction reads each bin n >= 2E before any higher bin adds to it (it walks upwards and
    adds only below), and adds that bin's count to n - E, n - 2E, ... while above E. So,
    walking downwards, a bin's own count is its corrected count minus what the bins above it
    with the same remainder modulo E (and at least 2E) contributed."""
    if expected is None or expected <= 0:
        return dict(bins)
    out: dict[int, int] = {}
    above: dict[int, int] = {}  # remainder mod E -> sum of original counts of bins >= 2E above
    for n in sorted(bins, reverse=True):
        count = bins[n]
        if n > expected:
            count -= above.get(n % expected, 0)
        if count < 0:
            raise RunError(
                f"wrk's latency histogram does not match its correction at {n} µs (E = {expected})"
            )
        if count:
            out[n] = count
        if n >= 2 * expected and count:
            above[n % expected] = above.get(n % expected, 0) + count
    return out


SOCKET_REASONS = {
    "connect": "connection refused or failed, no response (wrk connect error; no time measured)",
    "read": "connection closed without a response (wrk read error; no time measured)",
    "write": "connection closed while the request was sent, no response (wrk write error; no "
    "time measured)",
}
"""The KO reason of each kind of wrk socket error: each is a failed request of the phase (a
request the target closed or reset its connection on, or refused, without an answer)."""


def socket_failures(errors: Mapping[str, Any]) -> dict[str, int]:
    """wrk's socket errors by kind (``connect``, ``read``, ``write``): requests that failed
    without a response, which wrk does not count among its requests."""
    return {k: int(errors.get(k, 0)) for k in SOCKET_REASONS if int(errors.get(k, 0))}


def is_ok(status: int, expect: Sequence[int]) -> bool:
    return status in expect if expect else status < 400


def sample_from_result(
    result: Mapping[str, Any], expect: Sequence[int], timeout_ms: int
) -> tuple[PhaseSample, float, float]:
    """The phase's sample (latencies in ms, µs precision) and its window (epoch ms) from the
    script's JSON."""
    requests = int(result["requests"])
    errors = result["errors"]
    check = result.get("histogram_check")
    if check and (check["ffi_min"], check["ffi_max"]) != (check["min"], check["max"]):
        raise RunError(
            "the script read wrk's latency histogram at the wrong place (min/max "
            f"{check['ffi_min']}/{check['ffi_max']} µs, wrk says {check['min']}/{check['max']} µs)"
        )
    raw = {int(v): int(c) for v, c in result["latency_us"]}
    recorded = remove_correction(
        raw,
        correction_interval(int(result["duration_us"]), requests, int(result["connections"])),
    )
    timeouts = int(errors["timeout"])
    if sum(recorded.values()) + timeouts != requests:
        raise RunError(
            f"wrk's latency histogram holds {sum(recorded.values())} latencies and "
            f"{timeouts} timeouts, but it counted {requests} responses"
        )
    sample = PhaseSample()
    for value_us in sorted(recorded):
        sample.add_latency(value_us / 1000.0, recorded[value_us])
    sample.add_latency(float(timeout_ms), timeouts)
    statuses = {int(s): int(c) for s, c in result["statuses"]}
    sample.ok = sum(c for s, c in statuses.items() if is_ok(s, expect))
    sample.ko = requests - sample.ok
    wanted = ", ".join(str(s) for s in expect) if expect else "below 400"
    for status, count in sorted(statuses.items()):
        if not is_ok(status, expect):
            sample.errors[f"status {status}, expected {wanted}"] += count
    unseen = requests - sum(statuses.values())
    if unseen > 0:
        sample.errors["response without a status line seen by the script"] += unseen
    if timeouts:
        sample.errors[f"took {timeout_ms} ms or more (the timeout; counted at the timeout)"] += (
            timeouts
        )
    for kind, count in socket_failures(errors).items():
        sample.add_unanswered(SOCKET_REASONS[kind], count)
    duration_ms = max(1, round(int(result["duration_us"]) / 1000.0))
    sample.first_start = 0
    sample.last_end = duration_ms
    end_ms = int(result["finished_us"]) / 1000.0
    return sample, end_ms - int(result["duration_us"]) / 1000.0, end_ms


# -- the engine -----------------------------------------------------------------------------


class WrkEngine(ProcessEngine[EngineRun]):
    name = "wrk"
    resolution_ms = 0.001

    def __init__(self, program: str | None = None) -> None:
        self.program = program or shutil.which("wrk") or "wrk"

    def check(self) -> None:
        if shutil.which(self.program) is None and not Path(self.program).is_file():
            raise RunError(
                "wrk is not installed (Debian package wrk; `scripts/setup.sh apt` installs it)"
            )
        if not LUA_SCRIPT.is_file():
            raise RunError(f"the wrk script is missing: {LUA_SCRIPT}")

    def version(self) -> str:
        try:
            out = subprocess.run(
                [self.program, "-v"], capture_output=True, text=True, timeout=10, check=False
            )
            first = (out.stdout.splitlines() or ["wrk ?"])[0]
        except (OSError, subprocess.SubprocessError):
            first = "wrk ?"
        match = re.match(r"wrk (\S+) \[(\w+)\]", first)
        build = f"{match.group(1)}, {match.group(2)}" if match else first.strip()
        return f"wrk {WRK_VERSION} ({build}, LuaJIT)"

    def launch(
        self, document: dict[str, Any], workdir: Path, hooks: Hooks, how: Launch
    ) -> EngineRun:
        """Run every phase of ``document`` in order, one wrk process each; report each phase
        through ``hooks`` as soon as its process has written its result. It runs on this
        host only (no ``how.wrapper``: split load needs Gatling or loadgen)."""
        if how.wrapper:
            raise RunError("wrk runs on this host only: it cannot be a tester on a host of its own")
        problems = _document_problems(document)
        if problems:
            raise UnsupportedFeature(problems)
        workdir = workdir.resolve()
        files = workdir / f"{how.name}-phases"
        files.mkdir(parents=True, exist_ok=True)
        log_path = workdir / f"{how.name}.log"
        environ = {**os.environ, **(how.env or {})}
        missing = [n for n in document.get("secret_env", []) if not environ.get(n)]
        if missing:
            raise RunError(
                f"environment variable {missing[0]} is not set (the plan's auth needs it)"
            )
        secrets = {n: environ[n] for n in document.get("secret_env", [])}
        started = time.monotonic()
        result = EngineRun(log_path=log_path)
        if how.ready is not None:
            how.ready()
        first_start: float | None = None
        skip_file = Path(document["skip_file"]) if document.get("skip_file") else None
        try:
            for phase in document["phases"]:
                index = int(phase["index"])
                if _skipped(skip_file, str(phase["target"])):
                    now = time.time() * 1000.0
                    result.completed.append(index)
                    hooks.on_phase(PhaseResult(index, PhaseSample(), now, now, None))
                    continue
                failure = _controls(phase.get("before") or [])
                if failure is not None:
                    result.control_failures.append(failure)
                    break
                if first_start is None:
                    first_start = time.monotonic()
                outcome = self._phase(phase, files, log_path, hooks, how, secrets)
                if isinstance(outcome, str):
                    result.crashed = True
                    result.reason = outcome
                    break
                result.completed.append(index)
                hooks.on_phase(outcome)
        finally:
            result.wall_s = time.monotonic() - started
        result.exit_code = 1 if result.crashed else 0
        result.startup_s = (first_start - started) if first_start is not None else result.wall_s
        return result

    def _phase(
        self,
        phase: Mapping[str, Any],
        files: Path,
        log_path: Path,
        hooks: Hooks,
        how: Launch,
        secrets: Mapping[str, str],
    ) -> PhaseResult | str:
        """One phase; a PhaseResult, or the reason it failed (the run counts it a crash)."""
        index = int(phase["index"])
        out_path = files / f"{phase['id']}.json"
        out_path.unlink(missing_ok=True)
        data_path = files / f"{phase['id']}.lua"
        text, secret_vars, args = render_phase_data(phase, out_path=out_path, secret_env=secrets)
        data_path.write_text(text, encoding="utf-8")
        argv = [self.program, "-s", str(LUA_SCRIPT), *args]
        proc_env = {"GATEBENCH_WRK_PHASE": str(data_path), **secret_vars}
        hooks.on_event(EngineEvent("start", index, at_ms=time.time() * 1000.0))
        watched = WatchedProcess(
            how.supervisor, f"wrk-{phase['id']}", argv, log_path=log_path, env=proc_env
        )
        watched.account(how.cpu_groups)
        code = watched.wait(hooks.tick)
        proc, sampler = watched.proc, watched.sampler
        if code != 0 or not out_path.is_file():
            return (
                f"wrk exited with code {code} in phase {phase['id']}; last log lines:\n"
                f"{proc.log_tail(15)}"
            )
        try:
            outcome = json.loads(out_path.read_text(encoding="utf-8"))
            request = phase["request"]
            sample, start_ms, end_ms = sample_from_result(
                outcome,
                [int(s) for s in request.get("expect") or []],
                int(request.get("timeout_ms", 60000)),
            )
        except (ValueError, KeyError, RunError) as exc:
            return f"wrk's result for phase {phase['id']} is unusable: {exc}"
        hooks.on_event(EngineEvent("end", index, at_ms=end_ms))
        target_names = how.target_groups(str(phase["target"]))
        cpu = sampler.usage(start_ms, end_ms, "tester", target_names)
        cost = sampler.resources(start_ms, end_ms, "tester", target_names)
        return PhaseResult(index, sample, start_ms, end_ms, cpu, cost)


def _skipped(skip_file: Path | None, target: str) -> bool:
    if skip_file is None:
        return False
    try:
        return target in skip_file.read_text(encoding="utf-8").split()
    except OSError:
        return False


def _controls(calls: Iterable[Mapping[str, Any]], timeout: float = CONTROL_TIMEOUT_S) -> str | None:
    """Make the phase's control calls (the backend reset), directly; the first failure. A
    call with ``wait_ms`` is retried every 100 ms until it succeeds or that time is up."""
    for call in calls:
        deadline = time.monotonic() + float(call.get("wait_ms", 0)) / 1000.0
        while time.monotonic() < deadline and _control(call, timeout) is not None:
            time.sleep(0.1)
        failure = _control(call, timeout)
        if failure is not None:
            return failure
    return None


def _control(call: Mapping[str, Any], timeout: float) -> str | None:
    """One control call; why it failed, or None."""
    parts = urlsplit(str(call["url"]))
    conn = http.client.HTTPConnection(
        parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout
    )
    try:
        conn.request(str(call.get("method", "POST")), parts.path or "/")
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return f"{call.get('method', 'POST')} {call['url']} failed: {exc}"
    finally:
        conn.close()
    if status != int(call.get("status", 204)):
        return f"{call.get('method', 'POST')} {call['url']} answered {status}, expected {call.get('status', 204)}"
    return None


__all__ = [
    "LUA_SCRIPT",
    "SOCKET_REASONS",
    "WrkEngine",
    "apply_correction",
    "correction_interval",
    "lua_string",
    "lua_value",
    "remove_correction",
    "render_phase_data",
    "sample_from_result",
    "socket_failures",
    "split_users",
    "value_texts",
]
