"""Cloud Storage as each VM role sees it: only the objects Terraform grants that role.

The grants are read from infra/ (python-hcl2), never restated here: the runs bucket's
bucket-wide roles (module "runs", ``iam``: a member naming a VM role's service account) and
the per-object table ``local.vm_object_access`` (role, object-name prefix, folder and suffix,
granted with an IAM condition on the object's name). Permissions per predefined role are Cloud
Storage's own (objectViewer: get, list; objectCreator: create; objectUser: get, list, create,
delete; objectAdmin: all). As on Cloud Storage, a condition on object names never matches a
list request (its resource is the bucket), overwriting an object also needs delete, and a
request without the permission answers 403, whether or not the object exists.

Each VM reaches storage through its own :class:`StorageGate`: an HTTP proxy in front of the
storage emulator, listening on the VM's side of the test network, that forwards only the
requests its role is allowed.

A VM writes with its run's V4 POST policies (gatebench.cloud._writes): a ``POST /BUCKET`` form
upload. The gate checks it as Cloud Storage does ("Upload an object with HTML forms", "Policy
document"): the signature over the base64 policy with the signer's public key (the build
account's: :class:`PolicySigner`), the expiration, every condition against the form's fields
(the bucket, ``eq`` or ``starts-with`` on the key, the content length), and the signer's own
grants on the object (read from infra/ as the VMs' are: a signed request acts as its signer);
the object is then uploaded to the emulator. A refusal answers 403 with Cloud Storage's XML
error.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import socket
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import hcl2

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
VM_ROLES = ("backend", "gateway", "tester")

PERMISSIONS = {
    "roles/storage.objectViewer": {"get", "list"},
    "roles/storage.objectCreator": {"create"},
    "roles/storage.objectUser": {"get", "list", "create", "delete"},
    "roles/storage.objectAdmin": {"get", "list", "create", "delete"},
    "roles/storage.admin": {"get", "list", "create", "delete", "bucket-get"},
}
"""``bucket-get``: storage.buckets.get (the bucket's metadata), which only storage.admin holds
of these roles."""


@dataclass(frozen=True)
class Grant:
    role: str
    prefix: str | None = None
    """None: the whole bucket (no condition)."""
    suffix: str = ""
    folder: str = ""
    """Not empty: the name continues ``RUN/FOLDER/`` after the prefix (RUN one name)."""

    def allows(self, permission: str, bucket: str, name: str | None) -> bool:
        permissions = PERMISSIONS.get(self.role)
        if permissions is None:  # a role infra/ grants that this table does not know yet
            raise ValueError(f"{self.role}: no permission table for this role here")
        if permission not in permissions:
            return False
        if self.prefix is None:
            return True
        if name is None:  # a list: the resource is the bucket, no object condition holds
            return False
        if self.folder:
            run, _, rest = name[len(self.prefix) :].partition("/")
            if not run or not rest.startswith(f"{self.folder}/"):
                return False
        return name.startswith(self.prefix) and name.endswith(self.suffix)


def _text(value: Any) -> str:
    text = str(value)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def vm_grants(infra: Path = INFRA) -> dict[str, list[Grant]]:
    """Each VM role's grants on the runs bucket, as infra/*.tf define them."""
    grants: dict[str, list[Grant]] = {role: [] for role in VM_ROLES}
    for path in sorted(infra.glob("*.tf")):
        with path.open() as handle:
            document = hcl2.load(handle)
        for block in document.get("locals", []):
            for role, entries in (block.get("vm_object_access") or {}).items():
                for entry in entries:
                    grants[role].append(
                        Grant(
                            _text(entry["role"]),
                            _text(entry["prefix"]),
                            _text(entry.get("suffix", '""')),
                            _text(entry.get("folder", '""')),
                        )
                    )
        for block in document.get("module", []):
            for name, body in block.items():
                if _text(name) != "runs":
                    continue
                for role_name, members in (body.get("iam") or {}).items():
                    for vm in VM_ROLES:
                        pattern = rf'module\.runner\.({vm}_member|vm_members\[\\?"{vm}\\?"\])'
                        if re.search(pattern, json.dumps(members)):
                            grants[vm].append(Grant(_text(role_name)))
    return grants


class Forbidden(Exception):
    pass


def build_grants(infra: Path = INFRA) -> list[Grant]:
    """The build account's grants on the runs bucket (module "runs": its bucket-wide roles and
    its conditional ones, by object-name prefix)."""
    grants: list[Grant] = []
    for path in sorted(infra.glob("*.tf")):
        with path.open() as handle:
            document = hcl2.load(handle)
        for block in document.get("module", []):
            for name, body in block.items():
                if _text(name) != "runs":
                    continue
                for role_name, members in (body.get("iam") or {}).items():
                    if "module.runner.build_member" in json.dumps(members):
                        grants.append(Grant(_text(role_name)))
                for entry in body.get("conditional_iam") or []:
                    if "module.runner.build_member" in str(entry.get("member")):
                        grants.append(Grant(_text(entry["role"]), _text(entry["prefix"])))
    return grants


@dataclass
class PolicySigner:
    """Who signs the VMs' write policies: the build account, its key's public half and its
    grants on the runs bucket."""

    email: str
    public_key: Any
    grants: list[Grant]


@dataclass
class Access:
    role: str
    account: str
    bucket: str
    grants: list[Grant]

    def check(self, permission: str, bucket: str, name: str | None) -> None:
        if bucket == self.bucket and any(g.allows(permission, bucket, name) for g in self.grants):
            return
        what = f"object {bucket}/{name}" if name is not None else f"bucket {bucket}"
        raise Forbidden(
            f"{self.account} does not have storage.objects.{permission} access to the Google "
            f"Cloud Storage {what}. Permission 'storage.objects.{permission}' denied on resource "
            "(or it may not exist)."
        )


class StorageGate:
    """An HTTP proxy to the storage emulator that lets through what ``access`` allows, and a
    form upload its policy allows (``signer``: who may sign one)."""

    def __init__(
        self,
        access: Access,
        listener: socket.socket,
        upstream: str,
        signer: PolicySigner | None = None,
    ) -> None:
        self.access = access
        self.signer = signer
        self.upstream = urlsplit(upstream)
        self.denied: list[str] = []
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                gate._handle(self)

            do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

        self.server = http.server.ThreadingHTTPServer(
            listener.getsockname(), Handler, bind_and_activate=False
        )
        self.server.socket.close()
        self.server.socket = listener
        self.server.daemon_threads = True
        host, port = listener.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- one request

    def _handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        form = re.fullmatch(r"/([a-z0-9][a-z0-9._-]*)/?", urlsplit(request.path).path)
        if request.command == "POST" and form is not None:
            self._form_upload(request, unquote(form.group(1)), body)
            return
        try:
            self._authorize(request.command, request.path, request.headers, body)
        except Forbidden as exc:
            self.denied.append(str(exc))
            payload = json.dumps(
                {
                    "error": {
                        "code": 403,
                        "message": str(exc),
                        "errors": [
                            {"message": str(exc), "domain": "global", "reason": "forbidden"}
                        ],
                    }
                }
            ).encode()
            request.send_response(403)
            request.send_header("Content-Type", "application/json; charset=UTF-8")
            request.send_header("Content-Length", str(len(payload)))
            request.end_headers()
            request.wfile.write(payload)
            return
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=120)
        try:
            headers = {
                k: v for k, v in request.headers.items() if k.lower() not in ("host", "connection")
            }
            conn.request(request.command, request.path, body=body or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            request.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() in ("transfer-encoding", "connection", "content-length"):
                    continue
                if key.lower() == "location":  # resumable uploads: come back through the gate
                    value = value.replace(
                        f"{self.upstream.scheme}://{self.upstream.netloc}", self.url
                    )
                request.send_header(key, value)
            request.send_header("Content-Length", str(len(data)))
            request.end_headers()
            request.wfile.write(data)
        finally:
            conn.close()

    def _authorize(self, method: str, path: str, headers: Any, body: bytes) -> None:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        route = parts.path
        match = re.fullmatch(r"(?:/download)?/storage/v1/b/([^/]+)/o/(.+)", route)
        if match:
            bucket, name = unquote(match.group(1)), unquote(match.group(2))
            if method == "GET":
                self.access.check("get", bucket, name)
            elif method == "DELETE":
                self.access.check("delete", bucket, name)
            else:
                self.access.check("create", bucket, name)
                self.access.check("delete", bucket, name)
            return
        match = re.fullmatch(r"/storage/v1/b/([^/]+)/o", route)
        if match and method == "GET":
            self.access.check("list", unquote(match.group(1)), None)
            return
        match = re.fullmatch(r"/storage/v1/b/([^/]+)", route)
        if match and method == "GET":  # the client library's cache of the bucket's metadata
            bucket = unquote(match.group(1))
            if not any(g.allows("bucket-get", bucket, None) for g in self.access.grants):
                raise Forbidden(
                    f"{self.access.account} does not have storage.buckets.get access to the "
                    f"Google Cloud Storage bucket. Permission 'storage.buckets.get' denied on "
                    f"resource (or it may not exist)."
                )
            return
        match = re.fullmatch(r"/upload/storage/v1/b/([^/]+)/o", route)
        if match:
            bucket = unquote(match.group(1))
            if "upload_id" in query:  # the rest of a resumable upload the gate let start
                return
            name = (query.get("name") or [None])[0] or _upload_name(headers, body)
            self.access.check("create", bucket, name)
            if self._exists(bucket, name) and query.get("ifGenerationMatch") != ["0"]:
                self.access.check("delete", bucket, name)  # an overwrite
            return
        raise Forbidden(f"{self.access.account}: {method} {route} is not a request the gate knows")

    # -- a form upload with a V4 POST policy

    def _form_upload(
        self, request: http.server.BaseHTTPRequestHandler, bucket: str, body: bytes
    ) -> None:
        try:
            fields, data = _form_fields(request.headers.get("Content-Type", ""), body)
            self._check_policy(bucket, fields, len(data))
        except Forbidden as exc:
            self.denied.append(str(exc))
            payload = (
                "<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
                f"<Message>{exc}</Message></Error>"
            ).encode()
            request.send_response(403)
            request.send_header("Content-Type", "application/xml; charset=UTF-8")
            request.send_header("Content-Length", str(len(payload)))
            request.end_headers()
            request.wfile.write(payload)
            return
        from urllib.parse import quote

        # to the emulator as the client library uploads (multipart: the object's metadata, then
        # its bytes), which it takes for any content type
        content_type = fields.get("Content-Type") or "application/octet-stream"
        boundary = "gate-" + uuid.uuid4().hex
        metadata = json.dumps({"name": fields["key"], "contentType": content_type})
        related = (
            (
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
                f"{metadata}\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n"
            ).encode()
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=120)
        try:
            conn.request(
                "POST",
                f"/upload/storage/v1/b/{quote(bucket, safe='')}/o?uploadType=multipart",
                body=related,
                headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
            )
            response = conn.getresponse()
            response.read()
            status = 204 if response.status == 200 else response.status
        finally:
            conn.close()
        request.send_response(status)
        request.send_header("Content-Length", "0")
        request.end_headers()

    def _check_policy(self, bucket: str, fields: dict[str, str], size: int) -> None:
        import base64
        import datetime

        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        if self.signer is None:
            raise Forbidden("Invalid argument: no policy is accepted here")
        policy = fields.get("policy", "")
        try:
            self.signer.public_key.verify(
                bytes.fromhex(fields.get("x-goog-signature", "")),
                policy.encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except (InvalidSignature, ValueError):
            raise Forbidden(
                "The request signature we calculated does not match the signature you provided."
            ) from None
        document = json.loads(base64.b64decode(policy))
        expires = datetime.datetime.strptime(document["expiration"], "%Y-%m-%dT%H:%M:%SZ")
        if expires.replace(tzinfo=datetime.UTC) < datetime.datetime.now(datetime.UTC):
            raise Forbidden("Invalid according to Policy: Policy expired.")
        form = {**fields, "bucket": bucket}
        for condition in document["conditions"]:
            if isinstance(condition, dict):
                ((key, value),) = condition.items()
                holds = form.get(key) == value
            elif condition[0] == "content-length-range":
                holds = int(condition[1]) <= size <= int(condition[2])
            else:
                match, field, value = condition
                found = form.get(field.lstrip("$"), "")
                holds = found == value if match == "eq" else found.startswith(value)
            if not holds:
                raise Forbidden(
                    f"Invalid according to Policy: Policy Condition failed: {json.dumps(condition)}"
                )
        email = fields.get("x-goog-credential", "").split("/", 1)[0]
        if email != self.signer.email:
            raise Forbidden(f"Invalid argument: unknown signer {email}")
        signer = Access("build", self.signer.email, self.access.bucket, self.signer.grants)
        signer.check("create", bucket, fields["key"])
        if self._exists(bucket, fields["key"]):
            signer.check("delete", bucket, fields["key"])  # an overwrite

    def _exists(self, bucket: str, name: str) -> bool:
        from urllib.parse import quote

        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=30)
        try:
            conn.request("GET", f"/storage/v1/b/{quote(bucket, safe='')}/o/{quote(name, safe='')}")
            return conn.getresponse().status == 200
        finally:
            conn.close()


def _form_fields(content_type: str, body: bytes) -> tuple[dict[str, str], bytes]:
    """A multipart/form-data body's text fields, and its ``file`` part (the last)."""
    boundary = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.startswith("multipart/form-data") or boundary is None:
        raise Forbidden("Invalid argument: a form upload is multipart/form-data")
    fields: dict[str, str] = {}
    data = b""
    for part in body.split(b"--" + boundary.group(1).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part[2:].partition(b"\r\n\r\n")
        content = content[:-2] if content.endswith(b"\r\n") else content
        name = re.search(rb'name="([^"]+)"', head)
        if name is None:
            continue
        if name.group(1) == b"file":
            data = content
        else:
            fields[name.group(1).decode()] = content.decode()
    return fields, data


def _upload_name(headers: Any, body: bytes) -> str:
    """The object name of a multipart or resumable upload: in its JSON metadata."""
    content_type = headers.get("Content-Type", "")
    if content_type.startswith("multipart/"):
        boundary = re.search(r'boundary="?([^";]+)"?', content_type)
        assert boundary is not None
        first = body.split(b"--" + boundary.group(1).encode())[1]
        metadata = first.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
        return str(json.loads(metadata)["name"])
    return str(json.loads(body or b"{}").get("name", ""))


__all__ = [
    "Access",
    "Forbidden",
    "Grant",
    "PolicySigner",
    "StorageGate",
    "build_grants",
    "vm_grants",
]
