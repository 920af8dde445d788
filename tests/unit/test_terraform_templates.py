"""The VMs' startup scripts (infra/vms/templates/*.sh.tftpl) rendered with sample values by a
small evaluator of the template syntax they use (``${a.b}``, ``%{ for x in xs ~}`` ...
``%{ endfor ~}``), then checked by ``bash -n``: they must be valid shell, and every value
from run.tfvars.json must land inside single quotes or a fixed path."""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cloud.settings import deployment
from cloud.startup import instance_metadata

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "infra" / "vms" / "templates"
_DIRECTIVE = re.compile(r"%\{ (for (\w+) in ([\w.]+)|endfor) (~?)\}")


def lookup(values: dict[str, Any], path: str) -> Any:
    value: Any = values
    for part in path.split("."):
        value = value[part]
    return value


def render(text: str, values: dict[str, Any]) -> str:
    """Terraform's templatefile for the subset the templates use: interpolation, for loops
    (nested), and the ``~`` strip marker (drops the newline right after the directive)."""
    out: list[str] = []
    pos = 0
    while True:
        match = _DIRECTIVE.search(text, pos)
        if match is None:
            out.append(text[pos:])
            break
        out.append(text[pos : match.start()])
        assert match.group(1) != "endfor", "endfor without for"
        # Find the matching endfor, counting nested loops.
        depth, scan = 1, match.end()
        while depth:
            inner = _DIRECTIVE.search(text, scan)
            assert inner is not None, "for without endfor"
            depth += -1 if inner.group(1) == "endfor" else 1
            scan = inner.end()
        body = text[match.end() : inner.start()]
        if match.group(4):
            body = body.removeprefix("\n")
        for item in lookup(values, match.group(3)):
            out.append(render(body, {**values, match.group(2): item}))
        pos = inner.end() + (
            1 if inner.group(4) and text[inner.end() : inner.end() + 1] == "\n" else 0
        )
    return re.sub(r"\$\{([\w.]+)\}", lambda m: str(lookup(values, m.group(1))), "".join(out))


GATEWAY = {
    "bucket": "gb-runs-proj",
    "files": [
        {"path": "nginx.conf", "url_object": "runs%2Fr-1%2Fconfigs%2Fnginx%2Fnginx.conf"},
        {"path": "apps/a.json", "url_object": "runs%2Fr-1%2Fconfigs%2Fnginx%2Fapps%2Fa.json"},
    ],
    "dirs": ["logs", "tmp"],
    "mount": "/etc/gatebench",
    "registry": "europe-central2-docker.pkg.dev",
    "image": "europe-central2-docker.pkg.dev/proj/gb-dockerhub/library/nginx:1.22.1",
    "args": [
        "nginx",
        "-p",
        "/etc/gatebench/",
        "-c",
        "/etc/gatebench/nginx.conf",
        "-g",
        "daemon off;",
    ],
    "env": [],
    "random_env": [],
    "configure": [],
    "live": [],
    "sidecars": [
        {
            "name": "redis",
            "image": "europe-central2-docker.pkg.dev/proj/gb-dockerhub/library/redis:7.4.1",
            "args": ["redis-server", "--save", ""],
        }
    ],
    "ports": [8000],
    "runner_image": "europe-central2-docker.pkg.dev/proj/gb-gatebench/runner:0.1.0",
    "run_id": "r-0123456789abcdef0123",
    "target": "nginx",
}
RUNNER = {
    "registry": "europe-central2-docker.pkg.dev",
    "image": "europe-central2-docker.pkg.dev/proj/gb-gatebench/runner:0.1.0",
    "args": [
        "cloud",
        "tester",
        "--run-id",
        "r-0123456789abcdef0123",
        "--runs-bucket",
        "gb-runs-proj",
    ],
    "ports": [8080],
    "caps": [],
}


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("gateway.sh.tftpl", GATEWAY),
        ("runner.sh.tftpl", RUNNER),
        ("runner.sh.tftpl", {**RUNNER, "caps": ["NET_RAW"]}),
    ],
)
def test_startup_scripts_are_valid_shell(name: str, values: dict[str, Any], tmp_path: Path) -> None:
    script = render((TEMPLATES / name).read_text(), values)
    assert "${" not in script.replace('"$dir', "").replace("$(", "") and "%{" not in script
    path = tmp_path / "startup.sh"
    path.write_text(script)
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr + script
    for arg in values["args"]:
        assert f"'{arg}'" in script  # every argument single-quoted, spaces and ; included


