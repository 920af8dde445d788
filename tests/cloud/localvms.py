"""The local provisioner standing in for the VMs of infra/vms, behind the Terraform stand-in.

The build steps run ``terraform init`` and ``apply``/``destroy`` (tests/cloud/localterraform.py
models the CLI) with the variables ``gatebench cloud vm-vars`` wrote; here the same variables
make the same machines, each in its own network namespace (tests/cloud/netns.py) with
Container-Optimized OS's host firewall, behind a router that enforces the VPC's firewall
rules by role (infra/modules/network), named as Compute Engine's internal DNS names them (the
``dns`` layout, the one a real deployment renders for):

- every machine first runs its startup script's firewall lines, rendered from
  infra/vms/templates/*.tftpl with the variables main.tf passes (tests/cloud/startup.py):
  a port the template forgets stays closed, and a rule on a cgroup (``-m cgroup --path``)
  applies to the machine's own cgroups (tests/cloud/netns.py);
- every machine has its metadata server (tests/cloud/metadata.py) at Compute Engine's address,
  serving its account's token and its instance metadata; a gateway runs in the cgroup its
  script's ``docker run --cgroup-parent`` names, from its first instruction, so the script's
  rules decide whether it reaches that server;
- every machine reaches Cloud Storage as its role's service account, through a gate that lets
  through only what infra/ grants that role (tests/cloud/storagegate.py): a read the role is
  not granted answers 403; it writes with the policies in its metadata, which the gate checks
  as Cloud Storage does against the build account's key (``signer``);
- every machine reaches Secret Manager the same way, as its role's account, through its own
  stand-in (tests/cloud/secretgate.py) that answers only what infra/'s secret grants give that
  role, with ``secret_variables`` as the Terraform variables (``jwt_signer``,
  ``api_clients``) and ``secrets`` as the secrets' contents;
- a gateway whose fleet entry has ``configure`` steps (``gatebench cloud gateway-config``:
  the API keys) runs them first, as the VM's account with the gateway's folder mounted as the
  script mounts it; when one fails the gateway never starts, as the script stops;
- backend VM → ``gatebench cloud backend ...`` (the runner image's command);
- gateway VM → the rendered files fetched from the bucket (as its service account) into the
  gateway's folder, mounted at the container's path for the gateway alone, then the
  container's command run natively (the renderer finds the program); a gateway whose files
  cannot be fetched or that cannot run here never answers, like a failing container;
- beside each gateway, its meter: the ``gatebench cloud meter ...`` arguments of the
  rendered script's ``docker run --name gatebench-meter`` line, run for real as the gateway's
  account, with ``--cgroup`` pointing at a stand-in of the container's cgroup v2 files
  written from the gateway's process tree (tests/cloud/cgroups.py: this machine has cgroup
  v1 and no containers);
- tester VM → ``gatebench cloud tester ...`` with its own scratch folder; with several,
  tester T gets ``--tester T --testers N`` as main.tf adds them, and tester 0's script opens
  its phase barrier's port (``count.index == 0``), which the others reach by its host name.

With ``image`` set (what the pipeline tests do), everything a VM runs from the runner image
runs *in* that image, built from cloudbuild/runner.Dockerfile (tests/cloud/image.py): the
backend, the testers, each gateway's meter and its configure steps are ``podman run`` of the
image with its entrypoint and the arguments the startup script gives it, inside the VM's
network namespace (``--network ns:``, the namespace's hosts and resolv.conf as the container's),
with the mounts the script gives (the gateway's folder; the cgroup stand-in where the script
mounts /sys/fs/cgroup), and no environment but the two stand-ins' endpoints
(``STORAGE_EMULATOR_HOST`` and the Secret Manager stand-in's, in place of Google's endpoints
and the metadata server's credentials). The one argument added to the script's is the
tester's ``--ready-timeout`` (``tester_ready_timeout``: 25 s instead of 600 s), so a gateway
that never answers fails its run in half a minute. Without ``image`` they run as this checkout's ``gatebench`` (the unit
tests of the machines themselves). The gateways themselves are native processes either way:
their official images cannot be pulled here.

``destroy`` stops every process ``apply`` started under that state, even an ``apply`` the
build's timeout cut short (what it started stays for teardown, as resources do), and removes
the machines (their containers killed, as deleting a VM does). :meth:`LocalVms.close` removes
whatever is left, network included.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatebench.cloud import Storage
from gatebench.cloud._layout import Layout
from gatebench.cloud._secrets import EMULATOR_ENV
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.renderers import get_renderer
from gatebench.local.procs import ManagedProcess, Supervisor

from .cgroups import CgroupStandIn
from .dockerd import StandInContainer, StandInDocker
from .image import containers, remove_container, run_argv
from .localterraform import LocalTerraform
from .metadata import MetadataStandIn
from .netns import CGROUP2, METADATA_ADDRESS, LocalNetwork
from .secretgate import SecretManagerStandIn
from .startup import (
    config_folder,
    configure_commands,
    container_cgroup,
    cos_noexec,
    firewall_commands,
    live_command,
    live_mounts,
    meter_command,
    runner_caps,
    startup_script,
)
from .storagegate import Access, Forbidden, PolicySigner, StorageGate, vm_grants

GATEBENCH = str(Path(sys.executable).parent / "gatebench")
CGROUP_MOUNT = "/host/cgroup"
"""Where the gateway script mounts the host's /sys/fs/cgroup for the meter."""
STAND_IN_CGROUP = "/system.slice/docker-gateway.scope"
"""The gateway container's cgroup path the stand-in's files sit at (COS's Docker: systemd)."""
TESTER_READY_TIMEOUT = "25"
"""The testers' ``--ready-timeout`` here (seconds); every gateway the pipeline tests boot
answers within a few."""


