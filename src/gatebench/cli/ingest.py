"""``gatebench ingest SIMULATION_LOG --workload FILE``: measurements from a Gatling log.

The cloud path's ingest step (the tester VM's ``simulation.log`` copied to the bucket); also
handy to recompute a local run's figures. Prints one Measurement per line (JSON).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gatebench.core.measure import ingest_simlog


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("simlog", metavar="SIMULATION_LOG")
    parser.add_argument("--workload", required=True, metavar="FILE", help="the workload.json")
    parser.add_argument("--run-id", default="ingested", help="run id to put in each row")


def run(args: argparse.Namespace) -> int:
    document = json.loads(Path(args.workload).read_text(encoding="utf-8"))
    for m in ingest_simlog(args.simlog, document, args.run_id):
        print(json.dumps(m.to_dict()))
    return 0
