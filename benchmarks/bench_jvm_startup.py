"""Start-up of the two JVM gateways: seconds from ``java -jar`` to the first answered request
and resident memory right after, with the flags gatebench runs them with and with C1 only
(``-XX:TieredStopAtLevel=1``, what the integration tests add through GATEBENCH_JVM_OPTIONS).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from gatebench.core.fairness import gateway_target, stated_cpu_policy
from gatebench.core.renderers import get_renderer
from gatebench.core.renderers._jvm import JVM_OPTIONS_ENV
from gatebench.core.spec import load_spec
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import start_gateway, write_files

from ._machine import CpuWindow

TITLE = "JVM gateways: start-up time and memory"
ROOT = Path(__file__).resolve().parents[1]
GATEWAYS = ("spring-cloud-gateway", "zuul")
FLAGS = ("", "-XX:TieredStopAtLevel=1")
REPEATS = 3


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run() -> str:
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    rows = []
    previous = os.environ.get(JVM_OPTIONS_ENV)
    with tempfile.TemporaryDirectory(prefix="gatebench-bench-jvm-") as tmp, Supervisor() as sup:
        _proc, backend = start_backend(sup, "echo", tmp)
        try:
            for gateway in GATEWAYS:
                renderer = get_renderer(gateway)
                for flags in FLAGS:
                    os.environ[JVM_OPTIONS_ENV] = flags
                    seconds, rss = [], []
                    with CpuWindow() as cpu:
                        for n in range(REPEATS):
                            target = gateway_target(
                                stated_cpu_policy(1),
                                workdir=f"{tmp}/{gateway}-{len(flags)}-{n}",
                                listen_port=free_port(),
                                backend_url=f"http://127.0.0.1:{backend}",
                            )
                            write_files(renderer.render(api, target), target.workdir)
                            started = time.monotonic()
                            proc = start_gateway(renderer, target, sup)
                            seconds.append(time.monotonic() - started)
                            rss.append(_rss_mib(proc.pid))
                            sup.stop(proc)
                    rows.append(
                        f"| {gateway} | `{flags or '(none)'}` | {min(seconds):.1f} / "
                        f"{statistics.median(seconds):.1f} / {max(seconds):.1f} | "
                        f"{statistics.median(rss):.0f} | {cpu.others_pct:.0f} % |"
                    )
        finally:
            if previous is None:
                os.environ.pop(JVM_OPTIONS_ENV, None)
            else:
                os.environ[JVM_OPTIONS_ENV] = previous
    return "\n".join(
        [
            f"Each gateway booted {REPEATS} times with the rendered auction example "
            "(`-Xms256m -Xmx512m`, JDK 17), in front of the echo backend; time from process "
            "start to the first answered HTTP request (min / median / max), resident memory "
            "right after (median). Extra flags are `GATEBENCH_JVM_OPTIONS`.",
            "",
            "| gateway | extra JVM flags | first response, s | RSS, MiB | CPU used by others |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )
