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

from gatebench.core._version import __version__
from gatebench.core.errors import GatebenchError, ProblemsError, RunError

# Command modules, in the order `gatebench --help` lists them.
COMMANDS = (
    "validate",
    "parse",
    "plan",
    "traffic",
    "render",
    "run",
    "capacity",
    "scale",
    "runs",
    "report",
    "score",
    "load",
    "ingest",
    "cloud",
    "serve",
    "doctor",
)

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_RUN, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of ``commands`` (every command: what ``--help`` lists)."""
    parser = argparse.ArgumentParser(
        prog="gatebench",
        description="Benchmark API gateways against your API description, workload and hardware.",
    )
    parser.add_argument("--version", action="version", version=f"gatebench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in commands:
        module = importlib.import_module(f"gatebench.cli.{name}")
        module.add_parser(sub)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names first, when it is one: only its module is imported (a run's
    engines, stores and servers cost ``gatebench render`` a second of imports otherwise)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
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
    parser = build_parser((command,) if command else COMMANDS)
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
