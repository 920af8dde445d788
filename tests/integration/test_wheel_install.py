"""The built wheel, installed into a fresh virtualenv outside the repository, runs on its own.

The wheel is built from this checkout (``pip wheel``), installed into a temporary virtualenv
with its pinned dependencies, and every command below runs from a folder outside the
repository, with no PYTHONPATH and the checkout's virtualenv off PATH: the package can only
find what it carries (``gatebench/_data``) and what it builds on first use into
``$GATEBENCH_CACHE_DIR`` (a temporary folder, so the Go backend and Gatling really are built
by the installed package). Maven resolves from the checkout's repository (``.cache/m2``,
through ``MAVEN_OPTS``, as a user's own ``~/.m2`` would serve) so the test does not download
Gatling again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paths import EXAMPLES, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PINNED = ("--disable-pip-version-check", "-c", str(ROOT / "requirements" / "dev.lock"))


def wheel_into(dist: Path) -> tuple[str, ...]:
    return ("-w", str(dist), str(ROOT))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT.resolve())
    dist, venv, work, cache = base / "dist", base / "venv", base / "work", base / "cache"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            *wheel_into(dist),
        ],
        check=True,
        cwd=base,
    )
    (wheel,) = dist.glob("gatebench-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, cwd=base)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *PINNED, str(wheel)],
        check=True,
        cwd=base,
        env=_env(venv, cache),
    )
    work.mkdir()
    shutil.copy(EXAMPLES / "petstore" / "openapi.yaml", work / "openapi.yaml")
    return {"venv": venv, "work": work, "cache": cache}


def _env(venv: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GATEBENCH_"))}
    env.pop("VIRTUAL_ENV", None)
    ours = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != ours]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["GATEBENCH_CACHE_DIR"] = str(cache)
    env["MAVEN_OPTS"] = f"-Dmaven.repo.local={ROOT / '.cache' / 'm2'}"
    return env


def _gatebench(
    installed: dict[str, Path], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed["venv"] / "bin" / "gatebench"), *args],
        cwd=installed["work"],
        env=_env(installed["venv"], installed["cache"]),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_installed_package_sees_only_itself(installed: dict[str, Path]) -> None:
    probe = (
        "import gatebench, gatebench.local._resources as r; "
        "print(gatebench.__file__); print(r.source_dir('frontend')); "
        "print(r.source_dir('gatling')); print(r.checkout_root()); print(r.build_dir())"
    )
    done = subprocess.run(
        [str(installed["venv"] / "bin" / "python"), "-c", probe],
        cwd=installed["work"],
        env=_env(installed["venv"], installed["cache"]),
        capture_output=True,
        text=True,
        check=True,
    )
    module, frontend, gatling, checkout, build = done.stdout.splitlines()
    site = installed["venv"].resolve()
    assert Path(module).resolve().is_relative_to(site)
    assert Path(frontend).resolve().is_relative_to(site)
    assert Path(frontend, "index.html").is_file()
    assert Path(gatling, "src", "test", "java", "gatebench", "GenericSimulation.java").is_file()
    assert checkout == "None"
    assert Path(build) == installed["cache"].resolve()


def test_validate_and_render_from_the_wheel(installed: dict[str, Path]) -> None:
    done = _gatebench(installed, "validate", "openapi.yaml")
    assert done.returncode == 0, done.stderr
    done = _gatebench(
        installed, "render", "openapi.yaml", "--gateway", "nginx,zuul", "--out", "out", "--check"
    )
    assert done.returncode == 0, done.stderr
    assert "proxy_pass" in (installed["work"] / "out" / "nginx" / "nginx.conf").read_text()
    assert (installed["work"] / "out" / "zuul" / "application.yml").is_file()


def test_a_quick_run_builds_what_it_needs_on_first_use(installed: dict[str, Path]) -> None:
    done = _gatebench(installed, "run", "openapi.yaml", "--quick")
    assert done.returncode == 0, done.stdout + done.stderr
    cache = installed["cache"]
    assert "gatebench: setting up Gatling in " + str(cache / "gatling") in done.stderr
    assert "gatebench: building the Go backend into " + str(cache / "bin") in done.stderr
    assert (cache / "bin" / "gatebench-backend").is_file()
    assert (cache / "gatling" / "classpath.txt").is_file()
    assert ": done (" in done.stdout.splitlines()[0]
    assert "FAILED" not in done.stdout
    for target in ("nginx", "haproxy", "caddy", "baseline"):
        assert f"\n  {target} " in done.stdout or f"\n{target} " in done.stdout, target
    runs = list((installed["work"] / "results").iterdir())
    assert any((r / "run.json").is_file() for r in runs)
    # Second use: nothing is built again.
    again = _gatebench(
        installed, "run", "openapi.yaml", "--quick", "--gateways", "none", "--no-ceiling"
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "building" not in again.stderr
    assert "setting up" not in again.stderr
    # doctor, installed: it finds the builds in the user cache folder.
    doctor = _gatebench(installed, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    lines = [" ".join(line.split()) for line in doctor.stdout.splitlines()]
    assert lines[0] == f"Build folder: {cache.resolve()}"
    assert f"ok gatebench-backend {cache.resolve() / 'bin' / 'gatebench-backend'}" in lines
    assert any(line.startswith("ok gatling Gatling 3.15.1 on ") for line in lines)
