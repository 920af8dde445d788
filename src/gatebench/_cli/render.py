"""``gatebench render SPEC --gateway a,b --out DIR``: the configuration of each gateway.

Writes ``DIR/<gateway>/<file>`` for every gateway asked for (``all`` = every registered one).
A route a gateway cannot express is left out of that gateway's files with a located warning,
unless a workload of the description's plan uses it: then the gateway prints its located
problems and is skipped, and the exit code is 1. ``--check`` also runs each gateway's own
checker where it is installed here; a gateway without one that runs here (Traefik, the JVM
gateways) is booted instead, briefly, with the same API rendered for a free loopback port in
a scratch folder, and its output searched for refused parts of the configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ..errors import RenderError, RunError, UnsupportedFeature, UnsupportedHere
from ..ir import Api
from ..policies import PolicySet
from ..procs import Supervisor, free_port
from ..provisioners import ConfigRejected, boot_gateway, check_config, write_files
from ..renderers import Renderer, RenderTarget, UnknownGateway, gateway_names, get_renderer
from ..renderers._leave_out import render_leaving_out
from ..spec import SpecResult
from ._common import add_spec_arguments, print_problems, read


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "render",
        help="write each gateway's configuration for an API description",
        description="Render the configuration of each gateway: DIR/<gateway>/<file>. "
        f"Gateways: {', '.join(gateway_names())} (or all).",
    )
    add_spec_arguments(parser)
    parser.add_argument(
        "--gateway",
        "-g",
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
        "--workdir",
        metavar="PATH",
        help="absolute folder the files will live in when the gateway runs "
        "(default: the gateway's output folder)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run each gateway's own config checker where it is installed here "
        "(a gateway without one is booted briefly on loopback)",
    )
    parser.add_argument(
        "--policies",
        action="store_true",
        help="apply the plan's policies (x-gatebench policies:); a gateway that cannot apply "
        "them is refused with the reason",
    )
    parser.set_defaults(handler=run)


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
    result = read(args)
    if result.errors:
        print_problems(result.errors, stream=sys.stderr)
        return 1
    api = result.api
    assert api is not None
    policies = PolicySet()
    if args.policies:
        from ..errors import PlanError
        from ..plan import load_plan

        try:
            policies = load_plan(result).policies
        except PlanError as exc:
            print_problems(exc.problems, stream=sys.stderr)
            return 1
        from ..api_keys import with_api_keys

        try:
            # The files are a configuration to deploy: they hold the keys from the variable.
            policies = with_api_keys(policies, os.environ)
        except RunError as exc:
            print(f"gatebench render: {exc}", file=sys.stderr)
            return 1
    out = Path(args.out).resolve()
    needed = _workload_operations(result, args.spec)
    failed = False
    for name in gateways:
        renderer = get_renderer(name)
        folder = out / name
        try:
            target = RenderTarget(
                workdir=args.workdir or str(folder),
                listen_host=args.listen_host,
                listen_port=args.port,
                backend_url=args.backend,
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
        status = ""
        if args.check:
            status = _check(renderer.name, folder, target, rendered.api or api, policies)
            failed = failed or status.startswith(" rejected")
        listing = ", ".join(sorted(files))
        print(f"{name}: {folder} ({listing}){status}")
    return 1 if failed else 0


def _workload_operations(result: SpecResult, spec: str) -> set[str]:
    """Operation ids the description's own plan benchmarks (none without a valid plan).

    The configurations need only the description, so a plan that ``validate`` refuses does
    not stop the render; its errors are printed as warnings, so that it is not silent."""
    from ..errors import PlanError
    from ..plan import load_plan

    if result.benchmark_loc is None:
        return set()
    try:
        return {w.operation_id for w in load_plan(result).workloads}
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
        return set()


def _check(
    name: str, folder: Path, target: RenderTarget, api: Api, policies: PolicySet | None = None
) -> str:
    renderer = get_renderer(name)
    if renderer.check_argv(folder, target) is None:
        if not renderer.runs_here:
            return " [no checker here]"
        return _boot_check(renderer, target, api, policies)
    try:
        check_config(renderer, folder, target)
    except UnsupportedHere as exc:
        return f" [not checked: {exc}]"
    except ConfigRejected as exc:
        print(str(exc), file=sys.stderr)
        return " rejected by its checker"
    return " [checker: ok]"


# Time a gateway has after it is ready to report what it refused (Traefik logs a dropped
# router as it applies its configuration).
_SETTLE_S = 0.3


def _boot_check(
    renderer: Renderer, target: RenderTarget, api: Api, policies: PolicySet | None = None
) -> str:
    """Boot ``api`` rendered for a free loopback port in a scratch folder, read the gateway's
    output, stop it: booting is the check of a gateway without an offline checker."""
    reason = renderer.available_here()
    if reason is not None:
        return f" [not checked: {reason}]"
    with tempfile.TemporaryDirectory(prefix="gatebench-check-") as scratch:
        local = replace(
            target,
            workdir=str(Path(scratch).resolve()),
            listen_host="127.0.0.1",
            listen_port=free_port(),
            admin_port=free_port(),
        )
        log = Path(local.workdir) / f"{renderer.name}.out.log"
        try:
            with Supervisor() as supervisor:
                proc = boot_gateway(
                    renderer, api, local, supervisor, log_path=log, policies=policies
                )
                time.sleep(_SETTLE_S)
                supervisor.stop(proc)
        except RunError as exc:
            print(f"{renderer.name}: the boot failed: {exc}", file=sys.stderr)
            return " rejected at boot"
        problems = renderer.boot_problems(log.read_text(encoding="utf-8", errors="replace"))
    if problems:
        print(
            f"{renderer.name}: the configuration was partly refused at boot:\n"
            + "\n".join(problems),
            file=sys.stderr,
        )
        return " rejected at boot"
    return " [booted: ok]"
