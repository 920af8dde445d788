"""The guardian of a run's processes: it ends them when gatebench dies without tearing down.

A :class:`~gatebench.local.procs.Supervisor` that guards a run writes every process it starts to the
run's ledger (``processes.jsonl``: one JSON object per line, ``{"pgid", "created", "name"}``
when a process starts, ``{"stopped": pgid}`` when the supervisor has stopped it) and starts
this file as a process of its own (``python -I _guardian.py LEDGER``: the standard library and
psutil only, in a session of its own, so no Ctrl-C, terminal or ``kill -9`` of gatebench
reaches it). The guardian reads its standard input until the end. On a normal way out
gatebench writes ``done`` there once everything has stopped; when gatebench dies first
(``kill -9``, the OOM killer) the kernel closes the pipe, and the guardian ends every process
group the ledger lists as started and not stopped — the worker processes of a forking gateway
(nginx) included, which outlive their killed parent otherwise — then writes what it ended to
the ledger and exits. gatebench's next run in the same store does the same for a run whose
guardian died too (``gatebench.run``: abandoned runs).

A group is only signalled while it is still the one gatebench started: its leader is that
process (the same start time), or its leader is gone and members remain (the kernel does not
reuse a process id while a group still bears it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import psutil

LEDGER = "processes.jsonl"
"""The ledger's name in the run folder."""


def recorded_groups(ledger: Path | bytes) -> dict[int, float]:
    """Process group → its leader's start time, for every group started and not stopped
    (``ledger``: the file, or what was read of it)."""
    groups: dict[int, float] = {}
    try:
        text = ledger if isinstance(ledger, bytes) else ledger.read_bytes()
    except OSError:
        return groups
    for line in text.decode("utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by the death that brought us here
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("pgid"), int) and isinstance(entry.get("created"), float):
            groups[entry["pgid"]] = entry["created"]
        elif isinstance(entry.get("stopped"), int):
            groups.pop(entry["stopped"], None)
    return groups


def group_members(pgid: int, created: float) -> list[psutil.Process]:
    """The live processes of group ``pgid`` while it is still the group whose leader started
    at ``created`` (empty otherwise)."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) != pgid or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.pid == pgid and abs(proc.create_time() - created) > 0.05:
                return []  # the leader's id belongs to another process now
            members.append(proc)
        except (psutil.Error, OSError):
            continue
    return members


def term_then_kill(live: Callable[[], list[psutil.Process]], grace: float) -> None:
    """SIGTERM to the processes ``live()`` lists, then SIGKILL to those it lists after ``grace``
    seconds; returns once they are gone (5 s at most after the SIGKILL)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        procs = live()
        if not procs:
            break
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
        psutil.wait_procs(procs, timeout=wait)


def end_groups(ledger: Path, grace: float = 3.0, *, read: bytes | None = None) -> list[str]:
    """End every group ``ledger`` lists as started and not stopped (SIGTERM, then SIGKILL to
    what is left after ``grace`` seconds); returns the command lines ended, which the ledger
    records too. ``read``: the ledger as already read (through a file kept open)."""
    procs: list[psutil.Process] = []
    for pgid, created in recorded_groups(ledger if read is None else read).items():
        procs.extend(group_members(pgid, created))
    ended = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            ended.append(f"{proc.pid}: {' '.join(proc.cmdline())[:120]}")
    term_then_kill(lambda: [p for p in procs if p.is_running()], grace)
    if ended:
        with contextlib.suppress(OSError), ledger.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"ended": ended}) + "\n")
    return ended


def main(argv: list[str]) -> int:
    ledger = Path(argv[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Opened now: read through this file at the end even if the folder was moved meanwhile.
    with ledger.open("rb") as kept:
        said = sys.stdin.buffer.read()  # until gatebench closes the pipe, or the kernel does
        if said.endswith(b"done\n"):
            return 0
        end_groups(ledger, read=kept.read())
    return 0


if __name__ == "__main__":  # pragma: no cover - the supervisor runs this file as a process
    sys.exit(main(sys.argv[1:]))
