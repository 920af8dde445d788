"""A checked render of a description too large for a checker: Varnish's ``varnishd -C``
compiles the VCL of 20,000 routes with the C compiler for minutes. The check that passes its
limit fails Varnish's check only, with a located message; every other gateway is written and
checked; nothing the checker started survives it (the C compiler included)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from gatebench.cli import main
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.spec import read_spec
from gatebench.local.provisioners import CheckTimedOut, check_config, write_files
from synthetic import many_operations

OPERATIONS = 20_000


def left_under(folder: Path) -> list[str]:
    """Live processes working in ``folder`` or naming it: what a check left running."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status", "name"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        words = [proc.info["cwd"] or "", *(proc.info["cmdline"] or [])]
        if any(str(folder) in word for word in words):
            found.append(f"{proc.pid} {proc.info['name']}")
    return found


@pytest.fixture(scope="module")
def large_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large") / "many.json"
    path.write_text(json.dumps(many_operations(OPERATIONS)), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _varnish_here() -> None:
    for name in ("varnish", "nginx", "haproxy"):
        reason = get_renderer(name).available_here()
        if reason is not None:
            pytest.fail(f"{reason} (make setup-all installs it)")


def test_a_checker_past_its_limit_fails_its_gateway_only_and_leaves_nothing(
    large_spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    code = main(
        [
            "render",
            str(large_spec),
            "-g",
            "varnish,nginx,haproxy",
            "-o",
            str(out),
            "--check",
            "--check-timeout",
            "12",
        ]
    )
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"varnish: {out / 'varnish'} (default.vcl) check timed out",
        f"nginx: {out / 'nginx'} (nginx.conf) [checker: ok]",
        f"haproxy: {out / 'haproxy'} (haproxy.cfg, routes.map) [checker: ok]",
    ]
    (line,) = [e for e in captured.err.splitlines() if "did not finish" in e]
    assert line.startswith(f"{out / 'varnish'}: varnish: `")
    assert "did not finish within 12s; it was ended" in line
    assert code == 1
    for name, file in (("varnish", "default.vcl"), ("nginx", "nginx.conf")):
        assert (out / name / file).stat().st_size > 1_000_000
    assert left_under(tmp_path) == []
    # The checks ran side by side: Varnish's 12 s did not come before the others' checks.
    assert elapsed < 12 + 60, elapsed


def test_the_c_compiler_varnish_starts_is_ended_with_its_checker(
    large_spec: Path, tmp_path: Path
) -> None:
    """Ended while the compiler runs (not at a fixed limit, which a busy machine could reach
    before the compiler starts): the compiler is among the processes ended, and none is left."""
    result = read_spec(large_spec)
    assert result.api is not None
    renderer = get_renderer("varnish")
    target = RenderTarget(workdir=str(tmp_path))
    write_files(renderer.render(result.api, target), tmp_path)
    cancel = threading.Event()
    raised: list[BaseException] = []

    def check() -> None:
        try:
            check_config(renderer, tmp_path, target, timeout=600, cancel=cancel)
        except BaseException as exc:
            raised.append(exc)

    checker = threading.Thread(target=check)
    checker.start()
    deadline = time.monotonic() + 300
    while not any(" cc1" in p or p.endswith(" cc") for p in left_under(tmp_path)):
        assert time.monotonic() < deadline, "the C compiler never started"
        assert checker.is_alive(), raised
        time.sleep(0.2)
    cancel.set()
    checker.join(60)
    assert not checker.is_alive()
    (error,) = raised
    assert isinstance(error, CheckTimedOut)
    assert any("cc1" in c for c in error.ended), error.ended
    assert left_under(tmp_path) == []