def test_the_gateway_script_fetches_every_file_and_makes_every_folder() -> None:
    script = render((TEMPLATES / "gateway.sh.tftpl").read_text(), GATEWAY)
    for f in GATEWAY["files"]:
        assert f"/o/{f['url_object']}?alt=media" in script
        assert f'-o "$dir/{f["path"]}"' in script
    for d in GATEWAY["dirs"]:
        assert f'mkdir -p "$dir/{d}"' in script
    assert "docker run -d --name 'redis'" in script
    assert '-v "$dir:/etc/gatebench"' in script


# -- what infra/vms/main.tf passes to the templates, evaluated for a real rendered run

VMS = TEMPLATES.parent
AUCTION = VMS.parents[1] / "examples" / "auction" / "openapi.yaml"
SETTINGS = deployment(runner_image="europe-central2-docker.pkg.dev/proj/gb-gatebench/runner:1")
_TEMPLATEFILE = re.compile(
    r'^\$\{templatefile\("\$\{path\.module\}/templates/([\w.]+)", \{(.*)\}\)\}$', re.S
)


def top_level_arguments(text: str) -> dict[str, str]:
    """`a = x, b = [y, {c = z}]` → {a: x, b: [y, {c = z}]}: split at depth-0 commas."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return {k.strip(): v.strip() for k, v in (p.split("=", 1) for p in parts)}


def startup_arguments() -> dict[str, tuple[str, dict[str, str]]]:
    """Instance → (template, {argument: its HCL expression}) from infra/vms/main.tf."""
    import hcl2

    with (VMS / "main.tf").open() as fh:
        doc = hcl2.load(fh)
    out = {}
    for block in doc["resource"]:
        for name, body in block.get('"google_compute_instance"', {}).items():
            match = _TEMPLATEFILE.match(instance_metadata(body["metadata"])[1]["startup-script"])
            assert match, body["metadata"]
            out[name.strip('"')] = (match.group(1), top_level_arguments(match.group(2)))
    return out


def evaluate(
    expression: str, variables: dict[str, Any], each: Any = None, index: int | None = None
) -> Any:
    """The list expressions of `ports`: `[]`, `[var.X.Y]`, `[each.value.Y]`, a list `var.X.Y`,
    and `count.index == N ? A : B` of those (``index``: the instance's count.index)."""
    choice = re.fullmatch(r"count\.index == (\d+) \? (.+?) : (.+)", expression.strip())
    if choice is not None:
        assert index is not None, expression
        chosen = choice.group(2) if index == int(choice.group(1)) else choice.group(3)
        return evaluate(chosen, variables, each, index)
    if re.fullmatch(r"var(\.\w+)+", expression.strip()):
        value = variables
        for part in expression.strip().split(".")[1:]:
            value = value[part]
        return list(value)
    inner = expression.strip()
    assert inner.startswith("[") and inner.endswith("]"), expression
    items = [i.strip() for i in inner[1:-1].split(",") if i.strip()]
    values = []
    for item in items:
        root, *path = item.split(".")
        value = {"var": variables, "each": {"value": each}}[root]
        for part in path:
            value = value[part]
        values.append(value)
    return values


def rendered_run(
    testers: int = 1, gateways: list[str] | None = None, deployed: bool = False
) -> tuple[Any, dict[str, Any]]:
    """The auction example's run and its infra/vms variables; ``deployed``: with TLS, three
    replicas and a replica killed in the bid phase."""
    import yaml

    from gatebench.cloud import ObjectRef
    from gatebench.cloud._render import render_run
    from gatebench.cloud._vms import vm_vars
    from gatebench.core.tls import make_ca

    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "9")
    spec = AUCTION.read_bytes()
    settings = SETTINGS
    if testers > 1 or gateways is not None or deployed:
        doc = yaml.safe_load(spec)
        bench = doc["x-gatebench"]
        if testers > 1:
            bench["infrastructure"] = dict(bench.get("infrastructure") or {}, testers=testers)
        if gateways is not None:
            bench["gateways"] = gateways
        if deployed:
            bench["tls"] = {"http2": True}
            bench["backend"] = dict(bench["backend"], replicas=3)
            bench["fault"] = {"replica": 2, "workload": "bid"}
            ca = make_ca(validity=datetime.timedelta(days=30))[1].decode()
            settings = {**SETTINGS, "tls_ca": "gb-tls-ca", "tls_ca_certificate": ca}
        spec = yaml.safe_dump(doc, sort_keys=False).encode()
    rendered = render_run(spec, ref, settings, "gb-runs")
    assert rendered.failures == {}
    return rendered, vm_vars(settings, rendered.fleet, ref.run_id, "gb-runs")


