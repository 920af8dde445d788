"""The VMs' startup scripts (infra/vms/templates/*.tftpl) rendered as Terraform renders them
for one run, so the local VMs run exactly their firewall lines.

On Compute Engine the startup script is what opens a VM's ports (Container-Optimized OS drops
everything else). Here each machine's script is rendered from the same template with the
variables infra/vms/main.tf passes (``ports`` evaluated from main.tf's own expression; the
others computed from run.tfvars.json as main.tf computes them), and its ``iptables`` lines are
run inside the machine's namespace: a port a template forgets stays closed here too.

The template language is the subset the templates use (``${a.b}``, ``%{ for x in xs }`` ...
``%{ endfor }``, ``~`` strip markers, ``$${``/``%%{`` escapes); anything else is refused.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import quote

import hcl2

ROOT = Path(__file__).resolve().parents[2]
VMS = ROOT / "infra" / "vms"

_TOKEN = re.compile(r"(\$\$\{|%%\{|\$\{~?|%\{~?)")


class TemplateError(Exception):
    pass


def render_template(text: str, variables: dict[str, Any]) -> str:
    parts = _parse(text)
    out: list[str] = []
    _render(parts, variables, out)
    return "".join(out)


def _parse(text: str) -> list[Any]:
    """Text and tags, strip markers applied: [str | ("interp", expr) | ("for", var, expr,
    body) ]."""
    items: list[Any] = []
    pos = 0
    while True:
        match = _TOKEN.search(text, pos)
        if match is None:
            items.append(text[pos:])
            break
        opener = match.group(1)
        items.append(text[pos : match.start()])
        if opener in ("$${", "%%{"):
            items.append(opener[1:])
            pos = match.end()
            continue
        close = text.index("}", match.end())
        inner = text[match.end() : close]
        strip_after = inner.endswith("~")
        inner = inner.rstrip("~").strip()
        if opener.endswith("~"):
            items[-1] = items[-1].rstrip()
        items.append(("interp" if opener.startswith("$") else "directive", inner))
        pos = close + 1
        if strip_after:
            rest = text[pos:]
            pos += len(rest) - len(rest.lstrip())
    return _nest(iter(items), None)


def _nest(items: Any, closing: str | None) -> list[Any]:
    body: list[Any] = []
    for item in items:
        if isinstance(item, tuple) and item[0] == "directive":
            words = item[1].split()
            if words[:1] == ["for"] and len(words) == 4 and words[2] == "in":
                body.append(("for", words[1], words[3], _nest(items, "endfor")))
                continue
            if words == [closing]:
                return body
            raise TemplateError(f"template directive %{{{item[1]}}} is not supported here")
        body.append(item)
    if closing is not None:
        raise TemplateError(f"missing %{{{closing}}}")
    return body


def _render(parts: list[Any], scope: dict[str, Any], out: list[str]) -> None:
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif part[0] == "interp":
            value = _lookup(part[1], scope)
            if isinstance(value, (dict, list)):
                raise TemplateError(f"${{{part[1]}}} is a {type(value).__name__}, not a string")
            out.append(str(value).lower() if isinstance(value, bool) else str(value))
        else:
            _, name, source, body = part
            for item in _lookup(source, scope):
                _render(body, {**scope, name: item}, out)


def _lookup(expression: str, scope: dict[str, Any]) -> Any:
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", expression):
        raise TemplateError(f"template expression {expression!r} is not supported here")
    head, *path = expression.split(".")
    if head not in scope:
        raise TemplateError(f"the template uses {head!r}, which main.tf does not pass")
    value = scope[head]
    for key in path:
        value = value[key]
    return value


# -- what main.tf passes each template


_MERGE = re.compile(r'\$\{merge\(lookup\(var\.vm_metadata, "([^"]+)", \{\}\), \{(.*)\}\)\}', re.S)


def instance_metadata(value: Any) -> tuple[str | None, dict[str, str]]:
    """An instance's ``metadata`` as python-hcl2 reads main.tf: (the key of its own entry in
    ``var.vm_metadata``, merged in; None without one) and the attributes main.tf writes, the
    startup script as ``${templatefile(...)}``."""
    if isinstance(value, dict):
        return None, {str(k): str(v) for k, v in value.items()}
    match = _MERGE.fullmatch(str(value))
    if match is None:
        raise TemplateError(f"metadata = {str(value)[:80]}: not merge(lookup(var.vm_metadata...))")
    items = _object_items(match.group(2))
    return match.group(1), {
        k: ("${" + v + "}" if v.startswith("templatefile(") else v) for k, v in items.items()
    }


def templatefile_calls() -> dict[str, tuple[Path, dict[str, str]]]:
    """For each VM resource of infra/vms/main.tf: its startup-script template and the
    expressions main.tf passes (text, by argument name)."""
    with (VMS / "main.tf").open() as handle:
        document = hcl2.load(handle)
    calls = {}
    for block in document.get("resource", []):
        for kind, resources in block.items():
            if kind.strip('"') != "google_compute_instance":
                continue
            for name, body in resources.items():
                if name.startswith("__"):
                    continue
                script = instance_metadata(body["metadata"])[1]["startup-script"]
                match = re.fullmatch(
                    r'\$\{templatefile\("\$\{path\.module\}/([^"]+)", \{(.*)\}\)\}', script, re.S
                )
                if match is None:
                    raise TemplateError(f"{name}: startup-script is not a templatefile(...) call")
                calls[name.strip('"')] = (VMS / match.group(1), _object_items(match.group(2)))
    return calls


def _object_items(text: str) -> dict[str, str]:
    items, depth, start = {}, 0, 0
    pieces = []
    for i, char in enumerate(text):
        if char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    for piece in pieces:
        key, _, value = piece.partition("=")
        items[key.strip()] = value.strip()
    return items


def _ports(
    expression: str, values: dict[str, Any], each: dict[str, Any] | None, index: int | None = None
) -> list[int]:
    """``ports`` as main.tf computes it: a list of ``var.X.Y`` / ``each.value.Y``, a
    ``var.X.Y`` that is a list, or ``count.index == N ? A : B`` of those (``index``: the
    instance's ``count.index``)."""
    choice = re.fullmatch(r"count\.index == (\d+) \? (.+?) : (.+)", expression.strip())
    if choice is not None:
        if index is None:
            raise TemplateError(f"ports = {expression}: the instance has no count.index")
        chosen = choice.group(2) if index == int(choice.group(1)) else choice.group(3)
        return _ports(chosen, values, each, index)
    if re.fullmatch(r"var(\.\w+)+", expression.strip()):
        value: Any = values
        for key in expression.strip().split(".")[1:]:
            value = value[key]
        return [int(v) for v in value]
    if not re.fullmatch(r"\[[\w.,\s]*\]", expression):
        raise TemplateError(f"ports = {expression}: only a list of references is evaluated here")
    ports = []
    for ref in filter(None, (r.strip() for r in expression[1:-1].split(","))):
        head, *path = ref.split(".")
        if head == "var":
            value = values
        elif head == "each" and path[:1] == ["value"] and each is not None:
            value, path = each, path[1:]
        else:
            raise TemplateError(f"ports = {expression}: cannot evaluate {ref}")
        for key in path:
            value = value[key]
        ports.append(int(value))
    return ports


def startup_script(
    role: str,
    values: dict[str, Any],
    gateway: str | None = None,
    templates: Path | None = None,
    index: int | None = None,
) -> str:
    """The rendered startup script of one VM (``role``: backend, gateway or tester; ``index``:
    a tester's ``count.index``)."""
    template, expressions = templatefile_calls()[role]
    if templates is not None:
        template = templates / template.name
    registry = values["runner_image"].split("/")[0]
    each = values["gateways"][gateway] if gateway is not None else None
    if role == "gateway":
        assert each is not None
        variables: dict[str, Any] = {
            "bucket": values["runs_bucket"],
            "files": [
                {"path": f["path"], "url_object": quote(f["object"], safe="")}
                for f in each["files"]
            ],
            "dirs": each["dirs"],
            "mount": each["mount"],
            "registry": registry,
            "image": each["image"],
            "args": each["args"],
            "sidecars": each["sidecars"],
            # optional(map(string), {}) in variables.tf; main.tf passes sorted NAME=VALUE
            "env": [f"{k}={v}" for k, v in sorted(each.get("env", {}).items())],
            "random_env": each["random_env"],
            "configure": each["configure"],
            "live": each.get("live", []),  # optional(list(list(string)), []) in variables.tf
            "runner_image": values["runner_image"],
            "run_id": values["run_id"],
            "target": gateway,
        }
    else:
        variables = {
            "registry": registry,
            "image": values["runner_image"],
            "args": values[role]["args"],
            "caps": values[role].get("caps", []),  # optional(list(string), []) in variables.tf
        }
    variables["ports"] = _ports(expressions["ports"], values, each, index)
    missing = set(expressions) - set(variables)
    if missing:
        raise TemplateError(
            f"main.tf passes {sorted(missing)} to {template.name}: teach tests/cloud/startup.py"
        )
    return render_template(template.read_text(), variables)


def firewall_commands(script: str) -> list[list[str]]:
    """The script's ``iptables`` command lines, as argv lists."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        if line.split(maxsplit=1)[:1] == ["iptables"]:
            commands.append(shlex.split(line, comments=True))
    return commands


def meter_command(script: str, image: str) -> list[str]:
    """The gateway script's meter: the runner image's arguments (``cloud meter ...``) of its
    ``docker run --name gatebench-meter`` line, as argv."""
    for line in script.replace("\\\n", " ").splitlines():
        if not line.startswith("docker run "):
            continue
        words = shlex.split(line, comments=True)
        if "gatebench-meter" in words:
            return words[words.index(image) + 1 :]
    raise TemplateError("the gateway script starts no meter (docker run --name gatebench-meter)")


def runner_caps(script: str, image: str) -> list[str]:
    """The capabilities the tester's or backend's script adds to its container (``--cap-add
    NAME`` of its ``docker run -d --name gatebench`` line, before the image)."""
    for line in script.replace("\\\n", " ").splitlines():
        if not line.startswith("docker run "):
            continue
        words = shlex.split(line, comments=True)
        if words[words.index("--name") + 1] == "gatebench":
            options = words[: words.index(image)]
            return [options[i + 1] for i, w in enumerate(options) if w == "--cap-add"]
    raise TemplateError("the script starts no runner container (docker run --name gatebench)")


def live_command(script: str, image: str) -> list[str] | None:
    """The gateway script's live agent of a scale or change-under-load run: the runner image's
    arguments (``cloud live-gateway ...``) of its ``docker run --name gatebench-live`` line, and
    the line's mounts; None when the script starts none."""
    for line in script.replace("\\\n", " ").splitlines():
        if not line.startswith("docker run "):
            continue
        words = shlex.split(line, comments=True)
        if "gatebench-live" in words:
            return words[words.index(image) + 1 :]
    return None


def live_mounts(script: str, image: str) -> list[str]:
    """The ``-v`` values of the script's live-agent line (what the agent sees of the VM)."""
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True) if line.startswith("docker run ") else []
        if "gatebench-live" in words:
            options = words[: words.index(image)]
            return [options[i + 1] for i, w in enumerate(options) if w == "-v"]
    return []


