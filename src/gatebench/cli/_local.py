"""What the commands that run a kind on this machine share (``run``, ``capacity``, ``scale``,
``change-under-load``): their options, the plan with ``--gateways`` applied, the spec's digest,
and the run itself with the live progress line and the store."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatebench.cli._common import (
    ProgressLine,
    add_plan_argument,
    add_quiet_argument,
    add_spec_arguments,
    load,
    number,
)
from gatebench.cli._store import add_store_argument, store_flag, store_location
from gatebench.core.errors import GatebenchError, PlanError, printable
from gatebench.core.ir import Api
from gatebench.core.model import RunKind, RunRecord, RunStatus
from gatebench.core.plan import Plan
from gatebench.core.trust import left_out_of
from gatebench.run import RunOptions, RunOutcome
from gatebench.store import ResultStore, open_store

LOG_LINES_SHOWN = 5
"""The last lines of a failed target's log printed under its reason (the record keeps 15)."""


def target_error_lines(record: RunRecord) -> list[str]:
    """Each target the run left out or that failed, with why: the reason's first line, and
    under a failure the last lines its process logged (``bind() ... Address already in
    use``), indented, control characters escaped."""
    left = left_out_of(record.environment)
    lines = []
    for target, reason in sorted(record.target_errors.items()):
        first, *rest = reason.splitlines() or [""]
        if target in left:
            lines.append(f"Left out: {first}")
            continue
        lines.append(f"{target}: FAILED: {first}")
        tail = [line for line in rest if line.strip()][-LOG_LINES_SHOWN:]
        lines += [f"    {printable(line)}" for line in tail]
    return lines


def add_run_arguments(parser: argparse.ArgumentParser, *, ceiling: str) -> None:
    """The options of every local run of a plan (``gatebench run``, ``gatebench capacity``):
    the spec and plan, progress, which gateways, the seed, testers, the tester's ceiling
    (``ceiling``: what ``--no-ceiling`` skips), policies, thresholds, results and store."""
    from gatebench.core.plan import MAX_TESTERS

    add_spec_arguments(parser)
    add_plan_argument(parser)
    add_quiet_argument(parser)
    parser.add_argument(
        "--gateways",
        metavar="A,B",
        help="only these gateways of the plan (comma-separated; 'none' for the baseline only)",
    )
    parser.add_argument("--seed", type=int, help="seed of the target order and random values")
    parser.add_argument(
        "--testers",
        type=number(int, most=MAX_TESTERS),
        default=1,
        metavar="N",
        help=f"split the load across N load generators (1-{MAX_TESTERS}), each in a network "
        "namespace of its own, and merge their records exactly (needs root when N > 1; "
        "docs/engine.md)",
    )
    parser.add_argument("--no-ceiling", action="store_true", help=ceiling)
    parser.add_argument(
        "--allow-missing-policies",
        action="store_true",
        help="run a gateway that cannot apply the plan's policies (x-gatebench policies:) "
        "without them, marked in the report, instead of leaving it out",
    )
    parser.add_argument(
        "--fail-on-threshold",
        action="store_true",
        help="exit 1 when a threshold of the plan (x-gatebench thresholds:) is not met, with "
        "one line per failed threshold on stderr (docs/ci.md)",
    )
    add_store_argument(parser, results=True)


def chosen_gateways(args: argparse.Namespace, plan: Plan) -> Plan | None:
    """The plan with ``--gateways`` applied (``none``: the baseline only); None, said on
    stderr, when it names a gateway the plan lacks."""
    if not args.gateways:
        return plan
    wanted = [] if args.gateways == "none" else [g.strip() for g in args.gateways.split(",")]
    unknown = [g for g in wanted if g not in plan.gateways]
    if unknown:
        print(
            f"gatebench: --gateways: {unknown[0]!r} is not in the plan "
            f"({', '.join(plan.gateways)})",
            file=sys.stderr,
        )
        return None
    return replace(plan, gateways=tuple(wanted))


def spec_digest(spec: str) -> str:
    """The SHA-256 of the spec file (of its name when it is not a file: a URL, stdin)."""
    path = Path(spec)
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    return digest or hashlib.sha256(str(path).encode()).hexdigest()


