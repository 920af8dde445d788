"""Right answers under load: the engines catch a deliberately faulty proxy's wrong answers at
exactly the counts it injected (docs/trust.md, "Right answers under load").

The proxy (``tests/faulty_proxy.py``) sits between the engine and the real Go backend (mock
mode, which signs every answer to a request that names itself) and swaps answers between two
connections, truncates bodies above a size, drops the plan's header on the way in and sends a
POST twice. Each engine runs the same workload document through it; every wrong answer it
reports must be one the proxy injected, of the kind it injected, and every injected fault must
be reported: counts, which no machine speed changes. The same document straight to the
backend gives no wrong answer at all.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import Hooks

from faulty_proxy import Faults, FaultyProxy
from gatebench.core.backend import mock_config
from gatebench.core.measure import measurement_from
from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.core.workload import Control, Phase, Schedule, phases_from_document, render_workload
from gatebench.local.backends import start_backend
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.procs import Supervisor

ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "ITEMS_TOKEN"
FAULTS = Faults(swaps=3, truncations=2, truncate_above=600, dropped=2, repeats=2)


def _document(
    base: str, backend: str, *, rates: bool = False, echo: bool = False
) -> tuple[dict[str, Any], Any]:
    """The two workloads through ``base``, resetting ``backend`` before each; with ``rates``,
    as constant arrival rates (the load generator runs nothing else); with ``echo``, for the
    echo backend, which copies its signature into its bodies."""
    result = read_spec(str(ROOT / "tests/data/engine/items.yaml"))
    assert result.api is not None
    section = dict(result.benchmark)
    section["backend"] = {"builtin": "echo"} if echo else {"mock": {"response_size": "1kB"}}
    section["workloads"] = [
        {
            "name": "read",
            "operation": "getItem",
            "params": {"id": {"range": [1, 10]}},
            "headers": {"X-Tenant": "acme"},
            "injection": {"concurrent": 4, "requests": 120},
        },
        {
            "name": "write",
            "operation": "createItem",
            "params": {"n": {"counter": {"start": 1}}},
            "body": {"json": {"name": "item-${n}"}},
            "injection": {"concurrent": 2, "requests": 30},
        },
    ]
    if rates:
        section["workloads"][0]["injection"] = {"constant_rate": {"rate": 100, "duration": "1.2s"}}
        section["workloads"][1]["injection"] = {"constant_rate": {"rate": 30, "duration": "1s"}}
    plan = build_plan(section, result.api)
    reset = Control(f"{backend}/__gatebench__/reset")
    phases = tuple(
        Phase(i, "faulty", w.name, 1, True, base, w.injection, (reset,), answers_checked=True)
        for i, w in enumerate(plan.workloads)
    )
    return render_workload(plan, result.api, Schedule(phases, seed=3)), (result.api, plan)


def _run(engine: str, document: dict[str, Any], work: Path, sup: Supervisor) -> dict[str, Any]:
    hooks = Hooks()
    runner = GatlingEngine() if engine == "gatling" else LoadgenEngine()
    run = runner.run(document, work, hooks, supervisor=sup, env={TOKEN_ENV: "t"}, name=engine)
    assert not run.crashed, run.reason
    phases = {p.index: p for p in phases_from_document(document)}
    return {
        phases[i].workload: measurement_from("r", phases[i], r, engine=engine)
        for i, r in hooks.results.items()
    }


def _run_gatling(document: dict[str, Any], work: Path, sup: Supervisor) -> dict[str, Any]:
    return _run("gatling", document, work, sup)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("wrong-answers")
    result = read_spec(str(ROOT / "tests/data/engine/items.yaml"))
    assert result.api is not None
    section = {**result.benchmark, "backend": {"mock": {"response_size": "1kB"}}}
    plan = build_plan(section, result.api)
    routes = work / "routes.json"
    routes.write_text(json.dumps(mock_config(result.api, plan.backend)))
    with Supervisor() as sup:
        _, port = start_backend(sup, "mock", work, extra_args=["-config", str(routes)])
        yield sup, port, work


def test_gatling_catches_every_injected_fault_and_nothing_else(backend: Any) -> None:
    sup, port, work = backend
    with FaultyProxy(port, FAULTS) as proxy:
        document, _ = _document(proxy.url, f"http://127.0.0.1:{port}")
        measured = _run_gatling(document, work / "faulty", sup)
    caught: Counter[str] = Counter()
    for m in measured.values():
        assert m.answers_checked is True
        assert m.requests == m.ok + m.ko + m.wrong_answers
        caught.update(dict(m.wrong_kinds))
    # the proxy did each fault as often as its budget says (swaps need two answers in flight
    # at once: four users keep them there)
    assert proxy.injected == Counter(crossed=6, truncated=2, received=2, repeated=2)
    assert caught == proxy.injected
    assert measured["read"].requests == 120 and measured["write"].requests == 30
    assert measured["read"].ko == measured["write"].ko == 0
    assert "wrong-answers" in measured["read"].flags
    evidence = measured["read"].wrong_evidence
    assert 0 < len(evidence) <= 5
    assert all(e.startswith("wrong answer (") and "request " in e for e in evidence)
    assert all("?" not in e.split(";")[0] or "?..." in e for e in evidence)


def test_gatling_straight_to_the_backend_gives_no_wrong_answer(backend: Any) -> None:
    sup, port, work = backend
    base = f"http://127.0.0.1:{port}"
    document, _ = _document(base, base)
    measured = _run_gatling(document, work / "clean", sup)
    for m in measured.values():
        assert m.answers_checked is True
        assert (m.wrong_answers, m.ko) == (0, 0), (m.wrong_kinds, m.wrong_evidence, m.errors)
        assert m.ok == m.requests > 0


def test_an_unchecked_phase_sends_no_identity(backend: Any) -> None:
    """Warm-ups and phases of a user's own backend are not checked: the engine sends them as
    before, and the backend answers unsigned."""
    sup, port, work = backend
    base = f"http://127.0.0.1:{port}"
    document, _ = _document(base, base)
    for phase in document["phases"]:
        phase.pop("answers")
        phase["injection"] = {"kind": "sequential", "requests": 3}
    measured = _run_gatling(document, work / "unchecked", sup)
    for m in measured.values():
        assert m.answers_checked is False
        assert (m.ok, m.wrong_answers) == (3, 0)


def test_the_load_generator_catches_every_injected_fault_and_nothing_else(backend: Any) -> None:
    """The open-model engine of the capacity search checks each answer against the bytes it
    sent (its multipart bodies too); arrivals keep coming while an answer waits for a swap, so
    two are in flight on two connections."""
    sup, port, work = backend
    with FaultyProxy(port, FAULTS) as proxy:
        document, _ = _document(proxy.url, f"http://127.0.0.1:{port}", rates=True)
        measured = _run("loadgen", document, work / "loadgen-faulty", sup)
    caught: Counter[str] = Counter()
    for m in measured.values():
        assert m.answers_checked is True
        assert m.requests == m.ok + m.ko + m.wrong_answers
        caught.update(dict(m.wrong_kinds))
    assert proxy.injected == Counter(crossed=6, truncated=2, received=2, repeated=2)
    assert caught == proxy.injected
    assert (measured["read"].requests, measured["write"].requests) == (120, 30)
    assert measured["read"].ko == measured["write"].ko == 0
    assert all(e.startswith("wrong answer (") for e in measured["read"].wrong_evidence)


def test_the_load_generator_straight_to_the_backend_gives_no_wrong_answer(backend: Any) -> None:
    sup, port, work = backend
    base = f"http://127.0.0.1:{port}"
    document, _ = _document(base, base, rates=True)
    measured = _run("loadgen", document, work / "loadgen-clean", sup)
    for m in measured.values():
        assert m.answers_checked is True
        assert (m.wrong_answers, m.ko) == (0, 0), (m.wrong_kinds, m.wrong_evidence, m.errors)
        assert m.ok == m.requests > 0


@pytest.mark.parametrize("engine", ["gatling", "loadgen"])
def test_a_sampled_phase_checks_one_answer_in_n(backend: Any, engine: str) -> None:
    """``answers: {every: 4}``: the proxy truncates every answer, and exactly one in four is
    checked, so caught (the first of every four requests of the phase, whatever the order
    they finish in)."""
    sup, port, work = backend
    every_answer = Faults(truncations=10_000, truncate_above=600)
    with FaultyProxy(port, every_answer) as proxy:
        document, _ = _document(proxy.url, f"http://127.0.0.1:{port}", rates=engine == "loadgen")
        for phase in document["phases"]:
            phase["answers"]["every"] = 4
        measured = _run(engine, document, work / f"{engine}-sampled", sup)
    for m in measured.values():
        assert proxy.injected["truncated"] >= m.requests
        assert m.wrong_kinds == (("truncated", m.requests // 4 + (m.requests % 4 > 0)),)
        assert m.ok == m.requests - m.wrong_answers


@pytest.mark.parametrize("engine", ["gatling", "loadgen"])
def test_a_cached_answer_is_held_to_its_cache_key(backend: Any, engine: str) -> None:
    """Where the plan caches the reads, an answer may be an earlier read's of the same phase:
    the proxy answers 5 reads from the answer to an earlier read of the same target (right)
    and 3 from the answer to an earlier read of another target (a cache keyed on too
    little): each engine reports exactly those 3, as crossed, and nothing else."""
    sup, port, work = backend
    cache = Faults(cache_hits=5, wrong_keys=3)
    with FaultyProxy(port, cache) as proxy:
        document, _ = _document(proxy.url, f"http://127.0.0.1:{port}", rates=engine == "loadgen")
        read = next(p for p in document["phases"] if p["workload"] == "read")
        read["answers"].update(cached=True, cache_key=["path", "query"])
        measured = _run(engine, document, work / f"{engine}-cached", sup)
    assert (proxy.hits, proxy.injected) == (5, Counter(crossed=3))
    assert measured["read"].wrong_kinds == (("crossed", 3),), (
        measured["read"].ok,
        measured["read"].ko,
        measured["read"].errors,
        measured["read"].requests,
    )
    assert measured["read"].ok == measured["read"].requests - 3
    assert measured["write"].wrong_answers == 0
    evidence = measured["read"].wrong_evidence
    assert len(evidence) == 3 and all(
        "expected an answer of its cache key" in e for e in evidence
    ), evidence


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("wrong-answers-echo")
    with Supervisor() as sup:
        _, port = start_backend(sup, "echo", work)
        yield sup, port, work


@pytest.mark.parametrize("engine", ["gatling", "loadgen"])
def test_the_body_copy_of_the_signature_names_whose_answer_it_is(echo: Any, engine: str) -> None:
    """The echo backend copies its signature into its bodies (the phase's ``answers.body``).
    Through the proxy, one pair of answers exchanges bodies and keeps heads (crossed, by the
    body's copy: without it, the body's digest would call them truncated), one pair is
    exchanged without the signature header (crossed, by the body's copy: without it,
    unsigned), and one answer loses the header (unsigned, its body named as the backend's
    answer to the request: not the gateway's own). Each engine reports exactly those, each
    with its evidence (five, all kept); straight to the backend, nothing."""
    sup, port, work = echo
    base = f"http://127.0.0.1:{port}"
    faults = Faults(body_swaps=1, stripped_swaps=1, stripped=1)
    with FaultyProxy(port, faults) as proxy:
        document, _ = _document(proxy.url, base, rates=engine == "loadgen", echo=True)
        assert all(p["answers"]["body"] is True for p in document["phases"])
        measured = _run(engine, document, work / f"{engine}-faulty", sup)
    caught: Counter[str] = Counter()
    evidence: list[str] = []
    for m in measured.values():
        assert m.requests == m.ok + m.ko + m.wrong_answers and m.ko == 0, m.errors
        caught.update(dict(m.wrong_kinds))
        evidence += m.wrong_evidence
    assert proxy.injected == Counter(crossed=4, unsigned=1)
    assert caught == proxy.injected, [
        (m.wrong_kinds, m.wrong_evidence, m.requests, m.ok) for m in measured.values()
    ]
    by_body = [e for e in evidence if "; expected its own body; got the body of request" in e]
    unheaded = [e for e in evidence if "; expected its own answer; got the body of request" in e]
    dropped = [e for e in evidence if "; got its own body, no header" in e]
    assert (len(by_body), len(unheaded), len(dropped)) == (2, 2, 1), evidence

    document, _ = _document(base, base, rates=engine == "loadgen", echo=True)
    for m in _run(engine, document, work / f"{engine}-clean", sup).values():
        assert (m.wrong_answers, m.ko) == (0, 0), (m.wrong_kinds, m.wrong_evidence, m.errors)
        assert m.ok == m.requests > 0


def test_every_gateway_that_runs_here_answers_right_under_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean run through every gateway that runs here (the JVM gateways too) and the
    baseline: every answer of every measured phase checked, none wrong, every gateway ranked
    and the default gate passed. A gateway that does not run here (not installed) proves
    nothing here and is left out, as route replay leaves it out."""
    from gatebench.core.renderers import gateway_names, get_renderer
    from gatebench.core.thresholds import evaluate, failures
    from gatebench.local.runner import RunOptions, run_benchmark

    monkeypatch.setenv(TOKEN_ENV, "t")
    here = [
        name
        for name in gateway_names()
        if get_renderer(name).runs_here and get_renderer(name).available_here() is None
    ]
    result = read_spec(str(ROOT / "tests/data/engine/items.yaml"))
    assert result.api is not None
    section = dict(result.benchmark)
    section.update(
        gateways=here,
        repetitions=1,
        warmup={"duration": "500ms"},
        backend={"mock": {"response_size": "1kB"}},
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "headers": {"X-Tenant": "acme"},
                "injection": {"concurrent": 8, "duration": "1s"},
            },
            {
                "name": "write",
                "operation": "createItem",
                "params": {"n": {"counter": {"start": 1}}},
                "body": {"json": {"name": "item-${n}"}},
                "injection": {"concurrent": 4, "duration": "1s"},
            },
        ],
    )
    plan = build_plan(section, result.api)
    outcome = run_benchmark(
        result.api,
        plan,
        spec_uri="items",
        spec_sha256="0" * 64,
        options=RunOptions(results_dir=tmp_path, seed=5, ceiling=False, engine_warmup=False),
    )
    assert not outcome.record.target_errors, outcome.record.target_errors
    measured = {m.target for m in outcome.measurements}
    assert measured == {*here, "baseline"}
    for m in outcome.measurements:
        assert m.answers_checked is True, m.key
        assert m.wrong_answers == 0, (m.key, m.wrong_kinds, m.wrong_evidence)
        assert m.requests > 0
    assert outcome.report is not None
    summary = outcome.report.summary
    assert summary.wrong == {} and not summary.unranked
    assert not failures(evaluate([], summary))
