"""A small filesystem of a test's own: a tmpfs of a few MB mounted on a folder under the
test's tmp_path, unmounted when the test ends; and a way to fill it. Mounting needs root
(``mount_problem`` says why it cannot be done here)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


def mount_problem() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount and umount are not installed"
    return None


@contextlib.contextmanager
def small_filesystem(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``4m``) on ``folder``, for the ``with`` block."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "gatebench-test", str(folder)],
        check=True,
        capture_output=True,
    )
    try:
        yield folder
    finally:
        done = subprocess.run(["umount", str(folder)], capture_output=True, check=False)
        if done.returncode != 0:  # a file still open: detach it now, freed once closed
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=True)


def fill(folder: Path) -> Path:
    """Write zeros into ``folder`` until its filesystem is full; returns the file."""
    path = folder / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, bytes(4096))
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return path
