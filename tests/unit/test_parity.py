"""A fair fight (docs/gateways.md, the parity table): every gateway rendered for 1, 2 and 8 cores
on both paths, its files read back, and each rule of ``renderers._parity.RULES`` held.

Each path renders through its own code: locally ``LocalProvisioner.render`` with the policy a
run derives from ``cpus: pinned`` on a machine of twice the cores (the gateway gets the upper
half), on Google Cloud ``cloud._render.render_run`` with a plan whose gateway machine has that
many vCPUs. The readers below parse each gateway's own files, command line and environment:
they do not ask the renderer what it wrote. Two plans: the auction example (50 users: every
pool is rendered for the floor of 64) and the same with 3,000 concurrent users.

The table in docs/gateways.md is ``gatebench.core.renderers.parity_table()``; a test fails when they
differ, and another when code outside ``gatebench.core.fairness.gateway_target`` builds a
``RenderTarget`` (the drift that once rendered the cloud path with one worker)."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from cloud.settings import deployment
from gatebench.core.fairness import MIN_CONCURRENCY, local_cpu_policy, plan_concurrency
from gatebench.core.pinning import resolve_layout
from gatebench.core.plan import Cpus, load_plan
from gatebench.core.renderers import all_renderers, get_renderer, parity_table
from gatebench.core.renderers._parity import (
    CONNECT_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    KEEPALIVE_REQUESTS,
    LISTEN_BACKLOG,
)
from gatebench.core.spec import read_spec
from gatebench.local.procs import Supervisor
from paths import EXAMPLES, ROOT

CORES = (1, 2, 8)
MACHINES = {1: "n1-standard-1", 2: "n2-standard-2", 8: "n2-standard-8"}
BUSY_USERS = 3000
GATEWAYS = tuple(r.name for r in all_renderers() if r.parity is not None)


@dataclass
class Rendered:
    """One gateway as a path renders it: its files, command line and environment."""

    files: dict[str, str]
    argv: list[str]
    env: dict[str, str]


@dataclass
class Observed:
    """What a gateway's own files say about each rule."""

    workers: list[int] = field(default_factory=list)
    """Every worker, thread-pool or event-loop count found: each must equal the cores."""
    pools: list[int | None] = field(default_factory=list)
    """Every pool or request-thread limit (None: unlimited): each must hold the concurrency."""
    client_idle_s: float | None = None
    keepalive_requests: int | None = None
    """Requests a connection may carry (None: no limit)."""
    upstream_idle_s: list[float | None] = field(default_factory=list)
    """How long idle backend connections are kept (None: until the backend closes them)."""
    quiet: list[str] = field(default_factory=list)
    """What breaks the logs-and-metrics rule (empty: nothing)."""
    connect_s: list[float | None] = field(default_factory=list)
    """Every timeout to connect to the backend found (None: the gateway has no setting)."""


# -- rendering on both paths ---------------------------------------------------------------------


def _spec(users: int | None) -> bytes:
    doc = yaml.safe_load((EXAMPLES / "auction" / "openapi.yaml").read_text())
    bench = doc["x-gatebench"]
    bench["gateways"] = list(GATEWAYS)
    if users is not None:
        for workload in bench["workloads"]:
            workload["injection"] = {"concurrent": users, "duration": "10s"}
    return yaml.safe_dump(doc, sort_keys=False).encode()


