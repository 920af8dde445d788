"""Route replay, the real proof: every gateway that runs here, booted with its rendered
configuration in front of the echo backend, must route exactly what the IR says.

One boot per (gateway, case) per session; the whole request matrix of that case is replayed
through it (tests/replay.py) and every mismatch is reported at once. A gateway
that refuses a case must say so in its golden folder too (``errors.txt``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from booted import skip_unless_installed
from gatebench.core.backend import mock_config
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.plan import Backend
from gatebench.core.renderers import RenderTarget, all_renderers, get_renderer
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor
from replay import Client, Forwarding, expressible, replay, replay_matrix

ROOT_GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CASES = ("adversarial", "auction", "petstore", "portable", "templates")
"""The shared golden cases (the others are the large generated descriptions)."""
LOCAL = [r.name for r in all_renderers() if r.runs_here]


@pytest.mark.parametrize("gateway", LOCAL)
def test_route_replay(
    gateway: str,
    replay_case: str,
    replay_api: Callable[[str], Api],
    boot: Callable[[str, str], Any],
    echo_backend: int,
) -> None:
    skip_unless_installed(gateway)
    case = replay_case
    api = replay_api(case)
    renderer = get_renderer(gateway)
    try:
        renderer.render(api, RenderTarget(workdir="/tmp/gatebench-probe"))
    except UnsupportedFeature as exc:
        if case in CASES:
            assert (ROOT_GOLDEN / gateway / case / "errors.txt").is_file(), (
                f"{gateway} refuses {case!r} but its golden folder has no errors.txt"
            )
        # Replay the routes it can express, the others left out as a run leaves them out.
        api = replace(api, operations=expressible(api, exc.problems))
        if not api.operations:
            return
    forwarding = Forwarding.of(get_renderer(gateway))
    matrix = replay_matrix(api, forwarding=forwarding)
    assert any(r.expect_routed for r in matrix)
    assert any(not r.expect_routed for r in matrix)
    booted = boot(gateway, api)
    try:
        failures = replay(
            matrix,
            gateway_port=booted.port,
            backend_port=echo_backend,
            forwarding=forwarding,
        )
    finally:
        booted.stop()
    assert not failures, (
        f"{gateway} on {case}: {len(failures)} of {len(matrix)} requests differ:\n"
        + "\n".join(failures[:60])
    )


def test_the_mock_backend_routes_as_the_gateways_do(
    replay_case: str,
    replay_api: Callable[[str], Api],
    supervisor: Supervisor,
    tmp_path: Path,
) -> None:
    """The mock backend (``core.backend.mock_config``) answers the whole request matrix as the
    oracle routes it: a routed request gets its own operation's answer, any other none (404 or
    405), so that a benchmark of a route never measures a mock that refuses it."""
    api = replay_api(replay_case)
    config = mock_config(api, Backend("mock"))
    first: dict[tuple[str, str], bytes] = {}  # each route answers its place in the file
    for n, route in enumerate(config["routes"]):
        route.update(status=200, body=str(n), headers={})
        first.setdefault((route["method"], route["path"]), str(n).encode())
    index = {op.operation_id: first[(op.method, op.route_path or "/")] for op in api.operations}
    path = tmp_path / "mock-backend.json"
    path.write_text(json.dumps(config))
    proc, port = start_backend(supervisor, "mock", tmp_path, extra_args=["-config", str(path)])
    client = Client("127.0.0.1", port)
    failures = []
    try:
        for req in replay_matrix(api, large_body_bytes=1000):
            reply = client.send(req)
            if req.expect_routed and req.method != "HEAD":
                wanted = (200, index[req.operation_id or ""])
                got: tuple[int, bytes] = (reply.status, reply.body)
            else:
                wanted, got = (200 if req.expect_routed else 404, b""), (reply.status, b"")
                if not req.expect_routed and reply.status == 405:
                    got = (404, b"")  # the path is routed for another method
            if got != wanted:
                failures.append(f"{req.label}: {req.method} {req.target} → {got}, wanted {wanted}")
    finally:
        client.close()
        supervisor.stop(proc)
    assert not failures, (
        f"the mock on {replay_case}: {len(failures)} requests differ:\n" + "\n".join(failures[:40])
    )
