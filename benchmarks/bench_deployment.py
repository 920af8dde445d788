"""What TLS, HTTP/2 and an upstream pool cost: every gateway that runs here, plain, with the
run's TLS (an ECDSA P-256 and an RSA 2048 certificate), with HTTP/2, and in front of one or
three backend replicas, side by side in one run; the baseline gets the same TLS from the
backend itself.

Per gateway, every variant is booted at once (one process each, on the CPU policy a run here
gives: pinned to the gateway's share, its workers set to it): plain and TLS (ECDSA, RSA;
HTTP/2 offered) in front of one replica, and the same in front of three (round robin). Each
variant is warmed up first (a JVM gateway for as long as a run warms it up). h2load (nghttp2),
on the other cores, loads each for a few seconds over kept-alive connections, HTTP/1.1 or
HTTP/2 (one stream per connection, so the concurrency is the same), in interleaved rounds, so
that what else the machine does weighs on every variant alike. The table gives the median
rate of the rounds and each variant's time per request against the plain one-replica proxy.
"""

from __future__ import annotations

import http.client
import re
import shutil
import ssl
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from gatebench.core.spec import load_spec
from gatebench.core.tls import GatewayTls, make_run_certificates, write_tls_folder
from gatebench.local.backends import (
    BackendTls,
    StartedBackend,
    backend_stats,
    start_backend_process,
)
from gatebench.local.procs import Supervisor, free_port

from ._before import Before, before
from ._machine import CpuWindow, RunCores, run_cores

TITLE = "What TLS, HTTP/2 and replicas cost (h2load)"
ROOT = Path(__file__).resolve().parents[1]
SECONDS = 3
CLIENTS = 20
RUNS = 2
WARMUP_S = 2
"""Seconds of load each variant gets, unmeasured, before the rounds (a JIT gateway: its own)."""
HANG_S = 20
"""How long past its duration h2load may take before its variant is recorded as failed."""
PATH = "/auctions/7"
EARLIER = "6db6b76"
"""The last commit before the fair-fight configurations (docs/gateways.md, "A fair fight"): its
figures stand beside this run's."""
# (column, certificate or None, HTTP/2): what h2load speaks to each boot
COLUMNS = (
    ("plain", None, False),
    ("TLS ECDSA", "ecdsa-p256", False),
    ("TLS RSA", "rsa-2048", False),
    ("TLS ECDSA + h2", "ecdsa-p256", True),
)


def _warm_up(
    targets: dict[tuple[str, int], dict[str | None, str]], cores: RunCores
) -> dict[str, float]:
    """Every variant loaded once, unmeasured, before the rounds: :data:`WARMUP_S`, or a JIT
    gateway's own warm-up (``renderers.jit_warmups``: each variant is a JVM of its own).
    Gateway → the seconds each of its variants was warmed."""
    from gatebench.core.renderers import jit_warmups

    jit = jit_warmups(name for name, _ in targets)
    warmed = {}
    for (name, _count), urls in targets.items():
        seconds = max(WARMUP_S, jit.get(name, 0.0))
        warmed[name] = seconds
        for url in urls.values():
            subprocess.run(
                [
                    *("h2load", "--h1", "-D", f"{seconds:g}", "-c", str(CLIENTS), "-m", "1"),
                    *("-t", "1", "-H", "Authorization: Bearer bench-token", url + PATH),
                ],
                capture_output=True,
                timeout=seconds + HANG_S,
                preexec_fn=cores.pin_load_tool,
            )
    return warmed


def _h2load(
    url: str, http2: bool, served: Callable[[], int], preexec: Callable[[], None]
) -> tuple[float, bool]:
    """(h2load's rate, whether the answers' status had to be checked apart). ``served()``: the
    requests the backends behind ``url`` have answered so far; ``preexec``: places h2load on
    the engine's cores."""
    argv = ["h2load", "-D", str(SECONDS), "-c", str(CLIENTS), "-m", "1", "-t", "1"]
    argv += ["-H", "Authorization: Bearer bench-token"]  # the auction accepts any bearer
    if not http2:
        argv.append("--h1")
    before = served()
    out = subprocess.run(
        [*argv, url],
        capture_output=True,
        text=True,
        timeout=SECONDS + HANG_S,
        check=True,
        preexec_fn=preexec,
    )
    forwarded = served() - before
    rate = re.search(r"finished in [\d.]+s, ([\d.]+) req/s", out.stdout)
    done = re.search(
        r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
        r"(\d+) errored, (\d+) timeout",
        out.stdout,
    )
    status = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out.stdout)
    if not rate or not done or not status:
        raise RuntimeError(f"h2load printed no rate:\n{out.stdout}{out.stderr}")
    protocol = re.search(r"Application protocol: (\S+)", out.stdout)
    expected = "h2" if http2 else "http/1.1"
    if protocol and protocol.group(1) != expected:
        raise RuntimeError(f"{url}: h2load spoke {protocol.group(1)}, not {expected}")
    requests, succeeded, failed = (int(n) for n in done.group(1, 2, 3))
    errors = [int(n) for n in done.group(4, 5)]
    statuses = [int(n) for n in status.groups()]
    if not http2 and not any(statuses) and not any(errors) and failed == requests > 0:
        # h2load (nghttp2 1.52) takes an HTTP/1.1 answer's status from the reason phrase's
        # callback: an answer without one ("HTTP/1.1 200 ", as Zuul's Tomcat sends) is
        # counted as failed with no status at all. Such a run counts only when the backends
        # answered at least every request h2load finished (less the ones still in flight at
        # the start) and a request of our own gets 200.
        own = _status(url)
        if forwarded < requests - CLIENTS or own != 200:
            raise RuntimeError(
                f"{url}: h2load counted no status; the backends answered {forwarded} of its "
                f"{requests} requests and a request of our own got {own}:\n{out.stdout}"
            )
        return float(rate.group(1)), True
    # A timed run stops with streams in flight: h2load may count a few more 2xx answers than
    # requests done. What must hold: none failed, errored or timed out, and no other status.
    if failed or any(errors) or any(statuses[1:]) or succeeded != requests or not statuses[0]:
        raise RuntimeError(f"{url}: requests failed or were refused:\n{out.stdout}")
    return float(rate.group(1)), False


