"""The renderer base class and the target a configuration is rendered for.

The contract every gateway module follows is written in ``gatebench.core.renderers``'s docstring;
this module holds the code behind it.
"""

from __future__ import annotations

import abc
import functools
import ipaddress
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from gatebench.core.errors import Problem, RenderError, UnsupportedFeature, UnsupportedHere
from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._deployment import deployment_needs, refuse_missing, supported
from gatebench.core.renderers._parity import Parity
from gatebench.core.renderers._routes import Route, routes_for, unsupported
from gatebench.core.tls import GatewayTls

# A workdir ends up inside configuration files of every syntax: keep it to characters no
# config language treats specially.
_SAFE_WORKDIR = re.compile(r"/[A-Za-z0-9._+/-]*")
_HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
DEFAULT_CONCURRENCY = 1024
"""What a target holds in flight when no plan says (``gatebench.core.fairness``)."""
# Where Debian puts daemons; not always on a non-root PATH.
_SYSTEM_BIN_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


@functools.lru_cache(maxsize=64)
def _backend_parts(url: str) -> tuple[str, str, int]:
    """Scheme, host and port of a backend URL (renderers ask once per route)."""
    parts = urlsplit(url)
    return (
        parts.scheme,
        parts.hostname or "",
        parts.port or (443 if parts.scheme == "https" else 80),
    )


