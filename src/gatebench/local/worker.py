"""One queued run, in its own process: ``python -m gatebench.local.worker ...``.

``gatebench serve`` starts this for each upload in turn (:mod:`gatebench.local.queue`). It
calls the runner of ``gatebench run`` and ``gatebench capacity`` (``runner.run_local``, the
kind from ``--kind``) with the same store and the run id the server already answered to the
browser. Its own process, because the runner's teardown is driven by signals: the server stops a run by sending SIGTERM here, and the runner's supervisor
turns that into a teardown of every gateway, backend and load generator it started.

Progress goes to stdout as one JSON object per line (``{"event": "progress", ...}``) for
the server's live status; everything else goes to stderr (the worker log).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gatebench.core.errors import GatebenchError, ProblemsError
from gatebench.core.model import RunKind
from gatebench.kinds.request import RunRequest, check_upload
from gatebench.local.runner import Progress, RunOptions, run_local
from gatebench.store import open_store

EXIT_OK, EXIT_INPUT, EXIT_RUN, EXIT_INTERRUPTED = 0, 1, 3, 130


class ProgressLines:
    """Writes the runner's progress as JSON lines, at most a few per second per phase."""

    def __init__(self, stream: Any, interval: float = 0.4) -> None:
        self.stream = stream
        self.interval = interval
        self._last_key: tuple[Any, ...] = ()
        self._last_time = 0.0

    def __call__(self, p: Progress) -> None:
        key = (p.step, p.phase_number, p.message)
        now = time.monotonic()
        if key == self._last_key and now - self._last_time < self.interval:
            return
        self._last_key, self._last_time = key, now
        event: dict[str, Any] = {"event": "progress", "step": p.step, "message": p.message}
        event |= {"elapsed": round(p.elapsed), "left": None if p.left is None else round(p.left)}
        if p.phase is not None:
            event.update(
                phase=p.phase.label,
                measured=p.phase.measured,
                phase_number=p.phase_number,
                phases=p.phases,
                done=p.done,
                rate=round(p.rate, 1),
            )
        emit(self.stream, event)


def emit(stream: Any, event: dict[str, Any]) -> None:
    stream.write(json.dumps(event, ensure_ascii=False) + "\n")
    stream.flush()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gatebench.local.worker")
    parser.add_argument("--spec", required=True, help="the uploaded file, as saved")
    parser.add_argument("--name", required=True, help="its (safe) file name")
    parser.add_argument("--spec-uri", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--gateways", help="comma-separated, or 'none' for the baseline only")
    parser.add_argument("--entry", help="the root description inside a zip that holds several")
    parser.add_argument(
        "--kind", choices=[str(k) for k in RunKind], default="fixed", help="the kind of run"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = sys.stdout
    gateways = None
    if args.gateways is not None:
        gateways = tuple(g for g in args.gateways.split(",") if g and args.gateways != "none")
    kind = RunKind(args.kind)
    request = RunRequest(quick=args.quick, gateways=gateways, entry=args.entry, kind=kind)
    try:
        upload = check_upload(Path(args.spec).read_bytes(), args.name, request)
        options = RunOptions(results_dir=Path(args.results), quick=args.quick, run_id=args.run_id)
        with open_store(args.store) as store:
            outcome = run_local(
                kind,
                upload.api,
                request.select(upload.plan),
                spec_uri=args.spec_uri,
                spec_sha256=upload.sha256,
                options=options,
                store=store,
                display=ProgressLines(out),
            )
    except ProblemsError as exc:
        for problem in exc.problems:
            print(problem.format(), file=sys.stderr)
        emit(out, {"event": "error", "message": str(exc)})
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("gatebench worker: interrupted; the run was torn down", file=sys.stderr)
        emit(out, {"event": "interrupted"})
        return EXIT_INTERRUPTED
    except GatebenchError as exc:
        print(f"gatebench worker: {exc}", file=sys.stderr)
        emit(out, {"event": "error", "message": str(exc)})
        return EXIT_RUN
    status = str(outcome.record.status)
    emit(out, {"event": "finished", "status": status})
    return EXIT_OK if status == "done" else EXIT_RUN


if __name__ == "__main__":  # pragma: no cover - the server runs this as a process
    sys.exit(main())
