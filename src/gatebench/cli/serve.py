"""``gatebench serve``: the upload form and dashboard on this machine (docs/frontend.md).

Also ``gatebench serve --export DIR``: write the static site with a ``config.json`` for
another host (the GCP bucket), instead of serving it.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from gatebench.cli._common import _size, number
from gatebench.cli._store import add_store_argument, store_location
from gatebench.core.spec import DEFAULT_LIMITS
from gatebench.local.procs import Terminated
from gatebench.store import open_store
from gatebench.web._limits import ServeLimits

if TYPE_CHECKING:
    from gatebench.web import SiteConfig

DEFAULT_PORT = 8321

_BOUNDS = (
    ("max_queued", "N", "runs that may wait at once; more uploads get 429 with Retry-After"),
    ("max_parses", "N", "uploads read and checked at once; the others wait for a slot"),
    ("max_connections", "N", "connections served at once; more get 503"),
    (
        "read_timeout",
        "S",
        "seconds a request's head may take, however its bytes trickle in; a body gets this "
        f"plus its length at {ServeLimits.min_body_rate // 1024} KiB/s",
    ),
)
"""The bounds the command line sets: a field of ``ServeLimits`` (its option, ``--max-queued``,
and its default), the option's metavar and what it bounds."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; anything else lets other machines upload "
        "and start runs: there is no authentication)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"0 picks a free one (default {DEFAULT_PORT})",
    )
    add_store_argument(parser, results=True)
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=DEFAULT_LIMITS.max_bytes,
        help="largest upload accepted (default 25MB, the spec loader's limit)",
    )
    parser.add_argument(
        "--upload",
        choices=("direct", "signed-url"),
        default="direct",
        help="direct: the page posts the spec and the run is queued (default); signed-url: "
        "the page PUTs it to a signed URL of a stand-in bucket, as on Google Cloud",
    )
    parser.add_argument(
        "--site-config",
        metavar="FILE",
        help="serve this config.json instead of the one the options above imply",
    )
    parser.add_argument("--frontend", metavar="DIR", help="the site's folder (default frontend/)")
    parser.add_argument(
        "--stop-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="on Ctrl-C, how long a running benchmark may take to tear down (default 60)",
    )
    bounds = parser.add_argument_group('bounds (docs/frontend.md, "What keeps it bounded")')
    for name, metavar, text in _BOUNDS:
        default = getattr(ServeLimits, name)
        bounds.add_argument(
            "--" + name.replace("_", "-"),
            type=number(type(default)),
            default=default,
            metavar=metavar,
            help=f"{text} (default {default:g})",
        )
    export = parser.add_argument_group("export the static site instead of serving it")
    export.add_argument("--export", metavar="DIR", help="write the site and its config.json here")
    export.add_argument("--mode", choices=("local", "gcp"), default="gcp")
    export.add_argument("--api", metavar="URL", help="the read API's base URL (ends in /)")
    export.add_argument(
        "--upload-endpoint", metavar="URL", help="the upload API's base URL (ends in /)"
    )


def serve(args: argparse.Namespace) -> int:
    from gatebench.local.procs import become_subreaper
    from gatebench.web import SiteConfig, build_server, default_frontend_dir, is_loopback

    frontend = Path(args.frontend) if args.frontend else default_frontend_dir()
    if not (frontend / "index.html").is_file():
        print(
            f"gatebench serve: {frontend}/index.html not found; pass --frontend DIR",
            file=sys.stderr,
        )
        return 2
    site = SiteConfig.read(args.site_config) if args.site_config else None
    if args.export:
        return _export(args, frontend, site)
    if not is_loopback(args.host):
        print(
            f"gatebench serve: warning: listening on {args.host}: anyone who can reach this "
            "machine can upload specs and start benchmarks here (there is no authentication)",
            file=sys.stderr,
        )
    results = Path(args.results)
    location = store_location(args)
    # This process runs nothing but the queue: whatever a dead worker leaves below it is
    # re-parented here and stopped by PID after the run (RunQueue.sweep).
    sweep = become_subreaper()
    with open_store(location) as store:
        server = build_server(
            host=args.host,
            port=args.port,
            frontend=frontend,
            store=store,
            store_location=location,
            results_dir=results,
            max_bytes=args.max_bytes,
            upload_method=args.upload,
            site=site,
            stop_timeout=args.stop_timeout,
            sweep=sweep,
            limits=ServeLimits(**{name: getattr(args, name) for name, _, _ in _BOUNDS}),
        )
        host, port = server.server_address
        shown = f"[{host}]" if ":" in host else host
        print(
            f"gatebench serve: http://{shown}:{port}/ (store {location}, results {results}/); "
            "Ctrl-C stops",
            flush=True,
        )
        previous = signal.signal(signal.SIGTERM, _terminated)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            # Stopping must not be cut short by a second Ctrl-C: the queue is tearing down.
            ignored = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                print("gatebench serve: stopping", file=sys.stderr, flush=True)
                server.server_close()
                stopped = server.state.queue.shutdown() if server.state.queue else None
                if stopped is not None:
                    print(
                        f"gatebench serve: run {stopped.run_id} was stopped and torn down",
                        file=sys.stderr,
                    )
            finally:
                for sig, handler in ignored.items():
                    signal.signal(sig, handler)
                signal.signal(signal.SIGTERM, previous)
    print("gatebench serve: stopped", file=sys.stderr)
    return 0


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def _export(args: argparse.Namespace, frontend: Path, site: SiteConfig | None) -> int:
    from gatebench.web import SiteConfig, export_site

    if site is None:
        if not args.api or not args.upload_endpoint:
            print(
                "gatebench serve --export: give --api URL and --upload-endpoint URL "
                "(or --site-config FILE)",
                file=sys.stderr,
            )
            return 2
        site = SiteConfig.from_dict(
            {
                "mode": args.mode,
                "api": args.api,
                "upload": {
                    "endpoint": args.upload_endpoint,
                    "method": "signed-url" if args.mode == "gcp" else args.upload,
                },
                "max_bytes": args.max_bytes,
            },
            source="the command line",
        )
    written = export_site(frontend, Path(args.export), site)
    print(
        f"gatebench serve: wrote {len(written)} files to {args.export}/ (config.json: {site.mode})"
    )
    return 0