def prepared(args: argparse.Namespace, kind: str) -> tuple[Api, Plan, str, str] | None:
    """What a local run of any kind starts from: the API, the plan with ``--gateways``
    applied, the spec's digest and the run id it gives; None (said on stderr) when
    ``--gateways`` names a gateway the plan lacks. What ``kind`` cannot run of the plan (a
    capacity search's ``tls:``) is refused here, located, before a run is recorded."""
    from gatebench.kinds.request import RunRequest

    result, loaded = load(args)
    api = result.api
    assert api is not None
    refused = [result.in_plan(p) for p in RunRequest(kind=RunKind(kind)).problems(loaded)]
    if refused:
        raise PlanError(refused)
    plan = chosen_gateways(args, loaded)
    if plan is None:
        return None
    from gatebench.local.runner import claim_run_id

    digest = spec_digest(args.spec)
    return api, plan, digest, claim_run_id(Path(args.results), digest)


def run_here(
    args: argparse.Namespace,
    kind: str,
    api: Api,
    request: Any,
    digest: str,
    options: RunOptions,
    *,
    kept: str,
) -> tuple[RunOutcome, str]:
    """Run ``kind`` on this machine (gatebench.local.runner) with the live progress line on
    stderr and the store of ``args``; the outcome and the store's location. Interrupted or
    failed, it says on stderr where the run's files are (``kept``: what an interrupted run
    left there, said when its record is ``partial``: something was kept), and what the
    interrupt said (one during teardown)."""
    from gatebench.local.runner import run_local

    run_dir = options.results_dir / str(options.run_id)
    display = ProgressLine(sys.stderr, quiet=args.quiet)
    location = store_location(args)
    with open_store(location) as store:
        try:
            outcome = run_local(
                kind,
                api,
                request,
                spec_uri=str(Path(args.spec).resolve()),
                spec_sha256=digest,
                options=options,
                store=store,
                display=display,
            )
        except BaseException as exc:
            display.finish()
            interrupted = isinstance(exc, KeyboardInterrupt)
            if interrupted and str(exc):
                print(f"gatebench: {exc}", file=sys.stderr)
            with contextlib.suppress(OSError):  # its folder, made for it, holds nothing
                if run_dir.is_dir() and not any(run_dir.iterdir()):
                    run_dir.rmdir()
            if run_dir.exists() and (interrupted or isinstance(exc, GatebenchError)):
                something = interrupted and _kept_something(store, str(options.run_id))
                said = kept if something else "the run's files are in"
                print(f"gatebench: {said} {run_dir}/", file=sys.stderr)
            raise
    display.finish()
    return outcome, location


def _kept_something(store: ResultStore, run_id: str) -> bool:
    """Whether the stopped run kept what it measured: its record is ``partial`` (``failed``:
    nothing was measured; none: the run was not recorded yet)."""
    try:
        record = store.get_run(run_id)
    except (GatebenchError, OSError):
        return False
    return record is not None and record.status == RunStatus.PARTIAL


def run_plan(
    args: argparse.Namespace,
    kind: str,
    *,
    kept: str,
    report: Callable[[RunOutcome], list[str]],
    check: Callable[[Plan, RunOutcome], int],
    unchecked: str,
    **options: Any,
) -> int:
    """Run the plan of ``args`` (``gatebench run``, ``gatebench capacity``) as ``kind`` with
    the options every such command has, and ``options`` more; print the outcome (``report``:
    its lines), where it is stored, then its thresholds (``check``: prints them, returns how
    many failed; ``unchecked``: what ``--fail-on-threshold`` checked when the plan has none).
    The exit code: 0 done, 1 a threshold failed with ``--fail-on-threshold``, 2 ``--gateways``
    names a gateway the plan lacks (said on stderr), 3 the run did not finish."""
    ready = prepared(args, kind)
    if ready is None:
        return 2
    api, plan, digest, run_id = ready
    run_options = RunOptions(
        results_dir=Path(args.results),
        quick=args.quick,
        repetitions=args.repetitions,
        seed=args.seed,
        run_id=run_id,
        ceiling=not args.no_ceiling,
        testers=args.testers,
        allow_missing_policies=args.allow_missing_policies,
        **options,
    )
    outcome, location = run_here(args, kind, api, plan, digest, run_options, kept=kept)
    for line in report(outcome):
        print(line)
    print(
        f"Stored in {location}; `gatebench report {outcome.record.run_id}{store_flag(location)}` "
        "writes the HTML report."
    )
    failed = check(plan, outcome)
    if args.fail_on_threshold and not outcome.record.plan.get("thresholds"):
        print(
            f"gatebench: --fail-on-threshold: the plan has no thresholds (x-gatebench "
            f"thresholds:, docs/ci.md); {unchecked}",
            file=sys.stderr,
        )
    if failed and args.fail_on_threshold:
        return 1
    return 0 if str(outcome.record.status) == "done" else 3