def _status(url: str) -> int:
    """The status of one GET of ``url`` (TLS unverified: the status is all that is read)."""
    parts = urlsplit(url)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl._create_unverified_context()  # a status check, nothing more
        conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, context=context)
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port)
    try:
        conn.request("GET", parts.path, headers={"Authorization": "Bearer bench-token"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def run() -> str:
    if shutil.which("h2load") is None:
        return "h2load is not installed (scripts/setup.d/apt-packages.txt: nghttp2-client)."
    from gatebench.core.errors import UnsupportedFeature
    from gatebench.core.fairness import bounded_concurrency, gateway_target
    from gatebench.core.renderers import all_renderers
    from gatebench.local.provisioners import boot_gateway

    api = load_spec(ROOT / "examples/auction/openapi.yaml").api
    assert api is not None
    gateways = [r.name for r in all_renderers() if r.runs_here and r.available_here() is None]
    rows: list[tuple[str, int, str, list[float], float]] = []
    skipped: dict[str, str] = {}
    checked_apart: set[tuple[str, int, str]] = set()
    failed: dict[tuple[str, int, str], str] = {}
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        cores = run_cores(sup)  # as a run here: each gateway on its share, h2load elsewhere
        work = Path(tmp)
        work.chmod(0o755)
        folders = {
            key: write_tls_folder(make_run_certificates(key), work)  # type: ignore[arg-type]
            for key in ("ecdsa-p256", "rsa-2048")
        }
        replicas = [start_backend_process(sup, "auction", work, replica=n) for n in (1, 2, 3)]
        baselines = {
            key: start_backend_process(
                sup, "auction", work, tls=BackendTls(folders[key], http2=True)
            )
            for key in folders
        }
        plain_base = start_backend_process(sup, "auction", work)
        targets: dict[tuple[str, int], dict[str | None, str]] = {
            ("baseline", 1): {
                None: f"http://127.0.0.1:{plain_base.port}",
                **{key: f"https://127.0.0.1:{b.tls_port}" for key, b in baselines.items()},
            }
        }
        for gateway in gateways:
            for count in (1, 3):
                urls: dict[str | None, str] = {}
                for key in (None, *folders):
                    pool = tuple(r.url for r in replicas[:count])
                    target = gateway_target(
                        cores.cpu,
                        workdir=str(work / f"{gateway}-{count}-{key or 'plain'}"),
                        listen_port=free_port(),
                        backend_url=pool[0],
                        admin_port=free_port(),
                        tls=GatewayTls(str(folders[key]), key_type=key, http2=True)  # type: ignore[arg-type]
                        if key
                        else None,
                        replicas=pool,
                        concurrency=bounded_concurrency(CLIENTS),
                    )
                    try:
                        boot_gateway(gateway, api, target, sup)
                    except UnsupportedFeature as exc:
                        skipped.setdefault(gateway, exc.problems[0].message)
                        continue
                    scheme = "https" if key else "http"
                    urls[key] = f"{scheme}://127.0.0.1:{target.listen_port}"
                targets[(gateway, count)] = urls
        warmed = _warm_up(targets, cores)
        for (name, count), urls in targets.items():
            rates: dict[str, list[float]] = {}
            others: list[float] = []
            for _ in range(RUNS):
                for column, key, http2 in COLUMNS:
                    if key not in urls:
                        continue
                    if name == "baseline":
                        behind = [plain_base if key is None else baselines[key]]
                    else:
                        behind = replicas[:count]
                    if (name, count, column) in failed:
                        continue
                    try:
                        with CpuWindow() as cpu:
                            rate, apart = _h2load(
                                urls[key] + PATH, http2, _served(behind), cores.pin_load_tool
                            )
                    except subprocess.TimeoutExpired:
                        failed[(name, count, column)] = (
                            f"h2load did not finish within {SECONDS + HANG_S} s"
                        )
                        continue
                    except subprocess.CalledProcessError as exc:
                        failed[(name, count, column)] = f"h2load exited {exc.returncode}"
                        continue
                    except RuntimeError as exc:
                        failed[(name, count, column)] = str(exc).splitlines()[0]
                        continue
                    rates.setdefault(column, []).append(rate)
                    others.append(cpu.others_pct)
                    if apart:
                        checked_apart.add((name, count, column))
            for column, values in rates.items():
                rows.append((name, count, column, values, statistics.mean(others)))
    return _table(rows, skipped, checked_apart, failed, cores, warmed)


def _served(backends: list[StartedBackend]) -> Callable[[], int]:
    return lambda: sum(int(backend_stats(b.port)["requests"]) for b in backends)


def _earlier_row(earlier: Before, name: str, count: int, column: str) -> dict[str, str]:
    """The earlier run's row for one variant (its footnote mark left out), or nothing."""
    for row in earlier.table(0):
        variant = row.get("variant", "").removesuffix(" ¹")
        if (row.get("target"), row.get("replicas"), variant) == (name, str(count), column):
            return row
    return {}


def _table(
    rows: list[tuple[str, int, str, list[float], float]],
    skipped: dict[str, str],
    checked_apart: set[tuple[str, int, str]],
    failed: dict[tuple[str, int, str], str],
    cores: RunCores,
    warmed: dict[str, float],
) -> str:
    jit = sorted({f"{name} {s:g} s" for name, s in warmed.items() if s > WARMUP_S})
    earlier = before("deployment", EARLIER)
    lines = [
        f"`h2load -D {SECONDS} -c {CLIENTS} -m 1` on `GET {PATH}` with a bearer token (HTTP/1.1 with `--h1`, HTTP/2 "
        f"by ALPN), {RUNS} interleaved rounds per variant, loopback; every gateway on the "
        f"run's CPU policy ({cores.cpu.describe()}), h2load on the other cores; each variant "
        f"warmed up first ({WARMUP_S} s{', the JVM gateways their own: ' + ', '.join(jit) if jit else ''}); "
        "TLS with the run's throwaway certificate and gatebench.core.tls's settings (TLS 1.3 "
        "negotiated), HTTP/2 offered by every TLS variant; replicas are auction backends "
        "balanced round robin. Cost: the time per request (1/rate) against the same gateway's "
        "plain one-replica variant, from the medians; negative means faster. The baseline is "
        "the backend itself (one replica), with the same TLS.",
        "",
        f"Before: the median and cost {earlier.describe()} published, measured before the "
        'fair-fight configurations (docs/gateways.md, "A fair fight": then every gateway '
        "ran unpinned, with one worker where it has a setting for it and its own defaults "
        "elsewhere, and without a warm-up); a different machine of the same kind, so compare "
        "the costs more than the rates.",
        "",
        "| target | replicas | variant | req/s (median) | range | cost vs plain | others' CPU "
        "| before: req/s | before: cost |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    plain: dict[str, float] = {}
    for name, count, column, values, others_pct in rows:
        median = statistics.median(values)
        if column == "plain" and count == 1:
            plain[name] = median
        cost = (
            "—"
            if (column == "plain" and count == 1) or name not in plain
            else f"{(plain[name] / median - 1) * 100:+.0f} %"
        )
        mark = " ¹" if (name, count, column) in checked_apart else ""
        was = _earlier_row(earlier, name, count, column)
        lines.append(
            f"| {name} | {count} | {column}{mark} | {median:,.0f} | "
            f"{min(values):,.0f}–{max(values):,.0f} | {cost} | {others_pct:.0f} % | "
            f"{was.get('req/s (median)', '–')} | {was.get('cost vs plain', '–')} |"
        )
    if checked_apart:
        lines += [
            "",
            "¹ h2load (nghttp2 1.52) records an HTTP/1.1 answer's status only from its reason "
            "phrase, and these answers have none (`HTTP/1.1 200 `): it counted every request as "
            "failed with no status. The rate is h2load's; what was checked instead: the backends "
            "answered at least every request h2load finished (less the ones in flight at the "
            "start), and one request of the bench's own got 200.",
        ]
    if failed:
        lines += [
            "",
            "Variants with a round that failed (a figure above comes from the rounds that finished; the first line of why):",
            "",
        ]
        lines += [
            f"- {name}, {count} replica(s), {column}: {why}"
            for (name, count, column), why in sorted(failed.items())
        ]
    if skipped:
        lines += ["", "Variants a gateway cannot render (left out, with its reason):", ""]
        lines += [f"- {reason}" for _, reason in sorted(skipped.items())]
    lines += [
        "",
        "On 2 cores the run's layout puts h2load and the backends on one core and the gateway "
        "on the other (the baseline, the backend itself, shares h2load's core), so the "
        "figures compare variants on this machine; they are not the gateways' ceilings. "
        "Kept-alive "
        "connections make this the cost of encrypting the traffic: handshakes (new and "
        "resumed) are what a run's report counts per phase.",
    ]
    return "\n".join(lines)
