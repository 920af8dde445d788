"""A whole local run as deployed (the stages with TLS, replicas and a fault): every gateway
terminates the run's TLS with HTTP/2 in front of three auction replicas, one of which dies in
the middle of each gateway's measured phase. What the run keeps: every measurement (none
lost), the handshakes of each phase, the fault's impact per gateway, a gateway that cannot
terminate TLS left out with its reason, the certificate's fingerprint (no private key in the
run's folder or store), and no TLS folder once the run is over."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from gatebench.core.plan import build_plan
from gatebench.core.report import build_report, render_markdown
from gatebench.core.spec import read_spec
from gatebench.local.runner import RunOptions, run_benchmark
from gatebench.store import open_store
from paths import EXAMPLES


def test_a_quick_run_with_tls_replicas_and_a_killed_replica(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUCTION_TOKEN", "deployed-run-token")
    result = read_spec(str(EXAMPLES / "auction" / "openapi.yaml"))
    assert result.api is not None
    section = {
        "gateways": ["nginx", "envoy", "varnish"],
        "repetitions": 1,
        "auth": {"bearer": {"env": "AUCTION_TOKEN"}},
        "warmup": {"duration": "3s"},
        "backend": {"builtin": "auction", "replicas": 3},
        "tls": {"key": "rsa-2048", "http2": True},
        "fault": {"replica": 2, "workload": "get", "at": "50%"},
        "workloads": [
            {
                "name": "get",
                "operation": "getAuction",
                "params": {"auctionId": {"range": [1, 100]}},
                "injection": {"concurrent": 4, "duration": "4s"},
            },
            {
                "name": "burst",
                "operation": "getAuction",
                "params": {"auctionId": 7},
                "injection": {"ramp": {"users": 20, "duration": "500ms"}},
            },
        ],
    }
    plan = build_plan(section, result.api)
    before = set(Path(tempfile.gettempdir()).glob("gatebench-tls-*"))
    store = open_store(str(tmp_path / "store.db"))
    outcome = run_benchmark(
        result.api,
        plan,
        spec_uri="auction",
        spec_sha256="0" * 64,
        options=RunOptions(
            results_dir=tmp_path / "results", seed=4, ceiling=False, engine_warmup=False
        ),
        store=store,
    )
    record = outcome.record
    assert "varnish cannot render TLS termination" in record.target_errors["varnish"]
    by_key = {(m.target, m.workload): m for m in outcome.measurements}
    assert set(by_key) == {
        (t, w) for t in ("nginx", "envoy", "baseline") for w in ("get", "burst")
    }, "a measurement was lost"
    for target in ("nginx", "envoy", "baseline"):
        burst = by_key[(target, "burst")]
        assert (burst.ko, burst.requests) == (0, 20), burst.errors
        # 20 users arriving (an open model): each opens a connection of its own (the
        # closed-model users of "get" kept theirs from the warm-up)
        assert burst.tls_new is not None and burst.tls_resumed is not None
        assert burst.tls_new + burst.tls_resumed >= 20
    for target in ("nginx", "envoy", "baseline"):
        get = by_key[(target, "get")]
        assert get.requests > 0 and get.ko <= get.requests // 100, get.errors
    for gateway in ("nginx", "envoy"):
        fault = by_key[(gateway, "get")].fault
        assert fault is not None and fault["replica"] == 2
        assert fault["requests_after"] > 0 and "error" not in fault
    assert by_key[("baseline", "get")].fault is None
    tls = record.environment["tls"]
    assert tls["key"] == "rsa-2048" and len(tls["sha256"]) == 64
    assert record.environment["replicas"] == {"count": 3, "balance": "round_robin"}
    leaked = [
        p
        for p in outcome.run_dir.rglob("*")
        if p.is_file() and "PRIVATE KEY" in p.read_text(errors="replace")
    ]
    assert leaked == []
    assert set(Path(tempfile.gettempdir()).glob("gatebench-tls-*")) == before
    stored = store.measurements(record.run_id)
    run = store.get_run(record.run_id)
    assert run is not None
    markdown = render_markdown(build_report(run, stored))
    assert "## TLS handshakes" in markdown and "## A replica fails" in markdown