def _plan(users: int | None) -> Any:
    result = read_spec(_spec(users), name="openapi.yaml")
    assert result.api is not None, result.errors
    return result, load_plan(result)


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every program and jar the local command lines name, as empty executables: the readers
    need the command line, not the program."""
    folder = tmp_path_factory.mktemp("programs")
    with pytest.MonkeyPatch.context() as mp:
        for program in (
            *("envoy", "varnishd", "java", "nginx", "haproxy", "caddy", "apache2"),
            *("traefik", "krakend", "tyk", "redis-server"),
        ):
            path = folder / program
            path.write_text("#!/bin/sh\n")
            path.chmod(0o755)
            mp.setenv(f"GATEBENCH_{program.upper()}_BIN", str(path))
        for gateway in ("spring-cloud-gateway", "zuul"):
            jar = folder / f"{gateway}.jar"
            jar.write_bytes(b"PK")
            mp.setenv(f"GATEBENCH_{gateway.upper().replace('-', '_')}_JAR", str(jar))
        yield


_RENDERS: dict[tuple[str, int, int | None], dict[str, Rendered]] = {}


def _local(cores: int, users: int | None, root: Path) -> dict[str, Rendered]:
    from gatebench.local.provisioners.local import LocalProvisioner

    result, plan = _plan(users)
    available = list(range(2 * cores))  # `pinned` gives the gateway the upper half
    cpu = local_cpu_policy(resolve_layout(Cpus(mode="pinned"), available), available)
    assert (cpu.cores, cpu.pinned) == (cores, tuple(range(cores, 2 * cores)))
    provisioner = LocalProvisioner(Supervisor(), cpu=cpu, concurrency=plan_concurrency(plan))
    run_dir = root / f"local-{cores}-{users}"
    failures = provisioner.render(list(GATEWAYS), result.api, "http://127.0.0.1:9000", run_dir)
    assert failures == {}
    out = {}
    for name, target in provisioner.rendered.items():
        renderer = get_renderer(name)
        workdir = Path(target.workdir)
        files = {
            p.relative_to(workdir).as_posix(): p.read_text()
            for p in workdir.rglob("*")
            if p.is_file()
        }
        argv = (
            renderer.run_argv(workdir, target) if renderer.runs_here else None
        ) or renderer.cloud_argv(target)
        out[name] = Rendered(files, list(argv or []), renderer.env(workdir, target))
    return out


def _cloud(cores: int, users: int | None) -> dict[str, Rendered]:
    from gatebench.cloud import ObjectRef
    from gatebench.cloud._render import render_run

    doc = yaml.safe_load(_spec(users))
    doc["x-gatebench"]["infrastructure"] = {"gateway_machine": MACHINES[cores]}
    spec = yaml.safe_dump(doc, sort_keys=False).encode()
    rendered = render_run(spec, ObjectRef("gb-uploads", "specs/a.yaml", "9"), deployment(), "r")
    assert rendered.failures == {}
    assert rendered.cpu is not None and rendered.cpu.cores == cores
    return {
        name: Rendered(rendered.configs[name], list(entry["args"]), dict(entry["env"]))
        for name, entry in rendered.fleet["gateways"].items()
    }


def rendered(path: str, cores: int, users: int | None, root: Path) -> dict[str, Rendered]:
    key = (path, cores, users)
    if key not in _RENDERS:
        _RENDERS[key] = _local(cores, users, root) if path == "local" else _cloud(cores, users)
    return _RENDERS[key]


# -- the readers: each gateway's own files, command line and environment -------------------------


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", str(text).strip())
    assert match, text
    value = float(match.group(1))
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]


def _one(pattern: str, text: str) -> str:
    found = re.findall(pattern, text, re.M)
    assert len(found) == 1, (pattern, found)
    return str(found[0])


def _argv_value(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _java_option(argv: list[str], prefix: str) -> str:
    (found,) = [a[len(prefix) :] for a in argv if a.startswith(prefix)]
    return found


def _nginx(r: Rendered) -> Observed:
    conf = r.files["nginx.conf"]
    http, upstream = conf.split("upstream gatebench_backend {", 1)
    upstream = upstream.split("}", 1)[0]
    return Observed(
        workers=[int(_one(r"^worker_processes (\d+);", conf))],
        pools=[
            int(_one(r"^\s+keepalive (\d+);", upstream)),
            int(_one(r"worker_connections (\d+);", conf)) // 2,
        ],
        client_idle_s=_seconds(_one(r"^    keepalive_timeout (\w+);", http)),
        keepalive_requests=int(_one(r"^    keepalive_requests (\d+);", http)),
        upstream_idle_s=[_seconds(_one(r"keepalive_timeout (\w+);", upstream))],
        connect_s=[_seconds(t) for t in re.findall(r"proxy_connect_timeout (\w+);", conf)],
        quiet=[] if "access_log off;" in conf and "stub_status" not in conf else ["access log"],
    )


def _haproxy(r: Rendered) -> Observed:
    cfg = r.files["haproxy.cfg"]
    servers = [line for line in cfg.splitlines() if line.strip().startswith("server ")]
    return Observed(
        workers=[int(_one(r"^    nbthread (\d+)$", cfg))],
        pools=[
            int(_one(r"^    maxconn (\d+)$", cfg)),
            *(None for s in servers if "maxconn" not in s),
        ],
        client_idle_s=_seconds(_one(r"^    timeout http-keep-alive (\w+)$", cfg)),
        keepalive_requests=None,
        upstream_idle_s=[
            _seconds(_one(r"pool-purge-delay (\w+)", cfg))
            if _one(r"^    http-reuse (\w+)$", cfg) == "always"
            else 0.0
        ],
        quiet=[line for line in cfg.splitlines() if re.match(r"\s*(log|stats) ", line)],
        connect_s=[_seconds(_one(r"^    timeout connect (\w+)$", cfg))],
    )


def _envoy(r: Rendered) -> Observed:
    doc = yaml.safe_load(r.files["envoy.yaml"])
    listener = doc["static_resources"]["listeners"][0]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    (cluster,) = doc["static_resources"]["clusters"]
    (limits,) = cluster["circuit_breakers"]["thresholds"]
    options = next(iter(cluster["typed_extension_protocol_options"].values()))
    return Observed(
        workers=[int(_argv_value(r.argv, "--concurrency"))],
        pools=[limits["max_connections"], limits["max_pending_requests"], limits["max_requests"]],
        client_idle_s=_seconds(hcm["common_http_protocol_options"]["idle_timeout"]),
        keepalive_requests=hcm.get("common_http_protocol_options", {}).get(
            "max_requests_per_connection"
        ),
        upstream_idle_s=[_seconds(options["common_http_protocol_options"]["idle_timeout"])],
        connect_s=[_seconds(cluster["connect_timeout"])],
        quiet=[
            *(["access log"] if "access_log" in hcm else []),
            *([] if doc["stats_config"]["stats_matcher"]["reject_all"] else ["stats"]),
        ],
    )


def _caddy(r: Rendered) -> Observed:
    text = r.files["Caddyfile"]
    return Observed(
        workers=[int(r.env["GOMAXPROCS"])],
        pools=[
            int(_one(r"^\s+keepalive_idle_conns (\d+)$", text)),
            int(_one(r"^\s+keepalive_idle_conns_per_host (\d+)$", text)),
        ],
        client_idle_s=_seconds(_one(r"^\t\t\tidle (\w+)$", text)),
        upstream_idle_s=[_seconds(_one(r"^\s+keepalive (\d+s)$", text))],
        connect_s=[_seconds(t) for t in re.findall(r"^\s+dial_timeout (\w+)$", text, re.M)],
        quiet=[line for line in text.splitlines() if re.match(r"\s*(log|metrics|tracing)\b", line)],
    )


def _traefik(r: Rendered) -> Observed:
    static = yaml.safe_load(r.files["traefik.yml"])
    transport = static["serversTransport"]
    return Observed(
        workers=[int(r.env["GOMAXPROCS"])],
        pools=[transport["maxIdleConnsPerHost"]],
        client_idle_s=_seconds(
            static["entryPoints"]["web"]["transport"]["respondingTimeouts"]["idleTimeout"]
        ),
        upstream_idle_s=[_seconds(transport["forwardingTimeouts"]["idleConnTimeout"])],
        connect_s=[_seconds(transport["forwardingTimeouts"]["dialTimeout"])],
        quiet=[
            *(k for k in ("accessLog", "metrics", "tracing") if k in static),
            *(["usage"] if static["global"]["sendAnonymousUsage"] is not False else []),
        ],
    )


def _krakend(r: Rendered) -> Observed:
    config = json.loads(r.files["krakend.json"])
    return Observed(
        workers=[int(r.env["GOMAXPROCS"])],
        pools=[
            config["max_idle_connections_per_host"],
            config["max_idle_connections"] or None,  # 0: no limit
        ],
        client_idle_s=_seconds(config["idle_timeout"]),
        upstream_idle_s=[_seconds(config["idle_connection_timeout"])],
        connect_s=[_seconds(config["dialer_timeout"])],
        quiet=[
            *([] if config["extra_config"]["router"]["disable_access_log"] else ["access log"]),
            *(k for k in config["extra_config"] if k.startswith("telemetry")),
            *([] if r.env.get("USAGE_DISABLE") == "1" else ["usage reporting"]),
        ],
    )


def _tyk(r: Rendered) -> Observed:
    conf = json.loads(r.files["tyk.conf"])
    return Observed(
        workers=[int(r.env["GOMAXPROCS"])],
        pools=[conf["max_idle_connections_per_host"], conf["max_idle_connections"] or None],
        # Go's server closes an idle connection after its read timeout when it has no idle one
        client_idle_s=float(conf["http_server_options"]["read_timeout"]),
        # Tyk's transport keeps idle backend connections 90 s (gateway/reverse_proxy.go)
        upstream_idle_s=[None if not conf["proxy_close_connections"] else 0.0],
        connect_s=[None],  # tyk.conf has no connect timeout: its dialer's own (TIMEOUT_EXEMPT)
        quiet=[
            *(["analytics"] if conf["enable_analytics"] else []),
            *(["close_connections"] if conf["close_connections"] else []),
        ],
    )


def _apache(r: Rendered) -> Observed:
    conf = r.files["httpd.conf"]
    threads = int(_one(r"^ThreadsPerChild (\d+)$", conf))
    workers = int(_one(r"^MaxRequestWorkers (\d+)$", conf))
    assert int(_one(r"^ThreadLimit (\d+)$", conf)) >= threads
    assert workers % threads == 0
    # a graceful restart needs slots for the new generation beside the old
    assert int(_one(r"^ServerLimit (\d+)$", conf)) >= 2 * (workers // threads)
    return Observed(
        workers=[workers // threads, int(_one(r"^StartServers (\d+)$", conf))],
        pools=[workers],
        client_idle_s=float(_one(r"^KeepAliveTimeout (\d+)$", conf)),
        keepalive_requests=int(_one(r"^MaxKeepAliveRequests (\d+)$", conf)) or None,
        upstream_idle_s=[float(t) for t in re.findall(r"keepalive=On ttl=(\d+)", conf)],
        connect_s=[float(t) for t in re.findall(r"connectiontimeout=(\d+)", conf)],
        quiet=[
            line
            for line in conf.splitlines()
            if re.match(r"(CustomLog|TransferLog|LoadModule status_module)", line)
        ],
    )


def _varnish_param(argv: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in argv if a.startswith(f"{name}=")]
    return value


def _varnish(r: Rendered) -> Observed:
    pools = int(_varnish_param(r.argv, "thread_pools"))
    return Observed(
        workers=[pools],
        pools=[pools * int(_varnish_param(r.argv, "thread_pool_min"))],
        client_idle_s=float(_varnish_param(r.argv, "timeout_idle")),
        upstream_idle_s=[float(_varnish_param(r.argv, "backend_idle_timeout"))],
        connect_s=[
            _seconds(t) for t in re.findall(r"\.connect_timeout = (\w+);", r.files["default.vcl"])
        ],
        quiet=[a for a in r.argv if "varnishncsa" in a],
    )


def _kong(r: Rendered) -> Observed:
    conf = dict(line.split(" = ", 1) for line in r.files["kong.conf"].splitlines() if " = " in line)
    declarative = yaml.safe_load(r.files["kong.yml"])
    return Observed(
        workers=[int(conf["nginx_worker_processes"])],
        pools=[int(conf["upstream_keepalive_pool_size"])],
        client_idle_s=_seconds(conf["nginx_http_keepalive_timeout"]),
        keepalive_requests=int(conf["nginx_http_keepalive_requests"]),
        upstream_idle_s=[float(conf["upstream_keepalive_idle_timeout"])],
        connect_s=[s["connect_timeout"] / 1000 for s in declarative["services"]],
        quiet=[
            *(["access log"] if conf["proxy_access_log"] != "off" else []),
            *(["usage reporting"] if conf["anonymous_reports"] != "off" else []),
            *("plugin" for s in declarative["services"] for r in s["routes"] if r.get("plugins")),
        ],
    )


def _spring(r: Rendered) -> Observed:
    config = yaml.safe_load(r.files["application.yml"])
    webflux = config["spring"]["cloud"]["gateway"]["server"]["webflux"]
    pool = webflux["httpclient"]["pool"]
    return Observed(
        workers=[
            int(_java_option(r.argv, "-XX:ActiveProcessorCount=")),
            int(_java_option(r.argv, "-Dreactor.netty.ioWorkerCount=")),
        ],
        pools=[None if pool["type"] == "elastic" else int(pool["max-connections"])],
        client_idle_s=_seconds(config["server"]["netty"]["idle-timeout"]),
        upstream_idle_s=[_seconds(pool["max-idle-time"])],
        connect_s=[webflux["httpclient"]["connect-timeout"] / 1000],
        quiet=[
            *(["gateway metrics"] if webflux["metrics"]["enabled"] is not False else []),
            *(["observability"] if webflux["observability"]["enabled"] is not False else []),
            *(["meters"] if config["management"]["metrics"]["enable"]["all"] is not False else []),
            *(
                name
                for name, on in config["management"]["observations"]["enable"].items()
                if on is not False
            ),
        ],
    )


def _zuul(r: Rendered) -> Observed:
    config = yaml.safe_load(r.files["application.yml"])
    tomcat = config["gatebench"]["tomcat"]
    host = config["zuul"]["host"]
    requests = int(tomcat["max-keep-alive-requests"])
    return Observed(
        workers=[int(_java_option(r.argv, "-XX:ActiveProcessorCount="))],
        pools=[
            config["server"]["tomcat"]["threads"]["max"],
            host["max-total-connections"],
            host["max-per-route-connections"],
        ],
        client_idle_s=_seconds(tomcat["keep-alive-timeout"]),
        keepalive_requests=None if requests < 0 else requests,
        upstream_idle_s=[None],  # HttpClient keeps them until the backend closes them
        connect_s=[host["connect-timeout-millis"] / 1000],
        quiet=[
            *(["meters"] if config["management"]["metrics"]["enable"]["all"] is not False else []),
            *(
                ["request timer"]
                if not any(
                    "WebMvcMetrics" in c for c in config["spring"]["autoconfigure"]["exclude"]
                )
                else []
            ),
        ],
    )


TIMEOUT_EXEMPT = {"tyk"}
"""Gateways with no connect timeout to set; their parity line says so."""

READERS: Mapping[str, Callable[[Rendered], Observed]] = {
    "apache": _apache,
    "caddy": _caddy,
    "envoy": _envoy,
    "haproxy": _haproxy,
    "kong": _kong,
    "krakend": _krakend,
    "nginx": _nginx,
    "spring-cloud-gateway": _spring,
    "traefik": _traefik,
    "tyk": _tyk,
    "varnish": _varnish,
    "zuul": _zuul,
}


# -- the tests -----------------------------------------------------------------------------------


def test_every_gateway_has_a_reader_and_a_declaration() -> None:
    """A gateway added to the registry is added here too (its reader), and declares how it meets
    each rule; only a managed service declares nothing."""
    assert set(READERS) == set(GATEWAYS)
    for renderer in all_renderers():
        if renderer.parity is None:
            assert renderer.cloud_image is None, f"{renderer.name} declares no parity"


@pytest.mark.parametrize("users", [None, BUSY_USERS], ids=["auction", f"{BUSY_USERS}-users"])
@pytest.mark.parametrize("cores", CORES)
@pytest.mark.parametrize("path", ["local", "cloud"])
@pytest.mark.parametrize("gateway", GATEWAYS)
@pytest.mark.usefixtures("programs")
def test_the_parity_rules_hold(
    gateway: str, path: str, cores: int, users: int | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, plan = _plan(users)
    concurrency = plan_concurrency(plan)
    assert concurrency == (MIN_CONCURRENCY if users is None else BUSY_USERS)
    seen = READERS[gateway](rendered(path, cores, users, tmp_path_factory.getbasetemp())[gateway])
    assert seen.workers and set(seen.workers) == {cores}, seen.workers
    assert seen.pools and all(p is None or p >= concurrency for p in seen.pools), seen.pools
    assert seen.client_idle_s == IDLE_TIMEOUT_S
    assert seen.keepalive_requests is None or seen.keepalive_requests >= KEEPALIVE_REQUESTS
    assert seen.upstream_idle_s and all(
        s is None or s >= IDLE_TIMEOUT_S for s in seen.upstream_idle_s
    ), seen.upstream_idle_s
    assert seen.quiet == []
    # rule 4: 10 s to connect to the backend (Apache waited its 300 s Timeout)
    expected = None if gateway in TIMEOUT_EXEMPT else CONNECT_TIMEOUT_S
    assert seen.connect_s and set(seen.connect_s) == {expected}, seen.connect_s


@pytest.mark.usefixtures("programs")
def test_the_readers_can_fail(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The rules are not vacuous: a file with nginx's old upstream pool, or Caddy's default idle
    pool, is caught."""
    nginx = rendered("local", 2, BUSY_USERS, tmp_path_factory.getbasetemp())["nginx"]
    old = Rendered(
        {"nginx.conf": re.sub(r"keepalive \d+;", "keepalive 64;", nginx.files["nginx.conf"])},
        nginx.argv,
        nginx.env,
    )
    assert 64 in _nginx(old).pools and BUSY_USERS > 64
    caddy = rendered("cloud", 8, None, tmp_path_factory.getbasetemp())["caddy"]
    assert _caddy(Rendered(caddy.files, caddy.argv, {"GOMAXPROCS": "1"})).workers == [1]