def opened_ports(script: str) -> set[int]:
    lines = [line for line in script.splitlines() if line.startswith("iptables -w -A INPUT")]
    rest = [
        line for line in script.splitlines() if line.startswith("iptables") and line not in lines
    ]
    # the one other rule: a gateway VM keeps its gateway containers from the metadata server
    assert rest in (
        [],
        ["iptables -w -I OUTPUT -d 169.254.169.254/32 -m cgroup --path gateways.slice -j REJECT"],
    ), rest
    for line in lines:  # Google's "Configuring the host firewall" (Container-Optimized OS)
        assert re.fullmatch(r"iptables -w -A INPUT -p tcp --dport \d+ -j ACCEPT", line), line
    return {int(re.search(r"--dport (\d+)", line).group(1)) for line in lines}  # type: ignore[union-attr]


def test_each_role_opens_exactly_the_ports_it_listens_on() -> None:
    """COS drops inbound traffic but SSH: each startup script opens what its role serves, the
    ports computed from the same variables the role's server listens on, and nothing else."""
    from urllib.parse import urlsplit

    rendered, variables = rendered_run()
    arguments = startup_arguments()
    assert set(arguments) == {"backend", "gateway", "tester"}
    # What each role listens on: the backend's own settings; each gateway where the tester
    # sends its requests (the workload's base URLs); the tester listens on nothing.
    backend_listen = {int(rendered.backend["listen"].rsplit(":", 1)[1])}
    targets = {p["target"]: urlsplit(p["request"]["base_url"]) for p in rendered.workload["phases"]}
    for gateway, entry in variables["gateways"].items():
        template, args = arguments["gateway"]
        ports = evaluate(args["ports"], variables, each=entry)
        values = {
            **GATEWAY,
            "ports": ports,
            "image": entry["image"],
            "sidecars": entry["sidecars"],
            "args": entry["args"],
            "env": env_pairs(entry),
            "random_env": entry["random_env"],
            "configure": entry["configure"],
        }
        script = render((TEMPLATES / template).read_text(), values)
        assert opened_ports(script) == {targets[gateway].port}, gateway
    template, args = arguments["backend"]
    script = render(
        (TEMPLATES / template).read_text(),
        {**RUNNER, "ports": evaluate(args["ports"], variables)},
    )
    assert opened_ports(script) == backend_listen == {variables["backend"]["port"]}
    template, args = arguments["tester"]
    script = render(
        (TEMPLATES / template).read_text(),
        {**RUNNER, "ports": evaluate(args["ports"], variables, index=0)},
    )
    assert opened_ports(script) == set()
    # With several testers, tester 0 serves the phase barrier where the others call it (the
    # --barrier URL every tester gets): its script opens that port, the others' nothing.
    _, variables = rendered_run(testers=3)
    tester_args = variables["tester"]["args"]
    barrier = urlsplit(tester_args[tester_args.index("--barrier") + 1])
    assert (
        barrier.hostname
        == "gb-" + variables["run_id"] + "-tester.europe-central2-a.c.proj.internal"
    )
    for index, expected in ((0, {barrier.port}), (1, set()), (2, set())):
        ports = evaluate(args["ports"], variables, index=index)
        script = render((TEMPLATES / template).read_text(), {**RUNNER, "ports": ports})
        assert opened_ports(script) == expected, index
    # A deployed run's backend VM: every replica's port, the baseline's TLS listener and the
    # fault's control, as backend.json has it listen; its gateways' and tester's as before.
    rendered, variables = rendered_run(deployed=True)
    spec = rendered.backend
    listens = [*spec["replicas"], spec["tls"]["listen"], spec["control"]]
    template, args = arguments["backend"]
    script = render(
        (TEMPLATES / template).read_text(),
        {**RUNNER, "ports": evaluate(args["ports"], variables), "caps": ["NET_RAW"]},
    )
    assert opened_ports(script) == {int(a.rsplit(":", 1)[1]) for a in listens}
    assert opened_ports(script) == {8080, 8081, 8082, 8443, 8079}
    targets = {p["target"]: urlsplit(p["request"]["base_url"]) for p in rendered.workload["phases"]}
    assert {(t.scheme, t.port) for t in targets.values()} == {("https", 8000), ("https", 8443)}
    # The firewall opens before the containers start.
    gateway_script = render((TEMPLATES / "gateway.sh.tftpl").read_text(), GATEWAY)
    assert gateway_script.index("iptables") < gateway_script.index("docker run")


