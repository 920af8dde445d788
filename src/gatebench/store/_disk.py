"""A full filesystem, said once and plainly: ``no space left on DIR while writing …``.

Whatever write finds the disk full (a run's ``run.json`` or ``measurements.jsonl``, a
gateway's files, the result store, a load engine's log) ends the run with one line naming the
filesystem (its mount point) and what was being written, never a traceback or another error
the full disk caused (a SQLite file that cannot be opened is not "not a result store").

A run holds a little space back (:class:`Reserve`, a file in its folder) from its start and
gives it up before it records how it ended, so that the end is recorded even on a full disk:
``run.json``, the store's status, the measurements already written (kept as they were: a
measurement is written to the file and the store whole, or to neither).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path

from gatebench.core.errors import NoSpaceLeft

RESERVE_BYTES = 1 << 20
"""What a run holds back for recording its end (run.json, the store's status: some kB)."""
FULL_BELOW_BYTES = 64 << 10
"""A filesystem with less free than this after a failure is taken as full."""


def mount_point(path: str | os.PathLike[str]) -> Path:
    """The mount point of the filesystem ``path`` is on (``path`` need not exist)."""
    here = Path(os.path.abspath(path))
    while not here.exists() and here != here.parent:
        here = here.parent
    while not os.path.ismount(here) and here != here.parent:
        here = here.parent
    return here


def no_space(path: str | os.PathLike[str], what: str | None = None) -> NoSpaceLeft:
    """The error for a write to ``path`` that found its filesystem full; ``what`` says what was
    written when the path alone would not (a load engine's own files)."""
    return NoSpaceLeft(f"no space left on {mount_point(path)} while writing {what or path}")


def as_no_space(exc: BaseException, folder: Path, doing: str) -> NoSpaceLeft | None:
    """The one-line error for a failure a full disk caused, or None. A failure that names its
    file becomes ``... while writing FILE``; one that does not (a write's error carries no
    name; a load engine that died when its log could not grow, when ``folder``'s filesystem
    is (nearly) full) names the folder and what the run was ``doing``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, NoSpaceLeft):
            return current
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            if current.filename:
                return no_space(current.filename)
            return no_space(folder, f"{folder}/ ({doing})")
        current = current.__cause__ or current.__context__
    if free_bytes(folder) < FULL_BELOW_BYTES:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return no_space(folder, f"{folder}/ ({doing}: {first})")
    return None


def free_bytes(path: str | os.PathLike[str]) -> int:
    try:
        return shutil.disk_usage(mount_point(path)).free
    except OSError:
        return 1 << 62


class Reserve:
    """Space a run holds back in its folder until it records how it ended."""

    NAME = ".reserve"

    def __init__(self, folder: Path, size: int = RESERVE_BYTES) -> None:
        self.path = folder / self.NAME
        try:
            with self.path.open("wb") as fh:
                fh.write(bytes(size))
        except OSError as exc:
            self.release()
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise no_space(self.path, f"{folder} (the run's folder)") from None
            raise

    def release(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    @classmethod
    def remove(cls, folder: Path) -> None:
        """The reserve a run that ended without recording it left in its folder."""
        with contextlib.suppress(OSError):
            (folder / cls.NAME).unlink()


__all__ = ["Reserve", "as_no_space", "free_bytes", "mount_point", "no_space"]
