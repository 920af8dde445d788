"""The VMs' startup scripts (infra/vms/templates/*.sh.tftpl) rendered with sample values by a
small evaluator of the template syntax they use (``${a.b}``, ``%{ for x in xs ~}`` ...
``%{ endfor ~}``), then checked by ``bash -n``: they must be valid shell, and every value
from run.tfvars.json must land inside single quotes or a fixed path."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

TEMPLATES = Path(__file__).resolve().parents[2] / "infra" / "vms" / "templates"
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
    "image": "nginx:1.22.1",
    "args": [
        "nginx",
        "-p",
        "/etc/gatebench/",
        "-c",
        "/etc/gatebench/nginx.conf",
        "-g",
        "daemon off;",
    ],
    "sidecars": [{"name": "redis", "image": "redis:7.4.1", "args": ["redis-server", "--save", ""]}],
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
}


@pytest.mark.parametrize(
    ("name", "values"), [("gateway.sh.tftpl", GATEWAY), ("runner.sh.tftpl", RUNNER)]
)
def test_startup_scripts_are_valid_shell(name: str, values: dict[str, Any], tmp_path: Path) -> None:
    script = render((TEMPLATES / name).read_text(), values)
    assert "${" not in script.replace('"$dir', "").replace("$(", "") or "%{" not in script
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
