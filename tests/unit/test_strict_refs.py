"""``validate --strict``: openapi-spec-validator's walk reads the bundle and nothing else."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gatebench.core.spec import read_spec

API = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /a:
    get:
      parameters:
        - $ref: "REF"
      responses: {"200": {description: ok}}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def strict_warnings(path: Path) -> list[tuple[str, int | None, str]]:
    result = read_spec(path, strict=True)
    assert result.errors == [], [p.format() for p in result.errors]
    return [(p.pointer, p.line, p.message) for p in result.warnings]


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A real socket listening on a free port; every connection it accepts is recorded and
    closed at once (a request then fails fast instead of waiting for an answer)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_remote_ref_is_never_fetched(tmp_path: Path, listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    ref = f"http://127.0.0.1:{port}/x.yaml"
    said = (
        f"remote reference {ref!r} is not fetched; put the file in the bundle (a folder or zip) "
        "and refer to it by a relative path"
    )
    warnings = strict_warnings(write(tmp_path, "api.yaml", API.replace("REF", ref)))
    assert accepted == []
    assert warnings == [
        ("/paths/~1a/get/parameters/0/$ref", 7, f"{said}; the parameter is unknown"),
        ("/paths/~1a/get/parameters/0/$ref", 7, f"{said}; the strict check stops here"),
    ]


@pytest.mark.parametrize("scheme", ["https", "ftp", "urn"])
def test_no_scheme_reaches_the_library(tmp_path: Path, scheme: str) -> None:
    ref = f"{scheme}://gatebench.invalid/x.yaml"
    [*_, last] = strict_warnings(write(tmp_path, "api.yaml", API.replace("REF", ref)))
    assert last == (
        "/paths/~1a/get/parameters/0/$ref",
        7,
        f"remote reference {ref!r} is not fetched; put the file in the bundle (a folder or zip) "
        "and refer to it by a relative path; the strict check stops here",
    )


def test_a_file_uri_outside_the_bundle_is_not_read(tmp_path: Path) -> None:
    """Read, the file's parameter would be reported by its name."""
    secret = write(
        tmp_path,
        "secret.json",
        '{"name": "SECRET", "in": "path", "required": true, "schema": {"type": "string"}}',
    )
    ref = secret.as_uri()
    said = f"{ref!r} points outside the bundle (the file lies outside the bundle)"
    assert strict_warnings(write(tmp_path / "b", "api.yaml", API.replace("REF", ref))) == [
        ("/paths/~1a/get/parameters/0/$ref", 7, f"{said}; the parameter is unknown"),
        ("/paths/~1a/get/parameters/0/$ref", 7, f"{said}; the strict check stops here"),
    ]


def test_relative_refs_are_read_from_the_bundle(tmp_path: Path) -> None:
    """Relative to the entry's folder, and from a referenced file relative to that file."""
    write(tmp_path, "common/p.json", '{"name": "q", "in": "query", "schema": {"$ref": "s.json"}}')
    write(tmp_path, "common/s.json", '{"type": "string"}')
    assert strict_warnings(write(tmp_path, "api.yaml", API.replace("REF", "common/p.json"))) == []


def test_a_benchmark_file_is_checked_through_to_its_description(tmp_path: Path) -> None:
    """The walk read the benchmark file ('"openapi" is a required property'), never the
    description it names; relative references are read from the description's folder."""
    write(
        tmp_path, "api/common/p.json", '{"name": "q", "in": "query", "schema": {"$ref": "s.json"}}'
    )
    write(tmp_path, "api/common/s.json", '{"type": "string"}')
    twice = "      responses: {'200': {description: ok}}\n"
    write(
        tmp_path,
        "api/openapi.yaml",
        API.replace("REF", "common/p.json")
        + f"  /b:\n    get:\n      operationId: same\n{twice}    put:\n      operationId: same\n"
        + twice,
    )
    bench = write(
        tmp_path,
        "bench.yaml",
        "x-gatebench:\n  spec: api/openapi.yaml\n  workloads:\n"
        "    - {name: a, operation: GET /a, injection: {concurrent: 1, duration: 1s}}\n",
    )
    result = read_spec(bench, strict=True)
    assert [(p.source, p.pointer, p.line, p.column, p.message) for p in result.problems] == [
        ("api/openapi.yaml", "", 1, 1, "Operation ID 'same' for 'put' in '/b' is not unique"),
        (
            "api/openapi.yaml",
            "/paths/~1b/put/operationId",
            14,
            7,
            "operationId 'same' is used twice; this one is renamed 'same_2'",
        ),
    ]
