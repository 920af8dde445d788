"""What the local VMs take from infra/ (tests/cloud/storagegate.py, tests/cloud/startup.py):
each role's object grants, read from infra/*.tf with Cloud Storage's permission rules, and the
firewall lines of each role's rendered startup script."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from cloud.startup import TemplateError, firewall_commands, render_template, startup_script
from cloud.storagegate import Access, Forbidden, Grant, vm_grants

RUN = "r-0123456789abcdef0123"
BUCKET = "gb-runs"


@functools.cache
def grants() -> dict[str, list[Grant]]:
    return vm_grants()


def access(role: str) -> Access:
    return Access(role, f"{role}@proj.iam.gserviceaccount.com", BUCKET, grants()[role])


def allowed(role: str, permission: str, name: str | None, bucket: str = BUCKET) -> bool:
    try:
        access(role).check(permission, bucket, name)
    except Forbidden:
        return False
    return True


@pytest.mark.parametrize(
    ("role", "permission", "name", "expected"),
    [
        # Each role reads what its commands read (src/gatebench/vm/_roles.py, cloud/_tester.py).
        ("backend", "get", f"runs/{RUN}/backend.json", True),
        ("backend", "get", f"runs/{RUN}/mock-backend.json", True),
        ("backend", "get", f"runs/{RUN}/workload.json", False),
        ("gateway", "get", f"runs/{RUN}/configs/nginx/nginx.conf", True),
        ("tester", "get", f"runs/{RUN}/workload.json", True),
        # ... and writes nothing with its account: its run's write policies do
        ("tester", "create", f"raw/{RUN}/gatling/simulation.log", False),
        ("tester", "create", f"runs/{RUN}/tester/ready.json", False),
        ("tester", "delete", f"runs/{RUN}/tester/ready.json", False),
        # ... and nothing more: no overwrite of a raw log, no deployment settings, no state,
        # no other bucket, and no listing (a condition on object names never holds for it).
        ("tester", "delete", f"raw/{RUN}/gatling/simulation.log", False),
        ("tester", "create", f"runs/{RUN}/workload.json", False),
        ("gateway", "get", "pipeline/settings.json", False),
        ("gateway", "get", f"tfstate/runs/{RUN}/default.tfstate", False),
        ("gateway", "create", f"runs/{RUN}/configs/nginx/nginx.conf", False),
        # The gateway's meter writes runs/RUN/cgroup/GATEWAY.jsonl with a policy, not its account.
        ("gateway", "create", f"runs/{RUN}/cgroup/nginx.jsonl", False),
        ("gateway", "delete", f"runs/{RUN}/cgroup/nginx.jsonl", False),
        ("gateway", "get", f"runs/{RUN}/tester/load-done.json", True),
        ("gateway", "create", f"runs/{RUN}/configs/nginx/cgroup/x.jsonl", False),
        ("gateway", "create", f"runs/{RUN}/cgroup.jsonl", False),
        ("gateway", "create", f"runs/{RUN}/cgroup/nginx.json", False),
        ("gateway", "create", "runs/cgroup/nginx.jsonl", False),
        ("gateway", "create", f"runs/{RUN}/tester/load-done.json", False),
        ("tester", "list", None, False),
    ],
)
def test_each_role_gets_exactly_its_grants_from_infra(
    role: str, permission: str, name: str | None, expected: bool
) -> None:
    assert allowed(role, permission, name) is expected


def test_a_denied_request_says_who_lacks_what_as_cloud_storage_does() -> None:
    with pytest.raises(Forbidden) as caught:
        access("backend").check("get", "other-bucket", f"runs/{RUN}/backend.json")
    assert str(caught.value) == (
        "backend@proj.iam.gserviceaccount.com does not have storage.objects.get access to the "
        f"Google Cloud Storage object other-bucket/runs/{RUN}/backend.json. Permission "
        "'storage.objects.get' denied on resource (or it may not exist)."
    )


def test_bucket_wide_and_conditional_grants() -> None:
    viewer = Grant("roles/storage.objectViewer")
    assert viewer.allows("list", BUCKET, None)
    assert not viewer.allows("create", BUCKET, "x")
    conditional = Grant("roles/storage.objectUser", "runs/", "/done.json")
    assert conditional.allows("delete", BUCKET, "runs/r/done.json")
    assert not conditional.allows("get", BUCKET, "runs/r/other.json")
    assert not conditional.allows("list", BUCKET, None)
    folder = Grant("roles/storage.objectUser", "runs/", ".jsonl", "cgroup")
    assert folder.allows("create", BUCKET, "runs/r/cgroup/a.jsonl")
    assert not folder.allows("create", BUCKET, "runs/r/x/cgroup/a.jsonl")
    assert not folder.allows("create", BUCKET, "runs//cgroup/a.jsonl")


def test_the_template_subset_renders_as_terraform_does() -> None:
    text = "a\n%{ for p in ports ~}\nopen ${p}\n%{ endfor ~}\nb $${x} %%{y} ${m.k}\n"
    assert render_template(text, {"ports": [1, 2], "m": {"k": "v"}}) == (
        "a\nopen 1\nopen 2\nb ${x} %{y} v\n"
    )
    with pytest.raises(TemplateError, match=r"which main\.tf does not pass"):
        render_template("${nope}", {})
    with pytest.raises(TemplateError, match=r"%\{if x\} is not supported here"):
        render_template("%{if x}y%{endif}", {"x": True})


def values() -> dict[str, Any]:
    return {
        "runner_image": "europe-docker.pkg.dev/p/gb-gatebench/runner:0.1.0",
        "runs_bucket": BUCKET,
        "run_id": RUN,
        "backend": {"port": 8080, "ports": [8080, 8081, 8443], "args": ["cloud", "backend"]},
        "tester": {"args": ["cloud", "tester"], "count": 2, "listen": [8090]},
        "gateways": {
            "nginx": {
                "port": 8000,
                "files": [{"path": "nginx.conf", "object": f"runs/{RUN}/configs/nginx/nginx.conf"}],
                "dirs": ["logs"],
                "mount": "/etc/gatebench",
                "image": "nginx:1.27.3",
                "args": ["nginx", "-c", "/etc/gatebench/nginx.conf"],
                "random_env": [],
                "configure": [],
                "sidecars": [],
            }
        },
    }


@pytest.mark.parametrize(
    ("role", "gateway", "index", "ports"),
    [
        ("backend", None, None, ["8080", "8081", "8443"]),
        ("gateway", "nginx", None, ["8000"]),
        ("tester", None, 0, ["8090"]),  # tester 0 of two: its phase barrier
        ("tester", None, 1, []),
    ],
)
def test_each_startup_script_opens_exactly_its_roles_ports(
    role: str, gateway: str | None, index: int | None, ports: list[str]
) -> None:
    commands = firewall_commands(startup_script(role, values(), gateway, index=index))
    opened = [c for c in commands if "INPUT" in c]
    assert [c[c.index("--dport") + 1] for c in opened] == ports
    assert all(
        c[:4] == ["iptables", "-w", "-A", "INPUT"] and c[-2:] == ["-j", "ACCEPT"] for c in opened
    )
    # a gateway VM also keeps its gateway containers' cgroup from the metadata server
    kept = [c for c in commands if "OUTPUT" in c]
    assert kept == (
        [
            [
                "iptables",
                "-w",
                "-I",
                "OUTPUT",
                "-d",
                "169.254.169.254/32",
                "-m",
                "cgroup",
                "--path",
                "gateways.slice",
                "-j",
                "REJECT",
            ]
        ]
        if role == "gateway"
        else []
    )
