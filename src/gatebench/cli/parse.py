"""``gatebench parse SPEC``: the internal representation, as a table or as JSON."""

from __future__ import annotations

import argparse
import json

from gatebench.cli._common import add_spec_arguments, print_problems, read_api
from gatebench.core.errors import printable
from gatebench.core.stats import counted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    parser.add_argument("--json", action="store_true", help="the whole IR as JSON")


def run(args: argparse.Namespace) -> int:
    import sys

    from gatebench.core.report._tables import aligned

    result, api = read_api(args)
    if args.json:
        print(json.dumps(api.to_dict(), indent=2, sort_keys=False, ensure_ascii=False))
        return 0
    rows = [(op.operation_id, op.method, op.route_path, op.security_label) for op in api.operations]
    header = ("OPERATION", "METHOD", "PATH", "AUTH")
    named = " ".join(printable(x) for x in (api.title, api.version) if x)
    print(f"{named} ({printable(api.source_format)}): {counted(len(rows), 'operation')}")
    # Spec strings print as messages do: a control character is written as its escape.
    for line in aligned(header, [[printable(str(c)) for c in r] for r in rows]):
        print(line)
    notes = [p for p in result.problems if p.severity == "note"]
    print_problems(notes, stream=sys.stderr)
    return 0
