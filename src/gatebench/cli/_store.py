"""The ``--store`` option shared by the commands that read or write results."""

from __future__ import annotations

import argparse

from gatebench.store import DEFAULT_STORE, STORE_ENV, default_store_location


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        default=None,
        help=f"the result store: a SQLite file, sqlite:PATH or firestore://PROJECT[/DATABASE] "
        f"(default: ${STORE_ENV} or {DEFAULT_STORE})",
    )


def store_location(args: argparse.Namespace) -> str:
    return str(args.store or default_store_location())
