"""Real local stand-ins for Google Cloud, started as processes (gatebench.procs, stopped by
PID): the Cloud Storage emulators (PyPI gcp-storage-emulator; Go fake-gcs-server, which keeps
a signed PUT's metadata), the Firestore emulator (npm
@firestore-emulator/server, from tools/node), and Cloud Functions served by
functions-framework from the deployable bundles `make bundle` builds."""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gatebench.procs import Supervisor, free_port, wait_ready

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


def unpack_bundle(name: str, dest: Path) -> Path:
    """functions/NAME as deployed: the archive `gatebench cloud bundle` builds, unpacked."""
    from gatebench.cloud._bundle import build_bundle, pinned_requirements

    data = build_bundle(
        ROOT / "functions" / name, ROOT / "src" / "gatebench", pinned_requirements()
    )
    target = dest / name
    target.mkdir(parents=True, exist_ok=True)
    (target / "bundle.zip").write_bytes(data)
    with zipfile.ZipFile(target / "bundle.zip") as archive:
        archive.extractall(target / "src")
    return target / "src"


def start_function(
    supervisor: Supervisor,
    source: Path,
    target: str,
    logs: Path,
    env: dict[str, str],
    *,
    signature: str = "http",
) -> Endpoint:
    """functions-framework serving ``target`` from an unpacked bundle; the bundled gatebench
    package comes first on the path, as on Cloud Functions."""
    port = free_port()
    argv = [
        str(BIN / "functions-framework"),
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
    proc = supervisor.start(
        f"function-{target}",
        argv,
        log_path=logs / f"function-{target}.log",
        cwd=source,
        env=full_env,
    )
    wait_ready(proc, port, timeout=30)
    return Endpoint(f"http://127.0.0.1:{port}", port)


def gcs_env(gcs: Endpoint) -> dict[str, str]:
    return {"STORAGE_EMULATOR_HOST": gcs.url, "GATEBENCH_PROJECT": "gatebench-test"}


def storage_client(gcs: Endpoint) -> object:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.storage import Client

    os.environ["STORAGE_EMULATOR_HOST"] = gcs.url
    return Client(project="gatebench-test", credentials=AnonymousCredentials())
