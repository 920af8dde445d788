"""``gatebench render SPEC --gateway a,b --out DIR``: the configuration of each gateway.

Writes ``DIR/<gateway>/<file>`` for every gateway asked for (``all`` = every registered one).
A route a gateway cannot express is left out of that gateway's files with a located warning,
unless a workload of the description's plan uses it: then the gateway prints its located
problems and is skipped, and the exit code is 1. ``--check`` then checks every gateway's
files with its own means (``provisioners._check``: its checker, or a brief boot of the routes
written), side by side and each within a time limit that grows with the routes
(``--check-timeout``, ``--check-jobs``); a check that fails or passes its limit fails that
gateway only, and the exit code is 1.

The files are those of one plain HTTP/1.1 proxy to ``--backend``: a plan's ``tls`` (the run's
certificates exist only while it runs) and ``backend.replicas``/``balance`` (a run starts the
replicas on ports it picks) are not rendered, and a warning located at each key says so and
names the gateways asked for that a run of the plan leaves out for them (Varnish for ``tls``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gatebench.cli._common import add_spec_arguments, number, print_problems, read_api
from gatebench.core.errors import Problem, RenderError, RunError, UnsupportedFeature
from gatebench.core.fairness import (
    default_local_policy,
    gateway_target,
    plan_concurrency,
    stated_cpu_policy,
)
from gatebench.core.policies import PolicySet
from gatebench.core.renderers import (
    UnknownGateway,
    deployment_exclusions,
    gateway_names,
    get_renderer,
)
from gatebench.core.renderers._base import DEFAULT_CONCURRENCY
from gatebench.core.renderers._deployment import FEATURE_POINTERS, FEATURES
from gatebench.core.renderers._leave_out import render_leaving_out
from gatebench.core.spec import SpecResult
from gatebench.local.provisioners import CheckTask, run_checks, write_files

if TYPE_CHECKING:
    from gatebench.core.plan import Plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = f"{parser.description} Gateways: {', '.join(gateway_names())} (or all)."
    add_spec_arguments(parser)
    parser.add_argument(
        "--gateway",
        "--gateways",  # as run, capacity and scale spell it
        "-g",
        dest="gateway",
        required=True,
        metavar="NAMES",
        help="comma-separated gateway names or aliases, or 'all'",
    )
    parser.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    parser.add_argument("--port", type=int, default=8080, help="listen port (default 8080)")
    parser.add_argument(
        "--listen-host", default="127.0.0.1", help="listen address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--backend",
        default="http://127.0.0.1:9000",
        metavar="URL",
        help="backend origin, http(s)://host:port (default http://127.0.0.1:9000)",
    )
    parser.add_argument(
        "--redis",
        default="127.0.0.1:6379",
        metavar="HOST:PORT",
        help="the Redis Tyk keeps its state in (default 127.0.0.1:6379)",
    )
    parser.add_argument(
        "--workdir",
        metavar="PATH",
        help="absolute folder the files will live in when the gateway runs "
        "(default: the gateway's output folder)",
    )
    parser.add_argument(
        "--cores",
        type=number(int),
        metavar="N",
        help="the cores each gateway is configured for: its workers, threads and event loops "
        "(default: the share a run here gives each gateway, half the cores gatebench may use; "
        "on a VM of its own, give its vCPUs)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run each gateway's own config checker where it is installed here "
        "(a gateway without one is booted briefly on loopback)",
    )
    parser.add_argument(
        "--check-timeout",
        type=number(float),
        metavar="SECONDS",
        help="the time each gateway's check may take; one that takes longer is ended, with "
        "everything it started, and fails that gateway's check (default: 60 s, or the "
        "gateway's start time when booting it is its check, plus 10 ms per route; 50 ms for "
        "Varnish, whose checker compiles the configuration)",
    )
    parser.add_argument(
        "--check-jobs",
        type=number(int),
        metavar="N",
        help="gateways checked side by side (default: the cores gatebench may use)",
    )
    parser.add_argument(
        "--policies",
        action="store_true",
        help="apply the plan's policies (x-gatebench policies:); a gateway that cannot apply "
        "them is refused with the reason",
    )


def _gateways(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if any(n.lower() == "all" for n in names):
        return list(gateway_names())
    out: list[str] = []
    for name in names:
        canonical = get_renderer(name).name
        if canonical not in out:
            out.append(canonical)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        gateways = _gateways(args.gateway)
    except UnknownGateway as exc:
        print(f"gatebench render: {exc}", file=sys.stderr)
        return 2
    if not gateways:
        print("gatebench render: --gateway names no gateway", file=sys.stderr)
        return 2
    result, api = read_api(args)
    policies = PolicySet()
    if args.policies:
        from gatebench.core.errors import PlanError
        from gatebench.core.plan import load_plan

        try:
            policies = load_plan(result).policies
        except PlanError as exc:
            print_problems(exc.problems, stream=sys.stderr)
            return 1
        from gatebench.core.api_keys import with_api_keys

        try:
            # The files are a configuration to deploy: they hold the keys from the variable.
            policies = with_api_keys(policies, os.environ)
        except RunError as exc:
            print(f"gatebench render: {exc}", file=sys.stderr)
            return 1
    redis_host, _, redis_port = args.redis.rpartition(":")
    if not redis_host or not redis_port.isdigit():
        print(f"gatebench render: --redis: expected HOST:PORT, got {args.redis!r}", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    source = result.spec_name or args.spec
    needed, concurrency, plan = _workload_operations(result, args.spec)
    if plan is not None:
        for warning in _deployment_left_out(result, plan, gateways):
            print(warning.format(source), file=sys.stderr)
    cpu = (
        stated_cpu_policy(args.cores)
        if args.cores
        else default_local_policy(sorted(os.sched_getaffinity(0)))
    )
    failed = False
    to_check: list[tuple[str, CheckTask]] = []
    for name in gateways:
        renderer = get_renderer(name)
        folder = out / name
        try:
            target = gateway_target(
                cpu,
                workdir=args.workdir or str(folder),
                listen_host=args.listen_host,
                listen_port=args.port,
                backend_url=args.backend,
                redis_host=redis_host,
                redis_port=int(redis_port),
                concurrency=concurrency,
            )
        except RenderError as exc:
            for problem in exc.problems:
                print(f"gatebench render: {problem.message}", file=sys.stderr)
            return 2
        try:
            rendered = render_leaving_out(renderer, api, target, needed, policies=policies)
        except UnsupportedFeature as exc:
            print(f"{name}: cannot express this API:", file=sys.stderr)
            for problem in exc.problems:
                print(problem.format(result.spec_name or args.spec), file=sys.stderr)
            failed = True
            continue
        for problem in rendered.left_out:
            print(problem.format(result.spec_name or args.spec), file=sys.stderr)
        if rendered.left_out:
            print(rendered.summary(name), file=sys.stderr)
        files = rendered.files
        write_files(files, folder)
        listing = f"{name}: {folder} ({', '.join(sorted(files))})"
        if not args.check:
            print(listing)
            continue
        task = CheckTask(
            renderer, folder, target, rendered.api or api, policies, args.check_timeout
        )
        to_check.append((listing, task))
    if to_check:
        jobs = args.check_jobs or len(os.sched_getaffinity(0))
        tasks = [task for _, task in to_check]
        with contextlib.closing(run_checks(tasks, jobs=jobs, source=source)) as checks:
            for (listing, _), checked in zip(to_check, checks, strict=True):
                for message in checked.messages:
                    print(message, file=sys.stderr)
                print(listing + checked.status, flush=True)
                failed = failed or checked.failed
    return 1 if failed else 0


def _deployment_left_out(result: SpecResult, plan: Plan, gateways: Sequence[str]) -> list[Problem]:
    """Warnings, located at the plan's keys, for the deployment the rendered files leave out
    (``tls``, ``backend.replicas`` and ``balance``) and for each of ``gateways`` that a run of
    the plan leaves out because it cannot render that deployment."""
    from gatebench.core.plan import deployment_needs_of

    out: list[Problem] = []
    tls, backend = plan.tls, plan.backend
    if tls is not None:
        carried = [
            what
            for what, asked in (("h2 by ALPN", tls.http2), ("resumption off", not tls.resumption))
            if asked
        ]
        also = f" ({', '.join(carried)})" if carried else ""
        out.append(
            Problem(
                "/x-gatebench/tls",
                f"the rendered files leave out tls{also}: they listen in plain HTTP/1.1; a run "
                "terminates TLS with certificates it makes for the run and deletes at its end",
                "warning",
            )
        )
    if backend.replicas > 1:
        out.append(
            Problem(
                "/x-gatebench/backend/replicas",
                f"the rendered files leave out backend.replicas ({backend.replicas}) and "
                f"backend.balance ({backend.balance}): they send every request to --backend "
                "alone; a run starts the replicas on ports it picks and renders a pool over them",
                "warning",
            )
        )
    needs = deployment_needs_of(plan)
    for name, reason in deployment_exclusions(gateways, needs).items():
        missing = needs - get_renderer(name).supported_deployment
        first = min(missing, key=FEATURES.index)
        out.append(
            Problem(
                FEATURE_POINTERS[first],
                f"a run of this plan leaves {name} out: {reason}",
                "warning",
            )
        )
    return [result.in_plan(p) for p in out]


def _workload_operations(result: SpecResult, spec: str) -> tuple[set[str], int, Plan | None]:
    """Operation ids the description's own plan benchmarks, the concurrency every gateway's
    pools must hold for it, and the plan (none, the default and None without a valid plan).

    The configurations need only the description, so a plan that ``validate`` refuses does
    not stop the render; its errors are printed as warnings, so that it is not silent."""
    from gatebench.core.errors import PlanError
    from gatebench.core.plan import load_plan

    if result.benchmark_loc is None:
        return set(), DEFAULT_CONCURRENCY, None
    try:
        plan = load_plan(result)
        return {w.operation_id for w in plan.workloads}, plan_concurrency(plan), plan
    except PlanError as exc:
        errors = exc.errors or exc.problems
        for problem in errors:
            print(
                replace(problem, severity="warning").format(result.spec_name or spec),
                file=sys.stderr,
            )
        print(
            f"gatebench render: the x-gatebench plan has {len(errors)} "
            f"error{'s' if len(errors) != 1 else ''} (above, as warnings): validate and run "
            "refuse it; the configurations need only the description",
            file=sys.stderr,
        )
        return set(), DEFAULT_CONCURRENCY, None
