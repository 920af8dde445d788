"""Options, loading and the live progress display shared by several commands."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from gatebench.core.errors import ProblemsError
from gatebench.core.plan import Plan, load_plan
from gatebench.core.spec import DEFAULT_LIMITS, Limits, SpecResult, read_spec
from gatebench.core.units import parse_size
from gatebench.run import Progress

if TYPE_CHECKING:
    from gatebench.core.ir import Api
    from gatebench.core.thresholds import ThresholdResult


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="API description: a file, a folder or a zip")
    parser.add_argument(
        "--entry", help="the root file inside a folder or zip (when it holds several)"
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=DEFAULT_LIMITS.max_bytes,
        help="largest input accepted, files it includes too (default 25MB)",
    )


def add_plan_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plan",
        metavar="FILE",
        help="a benchmark file with an x-gatebench section (instead of the one in SPEC)",
    )


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def read(args: argparse.Namespace, *, strict: bool = False) -> SpecResult:
    limits = Limits(max_bytes=args.max_bytes)
    return read_spec(args.spec, entry=args.entry, limits=limits, strict=strict)


def read_api(args: argparse.Namespace) -> tuple[SpecResult, Api]:
    """The spec of ``args`` and its API; when it has errors, they alone are raised (the command
    line prints one per line and exits 1)."""
    result = read(args)
    if result.errors:
        raise ProblemsError(result.errors)
    assert result.api is not None
    return result, result.api


def load(args: argparse.Namespace) -> tuple[SpecResult, Plan]:
    """Spec and plan, or the first error (raised as a ProblemsError subclass)."""
    result = read(args)
    result.raise_for_errors()
    return result, load_plan(result, getattr(args, "plan", None))


def print_problems(problems: list[Any], *, stream: Any) -> None:
    for problem in problems:
        print(problem.format(), file=stream)


def print_thresholds(results: Sequence[ThresholdResult], heading: str = "Thresholds") -> int:
    """``HEADING: N of M met.`` on stdout (saying how many are the default gate, which no plan
    wrote), then each failed threshold on stderr; how many failed."""
    from gatebench.core.thresholds import DEFAULT_POINTER, failures

    failed = failures(results)
    defaults = sum(1 for r in results if r.threshold.pointer == DEFAULT_POINTER)
    said = f"{heading}: {len(results) - len(failed)} of {len(results)} met"
    if defaults:
        some = "" if defaults == len(results) else f"{defaults:,} of them "
        said += f", {some}the default gate: no wrong answers (docs/ci.md)"
    print(said + ".")
    for result in failed:
        print(f"threshold failed: {result.line()}", file=sys.stderr)
    return len(failed)


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no live progress on stderr (the results are printed all the same)",
    )


def number(kind: type[int] | type[float], *, most: float | None = None) -> Callable[[str], Any]:
    """An option's type: a whole number from 1 (``int``) or a finite number above 0
    (``float``), at most ``most`` when given."""
    whole = kind is int
    if whole:
        wanted = (
            "a whole number of at least 1"
            if most is None
            else f"a whole number from 1 to {most:,g}"
        )
    else:
        wanted = "a number above 0" + ("" if most is None else f" and at most {most:g}")

    def parse(text: str) -> Any:
        try:
            value = kind(text) if text.isascii() else None
        except ValueError:
            value = None
        if value is None or not 0 < value < float("inf") or (most is not None and value > most):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    return parse


PLAIN_EVERY_S = 5.0
"""A log file gets a phase's progress at most this often."""
BAR_FROM_COLUMNS, BAR_WIDTH = 80, 12
"""A terminal at least this wide shows the phases done as a bar too, this wide."""


