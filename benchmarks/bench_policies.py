"""What the policies cost: the auction retrieve workload through each gateway that runs here,
bare and with each policy it applies (JWT validation, a rate limit far above the offered load
so that nothing is refused, a response cache), side by side in one run.

Every variant of a gateway is booted at once (one process each, one worker) in front of the
same auction backend; the runs are interleaved (bare, JWT, limit, cache, bare, ...) so that
what else the machine does weighs on every variant alike. wrk loads each with a signed bearer
token (gatebench.core.tokens, a key made for the run) for a few seconds; the table gives the median
of the runs and the overhead of each policy against the bare proxy.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from gatebench.core.policies import Cache, JwtAuth, Policies, PolicySet, RateLimit
from gatebench.core.spec import load_spec
from gatebench.core.tokens import TokenSigner, generate_private_key, public_pem
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor, free_port

from ._machine import CpuWindow

TITLE = "What the policies cost (wrk)"
ROOT = Path(__file__).resolve().parents[1]
SECONDS = 4
CONNECTIONS = 20
RUNS = 3
PATH = "/auctions/7"
NEEDS = {
    "JWT (RS256)": "auth.jwt",
    "rate limit (10M/s per address)": "rate_limit.address",
    "cache (60 s)": "cache",
}


def _variants(key: str, supported: frozenset[str]) -> dict[str, PolicySet]:
    """Bare, and each policy the gateway declares."""
    jwt = JwtAuth(
        issuer="https://issuer.gatebench.test",
        audience="auction",
        algorithms=("RS256",),
        keys_file="public.pem",
        keys=public_pem(key),
        keys_format="pem",
    )
    every = {
        "bare": PolicySet(),
        "JWT (RS256)": PolicySet(Policies(auth=jwt)),
        "rate limit (10M/s per address)": PolicySet(
            Policies(rate_limit=RateLimit(requests=10_000_000, window=1.0))
        ),
        "cache (60 s)": PolicySet(Policies(cache=Cache(ttl=60.0))),
    }
    return {
        label: policies
        for label, policies in every.items()
        if label == "bare" or NEEDS[label] in supported
    }


def _wrk(url: str, token: str) -> float:
    argv = [
        "wrk",
        "-t1",
        f"-c{CONNECTIONS}",
        f"-d{SECONDS}s",
        "-H",
        f"Authorization: Bearer {token}",
    ]
    out = subprocess.run([*argv, url], capture_output=True, text=True, timeout=60, check=True)
    match = re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)
    if not match:
        raise RuntimeError(f"wrk printed no rate:\n{out.stdout}{out.stderr}")
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out.stdout)
    if non2xx:
        raise RuntimeError(
            f"{url}: {non2xx.group(1)} refused or failed responses; the policy is misconfigured"
        )
    return float(match.group(1))


def run() -> str:
    if shutil.which("wrk") is None:
        return "wrk is not installed (scripts/setup.d/apt-packages.txt installs it)."
    from gatebench.core.fairness import gateway_target, stated_cpu_policy
    from gatebench.core.renderers import all_renderers, get_renderer
    from gatebench.local.provisioners import boot_gateway

    api = load_spec(ROOT / "examples/auction/openapi.yaml").api
    assert api is not None
    key = generate_private_key("RS256")
    token = TokenSigner(
        key, "RS256", "https://issuer.gatebench.test", "auction", lifetime=3600
    ).sign()
    gateways = [
        r.name
        for r in all_renderers()
        if r.runs_here and r.supported_policies & set(NEEDS.values()) and r.available_here() is None
    ]
    rows: list[tuple[str, str, list[float], float]] = []
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # nginx's workers (nobody, when this runs as root) reach their cache below it.
        work.chmod(0o755)
        _, backend_port = start_backend(sup, "auction", work)
        for gateway in gateways:
            urls: dict[str, str] = {}
            variants = _variants(key, get_renderer(gateway).supported_policies)
            for n, (label, policies) in enumerate(variants.items()):
                target = gateway_target(
                    stated_cpu_policy(1),
                    workdir=str(work / f"{gateway}-{n}"),
                    listen_port=free_port(),
                    backend_url=f"http://127.0.0.1:{backend_port}",
                    admin_port=free_port(),
                )
                boot_gateway(gateway, api, target, sup, policies=policies)
                urls[label] = f"http://127.0.0.1:{target.listen_port}{PATH}"
            rates: dict[str, list[float]] = {label: [] for label in urls}
            others: list[float] = []
            for _ in range(RUNS):
                for label, url in urls.items():
                    with CpuWindow() as cpu:
                        rates[label].append(_wrk(url, token))
                    others.append(cpu.others_pct)
            for label in urls:
                rows.append((gateway, label, rates[label], statistics.mean(others)))
    lines = [
        f"`wrk -t1 -c{CONNECTIONS} -d{SECONDS}s` on `GET {PATH}` with a signed RS256 bearer "
        f"token, {RUNS} interleaved runs per variant, loopback, one worker per gateway, every "
        "variant booted at once in front of the same auction backend. Overhead: the time per "
        "request against the bare proxy's (1/rate), from the medians; negative means faster. "
        "Gateways: those that run here and declare at least one of these policies, each "
        "with the ones it declares (docs/gateways.md, Policies).",
        "",
        "| gateway | policy | req/s (median) | range | overhead vs bare | beyond the noise | "
        "others' CPU |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    bare: dict[str, tuple[float, float, float]] = {}
    for gateway, label, values, others_pct in rows:
        median = statistics.median(values)
        low, high = min(values), max(values)
        if label == "bare":
            bare[gateway] = (median, low, high)
            overhead, beyond = "—", "—"
        else:
            base, base_low, base_high = bare[gateway]
            overhead = f"{(base / median - 1) * 100:+.0f} %"
            # Beyond the noise: the variant's runs and the bare runs do not overlap.
            beyond = "yes" if high < base_low or low > base_high else "no"
        lines.append(
            f"| {gateway} | {label} | {median:,.0f} | {low:,.0f}–{high:,.0f} | "
            f"{overhead} | {beyond} | {others_pct:.0f} % |"
        )
    lines += [
        "",
        "An overhead is beyond the noise only when the variant's runs and the bare runs do "
        "not overlap; otherwise this busy machine cannot tell them apart. "
        "The cache answers every request after the first from the gateway (one auction, one "
        "key), so its figure is the gateway's own ceiling without the backend hop; the rate "
        "limit refuses nothing here (any refusal fails the benchmark), so its figure is the "
        "cost of counting. wrk shares the 2 cores with the gateway and the backend: the figures "
        "compare variants on this machine, they are not the gateways' ceilings.",
    ]
    return "\n".join(lines)
