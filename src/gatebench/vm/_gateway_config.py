"""The gateway VM writes its gateway's key-bearing files itself, just before the gateway
starts (``auth.api_key`` on the cloud path; docs/cloud.md, "API keys").

The render step has no key: the files it stores in the runs bucket hold a stand-in
(:data:`~gatebench.core.api_keys.REDACTED`, or its hash), and the fleet gives each gateway VM a
``configure`` step (``gatebench cloud gateway-config``, run from the runner image before the
gateway's container). That step reads the deployment's ``api_clients`` secret with the VM's
own service account (granted it alone with the testers: infra/secrets.tf), renders the run
again with the same core function and those keys (one implementation: the renderers, and
:func:`~gatebench.core.api_keys.with_api_keys`; HAProxy and Apache get hashes as locally), and
writes the gateway's files into its mounted folder. The keys never leave the VM.

When it cannot, it writes why to ``runs/RUN/gateways/GATEWAY/config-error.json`` (the
tester reports it for the target that never answers) and fails: the startup script stops
and the gateway never runs without its keys.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from gatebench.cloud._objects import ObjectRef
from gatebench.cloud._render import RENDER_INPUT, config_error_object, render_run, run_object
from gatebench.cloud._secrets import SecretManager, SecretReader
from gatebench.cloud._storage import Storage
from gatebench.cloud._tester import read_required_json
from gatebench.core.errors import GatebenchError, RunError


def gateway_files(
    storage: Storage, bucket: str, run_id: str, gateway: str, secrets: SecretReader | None = None
) -> dict[str, str]:
    """The gateway's files with the run's API keys in them (relative path → text). Raises
    :class:`RunError` naming the secret, never a key."""
    fleet = read_required_json(storage, bucket, run_object(run_id, "fleet.json"))
    entry = (fleet.get("gateways") or {}).get(gateway)
    if entry is None:
        raise RunError(f"the run has no gateway {gateway!r} (runs/{run_id}/fleet.json)")
    source = read_required_json(storage, bucket, run_object(run_id, RENDER_INPUT))
    settings = source["settings"]
    secret = f"projects/{settings.get('project', '')}/secrets/{settings.get('api_clients', '')}"
    keys = (secrets or SecretManager()).access(secret)
    try:
        data = base64.b64decode(source["spec"], validate=True)
    except (KeyError, binascii.Error):
        raise RunError(f"runs/{run_id}/{RENDER_INPUT} holds no description") from None
    where = source["object"]
    ref = ObjectRef(where["bucket"], where["name"], where["generation"])
    try:
        rendered = render_run(
            data, ref, settings, bucket, source.get("metadata") or {}, api_keys=keys
        )
    except GatebenchError as exc:
        raise RunError(str(exc)) from None
    if rendered.run_id != run_id or gateway not in rendered.configs:
        reason = rendered.failures.get(gateway, "not rendered")
        raise RunError(f"{gateway}: the run renders no configuration for it: {reason}")
    expected = sorted(f["path"] for f in entry["files"])
    if sorted(rendered.configs[gateway]) != expected:
        raise RunError(f"{gateway}: its files differ from the render step's ({expected})")
    return rendered.configs[gateway]


@contextlib.contextmanager
def config_error_written(
    storage: Storage, bucket: str, run_id: str, gateway: str, what: str
) -> Iterator[None]:
    """A RunError inside becomes the gateway's ``config-error.json`` (:func:`config_error_object`)
    and is raised again as ``GATEWAY: the gateway VM could not WHAT: REASON``."""
    try:
        yield
    except RunError as exc:
        reason = f"{gateway}: the gateway VM could not {what}: {exc}"
        body = json.dumps({"reason": reason}, indent=1, sort_keys=True) + "\n"
        # Best effort (a reboot's second failure cannot overwrite it): stderr says it too.
        with contextlib.suppress(Exception):
            storage.write(bucket, config_error_object(run_id, gateway), body, "application/json")
        raise RunError(reason) from None


def configure_gateway(
    storage: Storage,
    bucket: str,
    run_id: str,
    gateway: str,
    out: Path,
    secrets: SecretReader | None = None,
) -> list[str]:
    """Write the gateway's key-bearing files under ``out`` (its mounted folder): the paths
    written. On failure the reason goes to :func:`config_error_object` and RunError is raised:
    nothing is written into ``out``."""
    with config_error_written(storage, bucket, run_id, gateway, "write its API keys"):
        files = gateway_files(storage, bucket, run_id, gateway, secrets)
    for path, text in sorted(files.items()):
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o644)
    return sorted(files)


__all__ = ["config_error_written", "configure_gateway", "gateway_files"]
