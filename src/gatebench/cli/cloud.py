"""``gatebench cloud ...``: the commands of the Google Cloud path that are not functions.

The Cloud Build steps (cloudbuild/*.yaml) and the VMs run these, and so can anyone on a
laptop: ``gatebench cloud bundle`` builds the functions' archives (``make bundle``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatebench.cli._store import add_store_argument, store_location
from gatebench.core.stats import counted


def run_bundle(args: argparse.Namespace) -> int:
    from gatebench.cloud._bundle import build_bundles

    for path in build_bundles(Path(args.functions), Path(args.out)):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from gatebench.cloud._regression import compare, read_scores

    if args.baseline is None and not args.thresholds:
        print("gatebench: cloud check needs --baseline, --thresholds or both", file=sys.stderr)
        return 2
    documents = []
    for path in (args.result, args.baseline):
        if path is None:
            continue
        try:
            documents.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"gatebench: {path}: {exc}", file=sys.stderr)
            return 1
    status, current = read_scores(documents[0], label=args.result)
    failed = []
    if args.baseline is not None:
        _, baseline = read_scores(documents[1], label=args.baseline)
        findings = compare(baseline, current, args.tolerance)
        for finding in findings:
            print(finding.line())
        failed = [f for f in findings if f.regressed]
    missed = _check_thresholds(args, documents[0]) if args.thresholds else 0
    if status not in ("done", None):
        print(f"the run finished as {status!r}, not 'done'", file=sys.stderr)
        return 1
    if failed:
        print(
            f"{counted(len(failed), 'target')} regressed by more than {args.tolerance:g} points",
            file=sys.stderr,
        )
        return 1
    return 1 if missed else 0


def _check_thresholds(args: argparse.Namespace, result: dict[str, object]) -> int:
    """The run's plan thresholds against its stored measurements; how many failed."""
    from gatebench.cli._common import print_thresholds
    from gatebench.core.report import load_report
    from gatebench.core.thresholds import evaluate, thresholds_from_plan
    from gatebench.store import open_store

    run_id = result.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        print(f"gatebench: {args.result}: /run_id: expected the run's id", file=sys.stderr)
        return 1
    with open_store(store_location(args)) as store:
        report = load_report(store, run_id)
    thresholds = thresholds_from_plan(report.run.plan)
    if not thresholds:
        print(
            f"gatebench: run {run_id}'s plan has no thresholds (x-gatebench thresholds:)",
            file=sys.stderr,
        )
        return 1
    return print_thresholds(evaluate(thresholds, report.summary), f"Thresholds of run {run_id}")


def run_wait_ready(args: argparse.Namespace) -> int:
    from gatebench.cloud import Storage
    from gatebench.cloud._tester import wait_ready

    ready = wait_ready(Storage(), args.runs_bucket, args.run_id, args.timeout)
    print(f"reachable: {', '.join(ready.get('reachable') or [])}")
    for target, reason in sorted((ready.get("unreachable") or {}).items()):
        print(f"unreachable: {target}: {reason}")
    return 0


def run_load(args: argparse.Namespace) -> int:
    from gatebench.cloud import Storage
    from gatebench.cloud._tester import run_load as load

    done = load(Storage(), args.runs_bucket, args.run_id, args.timeout)
    print(f"load finished: {json.dumps(done, sort_keys=True)}")
    return 0