def test_the_route_tables_are_written_for_many_routes() -> None:
    """Caddy routes with one map (no subroute per route); HAProxy with one ``map_reg`` lookup
    (no rule per route); Varnish's routes sit in subroutines of at most 50, so its C compiler
    sees no function that grows with the table."""
    from gatebench.core.routescale import replicate
    from gatebench.core.spec import load_spec

    api = load_spec(EXAMPLES / "auction" / "openapi.yaml").api
    assert api is not None
    grown = replicate(api, 120)
    target = __import__("gatebench.core.fairness", fromlist=["x"]).gateway_target(
        local_cpu_policy(resolve_layout(Cpus(), [0, 1]), [0, 1]),
        workdir="/srv/gb",
        listen_port=8080,
        backend_url="http://127.0.0.1:9000",
    )
    caddy = get_renderer("caddy").render(grown, target)["Caddyfile"]
    assert caddy.count("\tmap ") == 1 and "vars_regexp" not in caddy and "@r0" not in caddy
    assert len(re.findall(r"^\t\t`~\^", caddy, re.M)) == 120
    haproxy = get_renderer("haproxy").render(grown, target)
    assert "path_reg" not in haproxy["haproxy.cfg"]
    assert haproxy["haproxy.cfg"].count("map_reg(/srv/gb/routes.map)") == 1
    lines = [line for line in haproxy["routes.map"].splitlines() if not line.startswith("#")]
    assert len(lines) == 120 and all(re.fullmatch(r"\^[A-Z]+:/\S+\$ r\d+_\w+", x) for x in lines)
    vcl = get_renderer("varnish").render(grown, target)["default.vcl"]
    subs = re.findall(r"^sub gatebench_routes_\d+ \{\n(.*?)^\}", vcl, re.M | re.S)
    assert [s.count("return (pass);") for s in subs] == [50, 50, 20]
    recv = vcl.split("sub vcl_recv {", 1)[1]
    assert recv.count("req.url ~") == 0 and recv.count("call gatebench_routes_") == 3
    assert math.ceil(120 / 50) == len(subs)


