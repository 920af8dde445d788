"""The ``gatebench`` command. Each command lives in ``gatebench.cli.<module>``; this file only
dispatches and turns errors into one stderr line per problem and an exit code.

Exit codes: 0 success, 1 the input has errors, 2 usage, 3 a run failed, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from gatebench.core._version import __version__
from gatebench.core.errors import GatebenchError, ProblemsError, RunError


@dataclass(frozen=True)
class Command:
    """One ``gatebench`` command: what ``--help`` says of it, and the module that adds its
    options (its function ``arguments``, when it has options) and runs it (``handler``; a
    command with subcommands sets one per subcommand)."""

    name: str
    module: str
    help: str
    description: str
    arguments: str | None = "add_arguments"
    handler: str | None = "run"


COMMANDS = (
    Command(
        "validate",
        "validate",
        "check an API description and its benchmark plan",
        "Check an API description (and its x-gatebench plan, when present). Prints one line "
        "per problem: FILE:LINE:COLUMN: SEVERITY: POINTER: MESSAGE. Exits 1 when any problem "
        "blocks benchmarking.",
    ),
    Command(
        "parse",
        "parse",
        "print the operations gatebench reads from an API description",
        "Print the internal representation: one record per operation.",
    ),
    Command(
        "plan",
        "plan",
        "print the benchmark plan of an API description",
        "Validate the x-gatebench section (or --plan FILE) and print the plan.",
    ),
    Command(
        "import",
        "traffic",
        "turn access logs, HAR files or a JMeter plan into a plan that replays them",
        "Read recorded traffic, match every request to an operation of SPEC, and write a "
        "benchmark plan that replays its mix and arrival curve (docs/input.md).",
    ),
    Command(
        "render",
        "render",
        "write each gateway's configuration for an API description",
        "Render the configuration of each gateway: DIR/<gateway>/<file>.",
    ),
    Command(
        "run",
        "run",
        "benchmark the gateways of a plan on this machine",
        "Render, start every gateway that runs here, drive the plan's workloads through each "
        "one and through no gateway (the baseline) with Gatling, print one table per workload "
        "and save everything under results/<run-id>/.",
    ),
    Command(
        "capacity",
        "capacity",
        "search how much traffic each gateway carries within the plan's objective",
        "Start every gateway that runs here and search, per endpoint, the highest arrival "
        "rate each one and the baseline carry within the plan's objective (capacity: p99 ≤ 50 "
        "ms and errors ≤ 0.1 % unless the plan says otherwise): growth, bisection, "
        "confirmation, repeated in a shuffled target order until every pair's order is "
        "decided or the time budget is spent. Prints each knee with its 95 % CI and the "
        "verdict; saves everything under results/<run-id>/ (docs/capacity.md).",
    ),
    Command(
        "scale",
        "scale",
        "memory, start time and latency of each gateway as the API grows",
        "Replicate the description's routes under distinct prefixes to each size, boot every "
        "gateway on it, and measure the configuration's size, the time from start to the first "
        "correct answer, resident memory idle and under a constant-rate load, and p50/p99 at "
        "that load for the routes at the start, middle and end of the table (docs/scale.md).",
        arguments="add_scale_arguments",
        handler="run_scale",
    ),
    Command(
        "change-under-load",
        "scale",
        "apply a new configuration through each gateway's own mechanism under load",
        "Boot every gateway on the description grown to --routes routes, load the route at the "
        "end of its table at a constant rate, and during the load add --add routes and move the "
        "upstream to a second backend through the gateway's own mechanism (reload, admin API, "
        "watched file, refresh; a restart where it has none): every failed request, the "
        "latency spike and the time until each new route answers (docs/scale.md).",
        arguments="add_change_arguments",
        handler="run_change",
    ),
    Command(
        "runs",
        "runs",
        "list the stored runs, newest first",
        "List the runs in the result store, newest first.",
    ),
    Command(
        "report",
        "report",
        "write the report of a stored run (html, json, csv, md)",
        "Write the report of a stored run. HTML is one self-contained file that works "
        "offline; CSV holds the flat rows of the BigQuery table (docs/results.md).",
    ),
    Command(
        "score",
        "score",
        "score a stored run again and store the scores",
        "Score a stored run from its measurements and store the scores (runs/RUN/scores). "
        "docs/scoring.md explains the profiles.",
    ),
    Command(
        "load",
        "load",
        "run a workload document with the load engine (one step of a run)",
        "Run every phase of a workload.json with Gatling and write measurements.jsonl "
        "(measured phases) into --out.",
    ),
    Command(
        "ingest",
        "ingest",
        "turn a Gatling simulation.log into measurements (JSON lines)",
        "Read a binary simulation.log written from a workload document and print one "
        "measurement per measured phase.",
    ),
    Command(
        "cloud",
        "cloud",
        "commands of the Google Cloud path (builds, VMs, packaging)",
        "Commands the cloud pipeline runs (docs/cloud.md).",
        handler=None,
    ),
    Command(
        "serve",
        "serve",
        "the upload form and dashboard: upload a spec, watch it run, read the results",
        "Serve frontend/ and a small JSON API over the result store on this machine. An "
        "uploaded spec is checked, then queued: runs go one at a time, with the same runner as "
        "`gatebench run`. Ctrl-C (or SIGTERM) stops the server and tears down a running "
        "benchmark.",
        handler="serve",
    ),
    Command(
        "doctor",
        "doctor",
        "what can run on this machine, and how to install what is missing",
        "List the load engines, the backend, every gateway and the build tools: present (with "
        "its version), built on first use, missing (with the command that installs it) or "
        "cloud-only. Exit 1 when nothing can run here (no load engine).",
        arguments=None,
    ),
)
"""Every command, in the order ``gatebench --help`` lists them."""


EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_RUN, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def build_parser(names: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the commands ``names`` (default: every command, what ``--help`` lists);
    only their modules are imported."""
    parser = argparse.ArgumentParser(
        prog="gatebench",
        description="Benchmark API gateways against your API description, workload and hardware.",
    )
    parser.add_argument("--version", action="version", version=f"gatebench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        if names is not None and command.name not in names:
            continue
        module = importlib.import_module(f"gatebench.cli.{command.module}")
        parser_of = sub.add_parser(command.name, help=command.help, description=command.description)
        if command.arguments is not None:
            getattr(module, command.arguments)(parser_of)
        if command.handler is not None:
            parser_of.set_defaults(handler=getattr(module, command.handler))
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names first, when it is one: only its module is imported (a run's
    engines, stores and servers cost ``gatebench render`` a second of imports otherwise)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if any(c.name == arg for c in COMMANDS) else None
        if arg in ("-h", "--help", "--version"):
            return None
    return None


class _StderrLines(logging.Handler):
    """``gatebench: message`` on the current sys.stderr (looked up per record)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"gatebench: {record.getMessage()}", file=sys.stderr, flush=True)


def _show_build_progress() -> None:
    """What gatebench builds on first use (gatebench.local._resources) is announced on stderr."""
    logger = logging.getLogger("gatebench.build")
    if not any(isinstance(h, _StderrLines) for h in logger.handlers):
        logger.addHandler(_StderrLines())
    logger.setLevel(logging.INFO)
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_of(argv)
    parser = build_parser((command,) if command else None)
    args = parser.parse_args(argv)
    _show_build_progress()
    try:
        code: int = args.handler(args)
        return code
    except ProblemsError as exc:
        for problem in exc.problems:
            print(problem.format(), file=sys.stderr)
        return EXIT_INPUT
    except RunError as exc:
        print(f"gatebench: {exc}", file=sys.stderr)
        return EXIT_RUN
    except GatebenchError as exc:
        print(f"gatebench: {exc}", file=sys.stderr)
        return EXIT_RUN
    except KeyboardInterrupt:
        print("gatebench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `gatebench parse x | head`
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
