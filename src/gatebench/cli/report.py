"""``gatebench report RUN``: a stored run as HTML, JSON, CSV (BigQuery rows) or Markdown, or
its thresholds as JUnit XML for CI systems (docs/ci.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gatebench.cli._store import add_store_argument, store_location
from gatebench.core.model import RunKind
from gatebench.core.report import FORMATS, find_run, load_report, render
from gatebench.core.report._junit import render_junit
from gatebench.core.score import PROFILES
from gatebench.kinds._live._report import (
    is_live_run,
    render_scale_csv,
    render_scale_html,
    stored_scale_document,
)
from gatebench.kinds.capacity._report import (
    load_capacity_report,
    render_capacity,
    render_capacity_junit,
)
from gatebench.store import open_store


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "report",
        help="write the report of a stored run (html, json, csv, md)",
        description="Write the report of a stored run. HTML is one self-contained file that "
        "works offline; CSV holds the flat rows of the BigQuery table (docs/results.md).",
    )
    parser.add_argument(
        "run_id", metavar="RUN", help="a run id (see `gatebench runs`), or 'latest'"
    )
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
        help="where to write it; '-' for stdout (default: results/RUN/report.html for html, "
        "stdout for the others)",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        help="scoring profile (default: the one the run was scored with, else its plan's)",
    )
    add_store_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with open_store(store_location(args)) as store:
        record = find_run(store, args.run_id)
        if is_live_run(record):
            return _scale(args, stored_scale_document(store, record.run_id) or {}, record.run_id)
        if record.kind == RunKind.CAPACITY:
            capacity = load_capacity_report(store, record.run_id)
            text = (
                render_capacity_junit(capacity)
                if args.format == "junit"
                else render_capacity(capacity, args.format)
            )
            return _write(args, text, capacity.run.run_id, "report.html")
        report = load_report(store, record.run_id, profile=args.profile)
    text = render_junit(report) if args.format == "junit" else render(report, args.format)
    return _write(args, text, report.run.run_id, "report.html")


def _scale(args: argparse.Namespace, document: dict[str, object], run_id: str) -> int:
    """A scale or change-under-load run (docs/scale.md): its own report, JSON or CSV."""
    if args.format == "html":
        text = render_scale_html(document)
    elif args.format == "json":
        text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    elif args.format == "csv":
        text = render_scale_csv(document)
    else:
        print(
            f"gatebench: run {run_id} is a scale or change-under-load run: its report is "
            "html, json or csv",
            file=sys.stderr,
        )
        return 2
    return _write(args, text, run_id, "scale.html")


def _write(args: argparse.Namespace, text: str, run_id: str, html_name: str) -> int:
    output = args.output
    if output is None and args.format == "html":
        output = str(Path("results") / run_id / html_name)
    if output is None or output == "-":
        sys.stdout.write(text)
        return 0
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(path)
    return 0
