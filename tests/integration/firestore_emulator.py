"""The npm Firestore emulator (@firestore-emulator/server), started and stopped by the tests.

``tools/node/firestore-emulator.cjs`` binds 127.0.0.1 on a port the kernel picks and
prints it; this module starts it with gatebench.local.procs (its own process group, stopped by
PID) and waits for that line. ``scripts/setup.d/50-node.sh`` installs it (``make test``).
"""

from __future__ import annotations

import re
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gatebench.local.procs import ManagedProcess, start_process

ROOT = Path(__file__).resolve().parents[2]
NODE_TOOLS = ROOT / "tools" / "node"
SCRIPT = NODE_TOOLS / "firestore-emulator.cjs"
PACKAGE = NODE_TOOLS / "node_modules" / "@firestore-emulator" / "server"
_LISTENING = re.compile(r"firestore-emulator listening on (127\.0\.0\.1:\d+)")


def missing() -> str | None:
    """Why the emulator cannot start here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (Debian 12 + Node 20 expected; run `make test`)"
    if not PACKAGE.is_dir():
        return f"{PACKAGE.relative_to(ROOT)} is missing: run scripts/setup.d/50-node.sh (`make test` does)"
    return None


@contextmanager
def firestore_emulator(log_dir: Path, timeout: float = 20.0) -> Iterator[str]:
    """Start the emulator; yield its ``host:port``; stop it (by PID) on the way out."""
    node = shutil.which("node")
    assert node is not None
    proc: ManagedProcess = start_process(
        "firestore-emulator", [node, str(SCRIPT), "0"], log_path=log_dir / "firestore-emulator.log"
    )
    try:
        yield _wait_listening(proc, timeout)
    finally:
        proc.stop()


def _wait_listening(proc: ManagedProcess, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = _LISTENING.search(proc.log_path.read_text(encoding="utf-8", errors="replace"))
        if match:
            host, port = match.group(1).split(":")
            with socket.create_connection((host, int(port)), timeout=2):
                return match.group(1)
        if not proc.alive():
            raise RuntimeError(
                f"the Firestore emulator exited ({proc.returncode}):\n{proc.log_tail()}"
            )
        time.sleep(0.05)
    raise RuntimeError(
        f"the Firestore emulator did not listen within {timeout}s:\n{proc.log_tail()}"
    )