@dataclass
class LocalVms:
    supervisor: Supervisor
    storage: Storage
    root: Path
    env: dict[str, str]
    network: LocalNetwork
    storage_upstream: str
    """The storage emulator's URL (what the gates forward to)."""
    templates: Path | None = None
    """Where the startup templates are read (None: infra/vms/templates)."""
    infra: Path | None = None
    """Where the grants are read (None: infra/)."""
    machines: dict[str, list[ManagedProcess]] = field(default_factory=dict)
    hosts: dict[str, list[str]] = field(default_factory=dict)
    gates: dict[str, StorageGate] = field(default_factory=dict)
    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    calls: list[list[str]] = field(default_factory=list)
    destroyed: set[str] = field(default_factory=set)
    denied: list[str] = field(default_factory=list)
    cgroups: dict[str, list[CgroupStandIn]] = field(default_factory=dict)
    dockers: dict[str, list[tuple[StandInDocker, Path]]] = field(default_factory=dict)
    """A scale run's gateway VMs' Docker daemon stand-ins (and their sockets' folders)."""
    docker_log: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(run id, gateway, the container calls its live agent made), for every VM destroyed."""
    """Every storage request a gate refused (Cloud Storage's 403 message), across runs."""
    secrets: dict[str, str] = field(default_factory=dict)
    """Secret Manager's contents: ``projects/P/secrets/S`` → the latest version's text."""
    secret_variables: dict[str, str] = field(default_factory=dict)
    tester_ready_timeout: str = TESTER_READY_TIMEOUT
    """The deployment's Terraform variables the secret grants read (project_id, ...)."""
    secret_gates: dict[str, SecretManagerStandIn] = field(default_factory=dict)
    metadata: dict[str, MetadataStandIn] = field(default_factory=dict)
    """Host name → its metadata server stand-in."""
    withheld: set[str] = field(default_factory=set)
    """Metadata attributes the machines' servers do not serve (a test of a VM without them)."""
    signer: PolicySigner | None = None
    """Who signs the VMs' write policies (the build account): what the gates accept a form
    upload from; None: the gates accept none."""
    secret_requests: list[tuple[str, str, int]] = field(default_factory=list)
    """(role, path, status) of every Secret Manager call, across runs."""
    image: str | None = None
    """The local runner image the VMs' runner-image commands run in; None: as processes."""
    containers: dict[str, list[str]] = field(default_factory=dict)
    """State key → names of the containers its machines started."""
    started: list[str] = field(default_factory=list)
    """Every container started, across runs (names)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Processes die with the thread that started them (PR_SET_PDEATHSIG, gatebench.local.procs),
    # and build steps run in short-lived threads: VMs are started from this lasting one.
    _host: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "local-vms"))

    def __post_init__(self) -> None:
        self.terraform = LocalTerraform(self, self.storage)
        self.grants = vm_grants(self.infra) if self.infra else vm_grants()

    def __call__(self, args: list[str], env: dict[str, str], cwd: Path) -> str:
        """``terraform ARGS`` in a build step (tests/cloud/localbuild.py's bridge)."""
        self.calls.append(list(args))
        return self.terraform(args, env, cwd)

    def apply(self, key: str, values: dict[str, Any]) -> list[str]:
        self._apply(key, values)
        with self._lock:
            return [p.name for p in self.machines.get(key, [])]

    def destroy(self, key: str) -> list[str]:
        self._destroy(key)
        return []

    def running(self) -> list[ManagedProcess]:
        with self._lock:
            return [p for procs in self.machines.values() for p in procs if p.alive()]

    # -- machines

    @staticmethod
    def host_names(values: dict[str, Any]) -> dict[str, str]:
        """Machine (backend, tester, gw-NAME) → host name, as the product's ``dns`` layout
        addresses them (Compute Engine's internal DNS)."""
        gateways = tuple(sorted(values.get("gateways") or {}))
        layout = Layout(
            "dns", values["prefix"], values["run_id"], gateways, values["zone"], values["project"]
        )
        names = {"backend": urlsplit(layout.backend_url()).hostname or ""}
        names |= {f"gw-{g}": urlsplit(layout.gateway_url(g)).hostname or "" for g in gateways}
        domain = names["backend"].split(".", 1)[1]  # the tester is addressed like the others
        names["tester"] = f"{layout.vm_name('tester')}.{domain}"
        count = int((values.get("tester") or {}).get("count") or 1)
        for t in range(1, count):  # infra/vms/main.tf: tester T > 0 is PREFIX-RUN-tester-T
            names[f"tester-{t}"] = f"{layout.vm_name('tester')}-{t}.{domain}"
        return names

    def boot(
        self,
        key: str,
        values: dict[str, Any],
        machine: str,
        role: str,
        gateway: str | None = None,
        index: int | None = None,
    ) -> tuple[str, StorageGate]:
        """The machine exists, its startup script's firewall lines have run, and its storage
        and Secret Manager gates listen: (its host name, its storage gate). ``index``: a
        tester's ``count.index``."""
        host = self.host_names(values)[machine]
        with self._lock:
            self.hosts.setdefault(key, []).append(host)
        self.network.add([host])
        self.network.assign(host, role)  # its network tag (infra/vms/main.tf: var.tags.ROLE)
        script = startup_script(role, values, gateway, self.templates, index)
        for command in firewall_commands(script):
            self.network.run_in(host, self.network.in_cgroup(host, command))
        server = MetadataStandIn(  # its attributes: its own entry of var.vm_metadata
            values["service_accounts"][role],
            {
                key: value
                for key, value in ((values.get("vm_metadata") or {}).get(machine) or {}).items()
                if key not in self.withheld
            },
            self.network.listen_inside(host, METADATA_ADDRESS, 80),
        )
        with self._lock:
            self.metadata[host] = server
        access = Access(
            role, values["service_accounts"][role], values["runs_bucket"], self.grants[role]
        )
        gate = StorageGate(access, self.network.listen(host), self.storage_upstream, self.signer)
        variables = {"project_id": values["project"], **self.secret_variables}
        infra = {"infra": self.infra} if self.infra else {}
        secrets = SecretManagerStandIn(
            role, self.secrets, variables, listener=self.network.listen(host), **infra
        )
        secrets.__enter__()
        with self._lock:
            self.gates[host] = gate
            self.secret_gates[host] = secrets
        return host, gate

    def vm_env(self, host: str, gate: StorageGate) -> dict[str, str]:
        """How a machine's processes reach Cloud Storage and Secret Manager: as its account."""
        return {"STORAGE_EMULATOR_HOST": gate.url, EMULATOR_ENV: self.secret_gates[host].url}

    def runner(
        self,
        key: str,
        host: str,
        gate: StorageGate,
        args: list[str],
        *,
        name: str,
        mounts: list[tuple[Path, str, str]] | None = None,
        remove: bool = True,
        caps: list[str] | None = None,
    ) -> list[str]:
        """The command that runs the runner image with ``args`` on machine ``host``, as its
        startup script's ``docker run`` does: a container of the image in the machine's
        network namespace, with the capabilities the script adds (``caps``), or (without
        ``image``) this checkout's ``gatebench``."""
        if self.image is None:
            mount = None
            if mounts:
                ((folder, target, _),) = mounts
                mount = (folder, target)
            return self.network.command(host, [GATEBENCH, *args], mount=mount)
        machine = self.network.machines[host]
        etc = Path("/etc/netns") / machine.namespace
        container = f"{self.network.tag}-{name}"
        with self._lock:
            self.containers.setdefault(key, []).append(container)
            self.started.append(container)
        return run_argv(
            self.image,
            args,
            name=container,
            env=self.vm_env(host, gate),
            network=f"ns:/run/netns/{machine.namespace}",
            mounts=[
                (etc / "hosts", "/etc/hosts", "ro"),
                (etc / "resolv.conf", "/etc/resolv.conf", "ro"),
                *(mounts or []),
            ],
            remove=remove,
            caps=caps or [],
        )

    def _start(
        self,
        key: str,
        name: str,
        argv: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> ManagedProcess:
        proc = self._host.submit(
            self.supervisor.start,
            name,
            argv,
            log_path=self.root / "vms" / f"{name}.log",
            cwd=cwd,
            env={**self.env, **(env or {})},
        ).result()
        with self._lock:
            late = key in self.destroyed  # an apply cut short keeps going after destroy
            self.machines.setdefault(key, []).append(proc)
        if late:
            self._destroy(key)
        return proc

    def _apply(self, key: str, values: dict[str, Any]) -> None:
        run_id, bucket = values["run_id"], values["runs_bucket"]
        failures = self.failures.setdefault(key, {})
        names = self.host_names(values)
        present = {"backend": bool(values.get("backend")), "tester": bool(values.get("tester"))}
        self.network.add([host for m, host in names.items() if present.get(m.split("-")[0], True)])
        if values.get("backend"):
            host, gate = self.boot(key, values, "backend", "backend")
            name = f"{run_id}-backend"
            script = startup_script("backend", values, None, self.templates)
            caps = runner_caps(script, values["runner_image"])
            argv = self.runner(key, host, gate, values["backend"]["args"], name=name, caps=caps)
            self._start(key, name, argv, env=self.vm_env(host, gate))
        for name, gateway in sorted(values["gateways"].items()):
            host, gate = self.boot(key, values, f"gw-{name}", "gateway", name)
            folder = self.root / "vms" / f"{run_id}-gw-{name}"
            for sub in gateway["dirs"]:
                (folder / sub).mkdir(parents=True, exist_ok=True)
            try:
                for item in gateway["files"]:  # the startup script's curl, as the VM's account
                    gate.access.check("get", bucket, item["object"])
                    data = self.storage.read_optional(bucket, item["object"])
                    if data is None:
                        raise Forbidden(f"gs://{bucket}/{item['object']}: 404 Not Found")
                    target = folder / item["path"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                renderer = get_renderer(name)
                argv = list(gateway["args"])
                argv[0] = renderer.find_program(argv[0])
                mount = gateway["mount"]
                self._configure(key, values, name, host, gate, folder, mount)
            except (Forbidden, GatebenchError) as exc:
                failures[name] = str(exc)  # the startup script stops: the gateway never answers
                continue
            script = startup_script("gateway", values, name, self.templates)
            cgroup = container_cgroup(script, "gateway")
            noexec = cos_noexec(config_folder(script))  # the volume keeps the host's flag
            command = self.network.command(
                host, argv, mount=(folder, mount), cgroup=cgroup, noexec=noexec
            )
            # What this machine's program needs (its folders), then the script's `-e` of the
            # fleet's env (USAGE_DISABLE, GOMAXPROCS = the VM's vCPUs), as the VM passes them.
            env = {**renderer.env(Path(mount)), **gateway.get("env", {})}
            proc = self._start(key, f"{run_id}-gw-{name}", command, cwd=folder, env=env)
            cgroup = self._meter(key, values, name, host, gate, proc)
            self._live(key, values, name, host, gate, folder, (command, env, proc), cgroup)
        tester = values.get("tester")
        count = int((tester or {}).get("count") or 1) if tester else 0
        for t in range(count):  # infra/vms/main.tf: count testers, T > 0 with --tester T
            assert tester is not None
            machine = "tester" if t == 0 else f"tester-{t}"
            host, gate = self.boot(key, values, machine, "tester", index=t)
            split = [] if count == 1 else ["--tester", str(t), "--testers", str(count)]
            args = [*tester["args"], *split, "--ready-timeout", self.tester_ready_timeout]
            if self.image is None:  # as processes: a scratch folder of its own
                args += ["--workdir", str(self.root / "vms" / f"{run_id}-{machine}")]
            name = f"{run_id}-{machine}"
            script = startup_script("tester", values, None, self.templates, t)
            caps = runner_caps(script, values["runner_image"])
            command = self.runner(key, host, gate, args, name=name, caps=caps)
            self._start(key, name, command, env=self.vm_env(host, gate))

    def _configure(
        self,
        key: str,
        values: dict[str, Any],
        name: str,
        host: str,
        gate: StorageGate,
        folder: Path,
        mount: str,
    ) -> None:
        """The script's ``configure`` lines (the runner image's ``gatebench cloud ...``), run
        before the gateway as the VM's account with its folder mounted; a failure stops it."""
        script = startup_script("gateway", values, name, self.templates)
        for index, argv in enumerate(configure_commands(script, values["runner_image"])):
            container = f"{values['run_id']}-gw-{name}-configure-{index}"
            command = self.runner(
                key, host, gate, argv, name=container, mounts=[(folder, mount, "")]
            )
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                env={**self.env, **self.vm_env(host, gate)},
                timeout=120,
            )
            if done.returncode != 0:
                raise RunError(f"{' '.join(argv[:2])} exited {done.returncode}: {done.stderr}")

    def _live(
        self,
        key: str,
        values: dict[str, Any],
        name: str,
        host: str,
        gate: StorageGate,
        folder: Path,
        gateway: tuple[list[str], dict[str, str], ManagedProcess],
        cgroup: CgroupStandIn | None,
    ) -> None:
        """A scale or change-under-load run: the script's live agent beside the gateway (its
        ``docker run --name gatebench-live`` line, run for real as the gateway VM's account,
        with the gateway's folder and, where the script mounts the VM's Docker socket, the
        socket of a stand-in daemon whose container "gateway" is the gateway's process:
        tests/cloud/dockerd.py)."""
        script = startup_script("gateway", values, name, self.templates)
        argv = live_command(script, values["runner_image"])
        if argv is None:
            return
        run_id, mount = values["run_id"], values["gateways"][name]["mount"]
        command, env, proc = gateway
        renderer = get_renderer(name)
        mounts = live_mounts(script, values["runner_image"])
        assert mounts == ["/var/run/docker.sock:/var/run/docker.sock", f"$dir:{mount}"], mounts
        socket_dir = Path(tempfile.mkdtemp(prefix="gbd-"))  # a Unix socket's path is short
        daemon = StandInDocker(socket_dir / "docker.sock", run_id=run_id, gateway=name)

        def start() -> ManagedProcess:
            return self._start(key, f"{run_id}-gw-{name}", command, cwd=folder, env=env)

        def stop(process: ManagedProcess, grace: float) -> None:
            self.supervisor.stop(process, timeout=grace)

        def execute(argv: list[str], timeout: float) -> tuple[int, bytes]:
            resolved = [renderer.find_program(argv[0]), *argv[1:]]
            done = subprocess.run(
                self.network.command(host, resolved, mount=(folder, mount)),
                capture_output=True,
                cwd=folder,
                env={**self.env, **env},
                timeout=timeout,
            )
            return done.returncode, done.stdout + done.stderr

        def started(process: ManagedProcess) -> None:
            if cgroup is not None:  # the container's cgroup keeps its path across a restart
                cgroup.pid = process.pid

        container = StandInContainer("gateway", start, stop, execute, started)
        container.proc, container.started_at = proc, proc.started_at
        daemon.add(container)
        with self._lock:
            self.dockers.setdefault(key, []).append((daemon, socket_dir))
        agent = f"{run_id}-gw-{name}-live"
        if self.image is None:  # as a process: the stand-in's socket named on its command line
            args = [*argv, "--docker", str(daemon.path)]
            agent_command = self.network.command(host, [GATEBENCH, *args], mount=(folder, mount))
        else:  # the script's -v /var/run/docker.sock:/var/run/docker.sock -v "$dir:MOUNT"
            mounted = [(folder, mount, ""), (daemon.path, "/var/run/docker.sock", "")]
            agent_command = self.runner(key, host, gate, argv, name=agent, mounts=mounted)
        self._start(key, agent, agent_command, env=self.vm_env(host, gate))

    def _meter(
        self,
        key: str,
        values: dict[str, Any],
        name: str,
        host: str,
        gate: StorageGate,
        gateway: ManagedProcess,
    ) -> CgroupStandIn | None:
        """The script's meter beside the gateway, reading the cgroup stand-in at the gateway's
        own cgroup path (the one its processes' /proc/PID/cgroup names, where the meter looks
        for its memory maps in the host's /proc)."""
        script = startup_script("gateway", values, name, self.templates)
        argv = meter_command(script, values["runner_image"])
        root = self.root / "vms" / f"{values['run_id']}-gw-{name}-cgroup"
        slice_ = container_cgroup(script, "gateway")
        path = (
            "/" + str(self.network.cgroup(host, slice_).relative_to(CGROUP2))
            if slice_
            else STAND_IN_CGROUP
        )
        folder = root / path.strip("/")
        cgroup = CgroupStandIn(folder, gateway.pid)
        with self._lock:
            late = key in self.destroyed
            if not late:
                self.cgroups.setdefault(key, []).append(cgroup)
        if late:  # an apply cut short: its machines are gone already
            cgroup.stop()
            return None
        meter = f"{values['run_id']}-gw-{name}-meter"
        proc = "--proc" in argv
        if self.image is None:
            argv[argv.index("--cgroup") + 1] = str(folder)
            argv += ["--cgroup-root", str(root)]
            if proc:
                argv[argv.index("--proc") + 1] = "/proc"
            command = self.runner(key, host, gate, argv, name=meter)
        else:  # the script's -v /sys/fs/cgroup:/host/cgroup:ro and --cgroup /host/cgroup$cgroup
            argv[argv.index("--cgroup") + 1] = CGROUP_MOUNT + path
            mounts = [(root, CGROUP_MOUNT, "ro")]
            if proc:  # and its -v /proc:/host/proc:ro
                mounts.append((Path("/proc"), argv[argv.index("--proc") + 1], "ro"))
            command = self.runner(key, host, gate, argv, name=meter, mounts=mounts)
        self._start(key, meter, command, env=self.vm_env(host, gate))
        return cgroup

    def close(self) -> None:
        """Stop every process still running, the gates and the starter thread; remove the
        machines and the network."""
        for key in (
            list(self.machines) + list(self.cgroups) + list(self.containers) + list(self.dockers)
        ):
            self._destroy(key)
        for name in containers(self.network.tag):  # any a cut-short start left
            remove_container(name)
        for gate in list(self.gates.values()):
            gate.close()
            self.denied += gate.denied
        for host in list(self.secret_gates):
            self._close_secrets(host)
        for server in list(self.metadata.values()):
            server.close()
        self.metadata.clear()
        self._host.shutdown()
        self.network.close()

    def _destroy(self, key: str) -> None:
        with self._lock:
            self.destroyed.add(key)
            procs = self.machines.pop(key, [])
            hosts = self.hosts.pop(key, [])
            gates = [self.gates.pop(h) for h in hosts if h in self.gates]
            cgroups = self.cgroups.pop(key, [])
            names = self.containers.pop(key, [])
            dockers = self.dockers.pop(key, [])
        for name in names:  # deleting a VM kills its containers
            remove_container(name)
        for host in hosts:
            self._close_secrets(host)
            with self._lock:
                server = self.metadata.pop(host, None)
            if server is not None:
                server.close()
        for proc in procs:
            self.supervisor.stop(proc)
        for cgroup in cgroups:
            cgroup.stop()
        for daemon, socket_dir in dockers:
            daemon.close()
            shutil.rmtree(socket_dir, ignore_errors=True)
            for container in daemon.containers.values():
                self.docker_log.append((daemon.run_id, daemon.gateway, list(container.calls)))
        for gate in gates:
            gate.close()
            self.denied += gate.denied
        self.network.remove(hosts)

    def _close_secrets(self, host: str) -> None:
        with self._lock:
            secrets = self.secret_gates.pop(host, None)
        if secrets is not None:
            secrets.close()
            with self._lock:
                role = secrets.vm or "none"
                self.secret_requests += [(role, p, s) for p, s in secrets.requests]
