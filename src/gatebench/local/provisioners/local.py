"""The local provisioner: gateways as supervised processes on free loopback ports.

Built on the boot helpers of ``_boot`` (``write_files``, ``check_config``, ``start_gateway``):
render and write into ``<run>/gateways/<name>/``, run the gateway's own checker, start it in
the foreground under the caller's :class:`~gatebench.local.procs.Supervisor`, wait for a real HTTP
answer. Each gateway is rendered for the run's CPU policy (``gatebench.core.fairness``: the same
cores for every gateway, its workers and threads set to them) and the plan's concurrency (no
pool below it), through ``fairness.gateway_target``. A gateway's companions (Tyk's Redis, on a free loopback
port of its own) start before it and stop after it; their CPU counts as the gateway's.
Gateways that only run on the cloud path (Kong, Google API Gateway) and gateways not installed
here (KrakenD and Tyk come from their vendors) raise :class:`~gatebench.core.errors.UnsupportedHere`,
which is reported, not fatal. With ``tls`` every gateway terminates TLS with the run's
certificate (its URLs are https); with ``replicas`` it balances over the backend replicas
(``renderers._deployment``).

API keys (``auth.api_key``) are in the files of the gateways that compare no hash, and the
files are in the run's folder: once a gateway has read its configuration (it is ready, or it
failed to start) its rendered files are redacted (``gatebench.core.api_keys.redact``), and at
teardown, once it has stopped, every file of its folder is (a binary file holding a key, a
compiled VCL, is removed).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from pathlib import Path

from gatebench.core.api_keys import policy_keys
from gatebench.core.errors import GatebenchError, UnsupportedHere
from gatebench.core.fairness import CpuPolicy, gateway_target
from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers import RenderTarget
from gatebench.core.renderers._base import DEFAULT_CONCURRENCY
from gatebench.core.tls import GatewayTls
from gatebench.local.procs import ManagedProcess, Supervisor, free_port
from gatebench.local.provisioners import Endpoint, Provisioned
from gatebench.local.provisioners._boot import redact_file


class LocalProvisioner:
    name = "local"

    def __init__(
        self,
        supervisor: Supervisor,
        *,
        cpu: CpuPolicy,
        concurrency: int = DEFAULT_CONCURRENCY,
        policies: PolicySet | None = None,
        allow_missing_policies: bool = False,
        tls: GatewayTls | None = None,
        replicas: Sequence[str] = (),
        balance: str = "round_robin",
    ) -> None:
        self.supervisor = supervisor
        self.tls = tls
        """TLS every gateway terminates (the run's folder, ``gatebench.core.tls``); None: plain."""
        self.replicas = tuple(replicas)
        """The backend replicas' origins when the backend is a pool (two or more)."""
        self.balance = balance
        self.cpu = cpu
        """The cores every gateway is given (its workers and threads follow them)."""
        self.concurrency = concurrency
        self.policies = policies or PolicySet()
        """What every gateway enforces (``render_with_policies``)."""
        self.allow_missing_policies = allow_missing_policies
        self._targets: dict[str, object] = {}
        self._renderers: dict[str, object] = {}
        self._procs: dict[str, ManagedProcess] = {}
        self._logs: dict[str, Path] = {}
        self._check_limits: dict[str, float] = {}
        """Gateway → the seconds its checker may take (``check_limit`` for its routes)."""
        self._files: dict[str, tuple[Path, tuple[str, ...]]] = {}
        """Gateway → its folder and rendered files, redacted of API keys (``_redact``)."""
        self.unsupported: dict[str, str] = {}
        """Gateways rendered but not runnable here (cloud path only, or not installed), with
        the reason."""
        self.rendered: dict[str, RenderTarget] = {}
        """Every gateway whose files were written, in order (those that run here or not), and
        the target it was rendered for."""
        self.routes_left_out: dict[str, str] = {}
        """Gateways that left routes no workload uses out of their files: the summary."""

    def render(
        self,
        gateways: list[str],
        api: Api,
        backend_url: str,
        run_dir: Path,
        needed: Collection[str] = (),
    ) -> dict[str, str]:
        """Render every gateway; ``needed`` are the workloads' operation ids (a route no
        workload uses and a gateway cannot express is left out of that gateway's files)."""
        from gatebench.core.renderers import get_renderer
        from gatebench.core.renderers._leave_out import render_leaving_out
        from gatebench.local.provisioners._boot import check_limit, write_files

        failures: dict[str, str] = {}
        for name in gateways:
            workdir = (run_dir / "gateways" / name).resolve()
            try:
                renderer = get_renderer(name)
                target = gateway_target(
                    self.cpu,
                    workdir=str(workdir),
                    listen_port=free_port(),
                    backend_url=backend_url,
                    admin_port=free_port(),
                    redis_port=free_port(),
                    tls=self.tls,
                    replicas=self.replicas,
                    balance=self.balance,
                    concurrency=self.concurrency,
                )
                rendered = render_leaving_out(
                    renderer,
                    api,
                    target,
                    needed,
                    policies=self.policies,
                    allow_missing_policies=self.allow_missing_policies,
                )
                write_files(rendered.files, workdir)
                self.rendered[name] = target
                self._files[name] = (workdir, tuple(rendered.files))
                written = len((rendered.api or api).operations)
                self._check_limits[name] = check_limit(renderer, written)
            except GatebenchError as exc:
                failures[name] = f"cannot render the configuration: {exc}"
                continue
            if rendered.left_out:
                self.routes_left_out[name] = rendered.summary(name)
            reason = renderer.available_here()
            if reason is not None:
                self.unsupported[name] = reason
                self._redact(name)
                continue
            self._targets[name] = target
            self._renderers[name] = renderer
            self._logs[name] = workdir / f"{name}.log"
        return failures

    def planned(self) -> dict[str, str]:
        """Base URLs of the rendered gateways that run here (known before they start)."""
        return {
            name: f"{self._scheme}://127.0.0.1:{target.listen_port}"  # type: ignore[attr-defined]
            for name, target in self._targets.items()
        }

    @property
    def _scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    def provision(self, gateways: list[str]) -> Provisioned:
        from gatebench.local.provisioners._boot import check_config, start_gateway

        out = Provisioned()
        for name in gateways:
            if name not in self._targets:
                continue
            renderer = self._renderers[name]
            target = self._targets[name]
            started = time.monotonic()
            try:
                reason = renderer.available_here()  # type: ignore[attr-defined]
                if reason is not None:
                    raise UnsupportedHere(reason)
                check_config(
                    renderer,  # type: ignore[arg-type]
                    target.workdir,  # type: ignore[attr-defined]
                    target,  # type: ignore[arg-type]
                    timeout=self._check_limits[name],
                    supervisor=self.supervisor,
                )
                proc = start_gateway(
                    renderer,  # type: ignore[arg-type]
                    target,  # type: ignore[arg-type]
                    self.supervisor,
                    log_path=self._logs[name],
                )
            except UnsupportedHere as exc:
                out.unsupported[name] = str(exc)
                continue
            except GatebenchError as exc:
                out.failures[name] = str(exc)
                continue
            finally:
                self._redact(name)
            self._procs[name] = proc
            port = target.listen_port  # type: ignore[attr-defined]
            out.endpoints[name] = Endpoint(
                target=name,
                base_url=f"{self._scheme}://127.0.0.1:{port}",
                pgids=(proc.pid, *(c.pid for c in proc.companions)),
                log_path=self._logs[name],
                config_dir=Path(target.workdir),  # type: ignore[attr-defined]
                boot_s=time.monotonic() - started,
            )
        return out

    def failure(self, target: str) -> str | None:
        proc = self._procs.get(target)
        if proc is None:
            return None
        for dead in (proc, *proc.companions):
            if not dead.alive():
                return (
                    f"{dead.name} exited with code {dead.returncode} during the run; "
                    f"last log lines:\n{dead.log_tail(15)}"
                )
        return None

    def teardown(self) -> None:
        for proc in list(self._procs.values()):
            self.supervisor.stop(proc)
        self._procs.clear()
        for name in self._files:
            self._redact(name, everything=True)

    def _redact(self, name: str, *, everything: bool = False) -> None:
        """API keys out of the gateway's rendered files (``everything``: out of every file of
        its folder, once it has stopped)."""
        keys = policy_keys(self.policies)
        if not keys or name not in self._files:
            return
        workdir, rendered = self._files[name]
        paths = sorted(workdir.rglob("*")) if everything else [workdir / f for f in rendered]
        for path in paths:
            redact_file(path, keys)


__all__ = ["LocalProvisioner"]