def test_the_parity_table_in_docs_is_the_declarations() -> None:
    """docs/gateways.md holds ``parity_table()`` between its markers (paste it after a
    change)."""
    text = (ROOT / "docs" / "gateways.md").read_text()
    start, end = "<!-- parity:start -->\n", "\n<!-- parity:end -->"
    assert start in text and end in text, "docs/gateways.md has no parity table markers"
    shown = text.split(start, 1)[1].split(end, 1)[0]
    assert shown == parity_table(), (
        "docs/gateways.md's parity table differs from the renderers' declarations: paste "
        "gatebench.core.renderers.parity_table() between the markers"
    )


_BUILDER_FILES = {"src/gatebench/core/fairness.py", "src/gatebench/core/renderers/_base.py"}
"""Where a ``RenderTarget(...)`` may be built: the one builder, and the class's own defaults."""


def _target_builders(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "RenderTarget")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "RenderTarget")
        )
    ]


def test_every_path_builds_its_targets_with_the_one_builder() -> None:
    """The local run, the live runs, the cloud render, the cloud's live render, ``gatebench
    render`` and the benchmarks all call ``fairness.gateway_target``: a path that builds its own
    ``RenderTarget`` could drop the CPU policy again (the cloud path once rendered four
    gateways with one worker on two vCPUs)."""
    found = {}
    for folder in ("src/gatebench", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in _BUILDER_FILES:
                continue
            lines = _target_builders(path)
            if lines:
                found[relative] = lines
    assert found == {}, (
        f"RenderTarget(...) built outside gatebench.core.fairness.gateway_target: {found}; call "
        "gateway_target(cpu, ...) with the run's CPU policy instead"
    )


def test_the_scan_finds_a_target_built_by_hand(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "from gatebench.core.renderers import RenderTarget\nt = RenderTarget(workdir='/w')\n"
    )
    assert _target_builders(source) == [2]


def test_route_scale_and_changes_warm_a_jvm_gateway_up_after_each_start() -> None:
    """Rule 8 in the live runs: every load there follows a fresh start, so a JVM gateway's
    warm-up is at least its own (``kinds._live._gateway.warmup_s``); the fixed schedule and the capacity
    campaign are held to it in test_workload.py and test_capacity_search.py."""
    from gatebench.core.scaleplan import LoadSettings
    from gatebench.kinds._live._gateway import warmup_s

    settings = LoadSettings(warmup_s=3.0)
    for gateway in ("spring-cloud-gateway", "zuul"):
        renderer = get_renderer(gateway)
        assert renderer.jit_warmup_s > settings.warmup_s
        assert warmup_s(renderer, settings) == renderer.jit_warmup_s
    assert warmup_s(get_renderer("nginx"), settings) == 3.0


@pytest.mark.usefixtures("programs")
def test_every_listener_queues_as_many_connections(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Apache kept its 511, Varnish its 1,024 and Tomcat (Zuul) its 100 pending connections
    while nginx and Kong queued 4,096: a run opening a connection per request found them
    unequal. Gateways without the setting take the kernel's somaxconn (4,096 here)."""
    files = rendered("local", 1, None, tmp_path_factory.getbasetemp())
    cloud = rendered("cloud", 1, None, tmp_path_factory.getbasetemp())
    seen = {
        "nginx": _one(r"backlog=(\d+);", files["nginx"].files["nginx.conf"]),
        "apache": _one(r"^ListenBacklog (\d+)$", files["apache"].files["httpd.conf"]),
        "haproxy": _one(r"^    backlog (\d+)$", files["haproxy"].files["haproxy.cfg"]),
        "varnish": _varnish_param(files["varnish"].argv, "listen_depth"),
        "zuul": yaml.safe_load(files["zuul"].files["application.yml"])["server"]["tomcat"][
            "accept-count"
        ],
        "kong": _one(r"backlog=(\d+)", cloud["kong"].files["kong.conf"]),
    }
    assert {g: int(v) for g, v in seen.items()} == dict.fromkeys(seen, LISTEN_BACKLOG)


# -- rule 9: one retry policy for every pooled gateway -------------------------------------------

_REPLICAS = ("http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003")
_EVERY_METHOD = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "POST", "PATCH"}
_RETRY_SPEC = b"""
openapi: 3.0.3
info: {title: retries, version: "1"}
servers: [{url: "http://127.0.0.1:9000"}]
paths:
  /items:
    post: {operationId: create, responses: {"201": {description: ok}}}
  /items/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
    get: {operationId: read, responses: {"200": {description: ok}}}
    put: {operationId: replace, responses: {"200": {description: ok}}}
    patch: {operationId: change, responses: {"200": {description: ok}}}
    delete: {operationId: remove, responses: {"204": {description: ok}}}
"""
_RETRY_METHODS = frozenset({"GET", "PUT", "PATCH", "DELETE", "POST"})


@dataclass
class Retries:
    """What a gateway's own files say it resends to another replica."""

    tries: set[int] = field(default_factory=set)
    """Every bound found on the tries a request gets (the first included)."""
    unsent: set[str] = field(default_factory=set)
    """Methods resent when the connection failed before anything was sent."""
    sent: set[str] = field(default_factory=set)
    """Methods resent when the request was sent and no answer came."""


def _pooled(replicas: tuple[str, ...]) -> dict[str, dict[str, str]]:
    from gatebench.core.fairness import gateway_target
    from gatebench.core.spec import load_spec

    api = load_spec(_RETRY_SPEC, name="openapi.yaml").api
    assert api is not None
    cpu = local_cpu_policy(resolve_layout(Cpus(), [0, 1]), [0, 1])
    out = {}
    for renderer in all_renderers():
        if renderer.parity is None or (
            replicas and "pool.round_robin" not in renderer.supported_deployment
        ):
            continue
        target = gateway_target(
            cpu,
            workdir="/srv/gb",
            listen_port=8080,
            backend_url="http://127.0.0.1:9000",
            admin_port=9901,
            replicas=replicas,
        )
        out[renderer.name] = renderer.render(api, target)
    return out


def _retries_nginx(files: Mapping[str, str]) -> Retries:
    conf = files["nginx.conf"]
    tries = re.findall(r"proxy_next_upstream_tries (\d+);", conf)
    if not tries:
        return Retries()
    assert re.findall(r"proxy_next_upstream ([^;]+);", conf) == ["error timeout"]
    # nginx's own rule: a request already sent is passed on only when idempotent
    return Retries(
        {int(t) for t in tries},
        set(_EVERY_METHOD),
        {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"},
    )


def _retries_haproxy(files: Mapping[str, str]) -> Retries:
    cfg = files["haproxy.cfg"]
    retries = re.findall(r"^    retries (\d+)$", cfg, re.M)
    if not retries or "    option redispatch 1\n" not in cfg:
        return Retries()  # without redispatch every retry goes to the same (dead) server
    (retry_on,) = re.findall(r"^    retry-on (.+)$", cfg, re.M)
    (kept,) = re.findall(r"http-request disable-l7-retry unless \{ method ([A-Z ]+) \}", cfg)
    sent = set(kept.split()) if "empty-response" in retry_on.split() else set()
    unsent = set(_EVERY_METHOD) if "conn-failure" in retry_on.split() else set()
    return Retries({int(r) + 1 for r in retries}, unsent, sent)


def _retries_envoy(files: Mapping[str, str]) -> Retries:
    doc = yaml.safe_load(files["envoy.yaml"])
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    routes = hcm["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
    (cluster,) = doc["static_resources"]["clusters"]
    (limits,) = cluster["circuit_breakers"]["thresholds"]
    seen = Retries()
    for route in routes:
        policy = route["route"].get("retry_policy")
        if policy is None:
            continue
        method = route["match"]["headers"][0]["string_match"]["exact"]
        on = set(policy["retry_on"].split(","))
        assert [p["name"] for p in policy["retry_host_predicate"]] == [
            "envoy.retry_host_predicates.previous_hosts"
        ]
        assert limits["max_retries"] >= MIN_CONCURRENCY  # a replica's death fails many at once
        seen.tries.add(policy["num_retries"] + 1)
        if "connect-failure" in on and ("reset" in on or "reset-before-request" in on):
            seen.unsent.add(method)
        if "reset" in on:
            seen.sent.add(method)
    return seen


def _retries_caddy(files: Mapping[str, str]) -> Retries:
    text = files["Caddyfile"]
    retries = re.findall(r"^\s+lb_retries (\d+)$", text, re.M)
    if not retries or "lb_try_duration" in text:
        return Retries()
    (block,) = re.findall(r"lb_retry_match \{\n(.*?)\n\s*\}", text, re.S)
    (methods,) = re.findall(r"^\s+method (.+)$", block, re.M)
    return Retries({int(r) + 1 for r in retries}, set(_EVERY_METHOD), set(methods.split()))


def _retries_traefik(files: Mapping[str, str]) -> Retries:
    doc = yaml.safe_load(files["dynamic.yml"])["http"]
    middlewares = doc.get("middlewares", {})
    seen = Retries()
    for router in doc["routers"].values():
        if router["entryPoints"] != ["web"]:
            continue
        retry = [
            middlewares[m]["retry"]
            for m in router.get("middlewares", [])
            if "retry" in middlewares[m]
        ]
        if not retry:
            return Retries()  # a router without the retry
        (config,) = retry
        seen.tries.add(config["attempts"])
        seen.unsent |= _EVERY_METHOD
        if "502" in config.get("status", []) and not config.get("retryNonIdempotentMethod"):
            # Traefik resends only idempotent methods on a status (not POST, PATCH, LOCK)
            seen.sent |= _EVERY_METHOD - {"POST", "PATCH"}
    return seen


def _retries_kong(files: Mapping[str, str]) -> Retries:
    (service,) = yaml.safe_load(files["kong.yml"])["services"]
    if "retries" not in service:
        return Retries(
            {6}, set(_EVERY_METHOD), {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}
        )
    return Retries(
        {service["retries"] + 1},
        set(_EVERY_METHOD),
        {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"},
    )


def _retries_apache(files: Mapping[str, str]) -> Retries:
    attempts = re.findall(r"ProxySet .*maxattempts=(\d+)", files["httpd.conf"])
    if not attempts:
        return Retries()
    # the balancer's failover: a member that failed the connection, never a request sent
    return Retries({int(a) + 1 for a in attempts}, set(_EVERY_METHOD), set())


def _retries_spring(files: Mapping[str, str]) -> Retries:
    config = yaml.safe_load(files["application.yml"])
    routes = config["spring"]["cloud"]["gateway"]["server"]["webflux"]["routes"]
    seen = Retries()
    for route in routes:
        for f in route.get("filters", []):
            if f["name"] != "Retry":
                continue
            args = f["args"]
            assert args["series"] == "" and args["statuses"] == ""  # no answer retried
            assert "java.io.IOException" in args["exceptions"]
            seen.tries.add(args["retries"] + 1)
            seen.unsent.add(args["methods"])
            seen.sent.add(args["methods"])
    return seen


def _retries_varnish(files: Mapping[str, str]) -> Retries:
    found = re.findall(
        r'if \(bereq\.retries < (\d+) && bereq\.method ~ "\^\(([A-Z|]+)\)\$"\) \{\n\s+return \(retry\);',
        files["default.vcl"],
    )
    if not found:
        return Retries()
    ((bound, methods),) = found
    return Retries({int(bound) + 1}, set(methods.split("|")), set(methods.split("|")))


def _retries_none(files: Mapping[str, str]) -> Retries:
    return Retries()


RETRY_READERS: Mapping[str, Callable[[Mapping[str, str]], Retries]] = {
    "apache": _retries_apache,
    "caddy": _retries_caddy,
    "envoy": _retries_envoy,
    "haproxy": _retries_haproxy,
    "kong": _retries_kong,
    "nginx": _retries_nginx,
    "spring-cloud-gateway": _retries_spring,
    "traefik": _retries_traefik,
    "tyk": _retries_none,  # Tyk has no retry setting
    "varnish": _retries_varnish,
}

_BODILESS = {"GET", "DELETE"} & _RETRY_METHODS
RETRY_GAPS: Mapping[str, tuple[set[str], set[str]]] = {
    "apache": (set(_RETRY_METHODS), set()),
    "caddy": (set(_RETRY_METHODS), set(_BODILESS)),
    "spring-cloud-gateway": (set(_BODILESS), set(_BODILESS)),
    "varnish": (set(_BODILESS), set(_BODILESS)),
    "tyk": (set(), set()),
}
"""Where a pooled gateway cannot follow the policy, what it resends instead (unsent, sent),
for the methods of the test's API; its parity line says why."""


def test_every_pooled_gateway_carries_the_one_retry_policy() -> None:
    """With replicas, a request whose connection failed is resent to another replica whatever
    its method, one already sent only when idempotent, at most 2 more times (nginx's default
    made the rule): a replica's death cost Envoy, Caddy, Traefik, Spring Cloud Gateway and
    HAProxy 5xx that nginx, Apache and Kong resent, and the fault's scores measured defaults.
    Gateways that cannot follow it are listed with what they do and say so in the table."""
    from gatebench.core.renderers._deployment import IDEMPOTENT_METHODS, RETRY_TRIES

    rendered_pools = _pooled(_REPLICAS)
    assert set(rendered_pools) == set(RETRY_READERS), "a pooled gateway without a retry reader"
    for gateway, files in rendered_pools.items():
        seen = RETRY_READERS[gateway](files)
        unsent, sent = RETRY_GAPS.get(
            gateway, (set(_RETRY_METHODS), _RETRY_METHODS & set(IDEMPOTENT_METHODS))
        )
        assert seen.unsent & _RETRY_METHODS == unsent, (gateway, seen)
        assert seen.sent & _RETRY_METHODS == sent, (gateway, seen)
        assert seen.sent <= set(IDEMPOTENT_METHODS), (gateway, seen)
        if unsent:
            assert seen.tries == {RETRY_TRIES}, (gateway, seen)
        if gateway in RETRY_GAPS:
            cell = get_renderer(gateway).parity.retries  # type: ignore[union-attr]
            assert "cannot" in cell.lower() or "not resent" in cell, (gateway, cell)


def test_without_replicas_nothing_is_retried() -> None:
    """One backend: nowhere else to send, and nothing rendered (the plain goldens stay)."""
    for gateway, files in _pooled(()).items():
        reader = RETRY_READERS.get(gateway, _retries_none)
        seen = reader(files)
        if gateway == "kong":  # Kong's own default (5) stays where there is no pool
            assert seen.tries == {6}
            continue
        assert seen == Retries(), (gateway, seen)


def test_envoys_active_check_runs_from_the_start_at_the_common_interval() -> None:
    """Envoy checks a cluster that has had no traffic every 60 s by default, and the next check
    stays that far out once traffic comes: over a benchmark of seconds its active check never
    ran, and a dead replica came back into the rotation as its passive ejection ran out."""
    from gatebench.core.renderers._deployment import HEALTH_INTERVAL_S

    doc = yaml.safe_load(_pooled(_REPLICAS)["envoy"]["envoy.yaml"])
    (cluster,) = doc["static_resources"]["clusters"]
    (check,) = cluster["health_checks"]
    assert check["interval"] == check["no_traffic_interval"] == f"{HEALTH_INTERVAL_S}s"
