"""The real Gatling over TLS: it trusts the run's CA alone (a server with another CA's
certificate gets no request through), checks host names, and speaks HTTP/2 by ALPN exactly
when the plan asks; the baseline gets the same TLS from the backend itself, and a gateway
terminating TLS in front of replicas serves every request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ROOT, Hooks

from gatebench.core.plan import build_plan
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.spec import read_spec
from gatebench.core.tls import (
    TRUST_P12,
    GatewayTls,
    make_run_certificates,
    remove_tls_folder,
    write_tls_folder,
)
from gatebench.core.workload import Control, Phase, Schedule, render_workload
from gatebench.local.backends import BackendTls, backend_stats, start_backend_process
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import boot_gateway
from gatebench.run.ports import PhaseResult

REQUESTS = 60


def _document(base_url: str, *reset_urls: str, http2: bool, trust_store: Path) -> dict[str, Any]:
    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    section = dict(result.benchmark)
    section["tls"] = {"http2": http2}
    section["workloads"] = [
        {
            "name": "get",
            "operation": "getAuction",
            "params": {"auctionId": {"range": [1, 9]}},
            "injection": {"concurrent": 3, "requests": REQUESTS},
        }
    ]
    plan = build_plan(section, result.api)
    resets = tuple(Control(url) for url in reset_urls)
    # every answer checked against the backend's signature (docs/trust.md): over TLS, HTTP/2
    # and through a gateway's pool too; an answer counted OK was a right one
    injection = plan.workloads[0].injection
    phase = Phase(0, "target", "get", 1, True, base_url, injection, resets, answers_checked=True)
    return render_workload(
        plan, result.api, Schedule((phase,), seed=3), trust_store=str(trust_store)
    )


@pytest.fixture(scope="module")
def tls_folders(tmp_path_factory: pytest.TempPathFactory) -> Any:
    run = write_tls_folder(make_run_certificates("rsa-2048"), tmp_path_factory.mktemp("tls"))
    other = write_tls_folder(make_run_certificates("rsa-2048"), tmp_path_factory.mktemp("other"))
    yield run, other
    remove_tls_folder(run)
    remove_tls_folder(other)


def _run(document: dict[str, Any], work: Path, sup: Supervisor) -> PhaseResult:
    hooks = Hooks()
    result = GatlingEngine().run(
        document, work, hooks, supervisor=sup, env={"AUCTION_TOKEN": "gatling-tls-token"}
    )
    assert not result.crashed, result.reason
    return hooks.results[0]


@pytest.mark.parametrize("http2", [True, False])
def test_the_baseline_over_the_backends_tls(http2: bool, tls_folders: Any, tmp_path: Path) -> None:
    run, _ = tls_folders
    with Supervisor() as sup:
        backend = start_backend_process(sup, "auction", tmp_path, tls=BackendTls(run, http2=http2))
        assert backend.tls_url is not None
        document = _document(
            backend.tls_url,
            f"{backend.url}/__gatebench__/reset",
            http2=http2,
            trust_store=run / TRUST_P12,
        )
        sample = _run(document, tmp_path / "engine", sup).sample
        stats = backend_stats(backend.port)
    assert (sample.requests, sample.ok) == (REQUESTS, REQUESTS), sample.errors
    assert stats["requests"] == REQUESTS
    assert stats["http2"] == (REQUESTS if http2 else 0)


def test_a_certificate_from_another_ca_gets_nothing_through(
    tls_folders: Any, tmp_path: Path
) -> None:
    run, other = tls_folders
    with Supervisor() as sup:
        backend = start_backend_process(sup, "auction", tmp_path, tls=BackendTls(other))
        assert backend.tls_url is not None
        document = _document(
            backend.tls_url,
            f"{backend.url}/__gatebench__/reset",
            http2=False,
            trust_store=run / TRUST_P12,
        )
        sample = _run(document, tmp_path / "engine", sup).sample
        stats = backend_stats(backend.port)
    assert sample.requests == REQUESTS
    assert sample.ok == 0
    assert stats["requests"] == 0
    assert any(
        word in e.lower() for e in sample.errors for word in ("certif", "pkix", "signature")
    ), sample.errors


def test_through_a_gateway_terminating_tls_in_front_of_replicas(
    tls_folders: Any, tmp_path: Path
) -> None:
    run, _ = tls_folders
    with Supervisor() as sup:
        replicas = [start_backend_process(sup, "auction", tmp_path, replica=n) for n in (1, 2, 3)]
        urls = tuple(r.url for r in replicas)
        target = RenderTarget(
            workdir=str(tmp_path / "nginx"),
            listen_port=free_port(),
            backend_url=urls[0],
            replicas=urls,
            tls=GatewayTls(str(run), key_type="rsa-2048", http2=True),
        )
        result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
        assert result.api is not None
        boot_gateway(get_renderer("nginx"), result.api, target, sup)
        document = _document(
            f"https://127.0.0.1:{target.listen_port}",
            *(f"{url}/__gatebench__/reset" for url in urls),
            http2=True,
            trust_store=run / TRUST_P12,
        )
        sample = _run(document, tmp_path / "engine", sup).sample
        served = [backend_stats(r.port)["requests"] for r in replicas]
    assert (sample.requests, sample.ok) == (REQUESTS, REQUESTS), sample.errors
    assert sum(served) == REQUESTS
    assert all(n > 0 for n in served), served
