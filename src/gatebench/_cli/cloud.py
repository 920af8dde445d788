"""``gatebench cloud ...``: the commands of the Google Cloud path that are not functions.

The Cloud Build steps (cloudbuild/*.yaml) and the VMs run these, and so can anyone on a
laptop: ``gatebench cloud bundle`` builds the functions' archives (``make bundle``).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "cloud",
        help="commands of the Google Cloud path (builds, VMs, packaging)",
        description="Commands the cloud pipeline runs (docs/cloud.md).",
    )
    commands = parser.add_subparsers(dest="cloud_command", metavar="COMMAND")
    commands.required = True

    bundle = commands.add_parser(
        "bundle",
        help="build each function's deployable source archive",
        description="Zip functions/NAME/main.py with the gatebench package and pinned "
        "requirements into OUT/NAME.zip, for Cloud Functions (Python 3.12).",
    )
    bundle.add_argument("--functions", default="functions", help="folder of the functions")
    bundle.add_argument("--out", default="build/functions", help="where the archives go")
    bundle.set_defaults(handler=run_bundle)


def run_bundle(args: argparse.Namespace) -> int:
    from ..cloud._bundle import build_bundles

    for path in build_bundles(Path(args.functions), Path(args.out)):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0