def clock(seconds: float) -> str:
    """``4:05``, ``1:02:03``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def progress_words(
    p: Progress, since: float = 0.0, *, counts_first: bool = False
) -> tuple[str, str]:
    """The two halves of a progress line: the run's time and place (``2:03 · 12/426 · ~4:10
    left``), then what runs (``rep 1 · nginx · list · 1,234 req · 500 req/s``; the requests and
    rate first with ``counts_first``); ``since``: seconds since ``p`` was reported (the clocks
    go on between reports)."""
    head = [clock(p.elapsed + since)]
    if p.phases:
        head.append(f"{p.phase_number}/{p.phases}")
    if p.left is not None:
        head.append(f"~{clock(max(0.0, p.left - since))} left")
    what = [p.phase.label] if p.phase is not None else []
    if p.message:
        what.append(p.message)
    counts = [f"{p.done:,} req", f"{p.rate:,.0f} req/s"] if p.phase is not None and p.done else []
    return " · ".join(head), " · ".join([*counts, *what] if counts_first else [*what, *counts])


def progress_text(p: Progress) -> str:
    """One plain line: ``[loading] 2:03 · 12/426 · ~4:10 left · rep 1 · nginx · list``."""
    head, what = progress_words(p)
    return f"[{p.step}] {head}" + (f" · {what}" if what else "")


class _Line:
    """The terminal's line, drawn by rich at each refresh (so that the clocks tick between
    reports) and cut to the terminal's width: the bar goes first, then the phase's name."""

    def __init__(self) -> None:
        self.progress, self.at = Progress(step="starting"), time.monotonic()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        p = self.progress
        head, what = progress_words(p, time.monotonic() - self.at, counts_first=True)
        first = Text.assemble((p.step, "bold"), " ", head)
        first.truncate(options.max_width, overflow="ellipsis")
        room = options.max_width - first.cell_len - 1
        line = Table.grid(padding=(0, 1))
        line.add_column(width=first.cell_len, no_wrap=True)
        cells: list[Any] = [first]
        if p.phases and options.max_width >= BAR_FROM_COLUMNS:
            line.add_column(width=BAR_WIDTH, no_wrap=True)
            cells.append(ProgressBar(total=p.phases, completed=p.phase_number, width=BAR_WIDTH))
            room -= BAR_WIDTH + 1
        if room > 0:
            line.add_column(width=room, no_wrap=True)
            cells.append(Text(what, no_wrap=True, overflow="ellipsis"))
        line.add_row(*cells)
        yield line


class ProgressLine:
    """A run's live display on stderr. On a terminal, one line rewritten in place (rich):
    the step, the time so far, the phases done and an estimate of the time left, then the
    phase with its requests so far and current rate, fitted to the terminal's width. Elsewhere
    (a CI log) plain lines: every step, every measured phase and the engine's own warm-up, its
    progress at most every 5 s. With ``quiet``, nothing."""

    def __init__(self, stream: TextIO, *, quiet: bool = False) -> None:
        self.stream, self.quiet = stream, quiet
        self.console = Console(file=stream, highlight=False, soft_wrap=False)
        self.tty = self.console.is_terminal and not quiet
        self._line = _Line()
        self._live: Live | None = None
        self._last: tuple[str, float] = ("", 0.0)

    def __call__(self, p: Progress) -> None:
        if self.quiet:
            return
        line = progress_text(p)
        if self.tty:
            self._line.progress, self._line.at = p, time.monotonic()
            if self._live is None:
                self._live = Live(
                    self._line, console=self.console, refresh_per_second=4, redirect_stdout=False
                )
                self._live.start()
            if p.phase is None:  # each step stays on the screen, above the line
                self._live.console.print(Text(line, no_wrap=True, overflow="ellipsis"))
            self._live.refresh()
            return
        if p.phase is not None and not p.phase.measured and not p.phase.engine_warmup:
            return  # a log file gets the measured phases and the engine's own warm-up only
        now, label = time.monotonic(), p.phase.label if p.phase is not None else ""
        if label and label == self._last[0] and now - self._last[1] < PLAIN_EVERY_S:
            return
        self._last = (label, now)
        print(line, file=self.stream, flush=True)

    def finish(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