def terraform() -> str:
    path = shutil.which("terraform")
    if path is None:
        pytest.fail(
            "the terraform CLI is not on PATH: install Terraform from HashiCorp "
            "(https://developer.hashicorp.com/terraform/install; docs/cloud.md, 'First deploy')"
        )
    return path


def pull_references(images: list[str], mirror: str) -> dict[str, str]:
    """infra/vms/modules/images evaluated by Terraform itself (no provider: runs offline)."""
    result = subprocess.run(
        [
            terraform(),
            "console",
            "-no-color",
            f"-var=images={json.dumps(images)}",
            f"-var=mirror={mirror}",
        ],
        input="jsonencode(local.pull)\n",
        cwd=VMS / "modules" / "images",
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "TF_IN_AUTOMATION": "1"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(json.loads(result.stdout.strip().splitlines()[-1])))


def test_gateway_images_come_through_the_docker_hub_remote_repository() -> None:
    """No VM pulls from docker.io through the NAT: every image any renderer names (and Tyk's
    Redis) reaches the startup script as the project's Docker Hub remote repository."""
    from gatebench.cloud._render import REDIS_IMAGE
    from gatebench.core.renderers import gateway_names, get_renderer

    images = sorted(
        {i for n in gateway_names() if (i := get_renderer(n).cloud_image)} | {REDIS_IMAGE}
    )
    assert len(images) >= 10
    mirror = "europe-central2-docker.pkg.dev/proj/gb-dockerhub"
    pulled = pull_references([*images, "docker.io/library/nginx:1", "quay.io/org/img:2"], mirror)
    assert pulled["nginx:1.22.1"] == f"{mirror}/library/nginx:1.22.1"
    assert pulled["envoyproxy/envoy:v1.40.0"] == f"{mirror}/envoyproxy/envoy:v1.40.0"
    assert pulled["docker.io/library/nginx:1"] == f"{mirror}/library/nginx:1"
    assert pulled["quay.io/org/img:2"] == "quay.io/org/img:2"  # another registry: as named
    for image in images:
        assert pulled[image].startswith(f"{mirror}/"), image
    # The provision build resolves each tag's digest where the VMs pull it from: the same rule
    # in Python (gatebench.cloud._images), and a pinned reference keeps its digest there.
    from gatebench.cloud._images import docker_hub_mirror

    digest = "sha256:" + "ab" * 32
    pinned = [f"{i}@{digest}" for i in images]
    again = pull_references(
        [*images, *pinned, "docker.io/library/nginx:1", "quay.io/org/img:2"], mirror
    )
    for image in [*images, *pinned, "docker.io/library/nginx:1"]:
        assert docker_hub_mirror(image, mirror) == again[image], image
    assert again[f"nginx:1.22.1@{digest}"] == f"{mirror}/library/nginx:1.22.1@{digest}"
    assert docker_hub_mirror("quay.io/org/img:2", mirror) is None
    # infra/vms hands the templates the mirrored references, for the gateway and sidecars,
    # and the mirror is the remote repository infra/modules/runner creates.
    _, args = startup_arguments()["gateway"]
    assert args["image"] == "module.images.pull[each.value.image]"
    assert "module.images.pull[s.image]" in args["sidecars"]
    main = (VMS / "main.tf").read_text()
    assert 'docker_hub = "${local.registry}/${var.project}/${var.prefix}-dockerhub"' in main
    runner = (VMS.parent / "modules" / "runner" / "main.tf").read_text()
    assert 'repository_id = "${var.prefix}-dockerhub"' in runner
    assert 'public_repository = "DOCKER_HUB"' in runner
    # The rendered scripts: every `docker run` image is the mirror's; none names docker.io.
    values = dict(GATEWAY, image=pulled["nginx:1.22.1"])
    values["sidecars"] = [dict(GATEWAY["sidecars"][0], image=pulled[REDIS_IMAGE])]
    script = render((TEMPLATES / "gateway.sh.tftpl").read_text(), values)
    joined = script.replace("\\\n", "")
    runs = re.findall(
        r"^docker run .*? --network host (?:--cgroup-parent=\S+\s+|--cgroupns=host\s+)?"
        r"--log-driver=gcplogs\s+"
        r"(?:-v \S+\s+)*'([^']+)'",
        joined,
        re.M,
    )
    assert len(runs) == joined.count("\ndocker run ") == 3
    # ... except the meter's, which is the runner image (the project's own repository).
    assert runs[-1] == GATEWAY["runner_image"], runs
    assert runs[:-1] and all(i.startswith(mirror) for i in runs[:-1]), runs
    assert (
        "docker-credential-gcr configure-docker --registries='europe-central2-docker.pkg.dev'"
        in script
    )
    for path in [*TEMPLATES.iterdir(), *VMS.glob("*.tf"), VMS.parents[1] / "cloudbuild"]:
        if path.is_file():
            assert "docker.io" not in path.read_text(), path