@dataclass(frozen=True)
class RenderTarget:
    """Where a rendered gateway listens, where it forwards to, and where its files live.

    Every field ends up in configuration files, so each one is validated here, once
    (:class:`~gatebench.core.errors.RenderError` on a bad value): renderers may interpolate them.
    """

    workdir: str
    """Absolute POSIX path of the folder holding the rendered files (and the gateway's pid,
    logs and temporary files) when the gateway runs: a local folder, or the folder mounted
    into the container on the cloud path. Characters: ``A-Za-z0-9._+/-``."""
    listen_port: int = 8080
    listen_host: str = "127.0.0.1"
    """An IPv4 address (``0.0.0.0`` in a container) or a host name."""
    backend_url: str = "http://127.0.0.1:9000"
    """``http://host:port`` of the backend (an origin: no path, query or credentials)."""
    admin_port: int | None = None
    """A second loopback-only port for a management interface (Varnish's CLI, Envoy's admin);
    ``None``: no management interface is opened."""
    redis_host: str = "127.0.0.1"
    redis_port: int = 6379
    """Tyk keeps its state in Redis; the cloud path runs one beside it."""
    workers: int = 1
    """The cores the gateway is given (``gatebench.core.fairness.CpuPolicy``): every renderer sets
    its worker processes, threads and event loops from it, each the way its vendor advises
    (nginx ``worker_processes``, HAProxy ``nbthread``, Envoy ``--concurrency``, ``GOMAXPROCS``
    of the Go gateways, Apache's event MPM processes, Varnish's thread pools, the JVMs'
    processor count: the parity table of docs/gateways.md)."""
    concurrency: int = DEFAULT_CONCURRENCY
    """The most requests the plan holds in flight through the gateway at once
    (``gatebench.core.fairness.plan_concurrency``): no upstream pool, idle-connection cache or
    request-thread limit is rendered below it."""
    tls: GatewayTls | None = None
    """TLS the gateway terminates on its listen address (``gatebench.core.tls``); None: plain
    HTTP/1.1."""
    replicas: tuple[str, ...] = ()
    """Origins of the backend replicas when the backend is a pool of two or more (the first
    is ``backend_url``); empty: ``backend_url`` alone. Each is ``http://host:port``."""
    balance: str = "round_robin"
    """How the pool picks a replica: ``round_robin`` or ``least_conn``."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not _SAFE_WORKDIR.fullmatch(self.workdir) or "/../" in self.workdir + "/":
            problems.append(
                f"workdir must be an absolute path of A-Za-z0-9._+/- characters; got {self.workdir!r}"
            )
        if (
            not isinstance(self.workers, int)
            or isinstance(self.workers, bool)
            or not 0 < self.workers <= 256
        ):
            problems.append(f"workers must be an integer from 1 to 256; got {self.workers!r}")
        if (
            not isinstance(self.concurrency, int)
            or isinstance(self.concurrency, bool)
            or not 0 < self.concurrency <= 100_000
        ):
            problems.append(
                f"concurrency must be an integer from 1 to 100000; got {self.concurrency!r}"
            )
        for label, port in (
            ("listen_port", self.listen_port),
            ("admin_port", self.admin_port),
            ("redis_port", self.redis_port),
        ):
            if port is not None and (
                not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536
            ):
                problems.append(f"{label} must be a TCP port (1-65535); got {port!r}")
        for label, host in (("listen_host", self.listen_host), ("redis_host", self.redis_host)):
            if not _valid_host(host):
                problems.append(f"{label} must be an IPv4 address or a host name; got {host!r}")
        parts = urlsplit(self.backend_url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or not _valid_host(parts.hostname)
            or parts.username is not None
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or (parts.port is None and ":" in parts.netloc)
            or (port is not None and not 0 < port < 65536)
        ):
            problems.append(
                f"backend_url must be http(s)://host:port with no path, query or credentials; "
                f"got {self.backend_url!r}"
            )
        if self.replicas:
            if len(self.replicas) < 2 or self.replicas[0] != self.backend_url:
                problems.append(
                    "replicas must list two or more origins, the first being backend_url; "
                    f"got {self.replicas!r}"
                )
            for url in self.replicas:
                if not _plain_origin(url):
                    problems.append(f"a replica must be http://host:port; got {url!r}")
        if self.balance not in ("round_robin", "least_conn"):
            problems.append(f"balance must be round_robin or least_conn; got {self.balance!r}")
        if problems:
            raise RenderError([Problem("", p) for p in problems])

    @property
    def pooled(self) -> bool:
        """True when the backend is a pool of replicas (the gateway balances)."""
        return len(self.replicas) > 1

    @property
    def upstreams(self) -> tuple[tuple[str, int], ...]:
        """(host, port) of every backend replica (one: the backend itself)."""
        if not self.pooled:
            return ((self.backend_host, self.backend_port),)
        return tuple(_backend_parts(url)[1:] for url in self.replicas)

    def deployment_needs(self) -> frozenset[str]:
        """The deployment features (``_deployment.FEATURES``) this target asks for."""
        return deployment_needs(
            tls=self.tls is not None,
            http2=self.tls is not None and self.tls.http2,
            resumption=self.tls is None or self.tls.resumption,
            replicas=len(self.replicas) or 1,
            balance=self.balance,
        )

    @property
    def listen_scheme(self) -> str:
        """``https`` when the gateway terminates TLS, else ``http``."""
        return "https" if self.tls is not None else "http"

    @property
    def backend_scheme(self) -> str:
        return _backend_parts(self.backend_url)[0]

    @property
    def backend_host(self) -> str:
        return _backend_parts(self.backend_url)[1]

    @property
    def backend_port(self) -> int:
        return _backend_parts(self.backend_url)[2]

    @property
    def backend_origin(self) -> str:
        """``http://host:port`` with the port always written."""
        return f"{self.backend_scheme}://{self.backend_host}:{self.backend_port}"

    @property
    def listen_address(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    def placeholders(self) -> dict[str, str]:
        """Values for the ``{...}`` placeholders of command templates."""
        return {
            "workdir": self.workdir,
            "listen_host": self.listen_host,
            "listen_port": str(self.listen_port),
            "listen_address": self.listen_address,
            "admin_port": str(self.admin_port) if self.admin_port is not None else "",
            "workers": str(self.workers),
            "concurrency": str(self.concurrency),
        }

    def path(self, *parts: str) -> str:
        """An absolute path inside the workdir, for a config file: ``path("logs", "x.log")``."""
        return str(PurePosixPath(self.workdir, *parts))


@dataclass(frozen=True)
class Companion:
    """A process a gateway needs beside it on this machine (Tyk's Redis): started before the
    gateway, ready once it answers on ``port`` of 127.0.0.1, stopped right after the gateway."""

    name: str
    argv: tuple[str, ...]
    """Element 0 is the program, found like the gateway's own (:meth:`Renderer.find_program`)."""
    port: int
    install_hint: str
    """How to install the program when it is missing."""
    probe: bytes = b""
    """Sent once connected; the answer must start with :attr:`answer` (empty: a connection
    is enough)."""
    answer: bytes = b""


LiveKind = Literal["signal", "file-watch", "admin-api", "command", "restart"]


@dataclass(frozen=True)
class LiveChange:
    """How a running gateway takes a new configuration (docs/scale.md), declared per gateway
    and carried out by ``gatebench.local.provisioners.live``. In every case the new files are first
    written over the old ones, each by an atomic rename, and checked by the gateway's checker;
    then, by ``kind``:

    - ``signal``: ``signal`` (``SIGHUP``) is sent to the process gatebench started (the master);
    - ``file-watch``: nothing more: the gateway watches its files;
    - ``admin-api``: ``method path`` on the loopback ``admin_port``, with the file ``body``
      (relative to the workdir; ``None``: no body) as ``content_type``;
    - ``command``: each argv of ``commands`` in turn (placeholders as in ``run_command``, plus
      ``{label}``: a new name for each change);
    - ``restart``: no live mechanism: the gateway is stopped and started again.
    """

    kind: LiveKind
    mechanism: str
    """One line for reports: what the gateway's own documentation calls it."""
    signal: str | None = None
    method: str = "POST"
    path: str = ""
    content_type: str = ""
    body: str | None = None
    commands: tuple[tuple[str, ...], ...] = ()


RESTART = LiveChange(
    "restart",
    "gatebench drives no live mechanism of this gateway: it is stopped and started with the "
    "new files, and what that restart costs is measured",
)


def _plain_origin(url: str) -> bool:
    """``http://host:port`` with a valid host and port, nothing else."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme == "http"
        and bool(parts.hostname)
        and _valid_host(parts.hostname or "")
        and port is not None
        and parts.username is None
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
    )


def _valid_host(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return bool(_HOSTNAME.fullmatch(host))


class Renderer(abc.ABC):
    """One gateway: declarative metadata plus a pure :meth:`render`. See the package docstring."""

    name: ClassVar[str]
    """Canonical lower-case name (``spring-cloud-gateway``); the module is ``spring_cloud_gateway``."""
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str]
    """One line for ``gatebench render --help`` and the docs."""
    gateway_version: ClassVar[str]
    """The gateway version the output is written for and tested with (``1.22``)."""
    output_files: ClassVar[tuple[str, ...]]
    """Relative POSIX paths :meth:`render` returns, in order (the first is the main config)."""
    runs_here: ClassVar[bool]
    """True when the gateway runs as a local process (local path, route replay)."""
    cloud_image: ClassVar[str | None]
    """Pinned official container image for the cloud path; ``None`` for a managed service."""
    check_command: ClassVar[tuple[str, ...] | None] = None
    """The gateway's own config checker; ``{workdir}`` is replaced; element 0 is the program."""
    run_command: ClassVar[tuple[str, ...] | None] = None
    """The gateway in the foreground, same placeholders; ``None`` when it cannot run here."""
    boot_check: ClassVar[bool] = False
    """Its checker passes configurations the gateway refuses at start (KrakenD's ``check``
    accepts paths its router panics on): ``render --check`` boots it too."""
    readiness_timeout: ClassVar[float] = 15.0
    """Seconds from start to the first answered HTTP request before the boot counts as failed."""
    check_seconds_per_route: ClassVar[float] = 0.01
    """How much longer its check (the checker, or the boot of a gateway without one) may take
    per route, above a fixed base (``gatebench.local.provisioners.check_limit``)."""
    ready_path: ClassVar[str | None] = None
    """For a gateway that answers before its routes are loaded: a path on the target's
    ``admin_port`` that answers 200 once they are; readiness waits for it. ``None`` (or no
    admin port): any answer on the listen port means ready."""
    admin_port_shares_tls: ClassVar[bool] = False
    """The ``admin_port`` is served with the listen port's TLS when the target has TLS (Tyk's
    control API takes its ``http_server_options``): readiness asks it over TLS."""
    install_hint: ClassVar[str] = "run `make setup-all`"
    cloud_only_reason: ClassVar[str] = "it renders; runs on the cloud path"
    """For a gateway that does not run here (``runs_here`` false): why, for ``doctor``."""
    vendor_bin_dirs: ClassVar[tuple[str, ...]] = ()
    """Where the vendor's own package puts the program when not on PATH (searched last)."""
    vendor_installed: ClassVar[bool] = False
    """True for a gateway gatebench's setup does not install (no registry it installs from
    carries it: KrakenD, Tyk): it runs here when the user installed it from its vendor
    (``install_hint`` says how), and is reported "not installed here" otherwise."""
    forwards_host: ClassVar[bool] = True
    """The backend receives the client's ``Host``; ``False``: the backend's own ``host:port``
    (KrakenD builds a new request). Route replay expects what this says."""
    routes_empty_parameters: ClassVar[bool] = False
    """The gateway routes an empty whole-segment parameter followed by more of the path
    (``/a//c`` reaches ``/a/{x}/c``; KrakenD's router). Route replay expects it."""
    refusal_status: ClassVar[int] = 404
    """What the gateway answers a request outside the API: 404, but Tyk's allow list 403."""
    normalizes_path: ClassVar[bool] = False
    """The gateway forwards the path in RFC 3986 normal form (escapes of unreserved
    characters decoded, ``%41`` → ``A``; the others upper-cased): the same URI, not the same
    bytes. Route replay compares paths in that form for it."""

    fixed_env: ClassVar[Mapping[str, str]] = {}
    """Environment variables the gateway always runs with, here (``env``) and in its container
    (KrakenD's ``USAGE_DISABLE=1``, without which it reports usage to an outside host)."""
    cores_setting: ClassVar[str] = "managed by its provider"
    """How the gateway uses the cores it is given, as its own settings say it, with the
    command templates' placeholders (``worker_processes {workers}``), for :meth:`cpu_setting`."""
    cores_env: ClassVar[str | None] = None
    """The environment variable that holds the gateway's runtime to the target's cores
    (``GOMAXPROCS`` of the Go gateways, whose default is every core of the machine): set by
    :meth:`runtime_env`, named by :meth:`cpu_setting`."""
    cloud_random_env: ClassVar[tuple[str, ...]] = ()
    """Environment variables the gateway's container gets on the cloud path with a random
    value generated on its VM at every boot and stored nowhere (Tyk's control-API secret,
    ``TYK_GW_SECRET``): infra/vms/templates/gateway.sh.tftpl passes them to the gateway alone."""

    supported_policies: ClassVar[frozenset[str]] = frozenset()
    """Policy features (``gatebench.core.policies.FEATURES``) this renderer applies natively, with
    the gateway's own modules, through :meth:`apply_policies`. The support matrix in
    docs/gateways.md is built from these declarations (``gatebench.core.renderers.support_matrix``)."""
    policy_gaps: ClassVar[Mapping[str, str]] = {}
    """Feature → why the gateway cannot apply it natively, for features it lacks although it
    ships something close (Kong's jwt plugin checks no audience): the exclusion reason says it."""

    deployment_gaps: ClassVar[Mapping[str, str]] = {}
    """Deployment feature (``renderers._deployment.FEATURES``: TLS, HTTP/2, resumption off,
    replica pools by balance) → why the gateway cannot render it (the exclusion reason)."""
    supported_deployment: ClassVar[frozenset[str]] = frozenset()
    """The deployment features the renderer renders natively when the target asks: every one
    its ``deployment_gaps`` does not name (derived for each renderer class, never declared)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.supported_deployment = supported(cls.deployment_gaps)

    http2_always: ClassVar[bool] = False
    """The gateway offers ``h2`` by ALPN whenever it terminates TLS (no setting turns it off):
    without ``http2`` in the plan the engine keeps to HTTP/1.1 itself."""
    health_checks: ClassVar[str] = "none"
    """How the gateway's pool notices a dead replica, for the support matrix: ``active``
    (it probes each replica), ``passive`` (it watches failed requests), ``active + passive``
    or ``none``."""

    parity: ClassVar[Parity | None] = None
    """How the gateway meets each rule of a fair fight (``_parity.RULES``), with the vendor
    pages it follows: the parity table of docs/gateways.md. ``None`` only for a managed
    service, whose settings are its provider's."""
    jit_warmup_s: ClassVar[float] = 0.0
    """Seconds of load a gateway that compiles its code at run time (a JVM) needs after it
    starts before its latency stops falling (measured: ``python -m benchmarks jit_warmup``);
    every kind of run warms it up at least this long before it measures (0: no JIT)."""

    trace_refusal: ClassVar[str | None] = None
    """Why the gateway cannot forward a ``TRACE`` request (its core answers it itself), for
    :meth:`route_limitation`; ``None``: it forwards TRACE like any other method."""

    live_change: ClassVar[LiveChange] = RESTART
    """How the running gateway takes a new configuration (:class:`LiveChange`); the files
    come from :meth:`render_live`."""

    # -- to implement -----------------------------------------------------------------------

    @abc.abstractmethod
    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """Every file of a complete configuration: relative path → text (LF, final newline).

        Deterministic: the same IR and target give the same bytes. Raises
        :class:`~gatebench.core.errors.UnsupportedFeature` with one located problem per operation
        the gateway cannot express (never drops one silently).
        """

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        """``files`` (from :meth:`render`) with ``policies`` enforced; called only when every
        feature the policies need is in :attr:`supported_policies`
        (``gatebench.core.renderers.render_with_policies``). A gateway whose policies edit its
        rendered files names the function of its policies module that does it
        (``apply_policies = staticmethod(apply_nginx_policies)``, same parameters)."""
        raise UnsupportedFeature(
            [Problem("/x-gatebench/policies", f"{self.name} renders no policies")]
        )

    def policy_limits(self, policies: PolicySet) -> tuple[str, ...]:
        """Why the gateway cannot express some values of ``policies`` although it declares
        their features (a window shorter than its rate limiter's timer, a rate below its
        unit): one phrase per reason, naming the gateway's own limit and the value asked;
        ``()`` when it can. The gateway is then left out like one lacking a feature
        (``gatebench.core.renderers.policy_exclusions``), never given a value it would refuse
        at start or a different limit. A gateway with limits names the function of its
        policies module that finds them (``policy_limits = staticmethod(...)``)."""
        return ()

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """The files of a gateway that will take changes through :attr:`live_change` (an admin
        endpoint on the loopback ``admin_port``, a watched file): :meth:`render`'s unless the
        mechanism needs more. Same routes, same semantics."""
        return self.render(api, target)

    # -- commands ----------------------------------------------------------------------------
    #
    # Command templates hold placeholders filled from the target: {workdir}, {listen_host},
    # {listen_port}, {listen_address}, {admin_port}, {workers}. Pass the target the files
    # were rendered for; without one, RenderTarget(workdir=workdir) (its defaults) is used.

    def check_argv(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> list[str] | None:
        """argv of the gateway's own config checker for files in ``workdir``; ``None`` when the
        gateway has none here. Raises :class:`UnsupportedHere` when its program is missing."""
        if self.check_command is None or not self.runs_here:
            return None
        return self._argv(self.check_command, workdir, target)

    def run_argv(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> list[str] | None:
        """argv that runs the gateway in the foreground with the files in ``workdir``;
        ``None`` when it cannot run here. Raises :class:`UnsupportedHere` when its program is
        missing (with the command that installs it)."""
        if self.run_command is None or not self.runs_here:
            return None
        return self._argv(self.run_command, workdir, target)

    def cloud_argv(self, target: RenderTarget) -> list[str] | None:
        """The container command on the cloud path (program name as is, files mounted at
        ``target.workdir``); ``None`` means the image's own entrypoint and command."""
        if self.run_command is None:
            return None
        values = target.placeholders()
        return [_fill(part, values) for part in self.run_command]

    def cloud_check_argv(self, target: RenderTarget) -> list[str] | None:
        """The gateway's checker inside its container on the cloud path, for files at
        ``target.workdir`` (program name as is); ``None`` when it has none. A live change on a
        gateway VM is checked with it before it is applied (gatebench.vm._live_agent)."""
        if self.check_command is None:
            return None
        values = target.placeholders()
        return [_fill(part, values) for part in self.check_command]

    def env(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> dict[str, str]:
        """Extra environment variables for the checker and the process here: what it runs
        with on both paths (:meth:`runtime_env`), plus what only a local process needs."""
        return self.runtime_env(target or RenderTarget(workdir=str(workdir)))

    def runtime_env(self, target: RenderTarget) -> dict[str, str]:
        """Environment variables the gateway runs with on both paths, here and in its
        container: :attr:`fixed_env` plus what its CPU share needs (:attr:`cores_env`).
        Values are plain words (``infra/vms/variables.tf`` checks them)."""
        env = dict(self.fixed_env)
        if self.cores_env is not None:
            env[self.cores_env] = str(target.workers)
        return env

    def cpu_setting(self, target: RenderTarget) -> str:
        """How the gateway uses the cores it is given, as its own settings say it, for the
        run's environment and the report (``nginx: worker_processes 2``); the parity test
        holds the rendered files to it. :attr:`cores_env` and its value for a gateway that has
        one, else :attr:`cores_setting` filled in."""
        if self.cores_env is not None:
            return f"{self.cores_env}={target.workers}"
        return _fill(self.cores_setting, target.placeholders())

    def prepare(self, workdir: Path) -> None:  # noqa: B027 - an optional hook
        """Create what the gateway expects beside its files (folders) before it starts."""

    def boot_problems(self, log: str) -> list[str]:
        """Lines of the gateway's output, once it is ready, saying it refused part of its
        configuration while it kept running (booting is the check of a gateway without one)."""
        return []

    def companions(self, target: RenderTarget) -> tuple[Companion, ...]:
        """Processes the gateway needs beside it here, started before it (boot_gateway)."""
        return ()

    def forwarded_query(self, raw: str) -> str:
        """The query string the backend receives when a client sends ``raw`` (without the
        ``?``; ``""`` for none): ``raw`` itself, unless the gateway rebuilds the query (KrakenD;
        docs/gateways.md). Route replay expects exactly this."""
        return raw

    def forwarded_path(self, raw: str) -> str:
        """The path the backend receives for a client's ``raw`` path the gateway routes:
        ``raw`` itself unless the gateway rebuilds the path (KrakenD; docs/gateways.md)."""
        return raw

    def answers_itself(self, raw_path: str) -> int | None:
        """The status the gateway answers, without forwarding, a request it routes to
        ``raw_path`` (KrakenD: 400 for a parameter value holding an escaped ``?``, ``#`` or
        ``%``); ``None``: it forwards it."""
        return None

    def query_problem(self, names: Sequence[str]) -> str | None:
        """Why requests whose query holds the parameters ``names`` (in the order sent, a
        name as often as it is sent) cannot be measured through this gateway, because it
        would not forward them as sent; ``None`` when it can. Only gateways that rebuild the
        query (:meth:`forwarded_query`) have reasons."""
        return None

    def available_here(self) -> str | None:
        """``None`` when the gateway can run here, else why not (with the install hint)."""
        if not self.runs_here or self.run_command is None:
            return f"{self.name} only runs on the cloud path"
        try:
            self.run_argv("/")
            self.check_argv("/")
            for companion in self.companions(RenderTarget(workdir="/")):
                self.find_program(companion.argv[0], companion.install_hint)
        except UnsupportedHere as exc:
            return str(exc)
        return None

    def _argv(
        self,
        template: tuple[str, ...],
        workdir: str | os.PathLike[str],
        target: RenderTarget | None,
    ) -> list[str]:
        values = (target or RenderTarget(workdir=str(workdir))).placeholders()
        values["workdir"] = str(workdir)
        argv = [_fill(part, values) for part in template]
        argv[0] = self.find_program(argv[0])
        return argv

    def find_program(self, program: str, install_hint: str | None = None) -> str:
        """An absolute path to ``program``: ``GATEBENCH_<NAME>_BIN`` (``GATEBENCH_NGINX_BIN``),
        then this Python's own bin folder (PyPI-installed gateways such as Envoy), then PATH,
        the system sbin/bin folders and :attr:`vendor_bin_dirs`. A missing one raises :class:`UnsupportedHere` with
        ``install_hint`` (default: the gateway's)."""
        variable = f"GATEBENCH_{re.sub(r'[^A-Z0-9]', '_', program.upper())}_BIN"
        override = os.environ.get(variable)
        if override:
            if not (os.path.isfile(override) and os.access(override, os.X_OK)):
                raise UnsupportedHere(
                    f"{self.name}: {variable}={override!r} is not an executable file"
                )
            return override
        own = Path(sys.executable).parent / program
        if own.is_file() and os.access(own, os.X_OK):
            return str(own)
        found = shutil.which(program) or shutil.which(
            program, path=os.pathsep.join((*_SYSTEM_BIN_DIRS, *self.vendor_bin_dirs))
        )
        if found is None:
            raise UnsupportedHere(
                f"{self.name}: {program!r} is not installed here; "
                f"{install_hint or self.install_hint}"
            )
        return found

    # -- helpers for subclasses -------------------------------------------------------------

    def routes(self, api: Api) -> tuple[Route, ...]:
        """The IR's routes, validated and in priority order (see ``_routes``)."""
        return routes_for(api)

    def render_routes(self, api: Api, target: RenderTarget) -> tuple[Route, ...]:
        """Where every :meth:`render` starts: a deployment the gateway cannot render refused
        (:meth:`refuse_missing_deployment`), then the routes (:meth:`routes`), each one it
        cannot forward unchanged refused, located (:meth:`route_limitation`)."""
        self.refuse_missing_deployment(target)
        routes = self.routes(api)
        self.fail_unsupported(
            [
                unsupported(route, self.name, why)
                for route in routes
                if (why := self.route_limitation(route)) is not None
            ]
        )
        return routes

    def route_limitation(self, route: Route) -> str | None:
        """Why the gateway cannot forward ``route`` unchanged, whatever the rest of the API;
        ``None``: it can. By default only a TRACE route, when :attr:`trace_refusal` says why."""
        return self.trace_refusal if route.method == "TRACE" else None

    def refuse_missing_deployment(self, target: RenderTarget) -> None:
        """Raise a located :class:`UnsupportedFeature` when the target asks for TLS, HTTP/2,
        resumption off or a pool the gateway cannot render (:meth:`render_routes`)."""
        refuse_missing(
            self.name, self.supported_deployment, self.deployment_gaps, target.deployment_needs()
        )

    def fail_unsupported(self, problems: list[Problem]) -> None:
        """Raise every collected problem at once (no-op when there is none)."""
        if problems:
            raise UnsupportedFeature(problems)

    def __repr__(self) -> str:
        return f"<renderer {self.name}>"


class InlinePoliciesRenderer(Renderer):
    """A gateway whose policies are written inline in the files it renders, not edited into
    them afterwards (Kong's plugins nested in its routes, Tyk's cache in its API definition):
    :meth:`render_files` writes the files with the policies, :meth:`render` with none."""

    @abc.abstractmethod
    def render_files(self, api: Api, target: RenderTarget, policies: PolicySet) -> dict[str, str]:
        """Every file of a complete configuration, ``policies`` included (:meth:`render`'s
        contract)."""

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        return self.render_files(api, target, PolicySet())

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        return self.render_files(api, target, policies)


def _fill(template: str, values: Mapping[str, str]) -> str:
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


def finish_text(text: str) -> str:
    """LF line ends, no trailing spaces, exactly one final newline: goldens compare bytes."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).rstrip("\n") + "\n"


def as_files(files: Mapping[str, str]) -> dict[str, str]:
    return {name: finish_text(text) for name, text in files.items()}
