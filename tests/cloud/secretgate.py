"""A Secret Manager stand-in (Google ships no emulator) that answers as the real service does
for one caller, and only what infra/ grants that caller.

The grants are read from infra/ (python-hcl2), never restated here: every
``google_secret_manager_secret_iam_member`` whose ``member`` is a VM role's service account
(``module.runner.vm_members["ROLE"]``), whose ``secret_id`` and ``project`` are Terraform
variables resolved from the values the test gives (as ``terraform apply`` would), and whose
``count`` condition ``var.NAME == "" ? 0 : 1`` drops the grant when that variable is empty.
Only ``roles/secretmanager.secretAccessor`` (and the owner-like ``admin``) carry
``secretmanager.versions.access``.

Never kinder than Secret Manager: without the permission it answers 403 PERMISSION_DENIED with
Secret Manager's wording, whether or not the secret exists; with it, a secret that is not
stored answers 404. Only ``GET /v1/projects/P/secrets/S/versions/latest:access`` is served.
"""

from __future__ import annotations

import base64
import http.server
import json
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hcl2

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
ACCESS_ROLES = ("roles/secretmanager.secretAccessor", "roles/secretmanager.admin")
_ACCESS = re.compile(r"^/v1/projects/([^/]+)/secrets/([^/]+)/versions/latest:access$")
_VAR = re.compile(r"^\$\{var\.([a-z0-9_]+)\}$")
_COUNT = re.compile(r'^\$\{var\.([a-z0-9_]+) == "" \? 0 : 1\}$')
_MEMBER = re.compile(r'^\$\{module\.runner\.vm_members\["([a-z]+)"\]\}$')


def _text(value: Any) -> str:
    text = str(value)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


@dataclass(frozen=True)
class SecretGrant:
    vm: str
    role: str
    project: str
    secret: str


def secret_grants(variables: dict[str, str], infra: Path = INFRA) -> list[SecretGrant]:
    """Every secret grant of infra/*.tf to a VM role, with ``variables`` applied. A grant this
    reader cannot resolve (another shape of member, secret or count) fails loudly: the stand-in
    must not silently grant less, or more, than Terraform would."""
    grants = []
    for path in sorted(infra.glob("*.tf")):
        with path.open() as handle:
            document = hcl2.load(handle)
        for block in document.get("resource", []):
            for rtype, resources in block.items():
                if _text(rtype) != "google_secret_manager_secret_iam_member":
                    continue
                for name, body in resources.items():
                    where = f"{path.name}: {_text(name)}"
                    member = _MEMBER.match(str(body["member"]))
                    secret = _VAR.match(str(body["secret_id"]))
                    project = _VAR.match(str(body["project"]))
                    if member is None or secret is None or project is None:
                        raise ValueError(f"{where}: a grant of a shape this stand-in cannot read")
                    if "count" in body:
                        count = _COUNT.match(str(body["count"]))
                        if count is None:
                            raise ValueError(f"{where}: a count this stand-in cannot read")
                        if not variables.get(count.group(1), ""):
                            continue
                    grants.append(
                        SecretGrant(
                            member.group(1),
                            _text(body["role"]),
                            variables[project.group(1)],
                            variables[secret.group(1)],
                        )
                    )
    return grants


class SecretManagerStandIn:
    """One caller's Secret Manager: ``vm`` is the VM role whose service account calls it
    (``None``: an identity infra/ grants nothing, such as a gateway VM's)."""

    def __init__(
        self,
        vm: str | None,
        secrets: dict[str, str],
        variables: dict[str, str],
        infra: Path = INFRA,
        listener: socket.socket | None = None,
    ) -> None:
        """``listener``: a socket already listening (a local VM's own address: each VM
        reaches Secret Manager as its own account); None: a new one on 127.0.0.1."""
        self.vm = vm
        self.secrets = dict(secrets)
        """``projects/P/secrets/S`` → the latest version's text."""
        self.grants = secret_grants(variables, infra)
        self.requests: list[tuple[str, int]] = []
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, body = gate.answer(self.path)
                gate.requests.append((self.path, status))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        if listener is None:
            self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        else:
            self.server = http.server.ThreadingHTTPServer(
                listener.getsockname(), Handler, bind_and_activate=False
            )
            self.server.socket.close()
            self.server.socket = listener
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def allowed(self, project: str, secret: str) -> bool:
        return any(
            g.vm == self.vm
            and g.project == project
            and g.secret == secret
            and g.role in ACCESS_ROLES
            for g in self.grants
        )

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        match = _ACCESS.match(path)
        if match is None:
            return 404, _error(404, "NOT_FOUND", f"no such method: GET {path}")
        project, secret = match.groups()
        name = f"projects/{project}/secrets/{secret}"
        if not self.allowed(project, secret):
            return 403, _error(
                403,
                "PERMISSION_DENIED",
                f"Permission 'secretmanager.versions.access' denied for resource "
                f"'{name}/versions/latest' (or it may not exist).",
            )
        if name not in self.secrets:
            return 404, _error(404, "NOT_FOUND", f"Secret [{name}] not found or has no versions.")
        data = self.secrets[name].encode()
        return 200, {
            "name": f"{name}/versions/1",
            "payload": {"data": base64.b64encode(data).decode("ascii")},
        }

    def __enter__(self) -> SecretManagerStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}