# -- the meter beside the gateway (gatebench cloud meter; issue: cost per gateway on the cloud)

METER_SECTION = "# The gateway container's cgroup"


def meter_section(tmp_path: Path, pid: int) -> tuple[Path, Path]:
    """The rendered script's meter part, runnable here: ``docker`` is a stand-in on PATH
    that answers ``inspect`` with ``pid`` and records the argv of ``run``."""
    script = render((TEMPLATES / "gateway.sh.tftpl").read_text(), GATEWAY)
    part = tmp_path / "meter.sh"
    part.write_text("set -euo pipefail\n" + script[script.index(METER_SECTION) :])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = tmp_path / "run.args"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = inspect ]; then echo {pid}; exit 0; fi\n'
        f'printf "%s\\n" "$@" > {recorded}\n'
    )
    docker.chmod(0o755)
    return part, recorded


def test_the_gateway_script_starts_the_meter_with_the_runs_values_quoted() -> None:
    script = render((TEMPLATES / "gateway.sh.tftpl").read_text(), GATEWAY)
    meter = script[script.index(METER_SECTION) :]
    assert meter.endswith(
        "docker run -d --name gatebench-meter --restart on-failure:10 --network host "
        "--cgroupns=host \\\n"
        "  --log-driver=gcplogs -v /sys/fs/cgroup:/host/cgroup:ro -v /proc:/host/proc:ro "
        "'europe-central2-docker.pkg.dev/proj/gb-gatebench/runner:0.1.0' cloud meter \\\n"
        "  --proc /host/proc --run-id 'r-0123456789abcdef0123' \\\n"
        "  --runs-bucket 'gb-runs-proj' --target 'nginx' --cgroup \"/host/cgroup$cgroup\"\n"
    )
    # The gateway's container is found before; a reboot replaces the previous boot's meter.
    assert script.index("docker run -d --name gateway ") < script.index(METER_SECTION)
    assert (
        "docker rm -f gatebench-meter gatebench-live gateway 'redis' 2>/dev/null || true" in script
    )
    # The runner image's registry is the one docker-credential-gcr is configured for.
    registry = GATEWAY["runner_image"].split("/")[0]
    assert f"docker-credential-gcr configure-docker --registries='{registry}'" in script
    # The arguments are the CLI's own (gatebench cloud meter parses them).
    from gatebench.cli import build_parser

    argv = ["cloud", "meter", "--run-id", "r-0123456789abcdef0123", "--runs-bucket"]
    argv += ["gb-runs-proj", "--target", "nginx", "--cgroup", "/x", "--proc", "/host/proc"]
    args = build_parser().parse_args(argv)
    assert (args.run_id, args.runs_bucket, args.target, args.cgroup, args.proc) == (
        "r-0123456789abcdef0123",
        "gb-runs-proj",
        "nginx",
        "/x",
        "/host/proc",
    )
    assert args.cgroup_root == "/host/cgroup"  # where the script mounts the host's hierarchy
    # main.tf passes the runner image, the run and the gateway's own name.
    _, arguments = startup_arguments()["gateway"]
    assert (arguments["runner_image"], arguments["run_id"], arguments["target"]) == (
        "var.runner_image",
        "var.run_id",
        "each.key",
    )


