"""Fixtures for tests against real processes; other integration tests may reuse them.

- ``supervisor``: one session-wide :class:`gatebench.local.procs.Supervisor`; everything started
  through it is stopped (by PID) when the session ends, even on failure or Ctrl-C.
- ``echo_backend``: the Go backend in ``echo`` mode, started once per session; returns its
  port. It answers with what it received (method, raw path, raw query, headers, body digest).
- ``boot``: ``boot(gateway, case_or_api) -> BootedGateway``, boots a rendered gateway in
  front of the echo backend (files in a temporary workdir, checker run, readiness by a real
  request). Stop it with ``booted.stop()`` when done, or leave it to the session.
- ``replay_api``: ``replay_api(case) -> Api``, the IR of one of ``REPLAY_CASES`` (the
  examples, the adversarial specs and the large generated ones).
- ``replay_case``: a test that takes this argument runs once per ``REPLAY_CASES`` entry.

Tests use these through fixtures, never ``from conftest import ...``: pytest imports every
conftest.py under the name ``conftest``, so such an import gets whichever was loaded last.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import cache

import pytest

from booted import BootedGateway
from gatebench.core.ir import Api
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers._jvm import JVM_OPTIONS_ENV
from gatebench.core.spec import load_spec
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import boot_gateway
from paths import DATA, EXAMPLES, ROOT  # noqa: F401

REPLAY_CASES: dict[str, str] = {
    "adversarial": "tests/data/adversarial/openapi.yaml",
    "auction": "examples/auction/openapi.yaml",
    "petstore": "examples/petstore/openapi.yaml",
    "portable": "tests/data/adversarial/portable.yaml",
    "templates": "tests/data/adversarial/templates.yaml",
    "large-openapi3": "tests/data/adversarial/large/openapi3.yaml",
    "large-raml": "tests/data/adversarial/large/api.raml",
    "large-swagger2": "tests/data/adversarial/large/swagger2.json",
}


@cache
def case_api(case: str) -> Api:
    api = load_spec(ROOT / REPLAY_CASES[case]).api
    assert api is not None
    return api


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "replay_case" in metafunc.fixturenames:
        metafunc.parametrize("replay_case", sorted(REPLAY_CASES))


@pytest.fixture(scope="session")
def replay_api() -> Callable[[str], Api]:
    return case_api


@pytest.fixture(scope="session")
def supervisor() -> Iterator[Supervisor]:
    with Supervisor() as sup:
        yield sup


@pytest.fixture(scope="session")
def echo_backend(supervisor: Supervisor, tmp_path_factory: pytest.TempPathFactory) -> int:
    _proc, port = start_backend(supervisor, "echo", tmp_path_factory.mktemp("backend"))
    return port


@pytest.fixture(scope="session")
def boot(
    supervisor: Supervisor, echo_backend: int, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, str | Api], BootedGateway]:
    def start(gateway: str, case: str | Api) -> BootedGateway:
        api = case_api(case) if isinstance(case, str) else case
        renderer = get_renderer(gateway)
        label = case if isinstance(case, str) else "api"
        workdir = tmp_path_factory.mktemp(f"{renderer.name}-{label}")
        port = free_port()
        target = RenderTarget(
            workdir=str(workdir),
            listen_port=port,
            backend_url=f"http://127.0.0.1:{echo_backend}",
            admin_port=free_port(),
            redis_port=free_port(),
        )
        # JVM gateways (spring-cloud-gateway, zuul): C1 compiler only, the same code paths
        # with half the start-up time and faster short runs. Never for measured runs.
        with pytest.MonkeyPatch.context() as patch:
            if JVM_OPTIONS_ENV not in os.environ:
                patch.setenv(JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")
            proc = boot_gateway(renderer, api, target, supervisor)
        return BootedGateway(renderer.name, port, proc, workdir, target, supervisor)

    return start