def run_vm_vars(args: argparse.Namespace) -> int:
    from gatebench.cloud import Storage, read_settings
    from gatebench.cloud._objects import VARS_OBJECT
    from gatebench.cloud._vms import vm_vars

    storage = Storage()
    saved_name = VARS_OBJECT.format(run_id=args.run_id)
    if args.saved:
        saved = storage.read_optional(args.runs_bucket, saved_name)
        if saved is not None:
            Path(args.out).write_bytes(saved)
            print(f"{args.out}: the variables provisioning saved")
            return 0
        fleet = None
    else:
        data = storage.read_optional(args.runs_bucket, f"runs/{args.run_id}/fleet.json")
        if data is None:
            print(
                f"gatebench: runs/{args.run_id}/fleet.json is missing (render first)",
                file=sys.stderr,
            )
            return 3
        fleet = json.loads(data)
    settings = read_settings(storage, args.runs_bucket)
    values = vm_vars(settings, fleet, args.run_id, args.runs_bucket)
    if fleet is not None:  # every image the VMs start, pinned by digest (cloud._images)
        from gatebench.cloud import RequestError
        from gatebench.cloud._images import access_token, mirror_of, pin_images

        try:
            values = pin_images(values, mirror_of(settings), token=access_token())
        except RequestError as exc:
            for problem in exc.problems:
                print(f"gatebench: {problem.message}", file=sys.stderr)
            return 3
    text = json.dumps(values, indent=1, sort_keys=True) + "\n"
    if fleet is not None:
        # what each VM alone may hold (its write policies, its TLS key), in its own metadata
        # only: never in the saved copy, which the testers of any run may read
        from gatebench.cloud._tls import CA_OBJECT
        from gatebench.cloud._vms import machine_metadata
        from gatebench.cloud._writes import ambient_signer

        email, sign = ambient_signer()
        metadata, ca_cert = machine_metadata(values, fleet, email=email, sign=sign)
        if ca_cert is not None:  # public: what the testers trust, this run's alone
            name = CA_OBJECT.format(run_id=args.run_id)
            storage.write(args.runs_bucket, name, ca_cert, "application/x-pem-file")
        Path(args.out).write_text(
            json.dumps({**values, "vm_metadata": metadata}, indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        storage.write(args.runs_bucket, saved_name, text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
    print(
        f"{args.out}: {counted(len(values['gateways']), 'gateway VM')}"
        + (", backend" if values["backend"] else "")
        + (", tester" if values["tester"] else "")
    )
    return 0


def run_backend(args: argparse.Namespace) -> int:
    from gatebench.cloud._storage import vm_storage
    from gatebench.vm._backend import serve_backend

    return serve_backend(vm_storage(), args.runs_bucket, args.run_id)


def run_meter(args: argparse.Namespace) -> int:
    from gatebench.cloud._storage import vm_storage
    from gatebench.vm._roles import meter_gateway

    proc = Path(args.proc) if args.proc else None
    return meter_gateway(
        vm_storage(),
        args.runs_bucket,
        args.run_id,
        args.target,
        Path(args.cgroup),
        proc=proc,
        cgroup_root=Path(args.cgroup_root),
    )


def run_live_gateway(args: argparse.Namespace) -> int:
    from gatebench.cloud._storage import vm_storage
    from gatebench.vm._docker import DockerEngine
    from gatebench.vm._live_agent import run_live_agent

    return run_live_agent(
        vm_storage(),
        args.runs_bucket,
        args.run_id,
        args.gateway,
        Path(args.dir),
        DockerEngine(args.docker),
    )


def run_gateway_config(args: argparse.Namespace) -> int:
    from gatebench.cloud._storage import vm_storage
    from gatebench.vm._gateway_config import configure_gateway

    written = configure_gateway(
        vm_storage(), args.runs_bucket, args.run_id, args.gateway, Path(args.out)
    )
    print(f"{args.gateway}: wrote {', '.join(written)}")
    return 0


def run_gateway_tls(args: argparse.Namespace) -> int:
    from gatebench.cloud._storage import vm_storage
    from gatebench.vm._tls import configure_gateway_tls

    written = configure_gateway_tls(
        vm_storage(), args.runs_bucket, args.run_id, args.gateway, Path(args.out)
    )
    print(f"{args.gateway}: wrote tls/{', tls/'.join(written)}")
    return 0


def run_tester(args: argparse.Namespace) -> int:
    from gatebench.cloud._storage import vm_storage
    from gatebench.vm._live_tester import run_live_program
    from gatebench.vm._roles import run_tester as tester

    if not 0 <= args.tester < args.testers:
        print(
            f"gatebench: --tester: expected 0 to {args.testers - 1}, got {args.tester}",
            file=sys.stderr,
        )
        return 2
    return tester(
        vm_storage(),
        args.runs_bucket,
        args.run_id,
        Path(args.workdir),
        args.ready_timeout,
        tester=args.tester,
        testers=args.testers,
        barrier=args.barrier,
        live_program=run_live_program,
    )


_Option = tuple[tuple[str, ...], dict[str, Any]]
"""An option's flags and what ``add_argument`` is told of it."""


def _option(*flags: str, **settings: Any) -> _Option:
    return flags, settings


_RUN = (
    _option("--run-id", required=True, help="the run (r- and 20 hex digits)"),
    _option("--runs-bucket", required=True, help="the deployment's runs bucket"),
    _option("--timeout", type=float, default=900.0, help="seconds (default 900)"),
)
"""The options of every command that acts on one run of the runs bucket."""
_GATEWAY = _option("--gateway", required=True, help="the gateway's name in the run")
_CONFIG_OUT = _option("--out", required=True, help="the gateway's configuration folder")


@dataclass(frozen=True)
class Subcommand:
    """One ``gatebench cloud`` command: what ``--help`` says of it, its options (then
    ``--store`` with ``store``) and the function that runs it."""

    name: str
    help: str
    description: str
    handler: Callable[[argparse.Namespace], int]
    options: tuple[_Option, ...] = _RUN
    store: bool = False


SUBCOMMANDS = (
    Subcommand(
        "bundle",
        "build each function's deployable source archive",
        "Zip functions/NAME/main.py with the gatebench package and pinned "
        "requirements into OUT/NAME.zip, for Cloud Functions (Python 3.12).",
        run_bundle,
        (
            _option("--functions", default="functions", help="folder of the functions"),
            _option("--out", default="build/functions", help="where the archives go"),
        ),
    ),
    Subcommand(
        "check",
        "fail when a cloud run regressed or missed its thresholds (CI)",
        "Check a workflow result. With --baseline: compare its scores, exit 1 "
        "when a target's score dropped by more than --tolerance points or is missing. With "
        "--thresholds: read the run from the result store and apply its plan's thresholds "
        "(x-gatebench thresholds:, as `gatebench run --fail-on-threshold` does), one line per "
        "failed threshold. Exits 1 as well when the run did not finish as done.",
        run_check,
        (
            _option("--result", required=True, help="the workflow's result (JSON file)"),
            _option("--baseline", help="the scores to hold (JSON file)"),
            _option(
                "--tolerance", type=float, default=2.0, help="points a score may drop (default 2)"
            ),
            _option(
                "--thresholds",
                action="store_true",
                help="apply the thresholds of the run's plan to its measurements (needs --store)",
            ),
        ),
        store=True,
    ),
    Subcommand(
        "wait-ready",
        "wait until the run's tester reached the targets (provision build)",
        "Wait for gs://RUNS_BUCKET/runs/RUN/tester/ready.json, written by the "
        "tester VM once it reached the targets. Exits 3 on timeout or when no target answered.",
        run_wait_ready,
    ),
    Subcommand(
        "load",
        "start the run's load on its tester and wait for the end (load build)",
        "Ask the tester VM to run the load (runs/RUN/tester/load-request.json) "
        "and wait for runs/RUN/tester/load-done.json. Exits 3 on timeout or a failed load.",
        run_load,
    ),
    Subcommand(
        "vm-vars",
        "write the Terraform variables of the run's VMs (provision and teardown builds)",
        "Combine the deployment settings and the run's fleet (runs/RUN/fleet.json) "
        "into the variables of infra/vms, every image pinned by the digest its registry gives "
        "it now, write them to --out and save them in the bucket. With --saved: the saved "
        "variables (an empty fleet when there are none). Exits 3 when an image cannot be pinned.",
        run_vm_vars,
        (
            *_RUN,
            _option("--out", required=True, help="the .tfvars.json file to write"),
            _option("--saved", action="store_true", help="use what provisioning saved"),
        ),
    ),
    Subcommand(
        "backend",
        "run the run's backend (the backend VM's command)",
        "Start the backend the plan asks for (built-in or mock, from "
        "runs/RUN/backend.json) and serve until stopped.",
        run_backend,
    ),
    Subcommand(
        "tester",
        "reach the targets, then run the load when asked (the tester VM's command)",
        "Probe every target of runs/RUN/workload.json and write tester/ready.json; "
        "wait for tester/load-request.json; run the load with Gatling; upload the raw log to "
        "raw/RUN/ and write tester/load-done.json.",
        run_tester,
        (
            *_RUN,
            _option("--workdir", default="/var/tmp/gatebench", help="local scratch folder"),
            _option(
                "--ready-timeout", type=float, default=600.0, help="seconds to wait for the targets"
            ),
            _option(
                "--tester", type=int, default=0, help="this tester's index (0 to --testers - 1)"
            ),
            _option("--testers", type=int, default=1, help="how many testers share every phase"),
            _option(
                "--barrier",
                default=None,
                help="with several testers: the phase barrier's URL (http://TESTER-0-HOST:PORT); "
                "tester 0 serves it, the others call it before every phase",
            ),
        ),
    ),
    Subcommand(
        "meter",
        "sample a gateway container's CPU and memory (beside it, on its VM)",
        "Sample the gateway container's cgroup v2 files (cpu.stat, memory.current, "
        "memory.peak, memory.stat) every 0.2 s and upload them to runs/RUN/cgroup/TARGET.jsonl "
        "until every tester has written its load-done marker; the last upload ends with a "
        "meter_done line, which the score step waits for before it turns the samples into each "
        "phase's gateway CPU seconds and peak memory.",
        run_meter,
        (
            *_RUN,
            _option("--target", required=True, help="the gateway's name in the run"),
            _option(
                "--cgroup",
                required=True,
                help="the container's cgroup v2 directory, e.g. "
                "/sys/fs/cgroup/system.slice/docker-ID.scope",
            ),
            _option(
                "--cgroup-root",
                default="/host/cgroup",
                help="where the host's cgroup v2 hierarchy is mounted (the container's cgroup "
                "path is --cgroup below it)",
            ),
            _option(
                "--proc",
                help="the host's /proc: record which of Netty's native transports the "
                "container's processes loaded",
            ),
        ),
    ),
    Subcommand(
        "live-gateway",
        "start and change a gateway's container when the tester asks (beside it, on its VM)",
        "The live agent of a scale or change-under-load run (docs/cloud.md, "
        '"Route scale and changes under load"): read runs/RUN/live/GATEWAY/request.json '
        "every 0.2 s and carry it out through the VM's Docker daemon (--docker): start the "
        "gateway's container on a step's files, check a change with the gateway's own checker, "
        "apply it through the gateway's mechanism (a signal, a watched file, its management "
        "port on the VM's loopback, its commands, a restart); answer in answer.json with when "
        "it happened. Stops once the tester has written its load-done marker.",
        run_live_gateway,
        (
            *_RUN,
            _GATEWAY,
            _option(
                "--dir",
                required=True,
                help="the gateway's folder, mounted where its container has it",
            ),
            _option("--docker", default="/var/run/docker.sock", help="the Docker daemon's socket"),
        ),
    ),
    Subcommand(
        "gateway-config",
        "write a gateway's API keys into its configuration (on its VM, before it starts)",
        "Read the deployment's api_clients secret with this VM's service account, "
        "render the run's configuration of GATEWAY again with those keys (runs/RUN/"
        "render-input.json) and write its files into --out. On failure it writes the reason to "
        "runs/RUN/gateways/GATEWAY/config-error.json and exits 1: the gateway does not start.",
        run_gateway_config,
        (*_RUN, _GATEWAY, _CONFIG_OUT),
    ),
    Subcommand(
        "gateway-tls",
        "write a gateway VM's TLS key and certificate (on its VM, before it starts)",
        "Read this VM's own server key and certificate, which the provision build "
        "made from the run's CA, from its metadata, and write the TLS files into --out/tls. On "
        "failure it writes the reason to runs/RUN/gateways/GATEWAY/config-error.json and exits "
        "non-zero: the gateway does not start.",
        run_gateway_tls,
        (*_RUN, _GATEWAY, _CONFIG_OUT),
    ),
)
"""Every ``gatebench cloud`` command, in the order ``gatebench cloud --help`` lists them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="cloud_command", metavar="COMMAND")
    commands.required = True
    for command in SUBCOMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.description)
        for flags, settings in command.options:
            sub.add_argument(*flags, **settings)
        if command.store:
            add_store_argument(sub)
        sub.set_defaults(handler=command.handler)