def root_and_unshare() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("this test needs root and unshare (util-linux) to stand in /proc/PID/cgroup")


def test_the_meter_reads_the_gateway_containers_cgroup_from_its_main_process(
    tmp_path: Path,
) -> None:
    """A stand-in for docker and for the kernel's /proc/PID/cgroup line (this machine has
    cgroup v1; COS, from milestone 97, has v2 with Docker's systemd driver): the script's own
    lines find the container's cgroup from its process and hand it to the meter."""
    root_and_unshare()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        part, recorded = meter_section(tmp_path, sleeper.pid)
        line = tmp_path / "cgroup"
        line.write_text("0::/system.slice/docker-0f1e2d.scope\n")
        env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
        done = subprocess.run(
            [
                "unshare",
                "-m",
                "bash",
                "-c",
                f"mount --bind {line} /proc/{sleeper.pid}/cgroup && bash {part}",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        argv = recorded.read_text().splitlines()
        assert argv[argv.index("--cgroup") + 1] == "/host/cgroup/system.slice/docker-0f1e2d.scope"
        assert argv[argv.index("-v") + 1] == "/sys/fs/cgroup:/host/cgroup:ro"
        # A process in the root cgroup (this machine's cgroup v1 gives `0::/`): no meter.
        recorded.unlink()
        done = subprocess.run(["bash", str(part)], capture_output=True, text=True, env=env)
        assert done.returncode == 1
        assert done.stderr == (
            f"gatebench: the gateway container (pid {sleeper.pid}) has no cgroup v2 path of its "
            "own; not metering\n"
        )
        assert not recorded.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def validation_errors(variables: dict[str, Any], tmp_path: Path) -> str:
    """infra/vms/variables.tf's validation messages for these values, checked by Terraform
    itself (`terraform console` with the variables alone needs no provider)."""
    folder = tmp_path / "vars"
    folder.mkdir(exist_ok=True)
    shutil.copy(VMS / "variables.tf", folder / "variables.tf")
    (folder / "run.tfvars.json").write_text(json.dumps(variables))
    result = subprocess.run(
        [terraform(), "console", "-no-color", "-var-file=run.tfvars.json"],
        input="var.run_id\n",
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "TF_IN_AUTOMATION": "1"},
        timeout=120,
    )
    return " ".join(result.stderr.split()) if "Error:" in result.stderr else ""


def test_every_value_the_gateway_script_quotes_is_validated_by_terraform(tmp_path: Path) -> None:
    """The values main.tf hands the gateway template land in single quotes: Terraform refuses
    any that could leave them (a quote, a newline) before a VM is made."""
    _, variables = rendered_run()
    assert validation_errors(variables, tmp_path) == ""
    gateway = next(iter(variables["gateways"].values()))
    bad: list[tuple[dict[str, Any], str]] = [
        (
            {"gateways": {"ng'inx": gateway}},
            "gateways: names are lowercase letters, digits and hyphens, starting with a letter",
        ),
        ({"run_id": "r-0123456789abcdef0123'"}, "run_id: r- and 20 hexadecimal digits."),
        ({"runs_bucket": "gb-runs' x"}, "runs_bucket: a bucket name"),
        (
            {"runner_image": "europe-docker.pkg.dev/p/r/runner:1'; reboot"},
            "runner_image: an image reference REGISTRY/PATH[:TAG][@sha256:DIGEST]",
        ),
        (
            {"image": "projects/cos-cloud/global/images/family/cos-stable"},
            "image: a Container-Optimized OS image of the cos-cloud project by name",
        ),
        (
            {"gateways": {"nginx": {**gateway, "args": ["nginx", "x'y"]}}},
            "gateways: arguments and paths may not contain quotes or newlines",
        ),
        (
            {"gateways": {"nginx": {**gateway, "configure": [["cloud", "x'; reboot"]]}}},
            "gateways: arguments and paths may not contain quotes or newlines",
        ),
        (
            {"gateways": {"nginx": {**gateway, "random_env": ["X'; reboot"]}}},
            "gateways[*].random_env: environment variable names",
        ),
        (
            {"gateways": {"nginx": {**gateway, "env": {"GOMAXPROCS": "2'; reboot"}}}},
            "gateways[*].env: environment variable names",
        ),
        (
            {"gateways": {"nginx": {**gateway, "env": {"go maxprocs": "2"}}}},
            "gateways[*].env: environment variable names",
        ),
    ]
    for change, message in bad:
        assert message in validation_errors({**variables, **change}, tmp_path), change


def env_pairs(entry: dict[str, Any]) -> list[str]:
    """main.tf's ``env`` argument: the entry's env map as sorted NAME=VALUE strings."""
    assert startup_arguments()["gateway"][1]["env"] == (
        '[for k in sort(keys(each.value.env)) : "${k}=${each.value.env[k]}"]'
    )
    return [f"{k}={v}" for k, v in sorted(entry.get("env", {}).items())]


def gateway_script(variables: dict[str, Any], gateway: str) -> str:
    """The gateway VM's startup script as main.tf renders it for one run's gateway."""
    entry = variables["gateways"][gateway]
    values = {
        **GATEWAY,
        "image": entry["image"],
        "args": entry["args"],
        "sidecars": entry["sidecars"],
        "env": env_pairs(entry),
        "random_env": entry["random_env"],
        "target": gateway,
    }
    return render((TEMPLATES / "gateway.sh.tftpl").read_text(), values)


def test_tyk_gets_a_control_api_secret_generated_on_its_vm_and_stored_nowhere(
    tmp_path: Path,
) -> None:
    """tyk.conf's ``secret`` is empty: Tyk's control API would take any request with an empty
    secret. The gateway VM generates one at every boot and gives it to the Tyk container alone
    (``-e TYK_GW_SECRET``, copied from the script's environment); other gateways get none."""
    rendered, variables = rendered_run(gateways=["nginx", "tyk"])
    assert variables["gateways"]["tyk"]["random_env"] == ["TYK_GW_SECRET"]
    assert variables["gateways"]["nginx"]["random_env"] == []
    assert json.loads(rendered.configs["tyk"]["tyk.conf"])["secret"] == ""
    _, arguments = startup_arguments()["gateway"]
    assert arguments["random_env"] == "each.value.random_env"

    tyk = gateway_script(variables, "tyk").replace("\\\n", "")
    gateway_runs = [
        line for line in tyk.splitlines() if line.startswith("docker run -d --name gateway ")
    ]
    assert len(gateway_runs) == 1
    assert " -e 'TYK_GW_SECRET' " in gateway_runs[0]
    others = [
        line
        for line in tyk.splitlines()
        if line.startswith("docker run") and line not in gateway_runs
    ]
    assert len(others) == 2 and not any(
        "TYK_GW_SECRET" in line or " -e " in line for line in others
    )
    (export,) = [
        line for line in tyk.splitlines() if "TYK_GW_SECRET" in line and line.startswith("export")
    ]
    # The export line run by bash: a fresh 64-hex-digit secret each boot, in the environment
    # docker copies it from.
    secrets = set()
    for _ in range(2):
        shown = subprocess.run(
            ["bash", "-c", f'set -euo pipefail; {export}; printf %s "$TYK_GW_SECRET"'],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert re.fullmatch(r"[0-9a-f]{64}", shown), shown
        secrets.add(shown)
    assert len(secrets) == 2

    nginx = gateway_script(variables, "nginx").replace("\\\n", "")
    commands = [line for line in nginx.splitlines() if not line.startswith("#")]
    assert not any("TYK_GW_SECRET" in line or line.startswith("export '") for line in commands)
    assert not re.search(r" -e '[A-Z]", nginx)
    # Not a Terraform variable, not in run.tfvars.json or any object of the run: names only.
    infra = "".join(p.read_text() for p in [*VMS.glob("*.tf"), *VMS.parent.glob("*.tf")])
    assert not re.search(r'variable "[^"]*tyk[^"]*"', infra, re.I)
    assert "TYK_GW_SECRET" not in infra
    stored = json.dumps(variables) + "".join(rendered.objects().values())
    assert stored.count("TYK_GW_SECRET") == 2  # run.tfvars.json and fleet.json, as a name
    assert not re.search(r'"secret": "[^"]', stored)


def test_every_container_of_a_run_logs_to_cloud_logging() -> None:
    """Each `docker run` of the startup scripts uses Docker's gcplogs driver (as the VM's
    account, which holds roles/logging.logWriter), and Container-Optimized OS's logging agent is
    on for the scripts' own output (docs/cloud.md, "Logs")."""
    import hcl2

    for name in ("gateway.sh.tftpl", "runner.sh.tftpl"):
        text = (TEMPLATES / name).read_text().replace("\\\n", " ")
        runs = [line for line in text.splitlines() if line.startswith("docker run ")]
        assert runs, name
        for line in runs:
            assert " --log-driver=gcplogs " in line, (name, line)
    with (ROOT / "infra" / "vms" / "main.tf").open() as handle:
        document = hcl2.load(handle)
    instances = [
        body
        for block in document["resource"]
        for kind, named in block.items()
        if kind.strip('"') == "google_compute_instance"
        for body in named.values()
        if isinstance(body, dict)
    ]
    assert len(instances) == 3
    for body in instances:
        attributes = instance_metadata(body["metadata"])[1]
        assert attributes["google-logging-enabled"].strip('"') == "true"
    runner = (ROOT / "infra" / "modules" / "runner" / "main.tf").read_text()
    writers = runner[runner.index('resource "google_project_iam_member" "log_writers"') :]
    assert "google_service_account.vm)" in writers.split("\n")[1]
    assert 'role     = "roles/logging.logWriter"' in writers.split("\n}")[0]


def test_every_gateway_vm_runs_its_gateway_with_its_environment() -> None:
    """The fleet carries what each gateway always runs with (``Renderer.runtime_env``), and the
    gateway's ``docker run`` passes it: KrakenD never reports usage (``USAGE_DISABLE=1``) and the
    Go gateways use every vCPU of their VM (``GOMAXPROCS``; n2-standard-2: 2)."""
    _, variables = rendered_run(gateways=["nginx", "caddy", "krakend"])
    assert variables["gateways"]["krakend"]["env"] == {"GOMAXPROCS": "2", "USAGE_DISABLE": "1"}
    assert variables["gateways"]["caddy"]["env"] == {"GOMAXPROCS": "2"}
    assert variables["gateways"]["nginx"]["env"] == {}
    krakend = gateway_script(variables, "krakend").replace("\\\n", "")
    (run,) = [x for x in krakend.splitlines() if x.startswith("docker run -d --name gateway ")]
    assert " -e 'GOMAXPROCS=2' -e 'USAGE_DISABLE=1' " in run, run
    nginx = gateway_script(variables, "nginx").replace("\\\n", "")
    (run,) = [x for x in nginx.splitlines() if x.startswith("docker run -d --name gateway ")]
    assert " -e " not in run, run


def test_the_gateways_configuration_folder_is_where_cos_lets_it_run_what_it_puts_there() -> None:
    """Varnish loads the VCL it compiles into its working folder and Netty its native
    transport from java.io.tmpdir, both in the configuration folder; COS mounts /var, /home
    and /tmp noexec and a container's volume keeps the flag (tests/integration/
    test_cloud_vm_noexec.py shows both gateways there)."""
    from cloud.startup import config_folder, cos_noexec

    script = render((TEMPLATES / "gateway.sh.tftpl").read_text(), GATEWAY)
    folder = config_folder(script)
    assert folder == "/mnt/disks/gatebench/config" and not cos_noexec(folder)
    assert f'-v "$dir:{GATEWAY["mount"]}"' in script  # the gateway's volume