def container_cgroup(script: str, name: str) -> str | None:
    """The ``--cgroup-parent`` the script's ``docker run --name NAME`` line gives its
    container (None: Docker's default, the VM's system.slice)."""
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True) if line.startswith("docker run ") else []
        if "--name" in words and words[words.index("--name") + 1] == name:
            for word in words:
                if word.startswith("--cgroup-parent="):
                    return word.split("=", 1)[1]
            return None
    raise TemplateError(f"the script starts no container named {name!r}")


COS_EXECUTABLE = ("/var/lib/docker", "/var/lib/google", "/var/lib/toolbox", "/var/lib/cloud")
"""The folders under COS's non-executable trees that are mounted executable (COS's "Disks and
file system overview": /var is noexec "except for /var/lib/google, /var/lib/docker,
/var/lib/toolbox", and cloud-init's /var/lib/cloud)."""
COS_NOEXEC = ("/var", "/home", "/tmp")
"""Container-Optimized OS's writable trees mounted ``noexec`` (the same page); /mnt/disks is
writable and executable, the root file system read-only."""


def cos_noexec(path: str) -> bool:
    """Whether Container-Optimized OS mounts the host folder ``path`` non-executable: a
    container's volume from there inherits it, and nothing the container puts in it runs."""

    def under(folder: str) -> bool:
        return path == folder or path.startswith(folder.rstrip("/") + "/")

    return any(under(f) for f in COS_NOEXEC) and not any(under(f) for f in COS_EXECUTABLE)


def config_folder(script: str) -> str:
    """The host folder the gateway script fetches the configuration into and mounts into the
    gateway's container (its ``dir=`` line)."""
    for line in script.splitlines():
        if line.startswith("dir="):
            return shlex.split(line[len("dir=") :])[0]
    raise TemplateError("the gateway script sets no dir= (the configuration folder)")


def configure_commands(script: str, image: str) -> list[list[str]]:
    """The gateway script's steps before its gateway starts: the runner image's arguments
    (``cloud gateway-config ...``) of each ``docker run --rm ... IMAGE`` line, as argv."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        if not line.startswith("docker run --rm "):
            continue
        words = shlex.split(line, comments=True)
        commands.append(words[words.index(image) + 1 :])
    return commands


__all__ = [
    "COS_EXECUTABLE",
    "COS_NOEXEC",
    "TemplateError",
    "config_folder",
    "configure_commands",
    "container_cgroup",
    "cos_noexec",
    "firewall_commands",
    "instance_metadata",
    "live_command",
    "live_mounts",
    "meter_command",
    "render_template",
    "runner_caps",
    "startup_script",
    "templatefile_calls",
]
