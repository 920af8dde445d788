"""Real local stand-ins for Google Cloud, started as processes (gatebench.local.procs, stopped by
PID): the Cloud Storage emulators (PyPI gcp-storage-emulator; Go fake-gcs-server, which keeps
a signed PUT's metadata), the Firestore emulator (npm
@firestore-emulator/server, from tools/node), and Cloud Functions served by
functions-framework from the deployable bundles `make bundle` builds.

A function runs as Cloud Functions runs it, from its archive alone: the zip `make bundle`
writes (`gatebench cloud bundle`), unpacked into a folder of its own, served by the
functions-framework of a fresh virtualenv holding only the archive's own requirements.txt
(installed by pip from the package index; once per test session and requirements file),
never this checkout or its virtualenv. The interpreter is this machine's Python (3.11 here),
the nearest stand-in for the python312 runtime: no registry ships a CPython 3.12 binary."""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gatebench.local.procs import Supervisor, free_port, wait_ready

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@dataclass
class Endpoint:
    url: str
    port: int


def start_gcs_emulator(supervisor: Supervisor, logs: Path) -> Endpoint:
    port = free_port()
    argv = [
        str(BIN / "gcp-storage-emulator"),
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--in-memory",
    ]
    proc = supervisor.start("gcs-emulator", argv, log_path=logs / "gcs-emulator.log")
    wait_ready(proc, port, timeout=30)
    return Endpoint(f"http://127.0.0.1:{port}", port)


def start_fake_gcs(
    supervisor: Supervisor, logs: Path, *, cors_headers: Sequence[str] = ()
) -> Endpoint:
    """fake-gcs-server (scripts/setup.d/65-fake-gcs.sh): unlike gcp-storage-emulator it takes a
    signed-URL PUT's ``x-goog-meta-*`` headers as the object's custom metadata, as Cloud
    Storage does. It checks no signature (tests verify those themselves). It answers CORS
    for any origin, allowing Content-Type and the headers in ``cors_headers`` (as a bucket's
    CORS configuration lists its ``responseHeader``s)."""
    binary = ROOT / ".cache" / "bin" / "fake-gcs-server"
    if not binary.exists():
        raise RuntimeError(
            f"{binary} is missing: run `scripts/setup.sh fake-gcs` (`make test` does)"
        )
    port = free_port()
    argv = [
        str(binary),
        "-scheme",
        "http",
        "-host",
        "127.0.0.1",
        "-port",
        str(port),
        "-backend",
        "memory",
        "-public-host",
        "127.0.0.1",
        "-external-url",
        f"http://127.0.0.1:{port}",
        "-log-level",
        "warn",
    ]
    if cors_headers:
        argv += ["-cors-headers", ",".join(cors_headers)]
    proc = supervisor.start("fake-gcs-server", argv, log_path=logs / "fake-gcs-server.log")
    wait_ready(proc, port, timeout=30)
    return Endpoint(f"http://127.0.0.1:{port}", port)


_BUNDLES: dict[str, Path] = {}
_VENVS: dict[str, Path] = {}


def bundle_archives() -> Path:
    """The folder of `make bundle`'s archives, built once per test session by the command
    `make bundle` runs (`gatebench cloud bundle --functions functions --out ...`)."""
    if "out" not in _BUNDLES:
        out = Path(tempfile.mkdtemp(prefix="gb-bundles-"))
        atexit.register(shutil.rmtree, out, True)
        bundle = [str(BIN / "gatebench"), "cloud", "bundle", "--functions", "functions"]
        subprocess.run(
            [*bundle, "--out", str(out)],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=300,
        )
        _BUNDLES["out"] = out
    return _BUNDLES["out"]


def unpack_bundle(name: str, dest: Path) -> Path:
    """functions/NAME as deployed: its `make bundle` archive, unpacked alone."""
    archive = bundle_archives() / f"{name}.zip"
    target = dest / name
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(archive, target / "bundle.zip")
    with zipfile.ZipFile(target / "bundle.zip") as unpacked:
        unpacked.extractall(target / "src")
    return target / "src"


def function_virtualenv(requirements: Path) -> Path:
    """A fresh virtualenv with exactly ``requirements`` (a bundle's requirements.txt) and
    nothing else, made once per test session and requirements file. Downloads are cached in
    the checkout's .cache/pip; what is installed comes from the file alone."""
    text = requirements.read_bytes()
    key = hashlib.sha256(text).hexdigest()
    if key not in _VENVS:
        venv = Path(tempfile.mkdtemp(prefix="gb-function-venv-"))
        atexit.register(shutil.rmtree, venv, True)
        python = Path(getattr(sys, "_base_executable", sys.executable))
        subprocess.run([str(python), "-m", "venv", str(venv)], check=True, timeout=120)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PIP_CACHE_DIR"] = str(ROOT / ".cache" / "pip")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input"]
        done = subprocess.run(
            [*pip, "--requirement", str(requirements)],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip install -r {requirements} failed:\n{done.stderr[-3000:]}")
        _VENVS[key] = venv
    return _VENVS[key]


def start_function(
    supervisor: Supervisor,
    source: Path,
    target: str,
    logs: Path,
    env: dict[str, str],
    *,
    signature: str = "http",
) -> Endpoint:
    """functions-framework serving ``target`` from an unpacked bundle, in a fresh virtualenv
    with the bundle's requirements only (:func:`function_virtualenv`); the bundled gatebench
    package comes first on the path, as on Cloud Functions."""
    venv = function_virtualenv(source / "requirements.txt")
    port = free_port()
    argv = [
        str(venv / "bin" / "functions-framework"),
        "--source",
        str(source / "main.py"),
        "--target",
        target,
        "--signature-type",
        signature,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    full_env = {**env, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"}
    full_env["VIRTUAL_ENV"] = str(venv)
    full_env["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = supervisor.start(
        f"function-{target}",
        argv,
        log_path=logs / f"function-{target}.log",
        cwd=source,
        env=full_env,
    )
    wait_ready(proc, port, timeout=60)
    return Endpoint(f"http://127.0.0.1:{port}", port)


def gcs_env(gcs: Endpoint) -> dict[str, str]:
    return {"STORAGE_EMULATOR_HOST": gcs.url, "GATEBENCH_PROJECT": "gatebench-test"}


def storage_client(gcs: Endpoint) -> object:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.storage import Client

    os.environ["STORAGE_EMULATOR_HOST"] = gcs.url
    return Client(project="gatebench-test", credentials=AnonymousCredentials())
