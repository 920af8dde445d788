"""``gatebench report RUN``: a stored run as HTML, JSON, CSV (BigQuery rows) or Markdown, or
its thresholds as JUnit XML for CI systems (docs/ci.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gatebench.cli._store import RUN_HELP, add_store_argument, run_location
from gatebench.core.errors import RunError
from gatebench.core.model import RunRecord
from gatebench.core.report import FORMATS, find_run
from gatebench.core.score import PROFILES
from gatebench.store import open_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    parser.add_argument(
        "--format",
        "-f",
        choices=(*FORMATS, "junit"),
        default="html",
        help="default: html; junit: one test case per threshold × target (docs/ci.md)",
    )
    parser.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="where to write it; '-' for stdout (default: report.html in the run's folder, "
        "where the run wrote it (results/RUN by default), for html; stdout for the others)",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        help="scoring profile (default: the one the run was scored with, else its plan's)",
    )
    add_store_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Each kind of run writes its own report (``Kind.report``, gatebench.kinds.registry); an
    abandoned run reads as it will be recorded (gatebench.local._abandoned)."""
    from gatebench.kinds.registry import kind_of
    from gatebench.local._abandoned import AbandonedAsSettled

    location, run_id = run_location(args)
    with open_store(location) as opened:
        store = AbandonedAsSettled(opened)
        record = find_run(store, run_id)
        try:
            report = kind_of(record).report(store, record, args.format, args.profile)
        except RunError as exc:
            print(f"gatebench: {exc}", file=sys.stderr)
            return 2
    return _write(args, report.text, _folder(args.run_id, record), report.html_name)


def _folder(given: str, record: RunRecord) -> Path:
    """The run's folder, where its HTML report goes: the folder named as RUN, else the one the
    run recorded as its own (``gatebench run --results out`` puts it in out/RUN), else
    results/RUN."""
    named = Path(given)
    if named.name == record.run_id and named.is_dir():
        return named
    recorded = (record.owner or {}).get("run_dir")
    if (
        isinstance(recorded, str)
        and Path(recorded).name == record.run_id
        and Path(recorded).is_dir()
    ):
        return Path(recorded)
    return Path("results") / record.run_id


def _write(args: argparse.Namespace, text: str, folder: Path, html_name: str) -> int:
    output = args.output
    if output is None and args.format == "html":
        output = str(folder / html_name)
    if output is None or output == "-":
        sys.stdout.write(text)
        return 0
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(path)
    return 0
