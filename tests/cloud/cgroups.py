"""A stand-in for the cgroup v2 files of a gateway VM's container, so that the real
``gatebench cloud meter`` runs beside the local "VM"'s gateway (tests/cloud/localvms.py).

This machine has cgroup v1 and the local gateway is a process, not a container: there is no
``/sys/fs/cgroup/system.slice/docker-ID.scope`` to read. Instead, every 0.2 s, the gateway's
process tree as psutil reads it is written in cgroup v2's file formats: ``cpu.stat``
``usage_usec`` (user + system CPU of the live processes), ``memory.current`` (resident memory
summed), ``memory.stat`` ``inactive_file`` 0 and ``memory.peak`` (the highest current written).
It proves the wiring (startup script → meter → runs bucket under the gateway's grant →
ingest → measurements), not the kernel's accounting: a real cgroup keeps the CPU of exited
processes and counts a shared page once (gatebench.core.resources).
"""

from __future__ import annotations

import threading
from pathlib import Path

import psutil

INTERVAL_S = 0.2


class CgroupStandIn:
    def __init__(self, folder: Path, pid: int) -> None:
        self.folder = folder
        self.pid = pid
        self.peak = 0
        self.cpu_usec = 0
        self._stop = threading.Event()
        folder.mkdir(parents=True, exist_ok=True)
        self.write()
        self.thread = threading.Thread(target=self._run, name=f"cgroup-{pid}", daemon=True)
        self.thread.start()

    def write(self) -> None:
        cpu, rss = 0.0, 0
        try:
            root = psutil.Process(self.pid)
            for proc in [root, *root.children(recursive=True)]:
                try:
                    times = proc.cpu_times()
                    cpu += times.user + times.system
                    rss += proc.memory_info().rss
                except psutil.Error:
                    continue
        except psutil.Error:
            pass  # the gateway is gone: its last figures stay, as an empty cgroup's would
        # CPU time never goes back (a cgroup keeps an exited task's time; here it is lost).
        self.cpu_usec = max(self.cpu_usec, int(cpu * 1_000_000))
        self.peak = max(self.peak, rss)
        files = {
            "cpu.stat": f"usage_usec {self.cpu_usec}\nuser_usec 0\nsystem_usec 0\n",
            "memory.current": f"{rss}\n",
            "memory.stat": "anon 0\nfile 0\ninactive_file 0\n",
            "memory.peak": f"{self.peak}\n",
        }
        for name, text in files.items():  # each file replaced whole, as the kernel shows it
            part = self.folder / f".{name}.tmp"
            part.write_text(text)
            part.replace(self.folder / name)

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self.write()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)


__all__ = ["CgroupStandIn"]
