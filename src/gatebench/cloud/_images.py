"""Every image a run's VMs start, pinned by digest when the run is provisioned.

The deployment names images by tag: the runner image (``settings.runner_image``, pushed by
cloudbuild/runner-image.yaml) and each gateway's official Docker Hub image (its renderer's
``cloud_image``, pulled through the deployment's Docker Hub remote repository). A tag can move
between two runs, or during one. So the provision build (``gatebench cloud vm-vars``) asks the
registry for the digest each tag names now (the Docker Registry HTTP API v2: ``HEAD
/v2/NAME/manifests/TAG``, answered with ``Docker-Content-Digest``) and writes the references as
``NAME:TAG@sha256:DIGEST``: every VM of the run pulls exactly that image, and the run's saved
variables (``runs/RUN/vms.tfvars.json``) record what ran. Docker Hub references are resolved
through the remote repository, as the VMs pull them (infra/vms/modules/images holds the same
rule in Terraform).

Authentication: Artifact Registry accepts the caller's OAuth access token as a bearer token
(the build account's, from the metadata server). ``ARTIFACT_REGISTRY_EMULATOR_HOST`` (tests,
a laptop) sends every request to that plain-HTTP registry instead, without a token.
"""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from gatebench.cloud._objects import RequestError
from gatebench.core.errors import Problem

EMULATOR_ENV = "ARTIFACT_REGISTRY_EMULATOR_HOST"
MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")

Transport = Callable[[str, dict[str, str]], tuple[int, dict[str, str]]]
"""(url, headers) → (status, response headers) of a HEAD request."""


def docker_hub_mirror(reference: str, mirror: str) -> str | None:
    """Where a Docker Hub reference is pulled from (``MIRROR/library/nginx:1.22.1``), or None
    for a reference naming another registry (a host with a dot or a port before the first
    slash): the rule of infra/vms/modules/images."""
    ref = reference
    for prefix in ("docker.io/", "index.docker.io/"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
            break
    else:
        first = reference.split("/", 1)[0]
        if "/" in reference and ("." in first or ":" in first):
            return None
    name = ref.split("@", 1)[0].split(":", 1)[0]
    return f"{mirror}/{'library/' if '/' not in name else ''}{ref}"


def split_reference(reference: str) -> tuple[str, str, str | None, str | None]:
    """(registry host, repository path, tag, digest) of ``HOST/PATH[:TAG][@sha256:D]``."""
    rest, _, digest = reference.partition("@")
    host, _, path = rest.partition("/")
    tag = None
    if ":" in path.rsplit("/", 1)[-1]:
        path, _, tag = path.rpartition(":")
    if not host or not path or (digest and not _DIGEST.match(digest)):
        raise ValueError(f"not an image reference HOST/PATH[:TAG][@sha256:DIGEST]: {reference!r}")
    return host, path, tag or None, digest or None


def manifest_digest(
    reference: str, transport: Transport, token: str | None, label: str | None = None
) -> str:
    """The digest the registry gives ``reference``'s tag now (``sha256:...``); a reference
    already pinned keeps its digest. RequestError naming the reference (or ``label``, the name
    the plan knows it by) otherwise."""
    host, path, tag, digest = split_reference(reference)
    if digest is not None:
        return digest
    emulator = os.environ.get(EMULATOR_ENV)
    base = f"http://{emulator}" if emulator else f"https://{host}"
    url = f"{base}/v2/{path}/manifests/{tag or 'latest'}"
    headers = {"Accept": ", ".join(MANIFEST_TYPES)}
    if token and not emulator:
        headers["Authorization"] = f"Bearer {token}"
    status, answer = transport(url, headers)
    found = {k.lower(): v for k, v in answer.items()}.get("docker-content-digest", "")
    if status != 200 or not _DIGEST.match(found):
        why = f"answered {status}" if status != 200 else "named no digest"
        raise RequestError(
            [
                Problem(
                    "", f"{label or reference}: cannot pin it by digest: the registry {why} ({url})"
                )
            ]
        )
    return found


def pinned(reference: str, digest: str) -> str:
    """``NAME:TAG@DIGEST`` (the tag kept for people; the digest is what is pulled)."""
    return f"{reference.split('@', 1)[0]}@{digest}"


def pin_images(
    values: dict[str, Any],
    mirror: str,
    *,
    transport: Transport | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """infra/vms variables with the runner image and every gateway and sidecar image pinned
    by digest, each resolved where the VMs pull it from; the digests by reference."""
    http = transport or urllib_head
    digests: dict[str, str] = {}

    def pin(reference: str, where: str | None = None) -> str:
        if reference not in digests:
            digests[reference] = manifest_digest(where or reference, http, token, reference)
        return pinned(reference, digests[reference])

    out = dict(values)
    out["runner_image"] = pin(values["runner_image"])
    gateways = {}
    for name, gateway in (values.get("gateways") or {}).items():
        entry = dict(gateway)
        entry["image"] = pin(gateway["image"], docker_hub_mirror(gateway["image"], mirror))
        entry["sidecars"] = [
            dict(s, image=pin(s["image"], docker_hub_mirror(s["image"], mirror)))
            for s in gateway.get("sidecars") or []
        ]
        gateways[name] = entry
    out["gateways"] = gateways
    return out


def mirror_of(settings: Mapping[str, Any]) -> str:
    """The deployment's Docker Hub remote repository (infra/modules/runner), on the runner
    image's registry: ``REGISTRY/PROJECT/PREFIX-dockerhub`` (as infra/vms/main.tf names it)."""
    registry = str(settings["runner_image"]).split("/", 1)[0]
    return f"{registry}/{settings['project']}/{settings['prefix']}-dockerhub"


def urllib_head(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers or {})
    except OSError as exc:
        raise RequestError([Problem("", f"{url}: the registry cannot be reached: {exc}")]) from None


def access_token() -> str | None:
    """The ambient account's OAuth access token (None with the emulator)."""
    if os.environ.get(EMULATOR_ENV):
        return None
    import google.auth
    from google.auth.transport.requests import Request

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    credentials.refresh(Request())  # type: ignore[no-untyped-call]
    token: str | None = credentials.token
    return token


__all__ = [
    "EMULATOR_ENV",
    "access_token",
    "docker_hub_mirror",
    "manifest_digest",
    "mirror_of",
    "pin_images",
    "pinned",
    "split_reference",
]
