"""Recorded traffic, both ways, through real nginx with its access logs on.

1. The round trip: a plan of recorded arrival curves (three operations, bursts, a weighted value
   distribution) runs through real Gatling and real nginx (Debian's, the configuration gatebench
   renders for it, with two access logs added: ``combined`` with the request time, and one with
   ``$msec``); ``gatebench import`` reads each log back with the same description. The plan it
   writes must have the same mix (every request is logged once: the counts are equal, far
   within 1 %) and the same arrival curve: per second, the counts Gatling's schedule puts in
   each wall-clock second, give or take the requests scheduled closer to a second's edge than
   the engine kept its schedule in this very run (measured from the log: the k-th request
   received against the k-th scheduled), and at least one. The item ids nginx saw are exactly
   the reference draws of the weighted list.
2. The engines agree: Gatling, wrk and gatebench-loadgen send the same weighted values for the
   same draws (``gatebench.core.workload.weighted_value`` is the reference), numbers and text with a
   prefix and padding, percent-encoded, every request checked against its counter.

Short phases (seconds) on 127.0.0.1; run under the heavy lock.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
import yaml
from _engine_helpers import Hooks

from gatebench.cli import main
from gatebench.core.ir import Api
from gatebench.core.plan import Injection, build_plan
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.spec import load_spec
from gatebench.core.workload import Phase, Schedule, compile_load, render_workload, weighted_value
from gatebench.local.backends import start_backend
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.engines.wrk import WrkEngine
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners._boot import check_config, start_gateway, write_files
from paths import DATA

pytestmark = pytest.mark.integration

SPEC = DATA / "traffic" / "shop.yaml"
LOG_FORMATS = (
    'log_format precise \'$remote_addr [$time_local] "$request" $status $request_length '
    "$request_time $msec';"
)


@pytest.fixture(scope="module")
def shop() -> Api:
    api = load_spec(SPEC).api
    assert api is not None
    return api


@pytest.fixture(scope="module")
def nginx(
    shop: Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, Supervisor]]:
    """nginx as gatebench renders it, logging every request twice, in front of the echo
    backend; yields its URL, its log folder and the supervisor."""
    work = tmp_path_factory.mktemp("nginx-logs")
    with Supervisor() as sup:
        _, backend = start_backend(sup, "echo", work)
        renderer = get_renderer("nginx")
        target = RenderTarget(
            workdir=str(work / "nginx"),
            listen_port=free_port(),
            backend_url=f"http://127.0.0.1:{backend}",
        )
        files = dict(renderer.render(shop, target))
        logs = work / "nginx" / "logs"
        conf = files["nginx.conf"]
        assert "    access_log off;\n" in conf
        files["nginx.conf"] = conf.replace(
            "    access_log off;\n",
            f"    {LOG_FORMATS}\n    access_log {logs}/combined.log combined;\n"
            f"    access_log {logs}/precise.log precise;\n",
        )
        write_files(files, target.workdir)
        check_config(renderer, target.workdir, target)
        start_gateway(renderer, target, sup)
        yield f"http://127.0.0.1:{target.listen_port}", logs, sup


# -- 1. the round trip ---------------------------------------------------------------------------

CURVES = {
    "getItem": [40, 120, 10, 200, 60],
    "listItems": [50, 0, 150, 30],
    "getMe": [100, 100, 20, 180],
}
ITEM_IDS = {
    "list": [1, 2, 3, 4, 5],
    "weights": [40, 20, 10, 5, 5],
    "others": {"count": 45, "weight": 20, "start": 6},
}


def _plan(api: Api) -> Any:
    workloads = [
        {
            "name": "getItem",
            "operation": "getItem",
            "params": {"itemId": ITEM_IDS},
            "injection": {"arrivals": {"counts": CURVES["getItem"]}},
        },
        {
            "name": "listItems",
            "operation": "listItems",
            "params": {"limit": {"list": [10, 20], "weights": [3, 1]}, "category": "books"},
            "injection": {"arrivals": {"counts": CURVES["listItems"]}},
        },
        {
            "name": "getMe",
            "operation": "getMe",
            "injection": {"arrivals": {"counts": CURVES["getMe"]}},
        },
    ]
    section = {
        "gateways": ["nginx"],
        "baseline": False,
        "repetitions": 1,
        "warmup": False,
        "order": "fixed",
        "workloads": workloads,
    }
    return build_plan(section, api, known_gateways=["nginx"])


def _schedule(start_s: float, counts: list[int]) -> list[float]:
    """Gatling's schedule of an arrival curve: user k of n in step i at i + k/n seconds from the
    phase start."""
    return [start_s + i + k / n for i, n in enumerate(counts) for k in range(n)]


def _sent(log: Path, path: re.Pattern[str]) -> list[float]:
    """When nginx received each request whose path matches (``$msec - $request_time``)."""
    out = []
    for line in log.read_text().splitlines():
        m = re.search(r'"GET (\S+) HTTP/1.1" \d+ \d+ ([\d.]+) ([\d.]+)$', line)
        if m is not None and path.fullmatch(m.group(1)):
            out.append(float(m.group(3)) - float(m.group(2)))
    return sorted(out)


def _expected_seconds(scheduled: list[float], sent: list[float]) -> tuple[list[int], list[int]]:
    """The schedule as requests per wall-clock second, and how many of each second's may land
    in the next or the one before: those scheduled closer to its edges than the engine kept
    its schedule in this run (the k-th request sent against the k-th scheduled, after their
    common offset: the same machine's own timing, not a guess)."""
    offsets = sorted(b - a for a, b in zip(scheduled, sent, strict=True))
    shift = offsets[len(offsets) // 2]
    spread = max(abs(o - shift) for o in offsets) + 0.002
    times = [t + shift for t in scheduled]
    seconds = Counter(math.floor(t) for t in times)
    near = Counter(math.floor(t) for t in times if min(t % 1, 1 - t % 1) < spread)
    first, last = min(seconds), max(seconds)
    span = range(first, last + 1)
    return [seconds.get(s, 0) for s in span], [
        near.get(s, 0) + near.get(s - 1, 0) + near.get(s + 1, 0) for s in span
    ]


def _edges_crossed(
    replayed: list[int], expected: list[int], slack: list[int]
) -> tuple[list[int], list[int]]:
    """``expected`` and ``slack`` with a first or last second left out when the replayed curve
    is that second shorter and every request of it was near enough its edge to land in the
    neighbouring second (as it did here once: [1, 42, 118, ...] scheduled, [43, 118, ...]
    logged); the neighbour then holds them."""
    expected, slack = list(expected), list(slack)
    while len(replayed) < len(expected) and len(expected) > 1:
        if expected[0] <= slack[0]:
            count, may = expected.pop(0), slack.pop(0)
            expected[0], slack[0] = expected[0] + count, slack[0] + may
        elif expected[-1] <= slack[-1]:
            count, may = expected.pop(), slack.pop()
            expected[-1], slack[-1] = expected[-1] + count, slack[-1] + may
        else:
            break
    return expected, slack


PATHS = {
    "getItem": re.compile(r"/api/items/\d+"),
    "listItems": re.compile(r"/api/items\?.*"),
    "getMe": re.compile(r"/api/users/me"),
}


@pytest.fixture(scope="module")
def round_trip(
    shop: Api, nginx: tuple[str, Path, Supervisor], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    url, logs, sup = nginx
    plan = _plan(shop)
    load = compile_load(plan, shop, {"nginx": url}, seed=3)
    hooks = Hooks()
    work = tmp_path_factory.mktemp("round-trip")
    result = GatlingEngine().run(load.document, work, hooks, supervisor=sup)
    assert not result.crashed, result.reason
    starts = {p.workload: hooks.results[p.index].start_ms for p in load.schedule.phases}
    requests = {p.workload: hooks.results[p.index].sample.requests for p in load.schedule.phases}
    item_spec = next(p for p in load.document["phases"] if p["workload"] == "getItem")["params"][
        "itemId"
    ]
    return {
        "starts": starts,
        "requests": requests,
        "item_spec": item_spec,
        "logs": logs,
        "work": work,
    }


def _root_requests(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if '"GET / HTTP/1.1"' in line)


def _import(log: Path, out: Path, *extra: str) -> dict[str, Any]:
    code = main(
        ["import", str(SPEC), str(log), "--out", str(out), "--keep-values", "itemId", *extra]
    )
    assert code == 0
    data: dict[str, Any] = yaml.safe_load(out.read_text())["x-gatebench"]
    return data


@pytest.mark.parametrize("log", ["combined.log", "precise.log"])
def test_imported_back_the_mix_and_the_arrival_curve_are_the_same(
    shop: Api, round_trip: dict[str, Any], log: str
) -> None:
    logs: Path = round_trip["logs"]
    extra = ["--log-format", LOG_FORMATS] if log == "precise.log" else []
    section = _import(logs / log, round_trip["work"] / f"{log}.yaml", *extra)
    build_plan(section, shop, known_gateways=["nginx"])  # an ordinary plan
    assert section["traffic"]["format"] == ("combined" if log == "combined.log" else "nginx")
    total = sum(sum(c) for c in CURVES.values())
    assert section["traffic"]["matched"] == total
    # beside them, only the readiness check's and Gatling's own first request (GET /)
    assert section["traffic"]["requests"] - total == _root_requests(round_trip["logs"] / log)
    found = {w["operation"]: w for w in section["workloads"]}
    assert set(found) == set(CURVES)
    for op, counts in CURVES.items():
        replayed = found[op]["injection"]["arrivals"]["counts"]
        # the mix: every request Gatling sent, once
        assert sum(replayed) == sum(counts) == round_trip["requests"][op]
        assert abs(sum(replayed) / total - sum(counts) / total) < 0.01
        # the arrival curve, second by second
        sent = _sent(logs / "precise.log", PATHS[op])
        scheduled = _schedule(round_trip["starts"][op] / 1000.0, counts)
        expected, slack = _expected_seconds(scheduled, sent)
        expected, slack = _edges_crossed(replayed, expected, slack)
        assert len(replayed) == len(expected), (op, replayed, expected)
        for got, want, may in zip(replayed, expected, slack, strict=True):
            assert abs(got - want) <= max(1, may), (op, replayed, expected, slack)
    # the item ids nginx saw are the weighted list's first draws, exactly
    n = sum(CURVES["getItem"])
    reference = Counter(weighted_value(round_trip["item_spec"], k) for k in range(n))
    params = found["getItem"]["params"]["itemId"]
    seen = dict(zip(params["list"], params["weights"], strict=True))
    if "others" not in params:
        assert seen == dict(reference)
    else:
        assert all(seen[v] == reference[v] for v in seen)


def test_the_precise_log_gives_inter_arrival_times(round_trip: dict[str, Any]) -> None:
    stats_file = round_trip["work"] / "stats.json"
    code = main(
        [
            "import",
            str(SPEC),
            str(round_trip["logs"] / "precise.log"),
            "--log-format",
            LOG_FORMATS,
            "--out",
            str(round_trip["work"] / "p.yaml"),
            "--stats",
            str(stats_file),
        ]
    )
    assert code == 0
    stats = json.loads(stats_file.read_text())
    gaps = stats["arrivals"]["inter_arrival_s"]
    # the densest second sends 200 requests 5 ms apart; the sparsest 10, 100 ms apart
    assert 0.0005 < gaps["p50"] < 0.05
    assert stats["requests"]["matched"] == sum(sum(c) for c in CURVES.values())


# -- 2. the engines agree on weighted values -----------------------------------------------------

CATEGORY = {
    "list": ["books", "toys", "a b/ü"],
    "weights": [5, 3, 2],
    "others": {"count": 7, "weight": 4, "prefix": "c-", "width": 3},
}


def _engine_document(shop: Api, url: str, injection: Injection) -> dict[str, Any]:
    section = {
        "gateways": ["nginx"],
        "baseline": False,
        "repetitions": 1,
        "warmup": False,
        "workloads": [
            {
                "name": "values",
                "operation": "listItems",
                "params": {"limit": {"counter": {"start": 0}}, "category": CATEGORY},
                "injection": {"sequential": 1},
            }
        ],
    }
    plan = build_plan(section, shop, known_gateways=["nginx"])
    phase = Phase(0, "nginx", "values", 1, True, url, injection)
    return render_workload(plan, shop, Schedule((phase,), seed=11))


def _sent_values(log: Path, skip: int) -> list[tuple[int, str]]:
    """(limit, category) of every listItems request logged after line ``skip``."""
    out = []
    for line in log.read_text(encoding="latin-1").splitlines()[skip:]:
        m = re.search(r'"GET (\S+) HTTP', line)
        if m is None or not m.group(1).startswith("/api/items?"):
            continue
        query = dict(
            parse_qsl(urlsplit(m.group(1)).query, keep_blank_values=True, encoding="utf-8")
        )
        out.append((int(query["limit"]), query["category"]))
    return out


@pytest.mark.parametrize(
    ("engine", "injection"),
    [
        ("gatling", Injection("sequential", users=1, requests=300)),
        ("wrk", Injection("concurrent", users=2, duration=1.0)),
        ("loadgen", Injection("constant_rate", rate=300.0, duration=1.0)),
    ],
)
def test_every_engine_sends_the_reference_draws(
    shop: Api,
    nginx: tuple[str, Path, Supervisor],
    tmp_path: Path,
    engine: str,
    injection: Injection,
) -> None:
    url, logs, sup = nginx
    log = logs / "precise.log"
    before = len(log.read_text(encoding="latin-1").splitlines()) if log.exists() else 0
    document = _engine_document(shop, url, injection)
    spec = document["phases"][0]["params"]["category"]
    runner = {"gatling": GatlingEngine(), "wrk": WrkEngine(), "loadgen": LoadgenEngine()}[engine]
    result = runner.run(document, tmp_path, Hooks(), supervisor=sup)
    assert not result.crashed, result.reason
    sent = _sent_values(log, before)
    assert len(sent) >= 100
    assert len({limit for limit, _ in sent}) == len(sent)  # every draw once
    wrong = [(n, value) for n, value in sent if value != str(weighted_value(spec, n))]
    assert wrong == []
    values = {value for _, value in sent}
    assert {"a b/ü", "books"} <= values
    assert any(re.fullmatch(r"c-00\d", v) for v in values)
    assert unquote("a%20b%2F%C3%BC") in values
