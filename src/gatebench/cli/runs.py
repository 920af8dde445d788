"""``gatebench runs``: the stored runs, newest first. A run whose gatebench process is gone
before it finished shows as ``abandoned`` (gatebench.local._abandoned); the next run started
in the same store records it as failed, with the reason."""

from __future__ import annotations

import argparse
import datetime as dt
import json

from gatebench.cli._store import add_store_argument, store_location
from gatebench.store import open_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--limit", type=int, default=20, help="at most this many runs (default 20)")
    parser.add_argument("--json", action="store_true", help="the run records as JSON")


def run(args: argparse.Namespace) -> int:
    from gatebench.local._abandoned import abandoned

    with open_store(store_location(args)) as store:
        runs = store.list_runs(limit=args.limit)
    gone = {r.run_id for r in runs if abandoned(r)}
    if args.json:
        documents = [{**r.to_dict(), "abandoned": r.run_id in gone} for r in runs]
        print(json.dumps(documents, indent=2, ensure_ascii=False))
        return 0
    if not runs:
        print(f"no runs in {store_location(args)}")
        return 0
    from gatebench.core.errors import printable
    from gatebench.core.report._tables import aligned
    from gatebench.kinds.registry import kind_of

    header = ("RUN", "STATUS", "CREATED (UTC)", "KIND", "GATEWAYS", "WORKLOADS", "TITLE")
    rows = [
        (
            r.run_id,
            "abandoned" if r.run_id in gone else r.status.value,
            dt.datetime.fromtimestamp(r.created_at, tz=dt.UTC).strftime("%Y-%m-%d %H:%M"),
            kind_of(r).title,
            ",".join(r.gateways) or "-",
            str(len(r.workloads)) if r.workloads else "-",
            printable(r.title, 80) if r.title else "-",
        )
        for r in runs
    ]
    for line in aligned(header, rows):
        print(line)
    return 0
