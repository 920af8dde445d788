"""The ``--store`` option (and ``--results``, for the commands that write run folders) shared by
the commands that read or write results."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gatebench.store import DEFAULT_STORE, STORE_ENV


def add_store_argument(parser: argparse.ArgumentParser, *, results: bool = False) -> None:
    """``--store``; with ``results``, ``--results DIR`` too, whose ``gatebench.sqlite`` is then
    the default store."""
    if results:
        parser.add_argument(
            "--results", default="results", metavar="DIR", help="where run folders go (results/)"
        )
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        default=None,
        help=f"the result store: a SQLite file, sqlite:PATH or firestore://PROJECT[/DATABASE] "
        f"(default: ${STORE_ENV}, else "
        + ("gatebench.sqlite under --results)" if results else f"{DEFAULT_STORE})"),
    )


def store_location(args: argparse.Namespace) -> str:
    """``--store``, else ``$GATEBENCH_STORE``, else ``gatebench.sqlite`` under ``--results``
    (``results/`` for the commands without it)."""
    results = Path(getattr(args, "results", "results"))
    return str(args.store or os.environ.get(STORE_ENV) or results / "gatebench.sqlite")


RUN_HELP = "a run id (see `gatebench runs`), 'latest', or a run's folder (results/RUN)"


def run_location(args: argparse.Namespace) -> tuple[str, str]:
    """(store location, run id) of the ``RUN`` argument: a run id or ``latest`` in the store
    :func:`store_location` names, or a run's folder (it holds ``run.json``), whose store is
    the ``gatebench.sqlite`` beside it unless ``--store`` or ``$GATEBENCH_STORE`` names one."""
    given, folder = str(args.run_id), Path(str(args.run_id))
    if not (folder / "run.json").is_file():
        return store_location(args), given
    beside = folder.resolve().parent / "gatebench.sqlite"
    chosen = args.store or os.environ.get(STORE_ENV)
    return (chosen or (str(beside) if beside.is_file() else store_location(args))), folder.name


def store_flag(location: str) -> str:
    """`` --store LOCATION`` for a command line that should read the same store, or nothing
    when it is the default."""
    return "" if location == DEFAULT_STORE else f" --store {location}"
