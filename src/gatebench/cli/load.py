"""``gatebench load WORKLOAD --out DIR``: run one workload document with the load engine.

The cloud path's load step (on the tester VM, against the gateway VMs); locally it replays a
run's ``workload.json``. Writes the engine's files and ``measurements.jsonl`` into DIR.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gatebench.core.measure import measurement_from
from gatebench.core.workload import phases_from_document
from gatebench.local.engines import get_engine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", metavar="WORKLOAD")
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--run-id", default="load", help="run id to put in each row")


class _Writer:
    def __init__(self, document: dict[str, Any], out: Path, run_id: str) -> None:
        self.phases = {p.index: p for p in phases_from_document(document)}
        self.path = out / "measurements.jsonl"
        self.run_id = run_id

    def on_event(self, event: EngineEvent) -> None:
        phase = self.phases.get(event.phase)
        if event.kind == "start" and phase is not None:
            print(f"[load] {phase.label}", file=sys.stderr, flush=True)

    def on_phase(self, result: PhaseResult) -> None:
        phase = self.phases.get(result.phase)
        if phase is None or not phase.measured or result.sample.requests == 0:
            return
        m = measurement_from(self.run_id, phase, result)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(m.to_dict()) + "\n")

    def tick(self) -> None:
        pass


def run(args: argparse.Namespace) -> int:
    document = json.loads(Path(args.workload).read_text(encoding="utf-8"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    engine = get_engine("gatling")
    engine.check()
    writer = _Writer(document, out, args.run_id)
    with Supervisor() as supervisor:
        result = engine.run(document, out, writer, supervisor=supervisor)
    if result.crashed:
        print(f"gatebench: {result.reason}", file=sys.stderr)
        return 3
    print(f"{len(result.completed)} phases; measurements in {writer.path}")
    return 0
